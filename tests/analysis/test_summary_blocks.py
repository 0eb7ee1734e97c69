"""`longscope.summary`: the numbers every report, comparison and profile reads, with hand-computed
values: a run's state, its one-line incompleteness, percentages, groups in numeric order, length
curves, the generic summary, statuses per length, and summary.json written and read back.

(Here rather than beside `summary.py` because `make mutation` runs the selection in setup.cfg.)
"""

from __future__ import annotations

import math

import pytest

from longscope.summary import (
    Breakdown,
    Cell,
    Grid,
    Headline,
    Summary,
    Table,
    View,
    curve,
    finite,
    group_cells,
    incomplete_line,
    length_key,
    no_score_text,
    percent,
    request_counts,
    row_value,
    simple_summary,
    state_of,
    statuses_of,
    with_run,
)
from longscope.types import Generation, Score, ScoredRow


def _row(task: str, length: int, status: str, score: float | None, **meta) -> ScoredRow:
    sample = {"id": f"{task}-{length}", "task": task, "length": length, "meta": meta}
    return ScoredRow(
        sample, 0, Generation("a", status), Score(score, 1.0) if score is not None else None
    )


# --- completeness ------------------------------------------------------------------------------
def test_state_of_a_run() -> None:
    assert state_of(None) == "complete"  # a run from before completeness records
    assert state_of({"scored": 0, "complete": True}) == "none"
    assert state_of({}) == "none"
    assert state_of({"scored": 3, "complete": False}) == "provisional"
    assert state_of({"scored": 3, "complete": True}) == "complete"
    assert state_of({"scored": 3}) == "complete"


def test_incomplete_line_names_counts_and_reasons() -> None:
    record = {
        "requested": 40,
        "scored": 28,
        "failed": 12,
        "missing": 0,
        "complete": False,
        "reasons": {"503": 9, "timeout": 3},
    }
    assert incomplete_line(record) == (
        "incomplete: 12 of 40 requests failed: 503 ×9, timeout ×3; "
        "re-run the same command to retry them"
    )
    unanswered = {**record, "failed": 2, "missing": 3, "reasons": {"503": 2, "not run": 3}}
    assert incomplete_line(unanswered) == (
        "incomplete: 5 of 40 requests were not answered: 503 ×2, not run ×3; "
        "re-run the same command to retry them"
    )
    assert incomplete_line({**record, "complete": True}) == ""
    assert incomplete_line({"requested": 1}) == ""  # no flag: complete
    assert incomplete_line(None) == "" and incomplete_line({}) == ""


def test_no_score_text_and_request_counts() -> None:
    record = {"requested": 40, "scored": 0, "skipped": 30, "failed": 6, "missing": 4}
    assert no_score_text(record) == (
        "no score: none of 40 requests was scored (30 skipped, 6 failed, 4 not run)"
    )
    assert request_counts({**record, "complete": False}) == {
        "requested": 40,
        "scored": 0,
        "skipped": 30,
        "failed": 6,
        "missing": 4,
    }
    assert request_counts(None) == {
        "requested": 0,
        "scored": 0,
        "skipped": 0,
        "failed": 0,
        "missing": 0,
    }


# --- building blocks ---------------------------------------------------------------------------
def test_row_value_counts_only_scorable_answers() -> None:
    assert row_value(_row("t", 1, "ok", 0.25)) == 0.25
    assert row_value(_row("t", 1, "length", 0.5)) == 0.5  # a length-cut answer is scored
    assert row_value(_row("t", 1, "error", 1.0)) == 0.0
    assert row_value(_row("t", 1, "ok", None)) == 0.0
    half = ScoredRow({}, 0, Generation("a", "ok"), Score(2.5, 5.0))
    assert row_value(half) == 0.5


def test_percent_rounds_the_mean_to_the_digits_asked() -> None:
    assert percent([0.5, 1 / 3]) == 41.67
    assert percent([0.5, 1 / 3], digits=1) == 41.7
    assert percent(iter([1.0, 0.0, 0.0])) == 33.33  # any iterable, read once
    assert percent([]) is None


