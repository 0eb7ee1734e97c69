"""Tracebacks where one line and exit 2 are promised, and counts without a bound (issue 21, defects
6, 7 and the items of 9). Each case is the real CLI in a subprocess; nothing is sent before the
refusal (the servers count what was posted to them) and nothing stored is lost.
"""

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

from .cli_helper import longscope
from .hostile_server import HostileServer, fails_never
from .models.fault_server import FaultServer
from .test_cli_scale import GRID, SCRIPTED, _run

FIXTURES = Path(__file__).parent / "fixtures"
LBP = (
    "score", "longbench-pro", "-S", f"data={FIXTURES / 'longbench_pro_mini.json'}",
    "--predictions", str(FIXTURES / "longbench_pro_mini_predictions.jsonl"),
)  # fmt: skip
NEEDLE = ("-S", "lengths=1k", "-S", "depths=0.5", "-S", "types=needle")


def _one_line(made: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert made.returncode == 2, (made.returncode, made.stdout[-500:], made.stderr[-2000:])
    lines = [x for x in made.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), made.stderr[-2000:]
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


# --- counts: bounded before any work (plan sends nothing, and still ran out of memory) ----------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--shard", "0/100000000"), "at most 10,000 shards"),
        (("--repeats", "1000000000"), "bad --repeats 1000000000: at most 1,000"),
        (("--concurrency", "100000000"), "bad --concurrency 100000000: at most 4,096"),
        (("--limit", "100000000000"), "bad --limit 100000000000: at most 1,000,000"),
        (("--max-tokens", "100000000000"), "bad --max-tokens 100000000000: at most"),
        (("-S", "depths=" + ",".join(["0.5"] * 5000)), "5,000 items, at most 1,000"),
    ],
)
def test_counts_have_upper_bounds_checked_before_any_work(
    extra: tuple[str, ...], expected: str
) -> None:
    started = time.perf_counter()
    _one_line(longscope("plan", "longctx", *SCRIPTED, *GRID, *extra, timeout=60), expected)
    assert time.perf_counter() - started < 60


def test_samples_per_task_are_bounded_and_so_are_requests() -> None:
    made = longscope("plan", "hundred", *SCRIPTED, "-S", "samples=100000000", timeout=60)
    _one_line(made, "bad -S samples=100000000: expected a whole number of at most 100,000")
    # Within each bound, but together more requests than a run may ask: refused once built,
    # before anything is stored or sent.
    depths = ",".join(str(round(0.1 + i * 0.001, 3)) for i in range(600))
    made = longscope("plan", "longctx", *SCRIPTED, "-S", "lengths=1k,2k", "-S", "types=needle",
                     "-S", f"depths={depths}", "--repeats", "1000", timeout=300)  # fmt: skip
    _one_line(made, "1,200 samples x 1,000 repeats = 1,200,000 requests", "at most 1,000,000")


def test_a_sample_that_cannot_fit_is_skipped_before_its_haystack_is_built() -> None:
    # 16M tokens on a model that holds 8K: built, this haystack takes minutes and gigabytes.
    started = time.perf_counter()
    made = longscope("plan", "longctx", *SCRIPTED, "-S", "lengths=1k,16384k", "-S",
                     "types=needle", "-S", "depths=0.5", "--json", timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert time.perf_counter() - started < 60
    plan = json.loads(made.stdout)
    assert (plan["requests"], plan["skipped"]) == (1, 1)


# --- the items of point 9 -----------------------------------------------------------------------


def test_a_bad_tokenizer_json_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"version": "1.0", "model": {"type": "BPE", "vocab": 5}}', encoding="utf-8")
    made = longscope("run", "longctx", "--model", "scripted/r", "-M", f"tokenizer={bad}",
                     *NEEDLE, "-q", "-o", str(tmp_path / "run"))  # fmt: skip
    _one_line(made, "cannot read tokenizer", "tokenizer.json")
    assert not (tmp_path / "run").exists()


def test_an_output_budget_larger_than_a_length_is_one_line_when_the_server_says_no_context(
    tmp_path: Path,
) -> None:
    with HostileServer("m", fails=fails_never, answer="x") as server:  # reports no context length
        made = longscope("run", "longctx", "--model", "openai/m", "--base-url", server.base_url,
                         *NEEDLE, "-q", "--max-tokens", "5000", "-o", str(tmp_path / "run"))  # fmt: skip
        _one_line(made, "output budget of 5000 tokens", "use a smaller --max-tokens")
        assert server.posts == 0


