"""`compare --published`: published rows (a file with its source line, or a suite's shipped table)
beside the user's runs, and `--threshold` at several scores."""

from __future__ import annotations

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
