"""The adaptive search's statistics (analysis/adaptive.py): coverage, census, the stopping rule."""

from __future__ import annotations

import numpy as np
import pytest

from longscope.analysis.adaptive import (
    Bounds,
    Rule,
    confidence_path,
    decide,
    decide_bounds,
    length_alphas,
    round_values,
)
from longscope.analysis.effective import effective_length

GRID = (4096, 8192, 16384, 32768)


@pytest.mark.parametrize("method", ["asymptotic", "bernstein"])
def test_sequence_covers_the_full_grids_mean_at_every_look(method: str) -> None:
    # Time-uniform: the share of runs whose interval ever leaves the population's mean stays under
    # alpha (checked at every prefix, not only at the end).
    rng = np.random.default_rng(7)
    alpha, runs, misses = 0.1, 300, 0
    for _ in range(runs):
        population = rng.binomial(13, 0.8, size=200) / 13
        mean = population.mean()
        low, high = confidence_path(rng.permutation(population), alpha, 200, method)
        misses += bool(((low > mean + 1e-12) | (high < mean - 1e-12)).any())
    # Binomial(300, 0.1) exceeds 42 with probability below 1%.
    assert misses / runs <= alpha + 0.04


@pytest.mark.parametrize("method", ["asymptotic", "bernstein", "betting"])
def test_sequence_narrows_and_is_exact_at_census(method: str) -> None:
    values = np.random.default_rng(1).binomial(13, 0.9, size=100) / 13
    low, high = confidence_path(values, 0.05, 100, method)
    width = high - low
    assert (np.diff(width) <= 1e-12).all()  # intersected over time: never widens
    assert width[9] > width[49] > 0
    assert low[-1] == high[-1] == pytest.approx(values.mean())
    # Without a population (an endless source) the last interval still has width.
    open_low, open_high = confidence_path(values, 0.05, None, method)
    assert open_high[-1] - open_low[-1] > 0.01
    assert open_low[-1] <= values.mean() <= open_high[-1]


def test_sequence_refuses_more_values_than_its_population() -> None:
    with pytest.raises(ValueError, match="population"):
        confidence_path([1.0] * 6, 0.05, 5)


def test_rounds_weight_tasks_as_the_suites_average() -> None:
    scores = {"a": [1.0, 1.0, 0.0], "b": [0.0, 1.0], "c": [0.0, 0.0, 0.0]}
    # Two complete rounds (b has two samples); equal weights by default.
    assert round_values(scores).tolist() == pytest.approx([1 / 3, 2 / 3])
    weighted = round_values(scores, {"a": 2.0, "b": 1.0, "c": 1.0})
    assert weighted.tolist() == pytest.approx([0.5, 0.75])


def test_alphas_sum_to_the_error_and_favour_long_lengths() -> None:
    alphas = length_alphas(0.95, GRID)
    assert sum(alphas.values()) == pytest.approx(0.05)
    assert alphas[32768] == pytest.approx(alphas[4096] * (32768 / 4096) ** 0.5)
    with pytest.raises(ValueError, match="confidence"):
        length_alphas(1.0, GRID)


def _rounds(score: float, n: int) -> list[float]:
    """n rounds of 10 samples scoring `score` on average (rounded to the nearest sample)."""
    right = round(score * 10)
    return [right / 10] * n


def test_a_clear_curve_is_decided_at_its_first_failure() -> None:
    rounds = {4096: _rounds(1.0, 60), 8192: _rounds(1.0, 60), 16384: _rounds(0.3, 60)}
    decision = decide(rounds, GRID, Rule(), 0.95, dict.fromkeys(GRID, 500))
    assert decision.decided and decision.effective == "8192" and decision.tokens == 8192
    assert decision.low == decision.high == "8192"
    assert [v.status for v in decision.verdicts] == ["pass", "pass", "fail", "unmeasured"]
    assert decision.next_length is None
    # The full grid's own rule on the point estimates agrees.
    estimates = {v.length: v.bounds.estimate for v in decision.verdicts if v.bounds.rounds}
    assert effective_length(estimates).label == "8192"


