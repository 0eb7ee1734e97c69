"""Standard errors and intervals against values computed by hand on small tables."""

from __future__ import annotations

import itertools
import math

import pytest

from longscope.analysis.stats import (
    detectable_difference,
    estimate,
    paired_difference,
    stratified_weights,
    t975,
    t_quantile,
    unpaired_difference,
)
from longscope.analysis.uncertainty import Unit, curve_intervals
from longscope.summary import View


def test_clustered_se_by_the_formula_on_three_documents_of_two_questions() -> None:
    # Documents a, b, c; two questions each. Mean 50; residuals +-50, weight 1/6 each.
    # Cluster sums of w*e: a: (50 - 50)/6 = 0, b: 100/6, c: -100/6.
    # Clustered: 3/2 * (0 + 2 * (100/6)^2) = 833.33 -> 28.868; plain: s^2/n = 3000/5/6 = 500 -> 22.361.
    est = estimate([100, 0, 100, 100, 0, 0], ["a", "a", "b", "b", "c", "c"])
    assert est.value == pytest.approx(50.0)
    assert est.se == pytest.approx(math.sqrt(2500 / 3))
    assert est.se_plain == pytest.approx(math.sqrt(500))
    assert (est.n, est.clusters) == (6, 3)
    # The interval is t(2 df) = 4.30265 clustered SEs either side (exact; tables print 4.303).
    low, high = est.interval()
    assert (low, high) == pytest.approx((50 - 4.30265 * 28.8675, 50 + 4.30265 * 28.8675), abs=1e-3)


def test_questions_that_agree_within_a_document_widen_the_error() -> None:
    # The same six answers, now each document right or wrong as a whole: 3 clusters, not 6.
    together = estimate([100, 100, 0, 0, 100, 100], ["a", "a", "b", "b", "c", "c"])
    apart = estimate([100, 100, 0, 0, 100, 100], ["a", "b", "c", "d", "e", "f"])
    # Clustered: residuals +33.3 x2 (a), -66.7 x2 (b), +33.3 x2 (c), weight 1/6:
    # sums 11.11, -22.22, 11.11 -> 3/2 * (123.46 + 493.83 + 123.46) = 1111.1 -> 33.33.
    assert together.se == pytest.approx(100 / 3)
    assert apart.se == pytest.approx(apart.se_plain)
    assert together.se > apart.se


def test_a_mean_of_task_means_weights_each_task_equally() -> None:
    # RULER averages tasks: task A (100, 0) -> 50, task B (100) -> 100: score 75, not 66.7.
    weights, _ = stratified_weights([["A", "A", "B"]], 3)
    assert list(weights) == pytest.approx([0.25, 0.25, 0.5])
    est = estimate([100, 0, 100], ["1", "2", "3"], [["A", "A", "B"]])
    assert est.value == pytest.approx(75.0)
    # Residuals from each task's mean: +50, -50; task B has one cluster, so its residual is
    # taken from the whole estimate: 100 - 75 = 25. Weighted: 12.5, -12.5, 12.5. Tasks are strata:
    # A's two clusters get 2/1, lonely B the G/(G-1) = 3/2: 2 * 2 * 12.5^2 + 3/2 * 12.5^2 = 859.375
    # (one 3/2 for all, 703.125, left out half of A's variance).
    assert est.se == pytest.approx(math.sqrt(859.375))
    # With two clusters in B, its own mean is the centre again: residuals +50, -50, 0, 0. The
    # stratified formula sum_h w_h^2 s_h^2 / n_h: 1/4 * 5000 / 2 + 0 = 625.
    two = estimate([100, 0, 100, 100], ["1", "2", "3", "4"], [["A", "A", "B", "B"]])
    assert two.se == pytest.approx(math.sqrt(0.25 * 5000 / 2))


def test_one_cluster_has_no_standard_error() -> None:
    est = estimate([100, 0], ["a", "a"])
    assert est.se is None and est.interval() is None
    assert est.se_plain == pytest.approx(50.0)


def test_paired_difference_and_its_unpaired_fallback() -> None:
    # Per-sample differences 10, 20, 30 on three documents: mean 20, SE s/sqrt(3) = 10/sqrt(3).
    diff = paired_difference([10, 20, 30], ["a", "b", "c"])
    assert diff.value == pytest.approx(20.0) and diff.paired
    assert diff.se == pytest.approx(10 / math.sqrt(3))
    assert diff.low == pytest.approx(20 - 4.30265 * 10 / math.sqrt(3), abs=1e-4)
    # 4.303 x 5.77 = 24.8 > 20: with three documents a 20-point gain is within noise.
    assert diff.within_noise
    assert not paired_difference([18, 20, 22], ["a", "b", "c"]).within_noise  # 20 +- 4.97
    noisy = paired_difference([10, -20, 30], ["a", "b", "c"])
    assert noisy.within_noise
    a = estimate([100, 0, 100, 100], ["a", "b", "c", "d"])
    b = estimate([0, 0, 100, 0], ["e", "f", "g", "h"])
    unpaired = unpaired_difference(a, b)
    assert not unpaired.paired
    assert unpaired.value == pytest.approx(50.0)
    assert unpaired.se == pytest.approx(math.sqrt(a.se**2 + b.se**2))


