"""End to end on the real embedded model: in-process, through llama.cpp's server, and after kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longscope.models.registry import create_backend
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite
from longscope.suites.longctx.grading import MAX_POINTS
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.suites.longctx.tasks import TaskSpec

from ..llama_server import start_server, stop, wait_ready

pytestmark = pytest.mark.model


def _rows(run_dir: Path) -> list[tuple]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    return db.execute(
        "SELECT sample_id, repeat, status, text, error FROM generations ORDER BY 1, 2"
    ).fetchall()


# A 48-token answer budget instead of the default 200 (pinned in tests/test_types_boundaries.py):
# the suite sizes its prompts for whichever budget it is given, and the answers that ran to 200
# tokens were a third of this test's time on 2 cores.
ANSWER = 48


class _OneTaskOfTierOne(LongCtxSuite):
    """Tier 1's first task beside tiers 4 and 5: one 4K prompt on the model proves the fit and the
    run as well as tier 1's four did, in a quarter of the time. All four are built without a model
    in tests/test_cli.py and tests/run/test_prepared.py, and graded in tests/suites/longctx/."""

    def _cells(self) -> list[tuple[str, TaskSpec, int, float | None]]:
        return [c for c in super()._cells() if c[1].tier != 1 or c[0] == "LCB-001"]


def test_longctx_tier1_on_embedded_model_and_big_tiers_skipped(tmp_path: Path) -> None:
    suite = _OneTaskOfTierOne.from_params({"tiers": [1, 4, 5]})
    backend = create_backend("llamacpp/gemma3-270m")
    result = run(suite, backend, RunOptions(output=tmp_path, quiet=True, max_tokens=ANSWER))
    summary = result.scores.to_dict()
    rows = {r[0]: r for r in _rows(tmp_path)}
    assert len(rows) == 9
    assert rows["LCB-001"][2] in ("ok", "length"), rows["LCB-001"]
    for task in [f"LCB-{i:03d}" for i in range(13, 21)]:
        status, error = rows[task][2], rows[task][4]
        assert status == "skipped"
        assert error.startswith("insufficient_context: needs") and "holds 32768" in error
        assert summary["per_sample"][task]["points"] == 0
    assert result.sent == 1 and result.skipped == 8
    assert summary["statuses"]["skipped"] == 8
    assert 0 <= summary["total"] <= 100 and summary["level"]
    assert summary["by_tier"]["1"]["max"] == MAX_POINTS and summary["by_tier"]["4"]["max"] == 20
    # the prompt the model saw fits the tier: the engine's own count, with the answer budget
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    for (prompt_tokens,) in db.execute(
        "SELECT prompt_tokens FROM generations WHERE status != 'skipped'"
    ):
        assert 3650 < prompt_tokens <= 4096 - ANSWER
    assert json.loads((tmp_path / "summary.json").read_text())["total"] == summary["total"]


@pytest.fixture(scope="module")
def llama_server(model_path: Path, tmp_path_factory: pytest.TempPathFactory):
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    proc, url = start_server(model_path, log_path, n_ctx=8192, alias="gemma3-270m")
    try:
        wait_ready(proc, url, log_path)
        yield url
    finally:
        stop(proc)


# Slow (make test-slow): ~16 s; the real llama.cpp server also runs in tests/run/test_chat_e2e.py
# and tests/run/test_endpoints.py in the default run.
@pytest.mark.slow
def test_longctx_through_real_llama_server(llama_server: str, tmp_path: Path) -> None:
    # A 2K needle that fits the server's 8K window and a 16K one that does not.
    suite = create_suite(
        "longctx", {"lengths": [2048, 16384], "depths": [0.5], "types": ["needle"]}
    )
    backend = create_backend(
        "openai/gemma3-270m",
        # llama-cpp-python's server reports no context length: state it, as a user would.
        {"prompt_mode": "completion", "context_length": 8192, "tokenizer": "gemma3-270m"},
        base_url=llama_server,
        concurrency=1,
    )
    result = run(suite, backend, RunOptions(output=tmp_path, quiet=True))
    rows = {r[0]: r for r in _rows(tmp_path)}
    assert rows["needle-2048-d050"][2] in ("ok", "length"), rows["needle-2048-d050"]
    skipped = rows["needle-16384-d050"]
    assert skipped[2] == "skipped" and "holds 8192 (user)" in skipped[4]
    assert result.scores.header["model_info"]["context_source"] == "user"
    # the server counted the same prompt the harness built (no silent truncation)
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    counted = dict(db.execute("SELECT sample_id, prompt_tokens FROM generations WHERE status='ok'"))
    samples = {
        sid: json.loads(d)["prompt_tokens"]
        for sid, d in db.execute("SELECT sample_id, data FROM samples")
    }
    assert counted, "the fitting sample was not answered"
    for sid, seen in counted.items():
        assert abs(seen - samples[sid]) <= 2


def test_a_model_name_the_server_does_not_list_is_warned_about(
    llama_server: str, tmp_path: Path
) -> None:
    """The commonest mistake with vLLM: --model openai/NAME with a NAME other than the one served
    (vLLM then refuses every request). llama.cpp's server answers whatever the name, so the run
    goes on; the warning names what the server lists."""
    tiny = ["--lengths", "1k", "-S", "depths=0.5", "-S", "types=needle", "--max-tokens", "8",
            "--limit", "1", "-q", "-M", "prompt_mode=completion", "-M", "context_length=8192",
            "--base-url", llama_server]  # fmt: skip

    def run_cli(model: str, out: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "longscope.cli", "run", "longctx", "--model", model, "-o",
             str(out), *tiny],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip

    wrong = run_cli("openai/Qwen/Qwen2.5-7B-Instruct", tmp_path / "wrong")
    assert wrong.returncode == 0, wrong.stderr
    warned = [line for line in wrong.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [
        f"warning: the server at {llama_server} lists gemma3-270m, not Qwen/Qwen2.5-7B-Instruct: "
        "a server that checks the name (vLLM, SGLang) refuses every request; pass --model "
        "openai/gemma3-270m"
    ]
    right = run_cli("openai/gemma3-270m", tmp_path / "right")
    assert right.returncode == 0, right.stderr
    assert "warning:" not in right.stderr


def test_a_documents_repeats_through_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    """llama.cpp's server ignores `n`: the run asks once with it, then once per repeat; greedy
    repeats of one prompt give one answer, and every repeat is stored."""
    backend = create_backend(
        "openai/gemma3-270m",
        {"prompt_mode": "completion", "context_length": 8192, "tokenizer": "gemma3-270m"},
        base_url=llama_server,
    )
    suite = create_suite("longctx", {"lengths": [1024], "depths": [0.5], "types": ["needle"]})
    result = run(suite, backend, RunOptions(output=tmp_path, repeats=3, max_tokens=12, quiet=True))
    assert result.sent == 3 and backend.supports_n is False
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    rows = db.execute("SELECT repeat, status, text FROM generations ORDER BY repeat").fetchall()
    assert [r[0] for r in rows] == [0, 1, 2]
    assert {r[1] for r in rows} <= {"ok", "length"} and len({r[2] for r in rows}) == 1


GRID = ["--lengths", "1k", "-S", "depths=0.1,0.3,0.5,0.7,0.9", "-S", "types=needle", "-q"]


def _cli(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "longscope.cli",
        "run",
        "longctx",
        "--model",
        "llamacpp/gemma3-270m",
        *args,
    ]


# Slow (make test-slow): ~25 s; kill and resume are also covered by tests/run/test_kill.py and
# the bench_kill_loss smoke in the default run.
@pytest.mark.slow
def test_killed_run_resumes_to_the_same_result_without_duplicates(tmp_path: Path) -> None:
    reference, resumed = tmp_path / "reference", tmp_path / "resumed"
    subprocess.run(_cli(*GRID, "-o", str(reference)), check=True, capture_output=True, timeout=600)

    proc = subprocess.Popen(
        _cli(*GRID, "-o", str(resumed)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    store = resumed / "longscope.sqlite"
    deadline = time.time() + 300
    while time.time() < deadline:
        if store.exists():
            try:
                n = sqlite3.connect(store).execute("SELECT COUNT(*) FROM generations").fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
            if n >= 2:
                break
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stored_before = len(_rows(resumed))
    assert 2 <= stored_before < 5, "the kill must land mid-run"

    out = subprocess.run(
        _cli(*GRID, "-o", str(resumed)), check=True, capture_output=True, text=True, timeout=600
    )
    assert f"({5 - stored_before} sent, 0 skipped this time)" in " ".join(out.stdout.split())
    rows = _rows(resumed)
    assert len(rows) == len({(r[0], r[1]) for r in rows}) == 5
    assert rows == _rows(reference)
    again = subprocess.run(
        _cli(*GRID, "-o", str(resumed)), check=True, capture_output=True, text=True, timeout=600
    )
    assert "(0 sent, 0 skipped this time)" in " ".join(again.stdout.split())


@pytest.mark.slow
def test_all_longctx_tiers_on_the_embedded_model(tmp_path: Path) -> None:
    """Tiers 1-3 run (the 32K tier exactly fills the 32K model); 4 and 5 are skipped, never cut."""
    result = run(
        create_suite("longctx", {}),
        create_backend("llamacpp/gemma3-270m"),
        RunOptions(output=tmp_path, quiet=True),
    )
    rows = {r[0]: r for r in _rows(tmp_path)}
    assert all(rows[f"LCB-{i:03d}"][2] in ("ok", "length") for i in range(1, 13))
    assert all(rows[f"LCB-{i:03d}"][2] == "skipped" for i in range(13, 21))
    assert result.scores.to_dict()["max_points"] == 100