def test_length_key_orders_numbers_numerically_then_names() -> None:
    names = ["abc", "16384", "50%", "4096", "10%", "1.5", "Abc"]
    assert sorted(names, key=length_key) == ["1.5", "10%", "50%", "4096", "16384", "Abc", "abc"]
    assert length_key("4096") == (0, 4096.0, "4096")
    assert length_key("none") == (1, 0.0, "none")


def test_group_cells_in_numeric_order_leaving_out_rows_without_a_group() -> None:
    rows = [
        _row("t", 8192, "ok", 1.0),
        _row("t", 1024, "ok", 0.5),
        _row("t", 1024, "error", None),
        _row("t", 16384, "ok", 0.0),
    ]
    cells = group_cells(rows, lambda r: r.sample["length"] if r.sample["length"] < 16384 else None)
    assert list(cells) == ["1024", "8192"]
    assert cells == {"1024": Cell(25.0, 2), "8192": Cell(100.0, 1)}
    thirds = group_cells(rows[:1] * 3 + [rows[3]], lambda r: "all", digits=1)
    assert thirds == {"all": Cell(75.0, 4)}
    custom = group_cells(rows, lambda r: "all", value=lambda r: 1.0 / 3)
    assert custom == {"all": Cell(33.33, 4)}


def test_curve_keeps_numeric_groups_with_a_score_in_length_order() -> None:
    cells = {
        "8192": Cell(50.0, 1),
        "1024": Cell(100.0, 1),
        "2048": Cell(None, 0),
        "50%": Cell(80.0, 1),
        "all": Cell(70.0, 3),
    }
    assert list(curve(cells).items()) == [(1024, 100.0), (8192, 50.0)]


def test_statuses_of_counts_overall_and_per_length_in_numeric_order() -> None:
    rows = [
        _row("t", 8192, "ok", 1.0),
        _row("t", 1024, "error", None),
        _row("t", 1024, "ok", 0.0),
        _row("t", 8192, "timeout", None),
        _row("t", 8192, "ok", 1.0),
    ]
    total, by_length = statuses_of(rows)
    assert total == {"error": 1, "ok": 3, "timeout": 1}
    assert list(total) == ["error", "ok", "timeout"]
    assert by_length == {"1024": {"error": 1, "ok": 1}, "8192": {"ok": 2, "timeout": 1}}
    assert list(by_length) == ["1024", "8192"]


def test_finite_numbers_only() -> None:
    assert finite(3) == 3.0 and isinstance(finite(3), float)
    assert finite(2.5) == 2.5
    for value in (True, False, "3", None, math.nan, math.inf, -math.inf, [1]):
        assert finite(value) is None


def test_headline_text() -> None:
    assert Headline("total", 62.456, "/100", 1, "Functional Retention").text() == (
        "62.5/100 (Functional Retention)"
    )
    assert Headline("overall", 41.666, digits=2).text() == "41.67"
    assert Headline("overall", None, "/100", 1, "x").text() == "no score"
    assert Headline().text() == "no score"
    assert Headline("overall", 0.0).text() == "0.0"


# --- the generic summary -----------------------------------------------------------------------
def test_simple_summary_of_two_tasks_in_two_languages() -> None:
    rows = [
        _row("kv", 1024, "ok", 1.0, language="en"),
        _row("kv", 2048, "ok", 0.0, language="en"),
        _row("qa", 1024, "ok", 0.5, language="zh"),
        _row("qa", 2048, "error", None, language="zh"),
    ]
    summary = simple_summary("s", "Suite S", rows, native={"k": 1})
    assert (summary.suite, summary.title, summary.native) == ("s", "Suite S", {"k": 1})
    view = summary.view
    assert view.overall == 37.5 and view.headline == Headline("overall", 37.5, digits=1)
    assert view.by_length == {1024: 75.0, 2048: 0.0}
    assert view.curves == {"kv": {1024: 100.0, 2048: 0.0}, "qa": {1024: 50.0, 2048: 0.0}}
    assert view.breakdowns == (
        Breakdown("length", "By length (tokens)", {"1024": Cell(75.0, 2), "2048": Cell(0.0, 2)}),
        Breakdown(
            "task",
            "By task",
            {"kv": Cell(50.0, 2), "qa": Cell(25.0, 2)},
            compare=True,
            plot=True,
        ),
        Breakdown(
            "language",
            "By language",
            {"en": Cell(50.0, 2), "zh": Cell(25.0, 2)},
            compare=True,
            plot=True,
        ),
    )


