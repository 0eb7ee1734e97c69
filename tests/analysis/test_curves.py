"""Length AUC, the curve metrics carried in the summary, and their standard errors, by hand."""

from __future__ import annotations

import math

import pytest

from longscope.analysis.curves import at_base_lengths, auc_weights, curve_metrics, length_auc
from longscope.analysis.uncertainty import (
    Columns,
    Fitted,
    Unit,
    combination_se,
    longscore_gradient,
    with_uncertainty,
)
from longscope.summary import Summary, View
from longscope.types import Generation, Score, ScoredRow


def test_auc_weights_are_the_trapezoid_on_a_linear_token_axis() -> None:
    # 1K..8K: gaps 1024, 2048, 4096 over a width of 7168 tokens; an end weighs half its gap.
    weights = auc_weights([8192, 1024, 4096, 2048])
    assert weights == pytest.approx(
        {1024: 512 / 7168, 2048: 1536 / 7168, 4096: 3072 / 7168, 8192: 2048 / 7168}
    )
    assert sum(weights.values()) == pytest.approx(1.0)
    assert auc_weights([4096]) == {4096: 1.0}
    assert auc_weights([]) == {}


def test_length_auc_on_a_constructed_curve() -> None:
    # (512 x 100 + 1536 x 100 + 3072 x 50 + 2048 x 0) / 7168 = 358,400 / 7168 = 50
    assert length_auc({1024: 100.0, 2048: 100.0, 4096: 50.0, 8192: 0.0}) == pytest.approx(50.0)
    # On a log2 axis the same curve would give (100 + 75 + 25) / 3 = 66.7: the linear axis
    # weighs the long lengths as MRCR's boards do.
    assert length_auc({4096: 61.0}) == 61.0  # one length: its own score
    assert length_auc({}) is None


def test_length_auc_matches_the_mrcr_board() -> None:
    # contextarena.ai (the MRCR board lm-evaluation-harness's AUC follows), openai/mrcr 2-needle,
    # google/gemini-2.5-pro-preview-03-25: bins 8K..1M, and the board's "AUC @128k" 88.5% and
    # "AUC @1M" 73.7%.
    bins = {8: 98.7, 16: 94.3, 32: 89.0, 64: 88.9, 128: 84.1, 256: 81.1, 512: 72.7, 1024: 60.1}
    curve = {k * 1024: v for k, v in bins.items()}
    assert round(length_auc(curve) or 0, 1) == 73.7
    assert round(length_auc({k: v for k, v in curve.items() if k <= 131072}) or 0, 1) == 88.5


def test_curve_metrics_carry_every_number_read_off_the_curve() -> None:
    made = curve_metrics({2048: 80.0, 4096: 80.0, 6144: 60.0, 8192: 40.0})
    assert made is not None
    assert (made.effective, made.effective_tokens) == ("<2048", None)  # 80 < 85.6 from the start
    # relative: 90% of 80 = 72, passed up to 4096
    assert (made.relative, made.relative_threshold) == ("4096", 72.0)
    # (1024 x 160 + 1024 x 140 + 1024 x 100) x 2 / 6144 = 409,600 / 6144
    assert made.auc == round(409600 / 6144, 2)
    # Base: mean at 2048, 4096, 6144 = 73.33; LC at 8192 = (40 - 73.33) / 73.33 x 100
    assert made.base == 73.33
    assert made.longscore == round(100 * (40 - 220 / 3) / (220 / 3), 2)
    assert curve_metrics({}) is None


def test_other_base_lengths_are_computed_in_analysis_not_by_the_renderer() -> None:
    view = View(by_length={2048: 80.0, 4096: 80.0, 8192: 40.0})
    overall = at_base_lengths(Summary("x", "X", (view,)), (2048, 4096), 5.0).view.metrics
    assert overall is not None and (overall.base, overall.longscore) == (80.0, -50.0)


def test_auc_se_is_the_sandwich_of_the_linear_combination_with_clusters_across_lengths() -> None:
    # Four questions, each asked at 4K and 8K (one cluster each). 4K: 100 100 0 0 (S = 50);
    # 8K: 100 0 0 0 (S = 25). AUC = 0.5 x 50 + 0.5 x 25 = 37.5, each request weighs 0.125.
    # Residuals from each length's mean: 4K +50 +50 -50 -50, 8K +75 -25 -25 -25; cluster sums of
    # 0.125 x residual: 15.625, 3.125, -9.375, -9.375; squares 429.6875, x 4/3 -> SE 23.936.
    values = {4096: [100, 100, 0, 0], 8192: [100, 0, 0, 0]}
    units = [
        Unit(float(v), f"q{i}", {"id": f"q{i}-{n}", "length": str(n)})
        for n, row in values.items()
        for i, v in enumerate(row)
    ]
    fitted = Fitted("length", None, {4096: (), 8192: ()}, {})
    se, plain = combination_se(Columns(units), fitted, auc_weights([4096, 8192]))
    assert se == pytest.approx(math.sqrt(429.6875 * 4 / 3))
    # As if the 8 requests were independent, each length a stratum of 4: sum of squares
    # 0.125^2 x (4 x 2500 + 5625 + 3 x 625) x 4/3 = sum_n a_n^2 s_n^2 / n_n.
    assert plain == pytest.approx(math.sqrt(0.015625 * (10000 + 5625 + 1875) * 4 / 3))
    assert plain == pytest.approx(math.sqrt(0.25 * (10000 / 3) / 4 + 0.25 * 2500 / 4))


