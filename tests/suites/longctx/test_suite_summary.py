"""LongCtx's summary from hand-made scored rows: total, level, per tier/length/type/depth, the
heatmap and the typed view every report reads, each number computed by hand from the points."""

from __future__ import annotations

from longscope.suites.longctx.summary import longctx_summary, summarize_longctx
from longscope.summary import Breakdown, Cell, Grid, Headline, Table
from longscope.types import Generation, Score, ScoredRow


def _row(
    sid: str,
    task: str,
    length: int,
    points: float | None,
    *,
    tier: int | None = 1,
    depth: float = 0.5,
    status: str = "ok",
    error: str = "",
    repeat: int = 0,
) -> ScoredRow:
    sample = {
        "id": sid,
        "task": task,
        "length": length,
        "language": "en",
        "meta": {"task_id": "LCB-001", "tier": tier, "depth": depth},
    }
    score = Score(points, 5.0) if points is not None else None
    return ScoredRow(sample, repeat, Generation("a", status, error=error), score)  # type: ignore[arg-type]


ROWS = [
    _row("s1", "needle", 4096, 5.0, depth=0.1),
    # two repeats: 4 and a failed request (0) -> 2 points
    _row("s2", "needle", 4096, 4.0),
    _row("s2", "needle", 4096, None, status="error", error="HTTP 500", repeat=1),
    _row("s3", "reasoning", 16384, -5.0, tier=2),
    _row("s4", "multi_fact", 16384, 3.333333, tier=2),
]


def test_native_summary_by_hand() -> None:
    native = summarize_longctx(ROWS)
    # points 5 + 2 - 5 + 3.333333 = 5.333333 of 4 x 5 = 20 -> 26.67 (Limited Retention)
    assert (native["total"], native["raw_points"], native["max_points"]) == (26.67, 5.333, 20.0)
    assert native["level"] == "Limited Retention" and native["samples"] == 4
    tier_1 = {"points": 7.0, "max": 10.0, "percent": 70.0, "n": 2}
    # -5 + 3.333333 = -1.666667: the raw points keep the penalty, the percentage floors at 0
    tier_2 = {"points": -1.667, "max": 10.0, "percent": 0.0, "n": 2}
    assert native["by_tier"] == {"1": tier_1, "2": tier_2}
    assert native["by_length"] == {"4096": tier_1, "16384": tier_2}
    assert list(native["by_length"]) == ["4096", "16384"]
    assert native["by_type"] == {
        "multi_fact": {"points": 3.333, "max": 5.0, "percent": 66.7, "n": 1},
        "needle": tier_1,
        "reasoning": {"points": -5.0, "max": 5.0, "percent": 0.0, "n": 1},
    }
    # needles only, in numeric order
    assert native["by_depth"] == {
        "10%": {"points": 5.0, "max": 5.0, "percent": 100.0, "n": 1},
        "50%": {"points": 2.0, "max": 5.0, "percent": 40.0, "n": 1},
    }
    assert list(native["by_depth"]) == ["10%", "50%"]
    assert native["heatmap"] == {"4096": {"10%": 100.0, "50%": 40.0}}
    assert native["statuses"] == {"ok": 4, "error": 1}
    assert native["per_sample"] == {
        "s1": {"task": "needle", "length": 4096, "points": 5.0, "statuses": {"ok": 1}},
        "s2": {
            "task": "needle",
            "length": 4096,
            "points": 2.0,
            "statuses": {"ok": 1, "error": 1},
            "reason": "HTTP 500",
        },
        "s3": {"task": "reasoning", "length": 16384, "points": -5.0, "statuses": {"ok": 1}},
        "s4": {"task": "multi_fact", "length": 16384, "points": 3.333, "statuses": {"ok": 1}},
    }