def test_a_missing_or_failing_embedder_is_one_line(tmp_path: Path) -> None:
    made = longscope(*LBP, "-S", "embedder=sentence-transformers/all-MiniLM-L6-v2",
                     "-o", str(tmp_path / "a"))  # fmt: skip
    _one_line(made, "needs sentence-transformers", "longscope[embeddings]")
    made = longscope(*LBP, "-S", "embedder=openai/emb", "-o", str(tmp_path / "b"))
    line = _one_line(made, "has no endpoint", "-S embed_base_url=URL")
    assert "--embed-base-url" not in line  # a flag that does not exist
    made = longscope(*LBP, "-S", "embedder=openai/emb", "-S", "embed_base_url=http://127.0.0.1:9/v1",
                     "-o", str(tmp_path / "c"))  # fmt: skip
    _one_line(made, "embedder openai/emb at http://127.0.0.1:9/v1 cannot be reached")
    with FaultServer() as server:
        server.script.extend([("status", (404, "no such route", {}))] * 5)
        made = longscope(*LBP, "-S", "embedder=openai/emb", "-S", f"embed_base_url={server.url}",
                         "-o", str(tmp_path / "d"))  # fmt: skip
    _one_line(made, "answered HTTP 404")
    # The predictions were stored before scoring failed: nothing is lost, re-scoring reads them.
    with sqlite3.connect(tmp_path / "d" / "longscope.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM generations").fetchone()[0] > 0


def test_a_deeply_nested_ruler_file_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "essays.json"
    deep.write_text('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    made = longscope("run", "ruler", *SCRIPTED, "-S", "tasks=niah_single_2", "-S", "lengths=4k",
                     "-S", "samples=1", "-S", f"essays={deep}", "-q",
                     "-o", str(tmp_path / "run"))  # fmt: skip
    _one_line(made, "nested too deeply")


def test_report_and_merge_read_a_store_holding_text_that_is_not_utf8(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _run(run).returncode == 0
    with sqlite3.connect(run / "longscope.sqlite") as db:
        db.execute("UPDATE generations SET text = CAST(X'3CFF62' AS TEXT)")
    html = tmp_path / "r.html"
    made = longscope("report", str(run), "--html", str(html))
    assert made.returncode == 0, made.stderr
    assert "&lt;\ufffdb" in html.read_text(encoding="utf-8")
    merged = longscope("merge", str(tmp_path / "merged"), str(run))
    assert merged.returncode == 0, merged.stderr


def test_a_boolean_is_not_an_amount_of_memory() -> None:
    made = longscope("plan", "longctx", "--model", "llamacpp/gemma3-270m", "-M", "ram_gib=true",
                     *NEEDLE)  # fmt: skip
    _one_line(made, "bad -M ram_gib=True: expected a number")


def test_two_different_lengths_are_refused_not_one_silently_chosen() -> None:
    made = longscope("plan", "longctx", *SCRIPTED, "--lengths", "2k", "-S", "lengths=4k")
    _one_line(made, "--lengths 2k and -S lengths=... disagree")
    # The same lengths written both ways are one choice.
    same = longscope("plan", "longctx", *SCRIPTED, "--lengths", "4k", "-S", "lengths=4096",
                     "-S", "types=needle", "-S", "depths=0.5")  # fmt: skip
    assert same.returncode == 0, same.stderr


def test_a_suite_that_builds_nothing_is_one_line(tmp_path: Path) -> None:
    made = longscope("run", "ruler", *SCRIPTED, "-S", "tasks=qa_1", "-S", "lengths=4k",
                     "-S", "samples=1", "-o", str(tmp_path / "run"))  # fmt: skip
    _one_line(made, "ruler built no sample with these options")


def test_ctrl_c_exits_130_with_its_message(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 30.0)] * 4)
        proc = subprocess.Popen(
            [sys.executable, "-m", "longscope.cli", "run", "longctx", "--model", "openai/m",
             "--base-url", server.url, "-M", "context_length=8192", *NEEDLE, "-q",
             "-o", str(tmp_path / "run")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # A shell's background job starts with SIGINT ignored and Python keeps it so: the
            # run is given Ctrl-C's default, as from a terminal, wherever the tests were started.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        deadline = time.time() + 60
        while not server.requests and time.time() < deadline:
            time.sleep(0.1)
        assert server.requests, "the run never sent its request"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted: stored generations are kept" in err


def test_ctrl_c_while_requests_wait_for_a_slot_prints_no_warning(tmp_path: Path) -> None:
    # One slot, two requests: the second waits for the slot when Ctrl-C comes. Its unstarted job
    # was left unawaited: "RuntimeWarning: coroutine '_execute.<locals>.group' was never awaited".
    with FaultServer() as server:
        server.script.extend([("sleep", 30.0)] * 4)
        proc = subprocess.Popen(
            [sys.executable, "-m", "longscope.cli", "run", "longctx", "--model", "openai/m",
             "--base-url", server.url, "-M", "context_length=8192", "--concurrency", "1",
             "-S", "lengths=1k,2k", "-S", "depths=0.5", "-S", "types=needle", "-q",
             "-o", str(tmp_path / "run")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        deadline = time.time() + 60
        while not server.requests and time.time() < deadline:
            time.sleep(0.1)
        assert server.requests, "the run never sent its request"
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert len(server.requests) == 1 and "Warning" not in err, err[-2000:]
    assert err.splitlines()[-1].startswith("interrupted: stored generations are kept")
