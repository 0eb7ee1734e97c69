"""Every shell command and Python example in README.md and docs/ runs, in page order.

- Each ```bash block is split into commands (backslash continuations joined, comment lines left
  out); each ```python block is one program. They run in one shared scratch directory (README.md
  first, then docs/ in path order), so a later command finds the runs an earlier one stored.
- A command that cannot run on this machine (a GPU, vLLM or SGLang, the network, `make` targets
  that CI runs itself or that take minutes) is matched by NOT_HERE below and skipped with its
  reason. The pages say so to readers in their own words ("on a GPU machine", "network"); nothing
  in them is written for this test.
- Every other command must exit 0. It runs as written, or changed only by the tables below, visible
  here: SUBSTITUTE fills stand-ins (URL, MODEL, GPU servers become local llama.cpp servers on the
  embedded model, paths to data files become test fixtures), TINY appends options that shrink the
  work (one sample, 16-token answers, the smallest length), PY_TINY shrinks Python calls, PREPARE
  builds what a command reads that a page makes elsewhere (`make demo`'s runs), a command naming
  `$SLURM_ARRAY_TASK_ID` runs once per task of a two-task array, and EXPECTED_EXIT names the one
  command whose exit code the shrinking changes (a merge of one-sample shards reports its gaps).
- `test_every_command_is_counted` prints how many ran as written, with a substitution, or not here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .conftest import free_port

ROOT = Path(__file__).parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
FIXTURES = ROOT / "tests" / "fixtures"
RULER_FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
TIMEOUT_S = 300

# Commands that cannot run on a CPU machine without network, and why.
NOT_HERE: tuple[tuple[str, str], ...] = (
    (r"^make (demo|test)$", "the two top commands: CI runs `make test`, which runs every other"),
    (r"^make (bench|profile|lint|install)\b", "a make target of minutes or CI's own step"),
    (r"^make test-gpu\b", "needs a CUDA GPU"),
    (r"\bvllm serve\b", "needs vLLM and a GPU"),
    (r"\bsglang", "needs SGLang and a GPU"),
    (r"--model hf/", "needs a CUDA GPU and the model's weights from the Hub"),
    (r"^(pip install|python -m venv)\b", "needs the network (PyPI)"),
    (r"\bhf download\b", "needs the network (the Hugging Face Hub)"),
    (r"^longscope data\b", "needs the network (RULER's sources, the Hugging Face Hub)"),
)

# Stand-ins and what the test puts in their place ({url}, {url2}: two local llama.cpp servers on
# the embedded model, standing in for GPU servers).
SUBSTITUTE: tuple[tuple[str, str], ...] = (
    (r"--model openai/(?!gemma3-270m\b)\S+", "--model openai/gemma3-270m"),
    (r"--base-url URL\b", "--base-url {url}"),
    (r"--base-url http://(gpu1|localhost):800[01]/v1", "--base-url {url}"),
    (r"--base-url http://(gpu2:\d+|localhost:800[123])/v1", "--base-url {url2}"),
    (r"--base-url http://router:\d+/v1", "--base-url {url}"),
    (r"^\.venv/bin/", ""),
    # LongCtx's fixed tiers (4K-128K prompts) give way to TINY's 1K/2K grid cell.
    (r"\s-S tiers=[\d,]+", ""),
)
# A server whose prompt mode, context and tokenizer are not the server's own needs them stated.
SERVER_OPTIONS = "-M prompt_mode=completion -M context_length=8192 -M tokenizer=gemma3-270m"

# Options appended to a command (first matching pattern wins). They shrink the work only: one
# sample, a 16-token answer, the smallest length; the page's own options stay in front of them
# and the CLI takes the last value of a repeated option.
TINY: tuple[tuple[str, str], ...] = (
    (
        r"^longscope run longctx\b.*--router",
        "--lengths 2k -S depths=0.5 -S types=needle --max-tokens 16 --limit 1 -q",
    ),
    (
        r"^longscope run longctx\b",
        "--lengths 1k -S depths=0.5 -S types=needle --max-tokens 16 --limit 1 -q",
    ),
    (r"^longscope run hundred\b", "--lengths 2k -S samples=1 --max-tokens 16 --limit 1 -q"),
    (r"^longscope run longbench-pro\b", "--max-tokens 16 --limit 1 -q"),
    (r"^longscope run ruler\b", "--lengths 1k -S samples=1 --max-tokens 16 --limit 1 -q"),
    (r"^longscope run nolima\b", "-S depths=0.5 --max-tokens 16 --limit 1 -q"),
    (r"^longscope run\b", "--max-tokens 16 --limit 1 -q"),
    # --probe prefills a prompt of half the context, at most 2,048 tokens (run/plan.py), at about
    # 180 tokens/s on a 2-core machine's server: a 2K context makes it a 1,024-token probe.
    (
        r"^longscope plan longctx\b.*--probe",
        "--lengths 1k -S depths=0.5 -S types=needle -M context_length=2048",
    ),
    (r"^longscope plan longctx\b", "--lengths 1k -S depths=0.5 -S types=needle"),
)

# Python examples: text replacements (the first shrinks the suite and the answers).
PY_TINY: tuple[tuple[str, str], ...] = (
    (
        r'suite_params=\{"tiers": \[[\d, ]+\]\}',
        'suite_params={"lengths": [2048], "depths": [0.5], "types": ["needle"]}, limit=1, '
        "max_tokens=16",
    ),
)

# Runs a command reads that a page makes outside its commands (`make demo`), made small.
PREPARE: tuple[tuple[str, str], ...] = (
    *(
        (
            rf"\bruns/demo/{model}\b",
            f"test -d runs/demo/{model} || longscope run longctx --model llamacpp/{model} "
            f"--lengths 1k,2k -S depths=0.5 -S types=needle --max-tokens 16 -q -o runs/demo/{model}",
        )
        for model in ("gemma3-270m", "smollm2-135m")
    ),
    # NoLiMa's data is never shipped: a folder in its layout is built from invented prose.
    (
        r"-S data=nolima-data\b",
        f"test -d nolima-data || {sys.executable} -c \"import sys; sys.path.insert(0, '{ROOT}'); "
        "from pathlib import Path; from tests.suites.nolima.rows import fixture_dataset; "
        "fixture_dataset(Path('nolima-data'))\"",
    ),
)
# Commands whose exit code is not 0 by design once TINY shrank the commands before them, with the
# line they must print instead: a merge of shards that each ran one sample (`--limit 1`) reports
# the samples no shard ran and exits 3, as docs/scale-out.md and `merge --help` say.
EXPECTED_EXIT: tuple[tuple[str, int, str], ...] = (
    (r"^longscope merge runs/lbp-all\b", 3, "sample(s) not in any input"),
)
# Data files the pages name, and the test fixtures that stand in for them.
DATA_FILES = {
    "longbench_pro.json": FIXTURES / "longbench_pro_mini.json",
    "preds.jsonl": FIXTURES / "longbench_pro_mini_predictions.jsonl",
    "qasper.jsonl": FIXTURES / "longbench_v1_qa.jsonl",
    "PaulGrahamEssays.json": RULER_FIXTURES / "essays.json",
    "squad.json": RULER_FIXTURES / "squad.json",
    "hotpotqa.json": RULER_FIXTURES / "hotpotqa.json",
}


@dataclass(frozen=True)
class Example:
    """One command or Python program from a page, with its page and line number."""

    page: str
    line: int
    kind: str
    text: str

    @property
    def not_here(self) -> str:
        """Why this command cannot run on this machine ("" when it can)."""
        if self.kind != "bash":
            return ""
        command = _strip_comment(self.text)
        return next((why for pattern, why in NOT_HERE if re.search(pattern, command)), "")


def examples(page: str, text: str) -> list[Example]:
    """Return a page's bash commands and Python programs in order."""
    found: list[Example] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```(bash|python)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        kind, start = fence.group(1), i + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        block = lines[start:end]
        if kind == "python":
            found.append(Example(page, start + 1, kind, "\n".join(block)))
        else:
            command, first = "", 0
            for offset, raw in enumerate(block):
                raw = raw.strip()
                if not command and (not raw or raw.startswith("#")):
                    continue
                if not command:
                    first = start + offset + 1
                command += raw
                if command.endswith("\\"):
                    command = command[:-1].rstrip() + " "
                    continue
                found.append(Example(page, first, kind, command.strip()))
                command = ""
        i = end + 1
    return found


EXAMPLES = [
    example
    for page in PAGES
    for example in examples(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8"))
]


def _strip_comment(command: str) -> str:
    # A trailing `# ...` outside quotes: options appended after it would be commented out.
    return re.sub(r"\s+#[^'\"]*$", "", command)