def test_typed_summary_by_hand() -> None:
    native = summarize_longctx(ROWS)
    summary = longctx_summary(native, ROWS)
    assert (summary.suite, summary.title, summary.native) == ("longctx", "LongCtx", native)
    view = summary.view
    assert view.headline == Headline(
        "total", 26.67, "/100", 1, "Limited Retention", "raw points 5.333 of 20"
    )
    assert view.headline.text() == "26.7/100 (Limited Retention)"
    assert view.overall == 26.67
    assert view.by_length == {4096: 70.0, 16384: 0.0}
    # per type, by length: needle 7 of 10, multi_fact 3.333 of 5, reasoning floored at 0
    assert view.curves == {
        "multi_fact": {16384: 66.7},
        "needle": {4096: 70.0},
        "reasoning": {16384: 0.0},
    }
    assert view.breakdowns == (
        Breakdown(
            "tier", "By tier", {"1": Cell(70.0, 2, 7.0, 10.0), "2": Cell(0.0, 2, -1.667, 10.0)}
        ),
        Breakdown(
            "length",
            "By length (tokens)",
            {"4096": Cell(70.0, 2, 7.0, 10.0), "16384": Cell(0.0, 2, -1.667, 10.0)},
        ),
        Breakdown(
            "type",
            "By task type",
            {
                "multi_fact": Cell(66.7, 1, 3.333, 5.0),
                "needle": Cell(70.0, 2, 7.0, 10.0),
                "reasoning": Cell(0.0, 1, -5.0, 5.0),
            },
            compare=True,
            plot=True,
        ),
        Breakdown(
            "depth",
            "Needle depth (position bias)",
            {"10%": Cell(100.0, 1, 5.0, 5.0), "50%": Cell(40.0, 1, 2.0, 5.0)},
        ),
    )
    # one length with two depths is already a heatmap
    assert view.grids == (
        Grid(
            "Needle score % (length x depth)",
            "length",
            "depth",
            {"4096": {"10%": 100.0, "50%": 40.0}},
        ),
    )
    assert view.tables == (
        Table(
            "Per task",
            ("id", "type", "length", "points", "status", "reason"),
            (
                ("s1", "needle", "4096", "5", "ok", ""),
                ("s2", "needle", "4096", "2", "ok, error", "HTTP 500"),
                ("s3", "reasoning", "16384", "-5", "ok", ""),
                ("s4", "multi_fact", "16384", "3.333", "ok", ""),
            ),
        ),
    )
    assert view.facts == (("raw points", "5.333 of 20"),)


def test_heatmap_rows_in_numeric_length_order_and_repeats_counted_in_the_status() -> None:
    rows = [
        _row("a", "needle", 16384, 5.0, tier=None),
        _row("b", "needle", 4096, 5.0, tier=None),
        _row("b", "needle", 4096, 5.0, tier=None, repeat=1),
    ]
    view = longctx_summary(summarize_longctx(rows), rows).view
    [grid] = view.grids
    assert list(grid.rows) == ["4096", "16384"]
    assert view.tables[0].rows[1][4] == "ok 2"
    # grid mode (no tier): no tier breakdown; the depth breakdown is there
    assert [b.key for b in view.breakdowns] == ["length", "type", "depth"]
    assert view.curves == {"needle": {4096: 100.0, 16384: 100.0}}


def test_one_length_and_one_depth_has_no_curves_and_no_heatmap() -> None:
    rows = [_row("a", "needle", 4096, 5.0), _row("b", "multi_fact", 4096, 1.0)]
    view = longctx_summary(summarize_longctx(rows), rows).view
    assert view.curves == {} and view.grids == ()


def test_no_depth_breakdown_without_needles() -> None:
    rows = [_row("a", "reasoning", 4096, 5.0), _row("b", "multi_fact", 8192, 1.0)]
    view = longctx_summary(summarize_longctx(rows), rows).view
    assert [b.key for b in view.breakdowns] == ["tier", "length", "type"]
    assert view.grids == ()


def test_nothing_scored_has_no_total_and_no_level() -> None:
    native = summarize_longctx([])
    assert (native["total"], native["max_points"], native["samples"]) == (0.0, 0.0, 0)
    view = longctx_summary(native, []).view
    assert view.headline.score is None and view.headline.level is None
    assert view.overall is None and view.headline.text() == "no score"


def test_position_bias_counts_as_a_needle_in_depth_and_heatmap() -> None:
    rows = [
        # grid ids: numeric order (4096 before 16384), not text order
        _row("needle-16384-d005", "position_bias", 16384, 10 / 3, tier=None, depth=0.05),
        _row("needle-4096-d090", "position_bias", 4096, 0.0, tier=None, depth=0.9),
        _row("needle-4096-d010", "needle", 4096, 5.0, tier=None, depth=0.1),
    ]
    native = summarize_longctx(rows)
    # 5% before 10% before 90%; 0.9 x 100 = 90
    assert list(native["by_depth"]) == ["5%", "10%", "90%"]
    # 10/3 of 5 points = 66.67% shown to 1 digit; 0 points stay 0
    assert native["heatmap"] == {
        "16384": {"5%": 66.7},
        "4096": {"90%": 0.0, "10%": 100.0},
    }
    assert list(native["per_sample"]) == [
        "needle-4096-d010",
        "needle-4096-d090",
        "needle-16384-d005",
    ]