def test_simple_summary_of_one_task_has_no_task_curves_or_one_group_breakdowns() -> None:
    rows = [_row("kv", 1024, "ok", 1.0), _row("kv", 4096, "ok", 0.0)]
    summary = simple_summary("s", "S", rows, dimensions=(("task", "task"),))
    assert summary.view.curves == {}
    assert [b.key for b in summary.view.breakdowns] == ["length"]
    assert summary.native == {}


# --- summary.json --------------------------------------------------------------------------------
def _full() -> Summary:
    view = View(
        name="thinking",
        headline=Headline("total", 62.5, "/100", 1, "Functional Retention", "raw 12 of 20"),
        overall=62.5,
        by_length={8192: 50.0, 1024: 75.0},
        curves={"needle": {8192: 40.0, 1024: 80.0}},
        breakdowns=(
            Breakdown("type", "By type", {"needle": Cell(60.0, 2, 6.0, 10.0)}, True, True),
            Breakdown("depth", "By depth", {"10%": Cell(30.0, 1)}),
        ),
        grids=(Grid("Needle %", "length", "depth", {"1024": {"10%": 80.0}}),),
        tables=(Table("Per task", ("id", "points"), (("a", "5"),)),),
        facts=(("raw points", "12 of 20"),),
    )
    return Summary(
        suite="longctx",
        title="LongCtx",
        views=(view, View(name="other")),
        notes=("one note",),
        native={"total": 62.5, "run_id": "stale", "longscope": "stale", "suite": "x"},
        extras={"published": "v1"},
        run_id="r1",
        model="m",
        claimed=32768,
        completeness={"requested": 2, "scored": 2, "complete": True},
        statuses={"ok": 2},
        statuses_by_length={"1024": {"ok": 1}, "8192": {"ok": 1}},
    )


def test_summary_json_layout() -> None:
    data = _full().to_dict()
    # identity, completeness, the suite's own keys (never over the identity), then longscope
    assert list(data) == ["run_id", "suite", "model", "completeness", "total", "longscope"]
    assert (data["run_id"], data["suite"], data["model"], data["total"]) == (
        "r1",
        "longctx",
        "m",
        62.5,
    )
    generic = data["longscope"]
    assert generic["published"] == "v1"
    assert (generic["summary_version"], generic["title"], generic["claimed"]) == (
        1,
        "LongCtx",
        32768,
    )
    assert generic["notes"] == ["one note"] and generic["statuses"] == {"ok": 2}
    assert generic["statuses_by_length"] == {"1024": {"ok": 1}, "8192": {"ok": 1}}
    first = generic["views"][0]
    assert first["by_length"] == {"1024": 75.0, "8192": 50.0}
    assert list(first["by_length"]) == ["1024", "8192"]
    assert first["curves"] == {"needle": {"1024": 80.0, "8192": 40.0}}
    assert first["headline"] == {
        "label": "total",
        "score": 62.5,
        "scale": "/100",
        "digits": 1,
        "level": "Functional Retention",
        "note": "raw 12 of 20",
    }
    assert first["breakdowns"][0] == {
        "key": "type",
        "title": "By type",
        "compare": True,
        "plot": True,
        "cells": {"needle": {"score": 60.0, "n": 2, "points": 6.0, "max": 10.0}},
    }
    assert first["breakdowns"][1]["cells"] == {"10%": {"score": 30.0, "n": 1}}  # no None fields
    assert first["grids"] == [
        {
            "title": "Needle %",
            "rows_label": "length",
            "columns_label": "depth",
            "rows": {"1024": {"10%": 80.0}},
        }
    ]
    assert first["tables"] == [
        {"title": "Per task", "columns": ["id", "points"], "rows": [["a", "5"]]}
    ]
    assert first["facts"] == [["raw points", "12 of 20"]]
    bare = Summary(suite="s", title="S").to_dict()
    assert "claimed" not in bare["longscope"] and "completeness" not in bare


