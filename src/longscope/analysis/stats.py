"""The numbers behind every error bar: clustered standard errors, intervals, paired differences.

Pure functions of arrays; no suite, store or report is known here (`analysis.uncertainty` applies
them to a scored run). numpy only: see docs/statistics.md for why not scipy.

A score is a mean of per-request values, possibly a mean of group means (RULER averages its tasks,
then its lengths). Such an estimate is linear in the values, sum_i w_i x_i, so its variance has
the sandwich form used by the clustered-errors literature (Miller 2024, "Adding Error Bars to
Evals", eq. for clustered SE): group the residuals x_i - mean(leaf of i) by cluster, add the
weighted residuals within each cluster, and sum their squares, times G / (G - 1) for G clusters.
With every request its own cluster this is the plain (i.i.d.) standard error, s / sqrt(n) for a
single mean.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

Z95 = NormalDist().inv_cdf(0.975)
"""1.959964: the normal quantile of a two-sided 95% interval."""

_SERIES_DF = 300
"""Past this many degrees of freedom the Cornish-Fisher series is exact to 1e-10 and cheaper."""


def _t_two_sided(t: float, df: int) -> float:
    """Return P(|T| < t) for Student's t with a whole number `df` of degrees of freedom.

    The closed form for integer df (Abramowitz & Stegun 26.7.3-4): with theta = atan(t / sqrt(df)),
    a finite sum of powers of cos(theta).
    """
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term = total = 1.0
    if df % 2:
        if df == 1:
            return 2.0 * theta / math.pi
        for k in range(1, (df - 3) // 2 + 1):
            term *= 2 * k / (2 * k + 1) * c2
            total += term
        return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    for k in range(1, (df - 2) // 2 + 1):
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return math.sin(theta) * total


def _cornish_fisher(z: float, df: int) -> float:
    """Return the t quantile from the normal one `z` (Abramowitz & Stegun 26.7.5, four terms)."""
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """Return Student's t `p` quantile (0.5 <= p < 1) for `df` degrees of freedom, exact to 1e-9.

    Small df: the integer-df distribution function above, inverted by bisection; large df: the
    Cornish-Fisher series. numpy has no t quantile and scipy (40 MB) is not a dependency.
    """
    if df < 1:
        return math.inf
    if not 0.5 <= p < 1.0:
        raise ValueError(f"t_quantile takes 0.5 <= p < 1, not {p}")
    if df > _SERIES_DF:
        return _cornish_fisher(NormalDist().inv_cdf(p), df)
    inside = 2.0 * p - 1.0
    low, high = 0.0, 1.0
    while _t_two_sided(high, df) < inside:
        high *= 2.0
    for _ in range(64):
        middle = (low + high) / 2.0
        if _t_two_sided(middle, df) < inside:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def t975(df: int) -> float:
    """Return Student's t 0.975 quantile for `df` degrees of freedom (exact for every df)."""
    return t_quantile(0.975, df)


@dataclass(frozen=True)
class Estimate:
    """A score (points of 100) with its standard errors and what stands behind it."""

    value: float
    se: float | None
    """Clustered by the suite's unit (document, haystack, question with its repeats)."""
    se_plain: float | None
    """As if every request were independent (what most harnesses print)."""
    n: int
    """Requests (rows) behind the score."""
    clusters: int

    def interval(self) -> tuple[float, float] | None:
        """Return the 95% interval, t with clusters - 1 degrees of freedom (None without an SE)."""
        if self.se is None:
            return None
        half = t975(self.clusters - 1) * self.se
        return (self.value - half, self.value + half)


def _codes(labels: Sequence[Hashable]) -> np.ndarray:
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(label, len(index)) for label in labels], dtype=np.int64)


