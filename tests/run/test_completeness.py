"""Completeness of a scored run: every request counted once, failures named by their reason."""

from __future__ import annotations

import io

from longscope.report.terminal import print_summary, safe_console
from longscope.run.scoring import completeness, failure_reason, incomplete_line, result_state
from longscope.suites.base import ScoredRow
from longscope.summary import Summary
from longscope.types import Generation, Score

from ..factories import stored_sample


def _sample(sid: str, length: int) -> dict:
    return stored_sample(sid, length, task="needle", language="en")


def _row(sid: str, length: int, repeat: int, status: str, error: str = "", score=None):
    return ScoredRow(_sample(sid, length), repeat, Generation("", status, error=error), score)


def test_failure_reasons_are_short_names() -> None:
    cases = {
        ("error", "gave up after 6 attempts: HTTP 503: overloaded"): "503",
        ("error", "HTTP 400: bad request"): "400",
        ("error", "gave up after 3 attempts: connection error: refused"): "connection error",
        ("error", "gave up after 6 attempts: unusable answer: body is not JSON: <html>"): (
            "unusable answer"
        ),
        ("timeout", "task limit of 122s reached after 2 attempt(s); last: HTTP 503: x"): "timeout",
        ("error", ""): "error",
    }
    for (status, error), reason in cases.items():
        assert failure_reason(Generation("", status, error=error)) == reason  # type: ignore[arg-type]


def test_counts_per_length_with_skipped_failed_and_never_answered() -> None:
    samples = {sid: _sample(sid, n) for sid, n in (("a", 4096), ("b", 4096), ("c", 8192))}
    rows = [
        _row("a", 4096, 0, "ok", score=Score(1, 1)),
        _row("a", 4096, 1, "length", score=Score(0, 1)),
        _row("b", 4096, 0, "error", "gave up after 6 attempts: HTTP 503: x"),
        # b repeat 1 never answered (interrupted)
        _row("c", 8192, 0, "skipped", "insufficient_context: needs 8192"),
        _row("c", 8192, 1, "ok", score=Score(0, 1, {"judge_failed": True})),
    ]
    record = completeness(samples, rows)
    assert {k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")} == {
        "requested": 6,
        "scored": 2,
        "skipped": 1,
        "failed": 2,
        "missing": 1,
    }
    assert record["by_length"] == {
        "4096": {"requested": 4, "scored": 2, "skipped": 0, "failed": 1, "missing": 1},
        "8192": {"requested": 2, "scored": 0, "skipped": 1, "failed": 1, "missing": 0},
    }
    assert record["complete"] is False
    assert incomplete_line(record) == (
        "incomplete: 3 of 6 requests were not answered: 503 ×1, judge failed ×1, not run ×1; "
        "re-run the same command to retry them"
    )


def test_skipped_for_context_is_complete_and_nothing_scored_prints_no_level() -> None:
    samples = {"a": _sample("a", 131072)}
    record = completeness(samples, [_row("a", 131072, 0, "skipped", "insufficient_context")])
    assert record["complete"] is True and incomplete_line(record) == ""
    summary = Summary.from_dict(
        {
            "suite": "longctx",
            "model": "m",
            "completeness": record,
            "total": 0.0,
            "level": "Severe Context Loss",
            "per_sample": {},
            "statuses": {"skipped": 1},
        }
    )
    assert result_state(summary) == "none"
    buffer = io.StringIO()
    print_summary(summary, safe_console(file=buffer, width=200))
    text = buffer.getvalue()
    assert "no score: none of 1 requests was scored (1 skipped, 0 failed, 0 not run)" in text
    assert "Severe Context Loss" not in text and "0.0/100" not in text
