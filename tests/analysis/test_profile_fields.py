"""The profile file the router reads and the leaderboard `compare` prints, key for key, from typed
summaries with hand-computed numbers (no run is built: each test is a few milliseconds)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from longscope.analysis.profile import (
    PROFILE_VERSION,
    as_summary,
    leaderboard,
    length_curve,
    longscores,
    model_profile,
)
from longscope.results import Profile
from longscope.summary import Breakdown, Cell, Summary, View

COMPLETE = {"requested": 5, "scored": 5, "skipped": 0, "failed": 0, "missing": 0, "complete": True}
NOTHING = {"requested": 4, "scored": 0, "skipped": 4, "failed": 0, "missing": 0, "complete": False}

# 85.6 is passed up to 4096 (84 < 85.6); 90% of the base 88.89 is 80.001, passed up to 8192.
CURVE = {2048: 88.89, 4096: 88.0, 6144: 84.0, 8192: 81.0, 16384: 30.0}


def _summary(
    by_length: dict[int, float],
    *,
    model: str = "m",
    completeness: dict | None = COMPLETE,
    curves: dict[str, dict[int, float]] | None = None,
    run_id: str = "r1",
) -> Summary:
    view = View(name="", overall=50.0, by_length=by_length, curves=curves or {})
    return Summary(
        suite="hundred",
        title="100-LongBench",
        views=(view,),
        run_id=run_id,
        model=model,
        claimed=32768,
        completeness=completeness,
    )


def test_profile_fields_key_for_key() -> None:
    # per-category curve: kv passes 85.6 up to 2048 and 80 up to 4096; an empty curve is skipped
    summary = _summary(CURVE, curves={"kv": {2048: 100.0, 4096: 82.0, 8192: 50.0}, "qa": {}})
    profile = model_profile([summary])
    assert profile == {
        "profile_version": PROFILE_VERSION,
        "model": "m",
        "claimed_context": 32768,
        "effective_context": 4096,
        "effective_label": "4096",
        "measured": [
            {
                "suite": "hundred",
                "run_id": "r1",
                "view": "",
                "threshold": 85.6,
                "effective_length": 4096,
                "effective_label": "4096",
                # 0.9 x 88.89 = 80.001, shown to 2 decimals
                "relative_threshold": 80.0,
                "relative_effective_length": 8192,
                "relative_label": "8192",
                # inc = (1x88.89 + 2x88 + 3x84 + 4x81 + 5x30) / 15 = 990.89 / 15
                # dec = (5x88.89 + 4x88 + 3x84 + 2x81 + 1x30) / 15 = 1240.45 / 15
                "wAvg_inc": 66.06,
                "wAvg_dec": 82.7,
                # no SEs: this summary was built by hand, never scored from requests
                "wAvg_inc_SE": None,
                "wAvg_dec_SE": None,
                # trapezoid on tokens: 2048 x (176.89 + 172 + 165) / 2 + 8192 x 111 / 2
                # = 980,879.36 over 16384 - 2048 = 14,336 tokens
                "AUC": 68.42,
                "AUC_SE": None,
                "scores": {"2048": 88.89, "4096": 88.0, "6144": 84.0, "8192": 81.0, "16384": 30.0},
                "effective_by_category": {"kv": "2048"},
                "complete": True,
                "requests": {"requested": 5, "scored": 5, "skipped": 0, "failed": 0, "missing": 0},
            }
        ],
        "date": dt.date.today().isoformat(),
    }
    # another threshold moves every effective length, per category too
    [at_80] = model_profile([summary], threshold=80.0)["measured"]
    assert (at_80["effective_length"], at_80["effective_by_category"]) == (8192, {"kv": "4096"})
    # another fraction of the base: 50% of 88.89 = 44.445 -> 44.45, passed up to 8192
    [half] = model_profile([summary], relative=0.5)["measured"]
    assert (half["relative_threshold"], half["relative_label"]) == (44.45, "8192")


def test_a_run_without_a_score_is_skipped_wherever_it_comes_in_the_list() -> None:
    none = _summary({2048: 0.0}, completeness=NOTHING, run_id="r0")
    profile = model_profile([none, _summary(CURVE)])
    assert [m["run_id"] for m in profile["measured"]] == ["r1"]
    assert profile["effective_context"] == 4096


def test_no_effective_length_anywhere_is_none_not_0() -> None:
    failing = _summary({2048: 10.0, 4096: 5.0})
    profile = model_profile([failing])
    assert profile["effective_context"] is None
    assert profile["measured"][0]["effective_label"] == "<2048"
    assert profile["effective_label"] == "<2048"
    assert Profile.of(profile, None).describe() == "m: claimed 32768, effective <2048"


def test_a_suite_below_its_shortest_length_leaves_no_effective_context() -> None:
    """The least of the measurements: a suite failing at its shortest length is below every
    length another suite passed, so nothing is left to rely on (was: the other suite's)."""
    passing, failing = _summary(CURVE, run_id="r1"), _summary({8192: 10.0}, run_id="r2")
    assert model_profile([passing])["effective_context"] == 4096
    both = model_profile([passing, failing])
    assert (both["effective_context"], both["effective_label"]) == (None, "<8192")
    assert model_profile([passing])["effective_label"] == "4096"


def test_profile_errors_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^a profile needs at least one scored run$"):
        model_profile([])
    with pytest.raises(ValueError, match=r"^runs are of different models: m, n$"):
        model_profile([_summary(CURVE, model="n"), _summary(CURVE, model="m")])


def test_as_summary_reads_a_scored_run_and_refuses_anything_else() -> None:
    summary = _summary(CURVE)
    assert as_summary(SimpleNamespace(summary=summary)) is summary
    assert length_curve(SimpleNamespace(summary=summary)).scores == CURVE
    curve = length_curve(summary)
    assert (curve.suite, curve.model, curve.claimed, curve.scores) == ("hundred", "m", 32768, CURVE)
    with pytest.raises(TypeError, match=r"^not a summary or a scored run: int$"):
        as_summary(3)
    with pytest.raises(TypeError, match=r"^not a summary or a scored run: SimpleNamespace$"):
        as_summary(SimpleNamespace(summary={"total": 1}))


def test_longscores_per_category_and_overall_with_the_floor_given() -> None:
    view = View(
        by_length={2048: 40.0, 4096: 40.0, 6144: 40.0, 8192: 20.0},
        curves={"kv": {2048: 80.0, 4096: 80.0, 6144: 80.0, 8192: 60.0}, "qa": {}},
    )
    scores = longscores(view)
    assert set(scores) == {"kv", "overall"}
    assert (scores["overall"].base, scores["overall"].average) == (40.0, -50.0)
    assert (scores["kv"].base, scores["kv"].average) == (80.0, -25.0)
    # a floor of 50 points leaves the overall curve (base 40) undefined, not kv (base 80)
    floored = longscores(view, floor=50.0)
    assert floored["overall"].average is None and floored["kv"].average == -25.0
    assert longscores(view, base_lengths=(2048,))["overall"].lc == {
        4096: 0.0,
        6144: 0.0,
        8192: -50.0,
    }


# --- the leaderboard -----------------------------------------------------------------------------
def _two_views() -> Summary:
    by_length = {2048: 80.0, 4096: 80.0, 6144: 60.0, 8192: 40.0, 16384: 20.0}
    first = View(
        name="nonthinking",
        overall=60.0,
        by_length=by_length,
        breakdowns=(
            Breakdown("task", "By task", {"kv": Cell(70.0, 2), "qa": Cell(None, 0)}, compare=True),
            Breakdown("depth", "By depth", {"10%": Cell(50.0, 1)}),
        ),
    )
    second = View(
        name="thinking",
        overall=75.0,
        breakdowns=(Breakdown("task", "By task", {"kv": Cell(80.0, 2)}, compare=True),),
    )
    completeness = {
        "requested": 12,
        "scored": 10,
        "skipped": 1,
        "failed": 1,
        "missing": 0,
        "complete": False,
    }
    return Summary(
        suite="longbench-pro",
        title="LongBench Pro",
        views=(first, second),
        model="m",
        claimed=32768,
        completeness=completeness,
    )


def test_leaderboard_row_of_a_run_with_two_named_views_key_for_key() -> None:
    [row] = leaderboard([_two_views()], thresholds=(80.0, 50.0), base_lengths=(2048, 4096))
    assert row == {
        "model": "m",
        "suite": "longbench-pro",
        "state": "provisional",
        "requested": 12,
        "scored": 10,
        "skipped": 1,
        "failed": 1,
        "missing": 0,
        "claimed": 32768,
        # 80 passes at 80 (>=) up to 4096; 50 up to 6144
        "effective": "4096",
        "effective@50": "6144",
        # inc = (80 + 160 + 180 + 160 + 100) / 15, dec = (400 + 320 + 180 + 80 + 20) / 15
        "wAvg_inc": 45.33,
        "wAvg_dec": 66.67,
        # trapezoid on tokens: 2048 x (80 + 70 + 50) + 8192 x 30 = 655,360 over 14,336 tokens;
        # no SE: this summary was built by hand, never scored from requests
        "AUC": 45.71,
        "AUC_SE": None,
        "AUC_range": "2K-16K",  # the lengths the AUC covers, named beside other ranges
        # base 80 at (2048, 4096); LC -25, -50, -75 at 6144, 8192, 16384
        "LongScore": -50.0,
        "nonthinking overall": 60.0,
        "overall": 60.0,  # the first view's
        "nonthinking kv": 70.0,
        "thinking overall": 75.0,
        "thinking kv": 80.0,
        # compared breakdowns only, cells without a score left out
        "cells": [["task", "nonthinking", "kv", 70.0], ["task", "thinking", "kv", 80.0]],
        "lengths": {"2048": 80.0, "4096": 80.0, "6144": 60.0, "8192": 40.0, "16384": 20.0},
    }
    # with the default base lengths (2048, 4096, 6144) the base is 73.33: another LongScore
    [default] = leaderboard([_two_views()])
    assert default["LongScore"] == round((-45.45 + -72.73) / 2, 2)


def test_leaderboard_row_of_a_single_unnamed_view_has_no_prefixes() -> None:
    view = View(
        overall=50.0,
        by_length={8192: 50.0},
        breakdowns=(Breakdown("task", "By task", {"kv": Cell(50.0, 1)}, compare=True),),
    )
    summary = Summary(suite="hundred", title="100-LongBench", views=(view,), model="n")
    [row] = leaderboard([summary], thresholds=(85.6, 50.0))
    assert row == {
        "model": "n",
        "suite": "hundred",
        "state": "complete",
        "requested": 0,
        "scored": 0,
        "skipped": 0,
        "failed": 0,
        "missing": 0,
        "claimed": None,
        "effective": "<8192",
        "effective@50": ">8192",
        "wAvg_inc": 50.0,
        "wAvg_dec": 50.0,
        "AUC": 50.0,  # one length measured: its own score, as lm-evaluation-harness gives
        "AUC_SE": None,
        "AUC_range": "8K",
        # no score at a base length: no LongScore column
        "overall": 50.0,
        "kv": 50.0,
        "cells": [["task", "", "kv", 50.0]],
        "lengths": {"8192": 50.0},
    }


def test_leaderboard_longscore_below_the_floor_is_its_reason() -> None:
    view = View(overall=2.0, by_length={2048: 2.0, 4096: 4.0, 6144: 3.0, 8192: 1.0})
    [row] = leaderboard([Summary(suite="s", title="S", views=(view,), model="m")])
    assert row["LongScore"] == "base ability 3.00 is below the floor 5"


def test_leaderboard_ranks_a_zero_above_no_score_and_a_missing_overall_as_0() -> None:
    def run(model: str, overall: float | None, completeness: dict | None = None) -> Summary:
        view = View(overall=overall, by_length={2048: overall or 0.0})
        return Summary(suite="s", title="S", views=(view,), model=model, completeness=completeness)

    rows = leaderboard(
        [run("none", None, NOTHING), run("unknown", None), run("zero", 0.0), run("half", 0.5)]
    )
    # "unknown" (scored, no overall) ranks as 0, in input order before "zero"; no score last
    assert [r["model"] for r in rows] == ["half", "unknown", "zero", "none"]


def test_the_relative_fraction_given_sets_the_relative_effective_length() -> None:
    # 30% of 88.89 = 26.667: every length passes (90% gives 8192)
    [low] = model_profile([_summary(CURVE)], relative=0.3)["measured"]
    assert (low["relative_effective_length"], low["relative_label"]) == (16384, ">16384")


def test_a_single_named_view_still_prefixes_its_columns() -> None:
    # a LongBench Pro run in one prompt mode: its columns say which mode
    view = View(name="thinking", overall=40.0, by_length={8192: 40.0})
    [row] = leaderboard([Summary(suite="lbp", title="LBP", views=(view,), model="m")])
    assert row["thinking overall"] == 40.0 and row["overall"] == 40.0
