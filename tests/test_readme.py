"""Every shell command and Python example in README.md runs, in README order, on the embedded model.

- Each ```bash block is split into commands (backslash continuations joined, comment lines left
  out); each ```python block is one program. They run in one shared scratch directory, in order,
  so a later command finds the runs an earlier one stored.
- A command that needs what CI does not have (a GPU, vLLM, a cluster, a network URL, or the whole
  test suite again) ends in `# not run in CI: <why>`: it is skipped with that reason and counted.
- Every other command must exit 0. To keep the total small the test changes a command only by the
  tables below, visible here: TINY appends options that shrink the work (one sample, short
  answers), PLACEHOLDERS fill the README's stand-ins (URL, MODEL), PY_TINY shrinks Python calls,
  PREPARE builds what a command reads that the README makes elsewhere (`make demo`'s runs).
"""

from __future__ import annotations

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
README = ROOT / "README.md"
FIXTURES = ROOT / "tests" / "fixtures"
NOT_RUN = re.compile(r"#\s*not run in CI:\s*(?P<why>.+)$")
TIMEOUT_S = 300

# Options appended to a command (first matching pattern wins). They shrink the work only: one
# sample, a 16-token answer, the smallest length; the README's own options stay in front of them
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
    (r"^longscope run ruler\b", "--lengths 1k --max-tokens 16 --limit 1 -q"),
    (r"^longscope run\b", "--max-tokens 16 --limit 1 -q"),
)

# The README's stand-ins and what the test puts in their place.
PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    (r"openai/MODEL\b", "openai/gemma3-270m"),
    (
        r"--base-url URL\b",
        "--base-url {url} -M prompt_mode=completion -M context_length=8192 -M tokenizer=gemma3-270m",
    ),
    (r"runs/hundred-\.\.\.", "runs/hundred-*"),
    # LongCtx's fixed tiers (4K-128K prompts) give way to TINY's 1K/2K grid cell.
    (r"\s-S tiers=[\d,]+", ""),
)

# Python examples: text replacements (the first shrinks the suite and the answers).
PY_TINY: tuple[tuple[str, str], ...] = (
    (
        r'suite_params=\{"tiers": \[[\d, ]+\]\}',
        'suite_params={"lengths": [1024], "depths": [0.5], "types": ["needle"]}, limit=1, max_tokens=16',
    ),
)

# Files and runs a command reads that the README makes outside its commands.
PREPARE: tuple[tuple[str, str], ...] = (
    (
        r"\bruns/demo\b",
        "test -d runs/demo || longscope run longctx --model llamacpp/gemma3-270m --lengths 1k,2k "
        "-S depths=0.5 -S types=needle --max-tokens 16 -q -o runs/demo/gemma3-270m",
    ),
)
DATA_FILES = {
    "longbench_pro.json": FIXTURES / "longbench_pro_mini.json",
    "preds.jsonl": FIXTURES / "longbench_pro_mini_predictions.jsonl",
}


@dataclass(frozen=True)
class Example:
    """One command or Python program from the README, with its line number."""

    line: int
    kind: str
    text: str

    @property
    def not_run(self) -> str:
        match = NOT_RUN.search(self.text.splitlines()[-1]) if self.kind == "bash" else None
        return match.group("why").strip() if match else ""


def examples(text: str) -> list[Example]:
    """Return the README's bash commands and Python programs in order."""
    found: list[Example] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(bash|python)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        kind, start = fence.group(1), i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        block = lines[start:end]
        if kind == "python":
            found.append(Example(start + 1, kind, "\n".join(block)))
        else:
            command, first = "", 0
            for offset, raw in enumerate(block):
                if not command and (not raw.strip() or raw.lstrip().startswith("#")):
                    continue
                if not command:
                    first = start + offset + 1
                command += raw.rstrip()
                if command.endswith("\\"):
                    command = command[:-1].rstrip() + " "
                    continue
                found.append(Example(first, kind, command.strip()))
                command = ""
        i = end + 1
    return found


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def _strip_comment(command: str) -> str:
    # A trailing `# ...` outside quotes: options appended after it would be commented out.
    return re.sub(r"\s+#[^'\"]*$", "", command)


def tiny(command: str, url: str) -> str:
    """Return `command` with the placeholders filled and the TINY options appended."""
    command = _strip_comment(command)
    for pattern, value in PLACEHOLDERS:
        command = re.sub(pattern, value.replace("{url}", url), command)
    background = command.endswith("&")
    if background:
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
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENAI_API_KEY": "sk-local-test",
        "COLUMNS": "100",
    }
    state = {"cwd": cwd, "env": env, "procs": [], "url": None, "skipped": []}
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


def _server(state: dict, command: str, port: int) -> str:
    """Start `command` (a server, README's `&` line) in the background; return its URL."""
    log = state["cwd"] / f"server-{port}.log"
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command.rstrip('&').strip()}"],
        cwd=state["cwd"],
        env=state["env"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    state["procs"].append(proc)
    url = f"http://127.0.0.1:{port}/v1"
    _wait_for(url, proc, log)
    return url


def _local_url(state: dict) -> str:
    """A fault-free llama.cpp server on the embedded model for the README's `URL` stand-in."""
    if state["url"] is None:
        from longscope.models.registry import resolve_model_path

        port = free_port()
        command = (
            f"{sys.executable} -m llama_cpp.server --model {resolve_model_path('gemma3-270m')} "
            f"--n_ctx 8192 --model_alias gemma3-270m --host 127.0.0.1 --port {port}"
        )
        state["url"] = _server(state, command, port)
    return state["url"]


def _run(state: dict, command: str) -> None:
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=state["cwd"],
        env=state["env"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (
        f"exit {result.returncode}: {command}\n{(result.stdout + result.stderr)[-2500:]}"
    )


@pytest.mark.model
@pytest.mark.parametrize("example", EXAMPLES, ids=[f"L{e.line}-{e.kind}" for e in EXAMPLES])
def test_readme_example_runs(example: Example, workspace: dict) -> None:
    if example.not_run:
        workspace["skipped"].append(example)
        pytest.skip(f"README line {example.line}: not run in CI: {example.not_run}")
    if example.kind == "python":
        code = example.text
        for pattern, value in PY_TINY:
            code = re.sub(pattern, value, code)
        _run(workspace, f"{sys.executable} - <<'PY'\n{code}\nPY")
        return
    command = example.text
    if re.match(r"^make (test|demo)\b", command):
        pytest.fail(f"README line {example.line}: `{command}` cannot run inside the tests: mark it")
    export = re.match(r"^export (\w+)=(\S*)", command)
    if export:
        workspace["env"][export.group(1)] = export.group(2)
        return
    url = _local_url(workspace) if re.search(r"\bURL\b", command) else ""
    for pattern, prepare in PREPARE:
        if re.search(pattern, command):
            _run(workspace, prepare)
    command = tiny(command, url)
    if command.endswith("&"):
        port = free_port()
        command = re.sub(r"--port \d+", f"--port {port}", command)
        workspace["port"] = port
        _server(workspace, command, port)
        return
    if "port" in workspace:
        command = re.sub(r"127\.0\.0\.1:8000\b", f"127.0.0.1:{workspace['port']}", command)
    _run(workspace, command)


def test_readme_has_examples_and_counts_the_ones_not_run() -> None:
    assert EXAMPLES, "README.md has no ```bash or ```python block"
    not_run = [e for e in EXAMPLES if e.not_run]
    # Printed with -rs; every skip names its README line and reason.
    assert all(e.not_run for e in not_run)
    assert len(not_run) < len(EXAMPLES), "every README example is marked not run"
