"""A run against llama.cpp's server refusing prompts for length: final, exit 0, never sent again.

Runs stored before the refusal was recognised hold it as `error` (and asked to be re-run): a
resumed run or `score` re-classifies them, and a resume sends nothing.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.models.openai_api import OpenAIBackend
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite

from ..models.fault_server import FaultServer

LLAMA_SERVER_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (9412 tokens) exceeds the available context size (8192 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9412,
        "n_ctx": 8192,
    }
}
DEPTHS = "0.3,0.7"


def _refusals(server: FaultServer, count: int) -> None:
    data = json.dumps(LLAMA_SERVER_OVERFLOW).encode()
    server.script.extend([("raw", (400, "application/json", data))] * count)


def _cli(command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", command, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_cli(server: FaultServer, out: Path) -> subprocess.CompletedProcess[str]:
    return _cli(
        "run",
        "longctx",
        "--model",
        "openai/m",
        "--base-url",
        server.url,
        "-M",
        "context_length=8192",
        "--lengths",
        "1k",
        "-S",
        f"depths={DEPTHS}",
        "-S",
        "types=needle",
        "-q",
        "-o",
        str(out),
    )


def _statuses(run_dir: Path) -> list[str]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    rows = db.execute("SELECT status FROM generations ORDER BY sample_id, repeat").fetchall()
    db.close()
    return [status for (status,) in rows]


def _old_run(server: FaultServer, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Store a run as longscope did before llama.cpp's wording was known: refusals as `error`."""
    with monkeypatch.context() as patch:
        # The classifier and the re-classification as they were: neither knew this wording.
        patch.setattr("longscope.models.openai_api.is_overflow", lambda *args: False)
        patch.setattr("longscope.run.scoring.is_stored_overflow", lambda error: False)
        suite = create_suite(
            "longctx", {"lengths": [1024], "depths": [0.3, 0.7], "types": ["needle"]}
        )
        backend = OpenAIBackend("m", base_url=server.url, context_length=8192)
        result = run(suite, backend, RunOptions(output=out, quiet=True))
    assert result.sent == 2 and _statuses(out) == ["error", "error"]
    assert result.scores.completeness["complete"] is False


def test_run_against_llama_server_overflow_is_final_exits_0_and_resume_sends_nothing(
    tmp_path: Path,
) -> None:
    with FaultServer() as server:
        _refusals(server, 2)
        first = _run_cli(server, tmp_path)
        sent_first = len(server.requests)
        again = _run_cli(server, tmp_path)
        sent_again = len(server.requests) - sent_first
    assert first.returncode == 0, first.stderr
    assert (sent_first, _statuses(tmp_path)) == (2, ["context_overflow"] * 2)
    assert again.returncode == 0, again.stderr
    assert sent_again == 0 and "(0 sent, 0 skipped this time)" in " ".join(again.stdout.split())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["completeness"]["skipped"] == 2 and summary["completeness"]["complete"]


def test_an_old_runs_stored_refusals_are_reclassified_on_resume_and_nothing_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FaultServer() as server:
        _refusals(server, 2)
        _old_run(server, tmp_path, monkeypatch)
        before = len(server.requests)
        resumed = _run_cli(server, tmp_path)
        sent = len(server.requests) - before
    assert resumed.returncode == 0, resumed.stderr
    assert sent == 0 and "(0 sent, 0 skipped this time)" in " ".join(resumed.stdout.split())
    assert _statuses(tmp_path) == ["context_overflow"] * 2


def test_an_old_runs_stored_refusals_are_reclassified_by_score_and_report_reads_them_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, copy = tmp_path / "old", tmp_path / "copy"
    with FaultServer() as server:
        _refusals(server, 4)
        _old_run(server, old, monkeypatch)
        _old_run(server, copy, monkeypatch)
    # `report` reads an old run as final without writing to it.
    store = copy / "longscope.sqlite"
    unchanged = store.read_bytes()
    report = _cli("report", str(copy), "--json")
    assert report.returncode == 0, report.stderr
    assert store.read_bytes() == unchanged and _statuses(copy) == ["error", "error"]
    completeness = json.loads(report.stdout)["completeness"]
    assert (completeness["failed"], completeness["skipped"], completeness["complete"]) == (
        0,
        2,
        True,
    )
    # `score` stores the re-classification: the run no longer asks to be re-run.
    scored = _cli("score", str(old))
    assert scored.returncode == 0, scored.stderr
    assert _statuses(old) == ["context_overflow"] * 2
    summary = json.loads((old / "summary.json").read_text())
    assert summary["completeness"]["failed"] == 0 and summary["completeness"]["complete"]