def stratified_weights(
    levels: Sequence[Sequence[Hashable]], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return (weight per row, leaf code per row) of a mean of means over nested `levels`.

    `levels` = [] is the plain mean (weight 1/n). [task] is the mean over tasks of each task's
    mean; [length, task] the mean over lengths of the mean over tasks of each cell's mean. Only
    non-empty groups count, as the suites average the groups they have.
    """
    weights = np.ones(n)
    parent = np.zeros(n, dtype=np.int64)
    leaves = parent
    codes = [_codes(list(level)) for level in levels]
    for depth in range(len(codes) + 1):
        # Each parent group's weight is shared equally by its distinct children (at the last
        # level: its rows).
        child = codes[depth] if depth < len(codes) else np.arange(n, dtype=np.int64)
        pairs, inverse = np.unique(np.stack([parent, child], axis=1), axis=0, return_inverse=True)
        weights /= np.bincount(pairs[:, 0])[parent]
        leaves = parent
        parent = inverse.reshape(-1)
    return weights, leaves


def clustered_se(
    x: np.ndarray, weights: np.ndarray, leaves: np.ndarray, clusters: np.ndarray
) -> float | None:
    """Return the sandwich SE of sum(w x): cluster sums of w (x - leaf mean), small-sample corrected.

    Where every cluster lies in one leaf (a group averaged on its own: RULER's task at a length),
    the leaves are strata and each leaf's cluster sums get its own n_h / (n_h - 1), n_h its
    clusters: the stratified formula, sum_h w_h^2 s_h^2 / n_h. One G / (G - 1) for all G clusters
    would leave out (n_h - 1) / n_h of each leaf's variance: 10-20% with 5-10 samples a cell.
    Where clusters span leaves (a question asked at every length) the leaves are not strata and
    the one G / (G - 1) applies.

    A leaf that holds a single cluster cannot show how clusters vary within it: its residuals are
    taken from the whole estimate instead of its own mean (the conservative "adjust" rule for
    lonely units in survey statistics), never counted as 0, with the G / (G - 1) factor.
    """
    groups = int(clusters.max()) + 1 if len(clusters) else 0
    if groups < 2:
        return None
    means = np.bincount(leaves, weights=x) / np.bincount(leaves)
    pairs = np.unique(np.stack([leaves, clusters]), axis=1)
    per_leaf = np.bincount(pairs[0], minlength=len(means))
    lonely = per_leaf == 1
    centre = np.where(lonely[leaves], float(np.dot(weights, x)), means[leaves])
    residual = weights * (x - centre)
    sums = np.bincount(clusters, weights=residual, minlength=groups)
    factor = np.full(groups, groups / (groups - 1))
    if pairs.shape[1] == groups:  # each cluster in exactly one leaf: stratified
        count = per_leaf[pairs[0]]
        factor[pairs[1]] = np.where(count > 1, count / np.maximum(count - 1, 1), factor[pairs[1]])
    return float(math.sqrt(float(np.sum(factor * sums**2))))


def estimate(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    levels: Sequence[Sequence[Hashable]] = (),
) -> Estimate:
    """Return the (mean of means over `levels`) of `values` with clustered and plain SEs."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(math.nan, None, None, 0, 0)
    weights, leaves = stratified_weights(levels, n)
    codes = _codes(list(clusters))
    return Estimate(
        value=float(np.dot(weights, x)),
        se=clustered_se(x, weights, leaves, codes),
        se_plain=clustered_se(x, weights, leaves, np.arange(n)),
        n=n,
        clusters=int(codes.max()) + 1,
    )


@dataclass(frozen=True)
class Difference:
    """Run A minus run B on one slice (a length, or overall), with its 95% interval."""

    value: float
    se: float | None
    low: float | None
    high: float | None
    n: int
    """Samples compared (paired) or requests of both runs (unpaired)."""
    clusters: int
    paired: bool

    @property
    def within_noise(self) -> bool:
        """True when the 95% interval holds 0 (or there is no interval to say otherwise)."""
        return self.low is None or self.high is None or self.low <= 0.0 <= self.high

    def as_dict(self) -> dict[str, object]:
        return {
            "difference": round(self.value, 3),
            "se": None if self.se is None else round(self.se, 3),
            "ci95": None if self.low is None else [round(self.low, 3), round(self.high or 0, 3)],
            "n": self.n,
            "clusters": self.clusters,
            "paired": self.paired,
            "within_noise": self.within_noise,
        }


def paired_difference(differences: Sequence[float], clusters: Sequence[Hashable]) -> Difference:
    """Return the mean per-sample difference (A - B) with its clustered SE and 95% interval."""
    est = estimate(differences, clusters)
    interval = est.interval()
    low, high = interval if interval else (None, None)
    return Difference(est.value, est.se, low, high, est.n, est.clusters, True)


def unpaired_difference(a: Estimate, b: Estimate) -> Difference:
    """Return A - B for runs on different samples: SEs add in quadrature (Welch, fewer clusters)."""
    if a.se is None or b.se is None:
        return Difference(a.value - b.value, None, None, None, a.n + b.n, 0, False)
    se = math.sqrt(a.se**2 + b.se**2)
    half = t975(min(a.clusters, b.clusters) - 1) * se
    diff = a.value - b.value
    return Difference(diff, se, diff - half, diff + half, a.n + b.n, a.clusters + b.clusters, False)


POWER_Z = NormalDist().inv_cdf(0.8)
"""0.8416: the normal quantile for 80% power."""
WORST_SD = 50.0
"""The largest standard deviation a 0-100 score can have (right/wrong answers at 50%)."""


def detectable_difference(clusters: int, sd: float = WORST_SD) -> float | None:
    """Return the smallest A - B a paired comparison on `clusters` units detects (80%, 5%).

    (z 0.975 + z 0.8) x sd x sqrt(2 / clusters): two runs whose per-unit scores have standard
    deviation `sd` and are uncorrelated (the conservative case; paired runs that agree on the
    easy and hard samples do better).
    """
    if clusters < 2:
        return None
    return (Z95 + POWER_Z) * sd * math.sqrt(2.0 / clusters)


def score_halfwidth(clusters: int, sd: float = WORST_SD) -> float | None:
    """Return the 95% interval's half-width of one score on `clusters` units of `sd`."""
    if clusters < 2:
        return None
    return t975(clusters - 1) * sd / math.sqrt(clusters)


def quantile_index(values: np.ndarray, q: float) -> int:
    """Return the `q` quantile of integer outcomes as one of them (no interpolation between)."""
    return int(np.quantile(values, q, method="inverted_cdf"))


__all__ = [
    "WORST_SD",
    "Z95",
    "Difference",
    "Estimate",
    "clustered_se",
    "detectable_difference",
    "estimate",
    "paired_difference",
    "quantile_index",
    "score_halfwidth",
    "stratified_weights",
    "t975",
    "t_quantile",
    "unpaired_difference",
]