def test_summary_json_reads_back_to_the_same_summary() -> None:
    summary = _full()
    back = Summary.from_dict(summary.to_dict())
    # the suite's own keys come back without the ones summary.json owns
    assert back == Summary(**{**summary.__dict__, "native": {"total": 62.5}})
    assert back.views[0].breakdowns[1].cells == {"10%": Cell(30.0, 1)}
    assert Summary.from_dict({"suite": "s", "longscope": {"views": []}}).title == "s"


def test_a_cell_without_a_score_reads_back() -> None:
    """A group whose every answer failed has no score: summary.json leaves the key out, and
    reading it back must not fail (a report of a stored run)."""
    empty = Breakdown("task", "Per task", {"a": Cell(None, 0), "b": Cell(50.0, 2)})
    view = View(name="v", breakdowns=(empty,))
    written = Summary(suite="s", title="S", views=(view,)).to_dict()
    cells = written["longscope"]["views"][0]["breakdowns"][0]["cells"]
    assert cells == {"a": {"n": 0}, "b": {"score": 50.0, "n": 2}}
    back = Summary.from_dict(written)
    assert back.views[0].breakdowns[0].cells == {"a": Cell(None, 0), "b": Cell(50.0, 2)}


def test_a_summary_from_before_the_typed_view_is_read_from_its_own_keys() -> None:
    old = {
        "run_id": "r0",
        "suite": "longctx",
        "model": "m",
        "completeness": {"scored": 1},
        "statuses": {"ok": 1},
        "total": 55.0,
        "by_length": {"4096": {"percent": 60.0}, "1024": 50.0, "all": 1.0},
    }
    summary = Summary.from_dict(old)
    assert (summary.run_id, summary.model, summary.suite) == ("r0", "m", "longctx")
    assert summary.completeness == {"scored": 1} and summary.statuses == {"ok": 1}
    assert summary.overall == 55.0 and summary.by_length == {1024: 50.0, 4096: 60.0}
    assert summary.native["total"] == 55.0 and "run_id" not in summary.native


@pytest.mark.parametrize(
    ("native", "overall"),
    [
        ({"overall": 40.0, "total": 50.0}, 40.0),
        ({"total": 50.0}, 50.0),
        ({"headline": {"average": 30.0}}, 30.0),
        ({"overall": "n/a", "total": 50.0}, 50.0),
        # no overall: the mean of the length curve, to 2 digits
        ({"by_length": {"1024": 100.0, "2048": 50.0, "4096": 0.5}}, 50.17),
        ({"by_length": {"1024": None}}, None),
        ({}, None),
    ],
)
def test_from_native_overall(native: dict, overall: float | None) -> None:
    summary = Summary.from_native("x", native)
    assert summary.overall == overall and summary.headline.score == overall
    assert summary.headline.digits == 2 and summary.title == "x" and summary.native == native


