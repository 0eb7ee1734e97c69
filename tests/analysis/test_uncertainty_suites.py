"""Every score of every suite's report carries a standard error, and effective length an interval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from longscope.run.scoring import read_run

from .test_every_suite import runs  # noqa: F401  (the module fixture: one stored run per suite)


def test_every_shown_score_has_a_standard_error(runs: dict[str, Path]) -> None:  # noqa: F811
    for name, run_dir in runs.items():
        summary = read_run(run_dir).summary
        record = summary.uncertainty
        assert record["unmatched"] == 0, name
        for view in summary.views:
            error = view.overall_error
            assert error is not None and (error.se is not None or error.clusters < 2), name
            assert set(view.length_errors) == set(view.by_length), name
            for breakdown in view.breakdowns:
                for group, cell in breakdown.cells.items():
                    if cell.score is None:
                        continue
                    # One cluster has no spread to measure: the SE is left empty, never 0.
                    assert cell.clusters is not None and cell.clusters >= 1, (name, group)
                    if cell.clusters >= 2:
                        assert cell.se is not None and cell.se_plain is not None, (name, group)
                    else:
                        assert cell.se is None, (name, group)


def test_clusters_are_the_units_samples_share(runs: dict[str, Path]) -> None:  # noqa: F811
    from longscope.run.store import RunStore

    # 100-LongBench asks each real source question at every length: one cluster per question;
    # its synthetic tasks draw every sample afresh (one cluster per sample).
    hundred = read_run(runs["hundred"])
    questions = {
        (r.sample["task"], r.sample["meta"].get("source_row", r.sample["id"])) for r in hundred.rows
    }
    assert hundred.summary.uncertainty["clusters"] == len(questions)
    # LongBench Pro's questions over one document (both modes, every repeat) are one cluster.
    lbp = read_run(runs["longbench-pro"])
    with RunStore.open_readonly(runs["longbench-pro"]) as store:
        documents = set(store.context_hashes(lbp.run_id).values())
    assert lbp.summary.uncertainty["clusters"] == len(documents)
    stored = json.loads((runs["longctx"] / "summary.json").read_text(encoding="utf-8"))
    cells = stored["longscope"]["views"][0]["breakdowns"][0]["cells"]
    assert all("se_plain" in c or c.get("clusters", 0) < 2 for c in cells.values())
    assert "seed" in stored["longscope"]["uncertainty"]["bootstrap"]


def test_hundred_clusters_a_real_question_across_its_lengths() -> None:
    from longscope.analysis.uncertainty import cluster_key_of
    from longscope.suites import create_suite

    key = cluster_key_of(create_suite("hundred", {}).cluster_key)
    at_2k = {"id": "single_doc_qa-2048-000", "task": "single_doc_qa", "meta": {"source_row": "q7"}}
    at_8k = {"id": "single_doc_qa-8192-000", "task": "single_doc_qa", "meta": {"source_row": "q7"}}
    other = {"id": "single_doc_qa-8192-001", "task": "single_doc_qa", "meta": {"source_row": "q8"}}
    assert key(at_2k) == key(at_8k) != key(other)


def test_rulers_mean_of_task_means_is_found_and_its_error_is_by_the_formula() -> None:
    from longscope.analysis.uncertainty import with_uncertainty
    from longscope.suites.ruler.summary import ruler_summary, summarize_ruler
    from longscope.types import Generation, Score, ScoredRow

    def row(sid: str, task: str, length: int, value: float) -> ScoredRow:
        meta = {"target_length": length, "achieved_length": length - 50}
        sample = {"id": sid, "task": task, "gold": ["a"], "length": length, "meta": meta}
        return ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0))

    # At 4K task A has 2 samples (1, 0), task B one (1): RULER's 4K score is (50 + 100) / 2 = 75,
    # not the 66.7 of the three samples.
    rows = [
        row("a1", "A", 4096, 1.0),
        row("a2", "A", 4096, 0.0),
        row("b1", "B", 4096, 1.0),
        row("a3", "A", 8192, 1.0),
        row("b2", "B", 8192, 0.0),
    ]
    summary = with_uncertainty(ruler_summary(summarize_ruler(rows, {}, [])), rows)
    assert summary.by_length[4096] == 75.0
    assert summary.uncertainty["unmatched"] == 0
    # Weights 1/4, 1/4, 1/2; residuals +50, -50 (task A's mean) and 100 - 75 = 25 (task B holds
    # one sample: centred on the estimate). Tasks are strata: A's 2 clusters 2/1, lonely B the
    # G/(G-1) = 3/2: 2 * (12.5^2 + 12.5^2) + 3/2 * 12.5^2 = 859.375.
    assert summary.view.length_errors[4096].se == pytest.approx(math.sqrt(859.375), abs=1e-3)


def test_profile_and_leaderboard_carry_the_intervals(runs: dict[str, Path]) -> None:  # noqa: F811
    from longscope.analysis.profile import leaderboard, model_profile

    summary = read_run(runs["hundred"]).summary
    # Right up to 4K, wrong beyond, every sample: every replicate crosses at 4096.
    measured = model_profile([summary])["measured"][0]
    absolute = measured["intervals"]["effective length (>= 85.6)"]
    assert (absolute["estimate"], absolute["low"], absolute["high"]) == ("4096", "4096", "4096")
    metrics = summary.view.metrics
    assert metrics is not None and metrics.wavg_inc_se is not None
    assert (measured["AUC"], measured["AUC_SE"]) == (metrics.auc, metrics.auc_se)
    assert (measured["wAvg_inc_SE"], measured["wAvg_dec_SE"]) == (
        metrics.wavg_inc_se,
        metrics.wavg_dec_se,
    )
    [row] = leaderboard([summary])
    assert row["effective_ci95"] == ["4096", "4096"]
    assert (row["AUC"], row["AUC_SE"], row["wAvg_inc_SE"]) == (
        metrics.auc,
        metrics.auc_se,
        metrics.wavg_inc_se,
    )
    assert row["SE"] == summary.view.overall_error.se and row["run_id"] == summary.run_id


def test_every_renderer_shows_the_errors(runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    from ..cli_helper import longscope

    run_dir = str(runs["hundred"])
    summary = read_run(run_dir).summary
    se = summary.view.overall_error.se
    table = longscope("report", run_dir)
    assert table.returncode == 0, table.stderr
    assert f"average 50.0 ± {se:.1f} (95% " in table.stdout
    assert (
        "± SE" in table.stdout and "effective length (>= 85.6): 4096 (95% interval" in table.stdout
    )
    assert "standard error clustered by the source question" in table.stdout
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    written = longscope("report", run_dir, "--markdown", str(md), "--html", str(html))
    assert written.returncode == 0, written.stderr
    text = md.read_text(encoding="utf-8")
    assert f"± {se:.1f}" in text and "| score % | ± SE | n |" in text
    assert "Score vs length (band: overall" in html.read_text(encoding="utf-8")


def test_rulers_headline_its_length_and_its_average_row_carry_one_standard_error() -> None:
    from longscope.analysis.uncertainty import with_uncertainty
    from longscope.suites.ruler.summary import ruler_summary, summarize_ruler
    from longscope.types import Generation, Score, ScoredRow

    def row(sid: str, task: str, value: float) -> ScoredRow:
        meta = {"target_length": 4096, "achieved_length": 4046}
        sample = {"id": sid, "task": task, "gold": ["a"], "length": 4096, "meta": meta}
        return ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0))

    # Task A right twice, task B wrong twice: RULER's 50.00 is the mean of the task means, and
    # the plain mean of the four requests is 50 too. Tasks are strata whose samples agree: the
    # mean of task means has no spread left (the plain mean's 28.9 was printed as the headline's
    # ± while the table's average row said 0.0).
    rows = [row("a1", "A", 1.0), row("a2", "A", 1.0), row("b1", "B", 0.0), row("b2", "B", 0.0)]
    summary = with_uncertainty(ruler_summary(summarize_ruler(rows, {}, [])), rows)
    view = summary.view
    (scores, *_) = view.tables
    average = scores.errors[-1][1]
    assert view.overall == view.by_length[4096] == 50.0
    assert view.overall_error.se == view.length_errors[4096].se == average == 0.0
    # With spread inside the tasks the three agree too, on the stratified formula:
    # A (1, 0), B (1, 1, 0, 0): 1/4 * 5000 / 2 + 1/4 * (10000 / 3) / 4 = 833.3.
    rows = [
        row("a1", "A", 1.0), row("a2", "A", 0.0),
        row("b1", "B", 1.0), row("b2", "B", 1.0), row("b3", "B", 0.0), row("b4", "B", 0.0),
    ]  # fmt: skip
    summary = with_uncertainty(ruler_summary(summarize_ruler(rows, {}, [])), rows)
    view = summary.view
    (scores, *_) = view.tables
    expected = math.sqrt(0.25 * 5000 / 2 + 0.25 * (10000 / 3) / 4)
    assert view.overall_error.se == pytest.approx(expected, abs=1e-3)
    assert view.length_errors[4096].se == scores.errors[-1][1] == view.overall_error.se


def test_profile_draws_its_intervals_at_the_relative_fraction_and_threshold_asked(
    runs: dict[str, Path],  # noqa: F811
) -> None:
    from longscope import api
    from longscope.analysis.uncertainty import cluster_key_of, intervals_at
    from longscope.suites import create_suite

    run_dir = runs["hundred"]
    stored = api.profile([run_dir]).data["measured"][0]
    assert "effective length (>= 90% of the 2048 score)" in stored["intervals"]
    made = api.profile([run_dir], threshold=50.0, relative=0.5).data["measured"][0]
    names = set(made["intervals"])
    # Written at the bars asked, never the 0.9 / 85.6 ones copied under the new threshold.
    assert made["relative_threshold"] == 50.0 and made["threshold"] == 50.0
    assert "effective length (>= 50% of the 2048 score)" in names
    assert "effective length (>= 50)" in names
    assert not any("90%" in n or "85.6" in n for n in names)
    relative = made["intervals"]["effective length (>= 50% of the 2048 score)"]
    assert relative["estimate"] == made["relative_label"]
    # The same draw as the library's, with the run's recorded seed and replicates.
    scored = read_run(run_dir)
    again = intervals_at(
        scored.summary,
        scored.rows,
        cluster_key_of(create_suite("hundred", {}).cluster_key),
        threshold=50.0,
        fraction=0.5,
    )
    assert {i.name: i.low for i in again} == {n: v["low"] for n, v in made["intervals"].items()}
