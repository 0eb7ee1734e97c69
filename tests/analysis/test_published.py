"""`compare --published`: published rows (a file with its source line, or a suite's shipped table)
beside the user's runs, and `--threshold` at several scores."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from longscope import api
from longscope.analysis.published import read_published
from longscope.errors import UsageError

from ..cli_helper import longscope
from ..lbp_helper import score_predictions
from ..test_cli import FIXTURES, _stored_run


@pytest.fixture(scope="module")
def lbp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lbp")
    score_predictions(
        FIXTURES / "longbench_pro_mini.json", FIXTURES / "longbench_pro_mini_predictions.jsonl", out
    )
    return out


def test_the_longbench_pro_table_ships_46_models_with_its_source() -> None:
    table = api.published_rows("longbench-pro")
    assert "caskcsg/longcontext" in table.source and "88fbeb8" in table.source
    assert len(table.rows) == 80 and len({r.model for r in table.rows}) == 46
    claude = next(
        r for r in table.rows if (r.model, r.mode) == ("Claude-3.7-Sonnet", "nonthinking")
    )
    # average_overall_metric 0.5144730485997339 as published, shown x100
    assert claude.overall == 51.45 and claude.context == 200000
    assert claude.lengths[8192] == 59.28 and claude.lengths[262144] == 39.42
    assert set(claude.cells) == {"language", "difficulty", "requirement", "primary_task"}
    assert claude.cells["primary_task"]["T1. Retrieval & Ranking"] == 75.87


def test_a_run_among_the_published_models(lbp_run: Path) -> None:
    done = longscope("compare", str(lbp_run), "--published", "longbench-pro", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 81
    overall = [r["overall"] for r in rows]
    assert overall == sorted(overall, reverse=True)  # the run ranked among them
    (run,) = [r for r in rows if r["state"] != "published"]
    claude = next(r for r in rows if r["model"] == "Claude-3.7-Sonnet (nonthinking)")
    # the same columns for the run and the published rows: language, length, difficulty,
    # requirement, primary task
    for column in ("nonthinking English", "nonthinking Hard", "nonthinking Full"):
        assert column in run and column in claude
    assert "nonthinking T3. Evidence-Grounded QA" in claude and claude["lengths"]["8192"] == 59.28
    dimensions = {d for d, _, _, _ in claude["cells"]} | {d for d, _, _, _ in run["cells"]}
    assert dimensions == {"language", "difficulty", "requirement", "primary_task"}
    table = longscope("compare", str(lbp_run), "--published", "longbench-pro")
    assert table.returncode == 0 and "published: caskcsg/longcontext" in table.stdout
    assert "By primary task (nonthinking)" in table.stdout


def test_a_published_csv_file_and_thresholds(tmp_path: Path) -> None:
    _stored_run(tmp_path / "run")
    table = tmp_path / "paper.csv"
    table.write_text(
        "# source: Table 2 of a paper (percent)\n"
        "model,overall,length/4k,length/8k,type/needle\n"
        "big,91.0,95,88,90\n"
        "small,40.0,60,,41.5\n",
        encoding="utf-8",
    )
    rows = api.compare([tmp_path / "run"], thresholds=[85.6, 50], published=[str(table)]).rows
    assert [r["model"] for r in rows] == ["big", "small", "openai/m"]
    big = rows[0]
    assert big["effective"] == ">8192" and big["effective@50"] == ">8192"
    assert big["lengths"] == {"4096": 95.0, "8192": 88.0} and big["needle"] == 90.0
    assert rows[1]["lengths"] == {"4096": 60.0} and rows[1]["effective@50"] == ">4096"
    assert rows[2]["effective@50"] == "<4096" and "effective@50" in rows[2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model,overall\nx,1\n", "no source line"),
        ("# source: s\noverall\n1\n", "no `model` column"),
        ("# source: s\nmodel,overall\nx,high\n", "row 1: overall: 'high' is not a number"),
        ("# source: s\n# scale: thousandths\nmodel\nx\n", "scale 'thousandths'"),
    ],
)
def test_malformed_published_files_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        read_published(path)


def test_a_json_file_needs_its_source(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"columns": ["model"], "rows": [["x"]]}), encoding="utf-8")
    with pytest.raises(UsageError, match="no source line"):
        read_published(path)
    with pytest.raises(UsageError, match="ships no published rows"):
        api.published_rows("longctx")


# --- issue 39.3 / 40.4: like with like ------------------------------------------------------------

RUN_RANGE = [8192, 16384, 32768, 65536, 131072]


def _trapezoid(points: dict[int, float]) -> float:
    """PR #3754's AUC, written out here: trapezoids on a linear token axis over the width."""
    xs = sorted(points)
    area = sum((b - a) * (points[a] + points[b]) / 2 for a, b in itertools.pairwise(xs))
    return area / (xs[-1] - xs[0])


