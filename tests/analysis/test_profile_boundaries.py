"""Profiles and the leaderboard from stored runs, in process, with hand-computed numbers.

Grid runs answer right at some lengths and wrong at others, so every number a user reads (the
curve, effective lengths at 85.6 and at 90% of base, RULER's weighted averages, the ranking) is
known in advance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.analysis.profile import leaderboard, model_profile, threshold_name
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.suites.base import BuildContext
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.summary import Summary
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

from ..factories import make_suite

LENGTHS = (1024, 2048, 4096)


def _run(run_dir: Path, model: str, right: set[int], status: str = "ok") -> Summary:
    """A stored LongCtx grid run (one needle per length) answered right at the lengths `right`."""
    suite = make_suite(LongCtxSuite, lengths=LENGTHS, depths=(0.5,), types=("needle",))
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    with RunStore(run_dir) as store:
        store.put_run(
            "p1",
            "longctx",
            {"params": suite.params(), "model": model, "model_info": {"context_length": 8192}},
        )
        store.put_samples("p1", samples)
        for sample in samples:
            text = sample.gold[0] if sample.length in right else "I do not know."
            error = "HTTP 500" if status == "error" else ""
            store.put_generation("p1", sample.id, 0, Generation(text, status, error=error))
    return score_run(run_dir).summary


def test_curve_profile_and_weighted_averages(tmp_path: Path) -> None:
    summary = _run(tmp_path / "a", "m", right={1024, 2048})
    assert (summary.suite, summary.model, summary.claimed) == ("longctx", "m", 8192)
    assert summary.by_length == {1024: 100.0, 2048: 100.0, 4096: 0.0}
    profile = model_profile([summary])
    assert (profile["model"], profile["claimed_context"], profile["effective_context"]) == (
        "m",
        8192,
        2048,
    )
    [measured] = profile["measured"]
    assert measured["effective_length"] == 2048 and measured["effective_label"] == "2048"
    assert measured["relative_threshold"] == 90.0 and measured["relative_effective_length"] == 2048
    assert measured["scores"] == {"1024": 100.0, "2048": 100.0, "4096": 0.0}
    assert measured["complete"] is True and measured["threshold"] == 85.6
    # inc = (1*100 + 2*100 + 3*0) / 6, dec = (3*100 + 2*100 + 1*0) / 6
    assert (measured["wAvg_inc"], measured["wAvg_dec"]) == (50.0, 83.33)
    assert measured["requests"] == {
        "requested": 3,
        "scored": 3,
        "skipped": 0,
        "failed": 0,
        "missing": 0,
    }
    assert model_profile([summary], claimed=4096)["claimed_context"] == 4096
    [row] = leaderboard([summary], thresholds=(85.6, 50.0))
    assert (row["wAvg_inc"], row["wAvg_dec"]) == (50.0, 83.33)
    assert row["overall"] == 66.67 and row["effective"] == "2048" and row["state"] == "complete"
    assert row[threshold_name(50.0)] == "2048" and threshold_name(50.0) == "effective@50"
    assert row["lengths"] == {"1024": 100.0, "2048": 100.0, "4096": 0.0}


def test_profile_takes_the_smallest_effective_length_and_skips_runs_without_scores(
    tmp_path: Path,
) -> None:
    short = _run(tmp_path / "short", "m", right={1024})
    full = _run(tmp_path / "full", "m", right=set(LENGTHS))
    failed = _run(tmp_path / "failed", "m", right=set(), status="error")
    profile = model_profile([full, short, failed])
    assert [m["effective_label"] for m in profile["measured"]] == [">4096", "1024"]
    assert profile["effective_context"] == 1024
    # base 100 at 1024 for both: the relative bar is 90 as well
    assert [m["relative_threshold"] for m in profile["measured"]] == [90.0, 90.0]
    with pytest.raises(ValueError, match="different models"):
        model_profile([full, _run(tmp_path / "other", "n", right=set())])
    with pytest.raises(ValueError, match="at least one"):
        model_profile([])
    relative = model_profile([short], relative=0.5)["measured"][0]
    assert relative["relative_threshold"] == 50.0


def test_leaderboard_ranks_by_overall_and_runs_without_scores_last(tmp_path: Path) -> None:
    failed = _run(tmp_path / "failed", "zero", right=set(), status="error")
    low = _run(tmp_path / "low", "low", right={1024})
    high = _run(tmp_path / "high", "high", right={1024, 2048})
    rows = leaderboard([failed, low, high])
    assert [(r["model"], r["state"]) for r in rows] == [
        ("high", "complete"),
        ("low", "complete"),
        ("zero", "no score"),
    ]
    assert [r.get("overall") for r in rows] == [66.67, 33.33, None]
    assert rows[2]["failed"] == 3 and rows[2]["lengths"] == {}