def substituted(command: str, urls: tuple[str, str] = ("{url}", "{url2}")) -> str:
    """Return `command` with the stand-ins filled and the TINY options appended."""
    command = _strip_comment(command)
    for pattern, value in SUBSTITUTE:
        command = re.sub(pattern, value, command)
    if "{url" in command:
        command = command.replace("{url}", urls[0]).replace("{url2}", urls[1])
        # Four endpoints become the two local servers: each named once.
        seen: set[str] = set()

        def once(match: re.Match[str]) -> str:
            if match.group(1) in seen:
                return ""
            seen.add(match.group(1))
            return match.group(0)

        command = re.sub(r"\s--base-url (\S+)", once, command)
        if "prompt_mode" not in command:
            command = f"{command} {SERVER_OPTIONS}"
    if command.endswith("&"):
        return command
    for pattern, extra in TINY:
        if re.search(pattern, command):
            return f"{command} {extra}"
    return command


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    """The shared scratch directory, its environment, and the background processes to stop."""
    cwd = tmp_path_factory.mktemp("readme")
    for name, source in DATA_FILES.items():
        shutil.copy(source, cwd / name)
    # Pages run from a checkout's root name the committed profile by its path there.
    (cwd / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "gemma3-270m-profile.json", cwd / "docs")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENAI_API_KEY": "sk-local-test",
        "COLUMNS": "100",
    }
    state = {"cwd": cwd, "env": env, "procs": [], "urls": [], "port": None}
    yield state
    for proc in state["procs"]:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_for(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text(errors='replace')[-1500:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    raise AssertionError(f"server at {url} did not answer within 180 s")


def _start(state: dict, command: str, port: int) -> tuple[str, subprocess.Popen, Path]:
    """Start `command` (a server, a page's `&` line) in the background; return URL, process, log."""
    log = state["cwd"] / f"server-{port}.log"
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command.rstrip('&').strip()}"],
        cwd=state["cwd"],
        env=state["env"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    state["procs"].append(proc)
    return f"http://127.0.0.1:{port}/v1", proc, log


def _server(state: dict, command: str, port: int) -> str:
    """Start `command` in the background and wait until it answers; return its URL."""
    url, proc, log = _start(state, command, port)
    _wait_for(url, proc, log)
    return url


def _local_urls(state: dict) -> tuple[str, str]:
    """Two fault-free llama.cpp servers on the embedded model, standing in for GPU servers."""
    from longscope.models.registry import resolve_model_path

    if not state["urls"]:
        # Both start at once: each spends its start-up in imports and loading the model, which
        # overlap, rather than one after the other.
        started: list[tuple[str, subprocess.Popen, Path]] = []
        ports: list[int] = []
        while len(ports) < 2:
            port = free_port()
            if port in ports:  # neither has bound its port yet: the OS may offer one twice
                continue
            ports.append(port)
            command = (
                f"{sys.executable} -m llama_cpp.server --model "
                f"{resolve_model_path('gemma3-270m')} --n_ctx 8192 --model_alias gemma3-270m "
                f"--host 127.0.0.1 --port {port}"
            )
            started.append(_start(state, command, port))
        for url, proc, log in started:
            _wait_for(url, proc, log)
            state["urls"].append(url)
    return state["urls"][0], state["urls"][1]


def _run(state: dict, command: str, env: dict[str, str] | None = None) -> None:
    code, says = next(((c, t) for p, c, t in EXPECTED_EXIT if re.search(p, command)), (0, ""))
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=state["cwd"],
        env={**state["env"], **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == code, f"exit {result.returncode}: {command}\n{output[-2500:]}"
    assert says in output, f"{command} did not print {says!r}\n{output[-2500:]}"


# README.md's commands run in `make test`; docs/ pages' commands (a few minutes of model runs and
# local servers) run in `make test-slow`, so the default run stays under 15 minutes.
@pytest.mark.model
@pytest.mark.parametrize(
    "example",
    [pytest.param(e, marks=() if e.page == "README.md" else (pytest.mark.slow,)) for e in EXAMPLES],
    ids=[f"{e.page}:L{e.line}-{e.kind}" for e in EXAMPLES],
)
def test_page_example_runs(example: Example, workspace: dict) -> None:
    if example.not_here:
        pytest.skip(f"{example.page} line {example.line}: not runnable here: {example.not_here}")
    if example.kind == "python":
        code = example.text
        for pattern, value in PY_TINY:
            code = re.sub(pattern, value, code)
        _run(workspace, f"{sys.executable} - <<'PY'\n{code}\nPY")
        return
    command = example.text
    for pattern, prepare in PREPARE:
        if re.search(pattern, command):
            _run(workspace, prepare)
    uses_servers = re.search(SUBSTITUTE[1][0] + r"|--base-url http://(?!127\.0\.0\.1)", command)
    command = substituted(command, _local_urls(workspace) if uses_servers else ("", ""))
    if command.endswith("&"):
        port = free_port()
        command = re.sub(r"--port \d+", f"--port {port}", command)
        workspace["port"] = port
        _server(workspace, command, port)
        return
    if workspace["port"]:
        command = re.sub(r"127\.0\.0\.1:8000\b", f"127.0.0.1:{workspace['port']}", command)
    if "$SLURM_ARRAY_TASK_ID" in command:
        for task in ("0", "1"):
            _run(workspace, command, {"SLURM_ARRAY_TASK_ID": task, "SLURM_ARRAY_TASK_COUNT": "2"})
        return
    _run(workspace, command)


def test_every_command_is_counted() -> None:
    assert EXAMPLES, "no ```bash or ```python block in README.md or docs/"
    as_written = [e for e in EXAMPLES if not e.not_here and _unchanged(e)]
    changed = [e for e in EXAMPLES if not e.not_here and not _unchanged(e)]
    not_here = [e for e in EXAMPLES if e.not_here]
    print(
        f"\n{len(EXAMPLES)} commands and programs: {len(as_written)} run as written, "
        f"{len(changed)} with a declared substitution, {len(not_here)} not runnable here"
    )
    for example in not_here:
        print(f"  not here: {example.page}:{example.line}: {example.not_here}")
    assert len(not_here) < len(EXAMPLES) / 2, "most examples are marked not runnable here"
    # The two commands a reader meets first are the ones CI cannot run inside itself.
    readme = [e for e in EXAMPLES if e.page == "README.md"]
    assert [_strip_comment(e.text) for e in readme[:2]] == ["make demo", "make test"]


def _unchanged(example: Example) -> bool:
    if example.kind == "python":
        text = example.text
        return all(re.sub(p, v, text) == text for p, v in PY_TINY)
    command = _strip_comment(example.text)
    changed = substituted(command, ("{url}", "{url2}")) != command
    data = any(name in command for name in DATA_FILES)
    return not changed and not data and "$SLURM" not in command and "runs/demo" not in command


def test_hub_downloads_name_the_cli_the_hub_library_installs() -> None:
    """huggingface_hub 1.x ships `hf` and no `huggingface-cli`: a page or a message naming the old
    command sends a user to a command not found."""
    pages = [*PAGES, *(ROOT / "src").rglob("*.py")]
    naming = [str(p.relative_to(ROOT)) for p in pages if "huggingface-cli" in p.read_text("utf-8")]
    assert naming == []
    assert (Path(sys.executable).parent / "hf").is_file()
    assert any("hf download" in p.read_text("utf-8") for p in PAGES)


# Figures the pages state for a command of theirs, checked against what `longscope plan` counts.
PLANNED_FIGURES: tuple[tuple[str, str], ...] = (
    ("README.md", r"100-LongBench sweep above: (\d+) requests, ([\d,]+) prompt tokens"),
    ("docs/suites/hundred.md", r"The sweep above is (\d+) requests and ([\d,]+) prompt tokens"),
)


@pytest.mark.model
@pytest.mark.parametrize(("page", "figure"), PLANNED_FIGURES, ids=[p for p, _ in PLANNED_FIGURES])
def test_a_stated_sweep_cost_is_what_plan_counts(page: str, figure: str, tmp_path: Path) -> None:
    """The page's first `longscope run hundred` command, planned: its requests and prompt tokens
    are the ones the page states (docs/suites/hundred.md said 219,121 where plan counts 219,298)."""
    text = " ".join((ROOT / page).read_text("utf-8").split())  # a figure may wrap across lines
    stated = re.search(figure, text)
    assert stated, f"{page}: no figure matching {figure!r}"
    command = next(e.text for e in EXAMPLES if e.page == page and "run hundred" in e.text)
    planned = re.sub(r"\s-o \S+", "", command.replace("longscope run ", "longscope plan ", 1))
    done = subprocess.run(
        ["bash", "-c", f"{planned} --json"],
        cwd=tmp_path,
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads(done.stdout)
    assert (plan["requests"], f"{plan['prompt_tokens']:,}") == (
        int(stated.group(1)),
        stated.group(2),
    )


def test_the_router_page_states_the_committed_profiles_bars() -> None:
    """docs/router.md's bars are the committed profile's: 0.9 and 0.95 of its shortest length's
    score (it said 41.2 where the profile records 41.13)."""
    import json as _json

    profile = _json.loads((ROOT / "docs" / "gemma3-270m-profile.json").read_text("utf-8"))
    (measured,) = profile["measured"]
    first = measured["scores"][min(measured["scores"], key=int)]
    page = " ".join((ROOT / "docs" / "router.md").read_text("utf-8").split())
    assert f"the bar is {0.9 * first:.1f}" in page
    assert f"`--relative 0.95` sets the bar at {measured['relative_threshold']:.1f}" in page
    assert round(0.95 * first, 2) == pytest.approx(measured["relative_threshold"])


@pytest.mark.model
def test_the_scale_out_page_states_what_an_empty_ruler_shard_plans(tmp_path: Path) -> None:
    """RULER is split by whole cells: a shard beyond the cells plans nothing, as the page says."""
    page = " ".join((ROOT / "docs" / "scale-out.md").read_text("utf-8").split())
    stated = re.search(r"`(longscope plan ruler [^`]+)` says `([^`]+)`", page)
    assert stated, "docs/scale-out.md: no `longscope plan ruler ...` says `...`"
    done = subprocess.run(
        ["bash", "-c", stated.group(1)],
        cwd=tmp_path,
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert stated.group(2) in done.stdout + done.stderr
    assert "plan: 0 requests" in done.stdout + done.stderr