def test_few_rounds_leave_an_interval_and_say_where_to_look_next() -> None:
    rounds = {4096: _rounds(1.0, 60), 8192: _rounds(0.9, 3)}
    decision = decide(rounds, GRID, Rule(), 0.95, dict.fromkeys(GRID, 500))
    assert not decision.decided and decision.effective == "undecided"
    assert (decision.low, decision.high) == ("4096", ">32768")
    assert decision.next_length == 8192 and decision.next_rounds > 3
    # The interval is ordered as effective lengths are (low end never past the high end).
    assert decision.verdicts[1].status == "open"


def test_the_threshold_itself_passes() -> None:
    # RULER's rule is `score >= threshold`: a whole cell at exactly the bar passes.
    rounds = {n: [0.856] * 20 for n in GRID}
    decision = decide(rounds, GRID, Rule(threshold=85.6), 0.95, dict.fromkeys(GRID, 20))
    assert decision.decided and decision.effective == ">32768"
    below = {n: [0.855] * 20 for n in GRID}
    assert decide(below, GRID, Rule(threshold=85.6), 0.95, dict.fromkeys(GRID, 20)).effective == (
        "<4096"
    )


def test_relative_rule_carries_the_base_scores_uncertainty() -> None:
    base = Bounds(4096, 30, 500, 80.0, 70.0, 90.0)
    # 8K at [66, 70]: below 0.9 x 90 = 81 is possible, above 0.9 x 70 = 63 too: open.
    wide = decide_bounds([base, Bounds(8192, 100, 500, 68.0, 66.0, 70.0)], Rule("relative"))
    assert wide.bar == pytest.approx((63.0, 81.0))
    assert wide.verdicts[1].status == "open" and not wide.decided
    # The base is the wider interval (0.9 x 20 > 4): it is measured next.
    assert wide.next_length == 4096
    narrow = Bounds(4096, 400, 500, 80.0, 79.0, 81.0)
    decided = decide_bounds([narrow, Bounds(8192, 100, 500, 68.0, 66.0, 70.0)], Rule("relative"))
    assert decided.bar == pytest.approx((71.1, 72.9))
    assert decided.decided and decided.effective == "4096"


def test_a_non_monotone_curve_is_reported_not_smoothed() -> None:
    rounds = {4096: _rounds(0.2, 60), 8192: _rounds(1.0, 60)}
    decision = decide(rounds, GRID, Rule(), 0.95, dict.fromkeys(GRID, 500))
    assert decision.decided and decision.effective == "<4096"
    assert decision.non_monotone == ((4096, 8192),)


def test_the_search_measures_every_length_from_the_shortest() -> None:
    # A pass at 16K says nothing of 8K: 8K, unmeasured, is measured next.
    rounds = {4096: _rounds(1.0, 60), 16384: _rounds(1.0, 60)}
    decision = decide(rounds, GRID, Rule(), 0.95, dict.fromkeys(GRID, 500))
    assert not decision.decided and decision.next_length == 8192
    assert decision.verdicts[1].status == "unmeasured"


def _search(curve: dict[int, float], rng: np.random.Generator, confidence: float) -> tuple:
    population = 200
    draws = {n: rng.binomial(13, p, size=population) / 13 for n, p in curve.items()}
    truth = effective_length({n: 100 * v.mean() for n, v in draws.items()}).tokens
    held = dict.fromkeys(curve, 0)
    while True:
        decision = decide(
            {n: draws[n][: held[n]] for n in curve},
            list(curve),
            Rule(),
            confidence,
            dict.fromkeys(curve, population),
        )
        if decision.decided:
            sent = sum(held[n] * n for n in curve) / sum(population * n for n in curve)
            return decision.tokens == truth, sent
        assert decision.next_length is not None
        held[decision.next_length] = decision.next_rounds


def test_the_search_keeps_its_error_rate_across_its_looks() -> None:
    # A curve crossing the bar between 8K and 16K with a few points to spare: the search looks
    # many times; its answer must be the full grid's in at least `confidence` of runs, and it must
    # spend less than the grid.
    rng = np.random.default_rng(3)
    curve = {4096: 0.97, 8192: 0.90, 16384: 0.80, 32768: 0.5}
    outcomes = [_search(curve, rng, 0.8) for _ in range(40)]
    right = sum(ok for ok, _ in outcomes)
    assert right >= 0.8 * len(outcomes)
    assert np.mean([sent for _, sent in outcomes]) < 0.6
