"""Statistics select a cell's requests by the grouping the summary records, never by its label.

Design rule: "A summary cell records the sample field and value it groups; statistics select rows
by it, never by parsing a display label." A suite whose groups are named by arbitrary words gets
the right error bars, a cell that records nothing gets none (nothing is guessed from its name),
and the summary helpers record the grouping for the suites that use them.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pytest

from longscope.analysis.uncertainty import with_uncertainty
from longscope.summary import (
    Breakdown,
    Cell,
    Summary,
    View,
    curve,
    curve_where,
    group_cells,
    group_where,
    partition_field,
    percent,
    row_value,
    simple_summary,
)
from longscope.types import Generation, Score, ScoredRow

ANALYSIS = Path(__file__).parents[2] / "src" / "longscope" / "analysis"

WORDS = {1: "fox", 2: "owl"}
"""How the wordy suite names its shelves: words that are no sample field's value for them."""
SIZES = {256: "short", 512: "long"}
# (shelf, length, right?, animal): `meta.animal` holds the words too, on other samples, as a trap
# for anything that finds a cell's requests by the field whose values match the cell names.
PLAN = [
    (1, 256, True, "fox"),
    (1, 512, True, "fox"),
    (1, 256, False, "owl"),
    (1, 512, False, "owl"),
    (2, 256, True, "fox"),
    (2, 512, False, "fox"),
    (2, 256, False, "owl"),
    (2, 512, False, "owl"),
]


def _plain_se(values: list[float]) -> float:
    """s / sqrt(n) of 0-100 values: the SE of a mean of independent samples, by hand."""
    n = len(values)
    m = sum(values) / n
    return math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1) / n)


def _wordy_suite() -> type:
    from longscope.params import Param
    from longscope.suites.base import PromptTemplate, Suite
    from longscope.types import GenerationConfig, Sample

    class Wordy(Suite):
        """Wordy: shelves named by animals, lengths by sizes (labels no field holds)."""

        name, title, version = "wordy", "Wordy", "wordy-1"
        OPTIONS = (Param("samples", "int", len(PLAN), "samples", low=1),)
        template = PromptTemplate("{context}\n\nQuestion: {question}", "\nAnswer:")
        default_config = GenerationConfig(max_tokens=8)
        default_repeats = 1

        def __init__(self, samples: int) -> None:
            self.samples = samples

        def params(self) -> dict[str, Any]:
            return {"samples": self.samples}

        def build(self, ctx: Any) -> list[Sample]:
            out = []
            for i, (shelf, length, right, animal) in enumerate(PLAN[: self.samples]):
                # Each sample its own document (own cluster); a wrong one asks for another word.
                context = f"Shelf {i}. The door is red{i}. " + "The grass is green. " * 4
                gold = (f"red{i}",) if right else ("blue",)
                meta = {"shelf": shelf, "size": SIZES[length], "animal": animal}
                out.append(
                    Sample(f"w{i}", "door", "en", context, "Colour?", gold, length, meta=meta)
                )
            return out

        def score(self, sample: dict[str, Any], generation: Generation) -> Score:
            return Score(1.0 if sample["gold"][0] in generation.text else 0.0, 1.0)

        def summarize(self, rows: Any) -> Summary:
            shelves = group_cells(
                rows, lambda r: WORDS[r.sample["meta"]["shelf"]], field="meta.shelf"
            )
            sizes = group_where(rows, lambda r: r.sample["length"], "meta.size")
            by_length: dict[int, list[float]] = {}
            for row in rows:
                by_length.setdefault(row.sample["length"], []).append(row_value(row))
            overall = percent(row_value(r) for r in rows)
            view = View(
                overall=overall,
                by_length={n: percent(v) or 0.0 for n, v in sorted(by_length.items())},
                breakdowns=(Breakdown("shelf", "By shelf", shelves),),
                length_where=sizes,
            )
            return Summary(self.name, self.title, (view,))

    return Wordy