def test_from_native_curves_and_task_breakdown() -> None:
    native = {
        "by_length": {"2048": {"score": 20.0}, "1024": {"percent": 10.0}},
        "by_task": {
            "kv": {"2048": 30.0, "1024": 10.0, "all": 5.0},
            "qa": {"1024": {"percent": 40.0}, "2048": None},
            "bad": 3,
            "empty": {},
        },
    }
    view = Summary.from_native("x", native).view
    assert list(view.by_length.items()) == [(1024, 10.0), (2048, 20.0)]
    assert view.curves == {"kv": {1024: 10.0, 2048: 30.0}, "qa": {1024: 40.0}, "empty": {}}
    assert list(view.curves["kv"]) == [1024, 2048]
    assert view.breakdowns == (
        Breakdown("task", "By task", {"kv": Cell(20.0, 2), "qa": Cell(40.0, 1)}, compare=True),
    )
    assert Summary.from_native("x", {"by_length": {"1024": 1.0}}).view.breakdowns == ()


def test_summary_reads_its_first_view_and_state() -> None:
    summary = _full()
    assert summary.view.name == "thinking" and summary.overall == 62.5
    assert summary.by_length == {8192: 50.0, 1024: 75.0}
    assert summary.headline.level == "Functional Retention" and summary.state == "complete"
    assert Summary(suite="s", title="S", views=()).view == View()
    assert summary.view.breakdown("depth").title == "By depth"
    assert summary.view.breakdown("task") is None
    assert with_run(Summary(suite="s", title="S"), run_id="r9", model="m").run_id == "r9"


# --- what the third mutation run found untested ----------------------------------------------
def test_groups_and_statuses_in_numeric_not_text_order() -> None:
    rows = [_row("t", 16384, "ok", 1.0), _row("t", 4096, "ok", 0.0), _row("t", 4096, "ok", 1 / 3)]
    assert list(group_cells(rows, lambda r: r.sample["length"])) == ["4096", "16384"]
    # 1/6 to 1 digit
    assert group_cells(rows[1:], lambda r: "all", digits=1) == {"all": Cell(16.7, 2)}
    assert list(statuses_of(rows)[1]) == ["4096", "16384"]


def test_simple_summary_of_samples_without_meta() -> None:
    rows = [
        ScoredRow({"id": "a", "task": "t", "length": 1024}, 0, Generation("a", "ok"), Score(1, 1)),
        ScoredRow({"id": "b", "task": "t", "length": 2048}, 0, Generation("a", "ok"), Score(0, 1)),
    ]
    assert simple_summary("s", "S", rows).view.by_length == {1024: 100.0, 2048: 0.0}


def test_summary_json_of_an_older_writer_reads_with_defaults() -> None:
    data = {
        "longscope": {
            "views": [
                {
                    "overall": 50.0,
                    "breakdowns": [{"key": "task", "title": "By task", "cells": {}}],
                }
            ]
        }
    }
    summary = Summary.from_dict(data)
    assert (summary.suite, summary.title, summary.run_id, summary.model) == ("", "", "", "")
    assert summary.view == View(
        name="",
        headline=Headline(),
        overall=50.0,
        breakdowns=(Breakdown("task", "By task", {}, compare=False, plot=False),),
    )


def test_a_summary_from_before_the_typed_view_keeps_identity_out_of_its_own_keys() -> None:
    old = {"suite": "s", "model": "m", "completeness": {"scored": 1}, "total": 5.0}
    summary = Summary.from_dict(old)
    assert summary.native == {"suite": "s", "total": 5.0}
    bare = Summary.from_dict({"total": 5.0})
    assert (bare.suite, bare.run_id, bare.model) == ("", "", "")


def test_a_suites_own_model_key_never_replaces_the_runs() -> None:
    summary = Summary(suite="s", title="S", model="m", native={"model": "stale", "k": 1})
    assert summary.to_dict()["model"] == "m"
    record = {"requested": 1, "scored": 1}
    stale = Summary(suite="s", title="S", completeness=record, native={"completeness": "stale"})
    assert stale.to_dict()["completeness"] == record


def test_from_native_headline_and_task_means_to_2_digits() -> None:
    summary = Summary.from_native(
        "x", {"by_task": {"kv": {"1024": 10.0, "2048": 20.0, "4096": 20.0}}}
    )
    assert summary.headline.label == "overall"
    assert summary.view.breakdown("task").cells == {"kv": Cell(16.67, 3)}