def test_published_mrcr_aucs_cover_the_runs_measured_range() -> None:
    table = api.published_rows("mrcr")
    assert table.suite == "mrcr"
    rows = {r["model"]: r for r in table.leaderboard_rows(measured=RUN_RANGE)}
    gemini = next(
        r
        for r in table.rows
        if r.model == "google/gemini-2.5-pro-preview-03-25 (2-needle)"
        or (r.model, r.mode) == ("google/gemini-2.5-pro-preview-03-25", "2-needle")
    )
    shown = rows["google/gemini-2.5-pro-preview-03-25 (2-needle)"]
    expected = _trapezoid({n: gemini.lengths[n] for n in RUN_RANGE})
    whole = _trapezoid(gemini.lengths)
    assert shown["AUC"] == pytest.approx(expected, abs=0.01)
    assert shown["AUC_range"] == "8K-128K"
    # 8K-1M reads about 16 points lower on the same curve: never printed beside an 8K-128K AUC.
    assert abs(expected - whole) > 5 and shown["AUC"] != pytest.approx(whole, abs=0.5)
    # Without a run beside them the published rows keep their own range.
    alone = {r["model"]: r for r in table.leaderboard_rows()}
    assert alone["google/gemini-2.5-pro-preview-03-25 (2-needle)"]["AUC"] == pytest.approx(
        whole, abs=0.01
    )
    assert alone["google/gemini-2.5-pro-preview-03-25 (2-needle)"]["AUC_range"] == "8K-1M"


def test_a_published_row_without_a_score_at_a_measured_length_gets_no_auc() -> None:
    table = api.published_rows("mrcr")
    full = [*RUN_RANGE, 262144, 524288, 1048576]
    rows = {r["model"]: r for r in table.leaderboard_rows(measured=full)}
    minimax = rows["minimax/minimax-01 (2-needle)"]
    assert minimax["AUC"] is None and minimax["wAvg_inc"] is None
    assert "no published score at 1048576" in minimax["AUC_note"]


def test_a_published_average_over_lengths_is_taken_over_the_runs_lengths() -> None:
    table = api.published_rows("ruler")
    index, first = next((i, r) for i, r in enumerate(table.rows) if len(r.lengths) == 6)
    measured = [4096, 8192]
    row = table.leaderboard_rows(measured=measured)[index]
    mean = (first.lengths[4096] + first.lengths[8192]) / 2
    assert row["overall"] == pytest.approx(mean, abs=0.01) != first.overall
    assert "mean over 4K-8K" in row["overall_note"]
    assert row["wAvg_inc"] == pytest.approx(
        (first.lengths[4096] + 2 * first.lengths[8192]) / 3, abs=0.01
    )
    # The README's stated wAvg is over 4K-128K: not shown beside a 4K-8K run.
    same = table.leaderboard_rows(measured=sorted(first.lengths))[index]
    assert same["overall"] == first.overall and "overall_note" not in same


def test_compare_refuses_runs_of_another_suite(tmp_path: Path) -> None:
    _stored_run(tmp_path / "run")
    for published in ("mrcr", "ruler"):
        done = longscope("compare", str(tmp_path / "run"), "--published", published)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "is a longctx run" in lines[0] and f"{published} runs only" in lines[0]
    table = tmp_path / "paper.csv"
    table.write_text("# source: s\n# suite: ruler\nmodel,overall\nbig,91\n", encoding="utf-8")
    with pytest.raises(UsageError, match="is a longctx run; these published rows are ruler"):
        api.compare([tmp_path / "run"], published=[str(table)])