def test_longscore_gradient() -> None:
    # LongScore = 100 (longer / Base - 1): d/d S_8192 = 100 / Base; each of 3 base lengths
    # -100 x longer / Base^2 / 3.
    gradient = longscore_gradient([2048, 4096, 6144, 8192], base=50.0, longer=25.0)
    assert gradient == pytest.approx({8192: 2.0, 2048: -1 / 3, 4096: -1 / 3, 6144: -1 / 3})
    assert longscore_gradient([2048, 4096], base=50.0, longer=25.0) == {}


def _rows(values: dict[int, list[float]]) -> list[ScoredRow]:
    rows = []
    for length, scores in values.items():
        for i, value in enumerate(scores):
            sample = {"id": f"s{length}-{i}", "task": "t", "length": length, "gold": ["a"]}
            rows.append(ScoredRow(sample, 0, Generation("x", "ok"), Score(value, 1.0)))
    return rows


def _by_length(overall: float, by_length: dict[int, float]) -> View:
    """A view whose length curve records its requests: the samples of each `length`."""
    where = {n: {"length": str(n)} for n in by_length}
    return View(overall=overall, by_length=by_length, length_where=where)


def test_a_scored_summary_carries_auc_with_its_se_and_bootstrap_interval() -> None:
    # 4K: 1 1 0 0 (50%), 8K: 1 0 0 0 (25%), every sample its own cluster: AUC 37.5, and its SE
    # is sqrt(0.25 se_4K^2 + 0.25 se_8K^2), each length a stratum of 4 clusters (4/3 each).
    values = {4096: [1, 1, 0, 0], 8192: [1, 0, 0, 0]}
    view = _by_length(overall=37.5, by_length={4096: 50.0, 8192: 25.0})
    made = with_uncertainty(Summary("x", "X", (view,)), _rows(values))
    metrics = made.view.metrics
    assert metrics is not None and metrics.auc == 37.5
    expected = math.sqrt(0.25 * (10000 / 3) / 4 + 0.25 * 2500 / 4)
    assert metrics.auc_se == pytest.approx(expected, abs=1e-3)
    [auc] = [i for i in made.view.intervals if i.name == "length AUC"]
    assert auc.estimate == "37.5" and auc.se == metrics.auc_se
    assert float(auc.low) < 37.5 < float(auc.high)
    stored = Summary.from_dict(made.to_dict()).view
    assert stored.metrics == metrics and stored.intervals == made.view.intervals


def test_longscore_se_is_the_delta_method_on_the_clustered_sandwich() -> None:
    # Base lengths 2K 4K 6K: 100, 100, 50 (Base 83.33); 8K: 50. LongScore = 100 (50 / 83.33 - 1)
    # = -40. Gradient: 8K 100 / 83.33 = 1.2; each base length -100 x 50 / (83.33^2 x 3) = -0.24.
    # Two samples per length (own clusters), weights gradient / 2; residuals +-50 only at 6K and
    # 8K; each length a stratum of 2 (2/1): SE^2 = 2 x 2 x 50^2 x (0.6^2 + 0.12^2) = 3744.
    values = {2048: [1, 1], 4096: [1, 1], 6144: [1, 0], 8192: [1, 0]}
    view = _by_length(overall=75.0, by_length={2048: 100.0, 4096: 100.0, 6144: 50.0, 8192: 50.0})
    made = with_uncertainty(Summary("x", "X", (view,)), _rows(values)).view.metrics
    assert made is not None and made.longscore == -40.0
    g_long, g_base = 100 / 83.33, -100 * 50 / (83.33**2 * 3)
    expected = math.sqrt(2 * 2 * 50**2 * ((g_long / 2) ** 2 + (g_base / 2) ** 2))
    assert made.longscore_se == pytest.approx(expected, abs=2e-3)
    # Base: the mean of three lengths' scores (1/6 per request); only 6K varies, a stratum of 2:
    # 2/1 x 2 x (50/6)^2 = 277.8 = (1/3)^2 x 5000 / 2.
    assert made.base_se == pytest.approx(math.sqrt(2 * 2 * (50 / 6) ** 2), abs=1e-3)
    assert made.base_se == pytest.approx(math.sqrt((1 / 3) ** 2 * 5000 / 2), abs=1e-3)
    assert made.lc_se[8192] == pytest.approx(made.longscore_se, abs=1e-3)  # one longer length


def test_a_suite_that_leaves_unsent_requests_out_of_its_means_gets_its_errors() -> None:
    # A suite (MRCR) that leaves rows too long for the model out of its mean: at 4K two rows
    # sent (1, 0) and one skipped: the cell is 50, not the 33.3 of counting the skip as 0.
    rows = _rows({4096: [1, 0], 8192: [1, 1, 0, 0]})
    skipped = {"id": "s4096-9", "task": "t", "length": 4096, "gold": ["a"]}
    rows.append(ScoredRow(skipped, 0, Generation("", "skipped"), None))
    view = _by_length(overall=50.0, by_length={4096: 50.0, 8192: 50.0})
    made = with_uncertainty(Summary("x", "X", (view,)), rows)
    assert made.uncertainty["unmatched"] == 0
    # 4K: two sent, residuals +-50, weights 1/2: 2/1 x 2 x 25^2 -> SE 50 (the skip left out).
    assert made.view.length_errors[4096].se == pytest.approx(50.0)
    assert made.view.length_errors[4096].n == 2
    # AUC over 4K and 8K (1/2 each) from the 6 sent requests; the bootstrap stays on them too.
    [auc] = [i for i in made.view.intervals if i.name == "length AUC"]
    assert auc.estimate == "50.0" and made.view.metrics and made.view.metrics.auc_se is not None
    assert float(auc.low) < 50.0 < float(auc.high)