def test_a_suite_whose_labels_are_arbitrary_words_gets_correct_error_bars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longscope import api, suites
    from longscope.models.scripted import ScriptedBackend, from_pattern

    monkeypatch.setattr(suites.REGISTRY, "_registered", dict(suites.REGISTRY._registered))
    monkeypatch.setattr(suites.REGISTRY, "_loaded", dict(suites.REGISTRY._loaded))
    suites.register_suite("wordy", _wordy_suite())
    backend = ScriptedBackend("reader", answer=from_pattern(r"The door is (\w+)"))
    result = api.evaluate(api.RunSpec.of("wordy", backend, output=tmp_path / "run"))
    summary = result.scores.summary
    [shelf] = summary.view.breakdowns
    fox, owl = shelf.cells["fox"], shelf.cells["owl"]
    # fox: shelf 1 = 1 1 0 0 (50%); owl: shelf 2 = 1 0 0 0 (25%). By the trap field
    # (`meta.animal`) "fox" would be 1 1 1 0 (75%), and no error bar would fit.
    assert (fox.score, owl.score) == (50.0, 25.0)
    assert fox.se == pytest.approx(_plain_se([100, 100, 0, 0]), abs=1e-3)  # 28.868
    assert owl.se == pytest.approx(_plain_se([100, 0, 0, 0]), abs=1e-3)  # 25.0
    assert (fox.clusters, owl.clusters) == (4, 4)
    # the curve: 256 = 1 0 1 0, 512 = 1 0 0 0, selected by `meta.size` (short / long)
    assert summary.view.by_length == {256: 50.0, 512: 25.0}
    errors = summary.view.length_errors
    assert errors[256].se == pytest.approx(_plain_se([100, 0, 100, 0]), abs=1e-3)
    assert errors[512].se == pytest.approx(_plain_se([100, 0, 0, 0]), abs=1e-3)
    assert summary.uncertainty["unmatched"] == 0
    # The grouping stays out of summary.json: stored reports keep their bytes.
    assert "where" not in str(summary.to_dict()["longscope"]["views"][0]["breakdowns"])


def _rows(plan: list[tuple[str, str, float]]) -> list[ScoredRow]:
    rows = []
    for i, (task, language, value) in enumerate(plan):
        sample = {"id": f"s{i}", "task": task, "language": language, "length": 1024}
        rows.append(ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0)))
    return rows


def test_a_cell_that_records_no_grouping_gets_no_error_bar_guessed_from_its_name() -> None:
    # The cells are named after `task` values, and their scores are those tasks' means: a guess
    # from the names would give them error bars. Nothing recorded: none, each counted unmatched.
    rows = _rows([("kv", "en", 1.0), ("kv", "en", 0.0), ("qa", "en", 1.0), ("qa", "en", 1.0)])
    cells = {"kv": Cell(50.0, 2), "qa": Cell(100.0, 2)}
    view = View(overall=75.0, breakdowns=(Breakdown("task", "By task", cells),))
    made = with_uncertainty(Summary("x", "X", (view,)), rows)
    [breakdown] = made.view.breakdowns
    assert [c.se for c in breakdown.cells.values()] == [None, None]
    assert made.uncertainty["unmatched"] == 2
    # The same cells recording their requests get them.
    recorded = {k: Cell(c.score, c.n, where={"task": k}) for k, c in cells.items()}
    view = View(overall=75.0, breakdowns=(Breakdown("task", "By task", recorded),))
    [breakdown] = with_uncertainty(Summary("x", "X", (view,)), rows).view.breakdowns
    assert breakdown.cells["kv"].se == pytest.approx(_plain_se([100, 0]))  # 50
    assert breakdown.cells["qa"].se == 0.0


def test_a_view_among_several_is_selected_by_its_recorded_where_not_its_name() -> None:
    rows = _rows([("a", "en", 1.0), ("a", "en", 0.0), ("b", "en", 1.0), ("b", "en", 1.0)])
    # A view named like a field value ("a") but recording the other task: its rows are task b's.
    first = View(name="a", overall=100.0, where={"task": "b"})
    second = View(name="b", overall=50.0)  # records nothing: one of several, no error bar
    made = with_uncertainty(Summary("x", "X", (first, second)), rows)
    assert made.views[0].overall_error is not None and made.views[0].overall_error.n == 2
    assert made.views[1].overall_error is None


def test_the_helpers_record_the_grouping_of_each_cell() -> None:
    rows = _rows([("kv", "en", 1.0), ("kv", "zh", 0.0), ("qa", "en", 0.5)])
    assert group_cells(rows, "task")["kv"].where == {"task": "kv"}
    # A function with the field it groups: its label may be anything.
    shown = group_cells(rows, lambda r: r.sample["language"].upper(), field="language")
    assert shown["ZH"].where == {"language": "zh"} and shown["ZH"].score == 0.0
    # A group whose rows hold two values of the field records nothing (no one selection).
    mixed = group_cells(rows, lambda r: "all", field="language")
    assert mixed["all"].where is None and mixed["all"].score == 50.0
    # `meta.` fields given bare, as simple_summary's dimensions are
    meta_rows = [
        ScoredRow({**r.sample, "meta": {"depth": 0.25}}, 0, r.generation, r.score) for r in rows
    ]
    assert group_cells(meta_rows, "depth")["0.25"].where == {"meta.depth": "0.25"}
    summary = simple_summary("s", "S", rows)
    view = summary.view
    assert view.length_where == {1024: {"length": "1024"}}
    assert view.curve_where == {"kv": {"task": "kv"}, "qa": {"task": "qa"}}
    assert view.breakdown("language").cells["zh"].where == {"language": "zh"}  # type: ignore[union-attr]
    assert curve_where({"512": Cell(1.0, where={"length": "512"}), "x": Cell(2.0)}) == {
        512: {"length": "512"}
    }


