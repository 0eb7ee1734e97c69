"""What `run`, `report` and `compare` say about failed work, hostile text and read-only runs.

Through the real CLI in a subprocess, against a tiny OpenAI-compatible server that injects 503s
and hostile text (tests/hostile_server.py); scores of the real model are covered elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.text.safe_text import visible

from .hostile_server import HOSTILE, HostileServer, fails_always, fails_by_hash, fails_never

WIDE = {**os.environ, "COLUMNS": "400"}  # no table cell wrapped: substrings stay whole


def longscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=WIDE,
    )


def _run(
    server: HostileServer, model: str, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return longscope(
        "run",
        "longctx",
        "--model",
        f"openai/{model}",
        "--base-url",
        server.base_url,
        "-M",
        "context_length=32768",
        "-o",
        str(out),
        "-q",
        *(extra or ("-S", "tiers=1")),
    )


def test_total_failure_exits_3_prints_no_level_and_counts_the_failures(tmp_path: Path) -> None:
    with HostileServer("m", fails=fails_always) as server:
        result = _run(server, "m", tmp_path / "run")
    assert result.returncode == 3, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "incomplete: 4 of 4 requests failed: 503 ×4; re-run the same command to retry them"
    )
    assert lines[1].startswith("LongCtx openai/m  no score: none of 4 requests was scored")
    assert "(0 skipped, 4 failed, 0 not run)" in lines[1]
    for text in (result.stdout, result.stderr):
        assert "Severe Context Loss" not in text and not re.search(r"total \d", text)
        assert "Traceback" not in text
    # the stored run says the same, in every report
    report = longscope("report", str(tmp_path / "run"), "--json")
    assert report.returncode == 0, report.stderr
    record = json.loads(report.stdout)["completeness"]
    assert {k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")} == {
        "requested": 4,
        "scored": 0,
        "skipped": 0,
        "failed": 4,
        "missing": 0,
    }
    assert record["reasons"] == {"503": 4} and record["complete"] is False
    markdown, html = tmp_path / "r.md", tmp_path / "r.html"
    files = longscope(
        "report", str(tmp_path / "run"), "--markdown", str(markdown), "--html", str(html)
    )
    assert files.returncode == 0, files.stderr
    assert "incomplete: 4 of 4 requests failed: 503 ×4" in files.stderr
    for path in (markdown, html):
        text = path.read_text(encoding="utf-8")
        assert "no score: none of 4 requests was scored" in text
        assert "Severe Context Loss" not in text and "/ 100" not in text
    board = longscope("compare", str(tmp_path / "run"), "--json")
    assert json.loads(board.stdout)[0]["state"] == "no score"
    assert "overall" not in json.loads(board.stdout)[0]


def test_partial_failure_is_provisional_and_the_same_command_retries_it(tmp_path: Path) -> None:
    with HostileServer("m", fails=fails_by_hash, answer="0.003 arc-seconds") as server:
        first = _run(server, "m", tmp_path / "run")
    report = json.loads(longscope("report", str(tmp_path / "run"), "--json").stdout)
    failed = report["completeness"]["failed"]
    assert 0 < failed < 4, "the hash should fail some prompts and pass others"
    assert first.returncode == 3, first.stderr
    assert first.stdout.splitlines()[0] == (
        f"incomplete: {failed} of 4 requests failed: 503 ×{failed}; "
        "re-run the same command to retry them"
    )
    assert "provisional (incomplete run)" in first.stdout.splitlines()[1]
    with HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as server:
        second = _run(server, "m", tmp_path / "run")
        assert server.posts == failed  # only the failed requests were sent again
    assert second.returncode == 0, second.stderr
    assert "incomplete" not in second.stdout and "provisional" not in second.stdout
    assert "(4 sent" not in second.stdout and f"({failed} sent, 0 skipped" in second.stdout


def test_an_interrupted_run_is_reported_incomplete(tmp_path: Path) -> None:
    from longscope.run.store import RunStore
    from longscope.suites import create_suite
    from longscope.suites.base import BuildContext
    from longscope.text.tokenizers import QwenTokenizer
    from longscope.types import Generation, GenerationConfig

    suite = create_suite("longctx", {"tiers": [1]})
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    with RunStore(tmp_path) as store:
        store.put_run("cut", "longctx", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("cut", samples)
        # killed after the first answer: three samples were never answered
        store.put_generation("cut", "LCB-001", 0, Generation("0.003 arc-seconds", "ok"))
    result = longscope("report", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "incomplete: 3 of 4 requests were not answered: not run ×3; "
        "re-run the same command to retry them"
    )
    assert "provisional (incomplete run)" in lines[1]


def test_hostile_text_is_printed_as_text_and_reports_are_inert(tmp_path: Path) -> None:
    model = "x[/]<img src=x onerror=alert(1)>$\\x{$"
    grid = ("--lengths", "1k,2k", "-S", "depths=0.5", "-S", "types=needle")
    # the 2K prompt fails (a hostile 503 body), the 1K one is answered with hostile text
    with HostileServer(model, fails=lambda p: len(p) > 6000, answer=HOSTILE) as server:
        result = _run(server, model, tmp_path / "run", *grid)
    assert result.returncode == 3, result.stderr
    terminal = result.stdout + result.stderr
    assert "Traceback" not in terminal
    # printed as text: markup kept literally, escape sequences and bidi overrides made visible
    assert f"LongCtx openai/{model}" in terminal
    assert visible(HOSTILE) in terminal and "[/] [bold]loud[/bold]" in terminal
    assert "\x1b" not in terminal and "\u202e" not in terminal and "\x07" not in terminal
    assert "\\x1b]0;pwned\\x07\\x1b[2J \\u202eevil\\u202c" in terminal
    markdown, html = tmp_path / "r.md", tmp_path / "r.html"
    written = longscope(
        "report", str(tmp_path / "run"), "--markdown", str(markdown), "--html", str(html)
    )
    assert written.returncode == 0, written.stderr  # `$\x{$` in a plot label does not crash
    md = markdown.read_text(encoding="utf-8")
    assert "<img" not in md and "<script" not in md and "](javascript:" not in md
    assert "openai/x\\[/\\]&lt;img src=x onerror=alert(1)&gt;$\\\\x{$" in md
    page = html.read_text(encoding="utf-8")
    assert "<img src=x" not in page and "<script>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "\x1b" not in page
    assert "\\u202eevil" in page  # the answer's bidi override shown, not obeyed


def _snapshot(directory: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.stat().st_mode, p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_read_only_run_is_reported_and_nothing_in_it_changes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as server:
        made = _run(
            server, "m", run, "--lengths", "1k,2k", "-S", "depths=0.5", "-S", "types=needle"
        )
    assert made.returncode == 0, made.stderr
    for path in [run, *run.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)  # root ignores modes: the snapshot is the test
    try:
        before = _snapshot(run)
        commands = [
            ["report", str(run)],
            ["report", str(run), "--json"],
            ["report", str(run), "--html", str(tmp_path / "r.html")],
            ["report", str(run), "--markdown", str(tmp_path / "r.md")],
            ["compare", str(run)],
            ["profile", str(run), "-o", str(tmp_path / "p.json")],
            ["longscore", str(run), "--base", "1k"],
        ]
        for command in commands:
            result = longscope(*command)
            assert result.returncode == 0, (command, result.stderr)
            assert "not a longscope store" not in result.stderr
        assert _snapshot(run) == before
    finally:
        for path in [run, *run.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    summary = json.loads(longscope("report", str(run), "--json").stdout)
    assert summary["completeness"]["scored"] == 2 and summary["by_length"]["1024"]["n"] == 1


@pytest.mark.parametrize("flag", ["--html", "--markdown"])
def test_a_report_file_is_written_whole(tmp_path: Path, flag: str) -> None:
    with HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as server:
        assert _run(server, "m", tmp_path / "run").returncode == 0
    target = tmp_path / "out" / "report"
    target.parent.mkdir()
    target.write_text("old report", encoding="utf-8")
    result = longscope("report", str(tmp_path / "run"), flag, str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_text(encoding="utf-8") != "old report"
    # the temporary file was renamed into place: nothing else left beside it
    assert sorted(p.name for p in target.parent.iterdir()) == ["report"]


def test_a_second_writer_on_one_run_directory_gets_one_line(tmp_path: Path) -> None:
    from longscope.run.store import RunLock

    with (
        HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as server,
        RunLock(tmp_path / "run"),
    ):
        result = _run(server, "m", tmp_path / "run")
        assert server.posts == 0
    assert result.returncode == 2, result.stderr
    # The forecast line comes first (nothing sent yet), then the one error line.
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("plan: ")]
    assert len(lines) == 1 and "is in use by another longscope writer (pid" in lines[0]
    assert str(os.getpid()) in lines[0]
