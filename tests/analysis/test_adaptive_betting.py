"""The betting confidence sequence (analysis/adaptive.py, method "betting"): time-uniform coverage
when sampling without replacement, checked on simulated paths; the check itself fails a sequence
that is too narrow; the computation matches the sequence's definition."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from longscope.analysis.adaptive import (
    BETTING_GRID,
    LAMBDA_CAP,
    _Betting,
    _plug_in_bets,
    confidence_path,
)

ALPHA = 0.2
PATHS = 120
SIZE = 80
# Misses are Binomial(PATHS, p) with p <= ALPHA for a valid sequence: above ALPHA by more than
# 3.5 standard deviations of Binomial(120, 0.2) (0.128) with probability below 0.05%.
TOLERANCE = 3.5 * (ALPHA * (1 - ALPHA) / PATHS) ** 0.5


def _populations() -> dict[str, np.ndarray]:
    """Known finite populations: right/wrong near 0.5 and near 0.1, and graded partial credit."""
    rng = np.random.default_rng(11)
    return {
        "bernoulli 0.5": (rng.random(SIZE) < 0.5).astype(float),
        "bernoulli 0.1": (rng.random(SIZE) < 0.1).astype(float),
        "graded": rng.binomial(4, 0.7, size=SIZE) / 4,
    }


def _miss_share(path, population: np.ndarray, rng: np.random.Generator) -> float:
    """Return the share of random without-replacement orders on which `path` ever excludes the
    population's mean (at any prefix, not only the last)."""
    mean = population.mean()
    misses = 0
    for _ in range(PATHS):
        low, high = path(rng.permutation(population))
        misses += bool(((low > mean + 1e-12) | (high < mean - 1e-12)).any())
    return misses / PATHS


def _betting(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return confidence_path(values, ALPHA, values.size, "betting")


def _pointwise_normal(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Too narrow for looks at every size: a fixed-size normal interval (with the finite-population
    correction), read at every prefix as if each were the only look."""
    n = np.arange(1, values.size + 1)
    mean = np.cumsum(values) / n
    # The running variance with a fair coin's pseudo-observation, as the other sequences start.
    var = (0.25 + np.cumsum(values**2) - n * mean**2) / (n + 1)
    fpc = np.maximum(values.size - n, 0) / max(values.size - 1, 1)
    half = NormalDist().inv_cdf(1 - ALPHA / 2) * np.sqrt(var / n * fpc)
    return mean - half, mean + half


@pytest.mark.parametrize("name", ["bernoulli 0.5", "bernoulli 0.1", "graded"])
def test_betting_sequence_covers_the_population_mean_at_every_look(name: str) -> None:
    share = _miss_share(_betting, _populations()[name], np.random.default_rng(5))
    assert share <= ALPHA + TOLERANCE


def test_the_coverage_check_fails_a_too_narrow_sequence() -> None:
    # The same check on a sequence that ignores its many looks: it must fail, or the check above
    # could not tell a valid sequence from an invalid one.
    populations = _populations()
    for population in populations.values():
        share = _miss_share(_pointwise_normal, population, np.random.default_rng(5))
        assert share > ALPHA + TOLERANCE

    # And the betting sequence itself spending four times its error (a union bound forgotten).
    def spendthrift(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return confidence_path(values, 4 * ALPHA, values.size, "betting")

    share = _miss_share(spendthrift, populations["bernoulli 0.1"], np.random.default_rng(5))
    assert share > ALPHA + TOLERANCE


def test_betting_sequence_matches_its_definition() -> None:
    # Straight from the definition, candidate by candidate: the hedged capital max(K+, K-) / 2
    # against 1/alpha, bets on the mean of what is left, impossible candidates out, the running
    # intersection, each bound the nearest excluded candidate. The blocked computation (candidates
    # dropped between blocks) must agree to the grid's spacing.
    rng = np.random.default_rng(2)
    size, alpha = 120, 0.05
    values = rng.permutation(rng.binomial(3, 0.4, size=size) / 3)
    grid = np.linspace(0.0, 1.0, BETTING_GRID + 1)[:, None]
    before = np.cumsum(values) - values
    left_mean = (size * grid - before) / (size - np.arange(size))
    bets = _plug_in_bets(values, alpha, size)  # tuned to the population's size
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.minimum(bets, LAMBDA_CAP / left_mean)
        down = np.minimum(bets, LAMBDA_CAP / (1 - left_mean))
        plus = np.cumprod(1 + up * (values - left_mean), axis=1)
        minus = np.cumprod(1 - down * (values - left_mean), axis=1)
    impossible = np.logical_or.accumulate((left_mean < 0) | (left_mean > 1), axis=1)
    kept = (np.maximum(plus, minus) / 2 < 1 / alpha) & ~impossible
    first = kept.argmax(axis=0)
    last = BETTING_GRID - kept[::-1].argmax(axis=0)
    want_low = np.maximum.accumulate(np.where(first > 0, grid[first - 1, 0], 0.0))
    want_high = np.minimum.accumulate(
        np.where(last < BETTING_GRID, grid[np.minimum(last + 1, BETTING_GRID), 0], 1.0)
    )
    low, high = confidence_path(values, alpha, size, "betting")
    spacing = 1.0 / BETTING_GRID
    assert np.abs(low[:-1] - want_low[:-1]).max() <= spacing + 1e-12
    assert np.abs(high[:-1] - want_high[:-1]).max() <= spacing + 1e-12
    assert low[-1] == high[-1] == pytest.approx(values.mean())
    # Extended a few draws at a time (as the simulation does) it is the same sequence.
    pieces = _Betting(alpha, size)
    for reach in (1, 7, 40, 41, size - 1):
        piece_low, piece_high = pieces.extend(values[:reach])
        assert (piece_low == low[:reach]).all() and (piece_high == high[:reach]).all()
    # Tighter than the empirical-Bernstein sequence on the same draws once past the first few.
    bern_low, bern_high = confidence_path(values, alpha, size, "bernstein")
    assert ((high - low)[20:-1] < (bern_high - bern_low)[20:-1]).all()