def test_a_function_without_its_field_records_the_field_that_splits_the_rows_as_it_does() -> None:
    rows = _rows([("kv", "en", 1.0), ("kv", "zh", 0.0), ("qa", "en", 0.5), ("qa", "zh", 1.0)])
    # Upper-case task names: `task` splits the rows as the groups do (`id` too, but not exactly:
    # one id per row, several per group).
    cells = group_cells(rows, lambda r: r.sample["task"].upper())
    assert cells["KV"].where == {"task": "kv"} and cells["QA"].where == {"task": "qa"}
    assert partition_field(rows, lambda r: r.sample["task"]) == "task"
    # Groups no field splits (kv-en and qa-zh against the rest) record nothing.
    index = {id(r): i for i, r in enumerate(rows)}
    assert partition_field(rows, lambda r: index[id(r)] in (0, 3)) is None
    halves = group_cells(rows, lambda r: "first" if index[id(r)] in (0, 3) else "second")
    assert halves["first"].where is None and halves["second"].where is None
    # A value held by a left-out row too would select it: not recorded.
    only_en = group_cells(
        rows, lambda r: "en" if r.sample["language"] == "en" and r.sample["task"] == "kv" else None
    )
    assert only_en["en"].where == {"id": "s0"}  # the one field that names exactly its row
    made = with_uncertainty(
        Summary("x", "X", (View(breakdowns=(Breakdown("task", "T", cells),)),)), rows
    )
    [breakdown] = made.view.breakdowns
    assert breakdown.cells["KV"].se == pytest.approx(_plain_se([100, 0]))


def test_a_length_curve_read_off_the_length_breakdown_records_its_cells_requests() -> None:
    # `by_length=curve(cells)` beside `Breakdown("length", ..., cells)`: nothing restated.
    rows = [
        ScoredRow({"id": f"s{i}", "task": "t", "meta": {"bin": n}}, 0, Generation("x", "ok"),
                  Score(v, 1.0))
        for i, (n, v) in enumerate([(4096, 1.0), (4096, 0.0), (8192, 0.0), (8192, 0.0)])
    ]  # fmt: skip
    bins = group_cells(rows, lambda r: r.sample["meta"]["bin"])
    view = View(by_length=curve(bins), breakdowns=(Breakdown("length", "By bin", bins),))
    assert view.length_where == {4096: {"meta.bin": "4096"}, 8192: {"meta.bin": "8192"}}
    made = with_uncertainty(Summary("x", "X", (view,)), rows).view
    assert made.length_errors[4096].se == pytest.approx(_plain_se([100, 0]))
    # a curve that is not the breakdown's (other scores) takes nothing from it
    other = View(by_length={4096: 10.0}, breakdowns=(Breakdown("length", "By bin", bins),))
    assert other.length_where == {}


def test_simple_summary_gets_exact_error_bars_from_its_recorded_grouping() -> None:
    rows = _rows([("kv", "en", 1.0), ("kv", "zh", 0.0), ("qa", "en", 1.0), ("qa", "zh", 1.0)])
    made = with_uncertainty(simple_summary("s", "S", rows), rows)
    language = made.view.breakdown("language")
    assert language is not None
    assert language.cells["en"].se == 0.0 and language.cells["en"].score == 100.0
    assert language.cells["zh"].se == pytest.approx(_plain_se([0, 100]))
    assert made.view.length_errors[1024].se == pytest.approx(_plain_se([100, 0, 100, 100]))
    assert made.uncertainty["unmatched"] == 0


def test_no_statistics_module_reads_a_label_with_a_pattern() -> None:
    """The modules that give scores their errors import no `re`: what a cell groups is recorded,
    not read back out of a label like `50%` or `8k`."""
    stats = ("clusters", "cells", "combinations", "bootstrap", "uncertainty", "compare")
    found = []
    for name in stats:
        tree = ast.parse((ANALYSIS / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if "re" in modules or getattr(node, "module", None) == "re":
                    found.append(name)
    assert not found, f"label parsing in analysis/: {found}"
