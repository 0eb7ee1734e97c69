"""Every score a report prints carries its standard error, checked by value in each format:
suites' own tables, heatmap cells, length AUC and LongScore, and `compare --published` rows."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from longscope.analysis.published import NO_SE, Published, PublishedRow
from longscope.analysis.uncertainty import with_uncertainty
from longscope.report.terminal import print_leaderboard, print_summary
from longscope.summary import Grid, Summary, View, grid_where
from longscope.types import Generation, Score, ScoredRow

from ..analysis.test_every_suite import runs  # noqa: F401  (one stored run per suite)


def _printed(summary: Summary) -> str:
    out = io.StringIO()
    print_summary(summary, Console(file=out, width=250, markup=False, highlight=False))
    return out.getvalue()


def _ruler_rows() -> list[ScoredRow]:
    def row(sid: str, task: str, length: int, value: float) -> ScoredRow:
        meta = {"target_length": length, "achieved_length": length - 50}
        sample = {"id": sid, "task": task, "gold": ["a"], "length": length, "meta": meta}
        return ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0))

    return [
        row("a1", "A", 4096, 1.0),
        row("a2", "A", 4096, 0.0),
        row("b1", "B", 4096, 1.0),
        row("a3", "A", 8192, 1.0),
        row("a4", "A", 8192, 1.0),
        row("b2", "B", 8192, 0.0),
        row("b3", "B", 8192, 1.0),
    ]


def test_rulers_task_by_length_table_shows_each_cells_se() -> None:
    from longscope.suites.ruler.summary import ruler_summary, summarize_ruler

    rows = _ruler_rows()
    summary = with_uncertainty(ruler_summary(summarize_ruler(rows, {}, [])), rows)
    assert summary.uncertainty["unmatched"] == 0
    [table] = [t for t in summary.view.tables if t.where]
    # A at 4K: 1, 0 (two clusters): weights 1/2, residuals +-50: 2/1 x (25^2 + 25^2) -> SE 50.
    # B at 4K: one sample: no spread to measure. Average at 4K: RULER's mean of task means 75,
    # weights 1/4 1/4 1/2, B's lonely sample centred on 75; tasks are strata: A's two clusters
    # 2/1, lonely B the G/(G-1) = 3/2: 2 x 2 x 12.5^2 + 3/2 x 12.5^2 = 859.375 (SE 29.3).
    # B at 8K: 0, 1 -> SE 50; A at 8K: 1, 1 -> SE 0.
    assert table.errors[0] == (None, pytest.approx(50.0), pytest.approx(0.0))
    assert table.errors[1] == (None, None, pytest.approx(50.0))
    assert table.errors[2][1] == pytest.approx(math.sqrt(859.375), abs=1e-3)
    text = _printed(summary)
    assert "50.00 ±50.0" in text and "100.00 ±n/a" in text and "75.00 ±29.3" in text
    # summary.json keeps them, cell for cell
    stored = Summary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert [t.errors for t in stored.view.tables] == [t.errors for t in summary.view.tables]


def test_heatmap_cells_show_their_se_or_why_there_is_none() -> None:
    def row(sid: str, length: int, depth: float, value: float) -> ScoredRow:
        sample = {"id": sid, "task": "needle", "length": length, "meta": {"depth": depth}}
        return ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0))

    rows = [row("n1", 4096, 0.5, 1.0), row("n2", 4096, 0.5, 0.0), row("n3", 4096, 0.1, 1.0)]
    # The cells record their requests (length, depth 0.5): "50%" is only how they are shown.
    where = grid_where(
        rows,
        lambda r: r.sample["length"],
        "length",
        lambda r: f"{round(r.sample['meta']['depth'] * 100)}%",
        "meta.depth",
    )
    assert where["4096"]["50%"] == {"length": "4096", "meta.depth": "0.5"}
    shown = {"4096": {"50%": 50.0, "10%": 100.0}}
    grid = Grid("Needle (length x depth)", "length", "depth", shown, where=where)
    view = View(overall=66.7, by_length={4096: 66.7}, grids=(grid,))
    summary = with_uncertainty(Summary("x", "X", (view,)), rows)
    [made] = summary.view.grids
    # 50% holds two samples (1, 0): SE 50; 10% one sample: None (n/a), never 0.
    assert made.errors == {"4096": {"50%": pytest.approx(50.0), "10%": None}}
    text = _printed(summary)
    assert "50 ±50.0" in text and "100 ±n/a" in text


def test_every_format_shows_length_auc_with_its_se_beside_effective_length(
    runs: dict[str, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    from longscope.run.scoring import read_run

    from ..cli_helper import longscope

    run_dir = str(runs["longbench-pro"])
    view = read_run(run_dir).summary.view
    assert view.metrics is not None and view.metrics.auc_se is not None
    auc = f"{view.metrics.auc:.1f} ± {view.metrics.auc_se:.1f}"
    table = longscope("report", run_dir)
    assert table.returncode == 0, table.stderr
    assert f"length AUC: {auc} (95% interval" in table.stdout
    assert "effective length (>= 85.6):" in table.stdout
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    written = longscope("report", run_dir, "--markdown", str(md), "--html", str(html))
    assert written.returncode == 0, written.stderr
    assert f"length AUC: {auc} (95% interval" in md.read_text(encoding="utf-8")
    assert f"length AUC</th><td>{auc} (95% interval" in html.read_text(encoding="utf-8")
    data = json.loads(longscope("report", run_dir, "--json").stdout)
    metrics = data["longscope"]["views"][0]["metrics"]
    assert (metrics["auc"], metrics["auc_se"]) == (view.metrics.auc, view.metrics.auc_se)
    compared = longscope("compare", run_dir, "--json")
    assert compared.returncode == 0, compared.stderr
    [row] = json.loads(compared.stdout)
    assert (row["AUC"], row["AUC_SE"]) == (view.metrics.auc, view.metrics.auc_se)
    shown = longscope("compare", run_dir)
    assert f"{view.metrics.auc} ±{view.metrics.auc_se:.1f}" in shown.stdout


def test_published_rows_say_they_have_no_se_and_get_an_auc() -> None:
    published = Published(
        "a model card", (PublishedRow("card-model", lengths={4096: 90.0, 8192: 70.0}),)
    )
    [row] = published.leaderboard_rows()
    assert row["SE"] == NO_SE and row["AUC_SE"] == NO_SE
    assert row["AUC"] == 80.0  # (90 + 70) / 2: two lengths weigh half each
    ours = {"model": "ours", "suite": "x", "state": "complete", "overall": 61.0, "SE": 2.5}
    out = io.StringIO()
    print_leaderboard([ours, row], Console(file=out, width=250, markup=False))
    text = out.getvalue()
    assert "not published" in text and "published rows carry no standard error" in text
