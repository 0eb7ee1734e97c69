"""Difficulty calibration from hand-made scored runs: failed answers, the summary pass mark, and
the labels file written and read back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.run.scoring import ScoreResult
from longscope.suites.longbench_pro.calibrate import LABELS_VERSION, difficulty_labels, load_labels
from longscope.summary import Summary
from longscope.types import Generation, Score, ScoredRow


def _result(
    run_id: str, model: str, outcomes: dict[str, tuple[str, str, float | None]]
) -> ScoreResult:
    """A scored LongBench Pro run: row id -> (metric, status, score or None)."""
    rows = [
        ScoredRow(
            {
                "id": f"{rid}#nonthinking",
                "meta": {"row_id": rid, "mode": "nonthinking", "metric": metric},
            },
            0,
            Generation("answer" if score is not None else "", status),
            Score(score, 1.0) if score is not None else None,
        )
        for rid, (metric, status, score) in outcomes.items()
    ]
    return ScoreResult(run_id, "longbench-pro", {}, Summary("longbench-pro", "", model=model), rows)


def _tiers(outcomes: dict[str, tuple[str, str, float | None]]) -> dict[str, list[ScoreResult]]:
    # every model of every tier gives the same outcomes: a row is Extreme unless solved
    return {
        tier: [_result(f"{tier}{i}", f"{tier}-model-{i}", outcomes) for i in range(2)]
        for tier in ("high", "mid", "low")
    }


def test_failed_generations_never_solve_and_summary_rows_pass_above_065() -> None:
    labels = difficulty_labels(
        _tiers(
            {
                "right": ("accuracy", "ok", 1.0),
                "cut": ("accuracy", "length", 1.0),  # a length-cut answer is scored
                "failed": ("accuracy", "error", None),
                "summary": ("summary", "ok", 0.7),  # above 0.65: solved (not >= 1.0)
                "summary-at-mark": ("summary", "ok", 0.65),
                "partial": ("f1", "ok", 0.7),  # other metrics need 1.0
            }
        )
    )["labels"]
    assert labels == {
        "cut#nonthinking": "Easy",
        "failed#nonthinking": "Extreme",
        "partial#nonthinking": "Extreme",
        "right#nonthinking": "Easy",
        "summary#nonthinking": "Easy",
        "summary-at-mark#nonthinking": "Extreme",
    }


def test_labels_file_round_trip_with_its_provenance(tmp_path: Path) -> None:
    tiers = _tiers({"r1": ("accuracy", "ok", 1.0)})
    data = difficulty_labels(tiers)
    assert data["labels_version"] == LABELS_VERSION
    assert data["tiers"] == {
        tier: [{"model": f"{tier}-model-{i}", "run_id": f"{tier}{i}"} for i in range(2)]
        for tier in ("high", "mid", "low")
    }
    assert data["rule"] == (
        "solved = mean score 1.0 (summary > 0.65); Extreme <= 1 high, Hard <= 1 mid, "
        "Moderate <= 1 low, else Easy"
    )
    assert data["created"].endswith("+00:00") and len(data["created"]) == 25
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_labels(path) == {"r1#nonthinking": "Easy"}


def test_calibration_refuses_unknown_tiers_and_other_suites() -> None:
    tiers = _tiers({"r1": ("accuracy", "ok", 1.0)})
    with pytest.raises(ValueError, match="at least one run for each of --high, --mid and --low"):
        difficulty_labels({**tiers, "top": tiers["high"]})
    other = ScoreResult("x1", "longctx", {}, Summary("longctx", "", model="m"), [])
    with pytest.raises(ValueError, match=r"^run x1 is longctx, not longbench-pro$"):
        difficulty_labels({**tiers, "low": [other]})


def test_each_label_at_its_at_most_one_model_boundary_and_rows_one_tier_did_not_run() -> None:
    # Three models per tier; solved[row] lists, per tier, which of its models solve the row.
    solved = {
        "x": {"high": 1, "mid": 3, "low": 3},  # one high model: Extreme
        "h": {"high": 2, "mid": 1, "low": 3},  # two high, one mid: Hard
        "m": {"high": 2, "mid": 2, "low": 1},  # Moderate
        "e": {"high": 2, "mid": 2, "low": 2},  # Easy
        "e0": {"high": 3, "mid": 3, "low": 3},
    }

    def run(tier: str, i: int) -> ScoreResult:
        rows = {rid: ("accuracy", "ok", 1.0 if i < n[tier] else 0.0) for rid, n in solved.items()}
        if tier == "high":
            rows["high-only"] = ("accuracy", "ok", 1.0)  # a row the mid and low runs lack
        return _result(f"{tier}{i}", f"{tier}-{i}", rows)

    tiers = {tier: [run(tier, i) for i in range(3)] for tier in ("high", "mid", "low")}
    assert difficulty_labels(tiers)["labels"] == {
        "x#nonthinking": "Extreme",
        "h#nonthinking": "Hard",
        "m#nonthinking": "Moderate",
        "e#nonthinking": "Easy",
        "e0#nonthinking": "Easy",
        # solved by all three high models, by no mid model (none ran it): Hard
        "high-only#nonthinking": "Hard",
    }


def test_a_model_solves_a_row_only_when_its_mean_over_repeats_is_1() -> None:
    def run(tier: str, i: int, scores: tuple[float, ...]) -> ScoreResult:
        rows = [
            ScoredRow(
                {"id": "r#thinking", "meta": {"row_id": "r", "mode": "thinking", "metric": "f1"}},
                repeat,
                Generation("answer", "ok"),
                Score(score, 1.0),
            )
            for repeat, score in enumerate(scores)
        ]
        return ScoreResult(
            f"{tier}{i}", "longbench-pro", {}, Summary("longbench-pro", "", model=f"m{i}"), rows
        )

    both = {t: [run(t, i, (1.0, 1.0)) for i in range(2)] for t in ("high", "mid", "low")}
    assert difficulty_labels(both)["labels"] == {"r#thinking": "Easy"}
    # one repeat of two right: a mean of 0.5 solves nothing
    half = {t: [run(t, i, (1.0, 0.0)) for i in range(2)] for t in ("high", "mid", "low")}
    assert difficulty_labels(half)["labels"] == {"r#thinking": "Extreme"}


def test_calibration_without_a_tier_says_which_flags_it_needs() -> None:
    tiers = _tiers({"r1": ("accuracy", "ok", 1.0)})
    message = r"^calibration needs at least one run for each of --high, --mid and --low$"
    with pytest.raises(ValueError, match=message):
        difficulty_labels({"high": tiers["high"], "mid": tiers["mid"]})