def test_a_run_that_is_not_comparable_is_marked_and_ranked_after(tmp_path: Path) -> None:
    from longscope.analysis.published import Published, PublishedRow, runs_beside
    from longscope.summary import Summary, View

    table = Published("s", (PublishedRow("big", "2-needle", overall=50.0),), "mrcr")
    stand_in = Summary(
        suite="mrcr",
        title="t",
        views=(View(name="2-needle", overall=100.0, by_length={8192: 100.0}),),
        native={
            "comparable_with_published": "no",
            "differences": ["data file:x (the board: openai/mrcr)"],
        },
        run_id="r1",
    )
    eight = Summary(
        suite="mrcr",
        title="t",
        views=(View(name="8-needle", overall=90.0, by_length={8192: 90.0}),),
        native={"comparable_with_published": "yes", "differences": []},
        run_id="r2",
    )
    rows = [{"run_id": "r1", "overall": 100.0}, {"run_id": "r2", "overall": 90.0}]
    runs_beside(rows, [stand_in, eight], [table])
    assert rows[0]["comparable"] == "no: data file:x (the board: openai/mrcr)"
    assert rows[1]["comparable"] == "no: its view 8-needle is none of the published ones (2-needle)"


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("nan", "row 1: overall: 'nan' is not a finite number"),
        ("inf", "row 1: overall: 'inf' is not a finite number"),
        ("-Infinity", "is not a finite number"),
        ("9" * 5000, "row 1 has a cell of 5,000 characters"),
        ("x" * 200_000, "not a CSV table|cell of 200,000 characters"),
    ],
)
def test_non_finite_and_oversized_cells_are_one_line(
    tmp_path: Path, cell: str, message: str
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text(f"# source: s\nmodel,overall\nx,{cell}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=message) as caught:
        read_published(path)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
    _stored_run(tmp_path / "run")
    done = longscope("compare", str(tmp_path / "run"), "--published", str(path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_table_names_the_range_its_aucs_cover(tmp_path: Path) -> None:
    from rich.console import Console

    from longscope.report.terminal import print_leaderboard

    _stored_run(tmp_path / "run")
    table = tmp_path / "paper.csv"
    table.write_text(
        "# source: t\nmodel,overall,length/4k,length/8k,length/16k\nbig,91,95,88,80\n",
        encoding="utf-8",
    )
    done = longscope("compare", str(tmp_path / "run"), "--published", str(table), "--json")
    rows = json.loads(done.stdout)
    big = next(r for r in rows if r["model"] == "big")
    # The run measured 4K only: the published AUC is its 4K score, not the 4K-16K trapezoid.
    assert (big["AUC"], big["AUC_range"]) == (95.0, "4K")
    assert big["overall_note"] == "as published, over 4K-16K: not the runs' 4K"
    shown = longscope("compare", str(tmp_path / "run"), "--published", str(table))
    assert shown.returncode == 0 and "AUC 4K" in shown.stdout
    # Rows over different ranges carry theirs in each cell.
    console = Console(width=200, record=True)
    print_leaderboard(
        [
            {"model": "a", "state": "published", "AUC": 73.7, "AUC_range": "8K-1M"},
            {"model": "b", "state": "complete", "AUC": 88.5, "AUC_range": "8K-128K"},
        ],
        console,
    )
    text = console.export_text()
    assert "73.7 (8K-1M)" in text and "88.5 (8K-128K)" in text


def test_a_subset_of_the_published_setup_compares_with_its_note() -> None:
    from longscope.analysis.published import Published, PublishedRow, runs_beside
    from longscope.summary import Summary, View

    table = Published("s", (PublishedRow("big", overall=50.0),), "ruler")
    fewer = Summary(
        suite="ruler",
        title="t",
        views=(View(overall=90.0, by_length={4096: 90.0}),),
        native={"comparable_with_published": "subset of 20", "differences": ["20 of 500"]},
        run_id="r1",
    )
    rows = [{"run_id": "r1", "overall": 90.0}]
    runs_beside(rows, [fewer], [table])
    assert rows[0]["comparable"] == "subset of 20: 20 of 500"