# Student's t 0.975 quantiles from published tables (NIST/SEMATECH e-Handbook 1.3.6.7.2, and
# scipy.stats.t.ppf(0.975, df) to 4 decimals): the interval's width at every df, including those
# past 30 where a normal quantile is 2-4% short.
T975_TABLE = [
    (1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (5, 2.5706), (7, 2.3646),
    (10, 2.2281), (20, 2.0860), (30, 2.0423), (31, 2.0395), (40, 2.0211), (45, 2.0141),
    (60, 2.0003), (100, 1.9840), (120, 1.9799), (250, 1.9695), (301, 1.9679), (500, 1.9647),
]  # fmt: skip


@pytest.mark.parametrize(("df", "expected"), T975_TABLE)
def test_t975_is_the_exact_quantile_at_every_df(df: int, expected: float) -> None:
    assert t975(df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_other_levels_and_edges() -> None:
    # df 1 is the Cauchy: tan(pi (p - 1/2)); df 2: (2p - 1) / sqrt(2 p (1 - p)).
    assert t_quantile(0.9, 1) == pytest.approx(math.tan(math.pi * 0.4), abs=1e-9)
    assert t_quantile(0.95, 2) == pytest.approx(0.9 / math.sqrt(2 * 0.95 * 0.05), abs=1e-9)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-9)
    assert t975(0) == math.inf
    # The interval widens as df shrinks: it never jumps down past a table's end.
    values = [t975(df) for df in range(1, 400)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_t_quantiles_and_detectable_difference() -> None:
    assert t975(1000) == pytest.approx(1.9623, abs=1e-4)
    # (1.96 + 0.8416) * 50 * sqrt(2 / 100) = 19.81 points with 100 samples per length.
    assert detectable_difference(100) == pytest.approx(19.81, abs=0.01)
    assert detectable_difference(400) == pytest.approx(19.81 / 2, abs=0.01)
    assert detectable_difference(1) is None


def _curve_units(rates: dict[int, int], n: int = 50) -> list[Unit]:
    """`rates[length]` of `n` samples right (100) at each length, the rest wrong (0)."""
    units = []
    for length, right in rates.items():
        for i in range(n):
            units.append(
                Unit(100.0 if i < right else 0.0, f"{length}-{i}", {"length": str(length)})
            )
    return units


def _view(rates: dict[int, int], n: int = 50) -> View:
    return View(by_length={k: 100 * v / n for k, v in rates.items()})


def test_bootstrap_interval_on_a_curve_with_a_known_crossing() -> None:
    # 100% at 1K and 2K, 86% at 4K (just over 85.6), 20% at 8K: the run's effective length is
    # 4096, but a resampled 4K score falls under 85.6 about half the time (SE 4.9 points), so the
    # interval runs from 2048 to 4096 and never reaches 8192 (20% is 13 SEs below the bar).
    rates = {1024: 50, 2048: 50, 4096: 43, 8192: 10}
    specs = {n: () for n in rates}
    found = curve_intervals(_view(rates), _curve_units(rates), "length", specs, seed=7)
    absolute = found[0]
    assert absolute.estimate == "4096"
    assert (absolute.low, absolute.high) == ("2048", "4096")
    again = curve_intervals(_view(rates), _curve_units(rates), "length", specs, seed=7)
    assert again == found  # seeded: the same interval every time


def test_bootstrap_interval_collapses_when_the_crossing_is_clear() -> None:
    rates = {1024: 50, 2048: 50, 4096: 50, 8192: 5}
    specs = {n: () for n in rates}
    absolute, relative = curve_intervals(_view(rates), _curve_units(rates), "length", specs)[:2]
    assert (absolute.estimate, absolute.low, absolute.median, absolute.high) == ("4096",) * 4
    # Relative: 90% of the 1K score (100) is 90: the same crossing.
    assert (relative.low, relative.high) == ("4096", "4096")
    every = curve_intervals(
        _view({1024: 50, 2048: 50}),
        _curve_units({1024: 50, 2048: 50}),
        "length",
        {1024: (), 2048: ()},
    )
    assert every[0].estimate == ">2048" and every[0].high == ">2048"
