"""The adaptive search for effective length: confidence sequences per length and the stopping rule.

Effective length is a function of the score at each length of a grid (`analysis.effective`): the
largest length up to which every score stays at or above a bar (RULER's absolute 85.6, or a fraction
of the shortest length's score). An adaptive run measures few samples where a length's verdict is
clear and many where it is close, and stops once the verdicts the rule needs are decided.

The statistics, all pure functions here (docs/statistics.md, "Adaptive search"):
- A look's unit is a *round*: one sample of each task at one length, weighted as the suite's
  average weights its tasks (RULER: the mean of task means, so equal weights). A round's value is in
  [0, 1] and its mean is the length's score; rounds are exchangeable (sample `i` of every task is
  drawn independently of sample `j`), so the first `n` rounds sent are a uniformly random subset of
  the full grid's rounds.
- Each length gets a time-uniform confidence sequence for the mean of its full grid's rounds: the
  predictable plug-in empirical-Bernstein sequence of Waudby-Smith & Ramdas (2023, JRSS-B,
  "Estimating means of bounded random variables by betting", Theorem 2), in its form for sampling
  without replacement from a finite population (Waudby-Smith & Ramdas 2020, "Confidence sequences
  for sampling without replacement", NeurIPS): it holds at every look at once, whatever the looks,
  and shrinks to the full grid's own score when every round is in. Each of the `k` lengths spends
  `alpha / k` (a union bound), so all `k` sequences hold together with probability `1 - alpha`.
- The effective lengths consistent with every interval form an interval: the rule applied with each
  length at its lower bound (the bar at its upper bound: the relative rule's base score carries its
  own uncertainty) gives its low end, at the upper bounds its high end. The search stops when both
  ends agree: the answer is then the full grid's own with probability at least `1 - alpha`.
- A length that surely fails below one that surely passes (a non-monotone curve) is reported, never
  smoothed: the search measures every length from the shortest up, it never infers a length's verdict
  from another's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from longscope.analysis.effective import RULER_THRESHOLD, effective_length

RuleKind = Literal["absolute", "relative"]
Method = Literal["asymptotic", "bernstein", "betting"]
METHODS: tuple[Method, ...] = ("asymptotic", "bernstein", "betting")
DEFAULT_CONFIDENCE = 0.95
LAMBDA_CAP = 0.75
"""The largest bet of the empirical-Bernstein sequence (Waudby-Smith & Ramdas suggest 1/2 or 3/4)."""
BETTING_GRID = 1000
"""The betting sequence is computed on candidate means spaced 1 / BETTING_GRID apart; each bound is
the nearest candidate outside the exact one, so it is at most 0.1 points (0-100) wider."""
BETTING_BLOCK = 32
"""Draws per step of the betting sequence's computation (candidates excluded are dropped between)."""
SINGLE_SAMPLE_METHOD: Method = "betting"
"""The sequence for rounds of one sample (suites built whole, `run.adaptive`): valid at every size,
and on LongBench Pro's published curves the cheapest valid one (benchmarks/bench_adaptive.py)."""
PLANNED_FRACTION = 0.25
"""The asymptotic sequence is tightest near this share of a cell's rounds (its mixture's tuning)."""
FIRST_ROUNDS = 4
"""Rounds of a length's first look."""
GROWTH = 1.25
"""Each further look at a length sends this many times the rounds it holds (at least FIRST_ROUNDS)."""


@dataclass(frozen=True)
class Rule:
    """Which effective length: at an absolute bar (0-100) or at a fraction of the shortest length's
    score (the relative rule, tied to LongScore)."""

    kind: RuleKind = "absolute"
    threshold: float = RULER_THRESHOLD
    fraction: float = 0.9

    def describe(self) -> str:
        """Return the rule as reports name it."""
        if self.kind == "relative":
            return f"{self.fraction:g} x the score at the shortest length"
        return f"score >= {self.threshold:g}"


@dataclass(frozen=True)
class Bounds:
    """One length's confidence interval (0-100) after the rounds measured there."""

    length: int
    rounds: int
    population: int | None
    """Rounds in the full grid's cell (None: unknown, sampled as from an endless source)."""
    estimate: float | None
    low: float
    high: float


@dataclass(frozen=True)
class Verdict:
    """One length against the bar: `pass` / `fail` (sure at the confidence), `open`, `unmeasured`."""

    length: int
    status: Literal["pass", "fail", "open", "unmeasured"]
    bounds: Bounds


@dataclass(frozen=True)
class Decision:
    """Where the search stands after a look: the interval of effective lengths, whether it is
    decided, and what to measure next."""

    decided: bool
    effective: str
    """The decided effective length (`32768`, `>131072`, `<4096`), or "undecided"."""
    tokens: int | None
    low: str
    """The interval's ends as effective-length labels (equal once decided)."""
    high: str
    confidence: float
    rule: Rule
    bar: tuple[float, float]
    """The bar's interval (0-100): the threshold itself, or the relative rule's fraction of the
    shortest length's interval."""
    verdicts: tuple[Verdict, ...]
    non_monotone: tuple[tuple[int, int], ...]
    """(length that surely fails, longer length that surely passes) pairs."""
    next_length: int | None
    """The length to measure next (None once decided)."""
    next_rounds: int
    """The rounds that length should hold after the next look."""


def confidence_path(
    values: Sequence[float] | np.ndarray,
    alpha: float,
    population: int | None = None,
    method: Method = "asymptotic",
) -> tuple[np.ndarray, np.ndarray]:
    """Return the (low, high) bounds in [0, 1] after each prefix of `values` (each in [0, 1]).

    A time-uniform confidence sequence at level `1 - alpha` for the mean of a finite population of
    `population` values sampled without replacement (or, `population` None, of an endless i.i.d.
    source): `method` "asymptotic" is the asymptotic sequence of Waudby-Smith, Arbour, Sinha,
    Kennedy & Ramdas (2024, Annals of Statistics, Theorem 2.2: Robbins' normal mixture with the
    running variance); "bernstein" the predictable plug-in empirical-Bernstein sequence of
    Waudby-Smith & Ramdas (2023, JRSS-B, Theorem 2), valid at every sample size; "betting" their
    hedged-capital betting sequence (same paper, Section 4, Theorem 3; `_betting_path`), also valid
    at every size and tighter. All are applied to the martingale of sampling without replacement
    (Waudby-Smith & Ramdas 2020, NeurIPS: the `i`-th draw's mean given the earlier ones is
    `(N mu - S_(i-1)) / (N - i + 1)`). Bounds are intersected over time, and once the whole
    population is in they are its mean.
    """
    x = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    t = x.size
    if t == 0:
        return np.zeros(0), np.zeros(0)
    if population is not None and t > population:
        raise ValueError(f"{t} values from a population of {population}")
    if method not in METHODS:
        raise ValueError(f"unknown confidence-sequence method {method!r}")
    if method == "betting":
        low, high = _betting_path(x, alpha, population)
        if population is not None and t == population:
            low[-1] = high[-1] = float(np.sum(x)) / t
        return low, high
    i = np.arange(1, t + 1, dtype=float)
    cum = np.cumsum(x)
    mu = (0.5 + cum) / (i + 1.0)
    # The running variance with one pseudo-observation of 1/4 (a fair coin's): no interval is
    # narrowed by a few equal values.
    var = (0.25 + np.cumsum((x - mu) ** 2)) / (i + 1.0)
    if method == "bernstein":
        mu_prev = np.concatenate(([0.5], mu[:-1]))
        var_prev = np.concatenate(([0.25], var[:-1]))
        log_term = math.log(2.0 / alpha)
        lam = np.minimum(np.sqrt(2.0 * log_term / (var_prev * i * np.log1p(i))), LAMBDA_CAP)
        # v * psi_E with v = 4 (x - mu_prev)^2 and psi_E = (-log(1 - lam) - lam) / 4.
        margin = np.cumsum((x - mu_prev) ** 2 * (-np.log1p(-lam) - lam)) + log_term
    else:
        lam = np.ones(t)
        planned = max(10.0, (population or 400) * PLANNED_FRACTION)
        rho2 = (-2.0 * math.log(alpha) + math.log(-2.0 * math.log(alpha) + 1.0)) / planned
        # Robbins' normal-mixture boundary on the sum of t centred draws (not divided by t).
        margin = np.sqrt(
            var * 2.0 * (i * rho2 + 1.0) / rho2 * np.log(np.sqrt(i * rho2 + 1.0) / alpha)
        )
    if population is None:
        weight = np.cumsum(lam)
        centre = np.cumsum(lam * x)
    else:
        left = population - i + 1.0
        before = cum - x  # the sum of the values drawn before each one
        weight = np.cumsum(lam * population / left)
        centre = np.cumsum(lam * (x + before / left))
    low = np.maximum.accumulate(np.clip((centre - margin) / weight, 0.0, 1.0))
    high = np.minimum.accumulate(np.clip((centre + margin) / weight, 0.0, 1.0))
    if population is not None and t == population:
        low[-1] = high[-1] = cum[-1] / t
    return low, high


def _plug_in_bets(x: np.ndarray, alpha: float, horizon: int | None = None) -> np.ndarray:
    """Return the predictable plug-in bets (Waudby-Smith & Ramdas 2023, JRSS-B): each draw's from
    the draws before it, with one pseudo-observation of mean 1/2 and variance 1/4.

    `horizon` None: `sqrt(2 log(2/alpha) / (var i log(1 + i)))`, shrinking so the sequence is tight
    at every size; else the bets of a test of `horizon` draws, `sqrt(2 log(2/alpha) / (var
    horizon))` (their tuning for a known sample size, as in their betting confidence intervals)."""
    i = np.arange(1, x.size + 1, dtype=float)
    mu = (0.5 + np.cumsum(x)) / (i + 1.0)
    var = (0.25 + np.cumsum((x - mu) ** 2)) / (i + 1.0)
    var_prev = np.concatenate(([0.25], var[:-1]))
    scale = i * np.log1p(i) if horizon is None else float(horizon)
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (var_prev * scale))


def _betting_path(
    x: np.ndarray, alpha: float, population: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Return the hedged-capital betting sequence's (low, high) after each prefix of `x`
    (`_Betting`)."""
    return _Betting(alpha, population).extend(x)


class _Betting:
    """The hedged-capital betting sequence, computed as draws come.

    Waudby-Smith & Ramdas (2023, JRSS-B, Section 4, Theorem 3): for a candidate mean `m`, the
    capitals `K+ = prod(1 + l+ (x_i - m_i))` and `K- = prod(1 - l- (x_i - m_i))` are nonnegative
    martingales when `m` is the truth, so `max(K+, K-) / 2` passes `1 / alpha` with probability at
    most `alpha` ever (Ville's inequality); the sequence is every `m` it has not passed. Sampling
    without replacement (Waudby-Smith & Ramdas 2020, NeurIPS, Section 3), the bet is against the
    mean of what is left, `m_i = (N m - S_(i-1)) / (N - i + 1)`, and a candidate whose `m_i` leaves
    [0, 1] is impossible. The bets are the predictable plug-in ones (`_plug_in_bets`; tuned to the
    population's size `N` when there is one: a cell's verdict is hardest near its census) truncated
    at `LAMBDA_CAP / m_i` (`K+`) and `LAMBDA_CAP / (1 - m_i)` (`K-`), so `K+` falls and `K-` rises
    in `m`: the sequence is an interval, its low end set by `K+`, its high end by `K-`. Any
    predictable bets keep the guarantee; the tuning only moves where the sequence is tightest.

    Computed on the candidates `j / BETTING_GRID`; each bound is the nearest candidate the sequence
    excludes (valid, and at most one spacing wider than the exact bound). A candidate once excluded
    stays excluded (the running intersection), so it is dropped from later steps. The bets are
    predictable, so extending by more draws leaves the bounds already computed as they were.
    """

    def __init__(self, alpha: float, population: int | None) -> None:
        self.alpha = alpha
        self.population = population
        self.x = np.zeros(0)
        self.low = np.zeros(0)
        self.high = np.zeros(0)
        self.grid = np.linspace(0.0, 1.0, BETTING_GRID + 1)
        self.lo, self.hi = 0, BETTING_GRID  # the candidates still in (indices into `grid`)
        self.log_plus = np.zeros(BETTING_GRID + 1)
        self.log_minus = np.zeros(BETTING_GRID + 1)

    def extend(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Take the draws so far (`x` begins with every draw taken before); return (low, high)."""
        done = self.x.size
        t = x.size
        if t <= done:
            return self.low[:t], self.high[:t]
        self.x = x = np.asarray(x, dtype=float)
        lam = _plug_in_bets(x, self.alpha, self.population)
        before = np.cumsum(x) - x
        population, grid = self.population, self.grid
        edge = math.log(2.0 / self.alpha)  # max(K+, K-) / 2 >= 1 / alpha
        low = np.concatenate((self.low, np.zeros(t - done)))
        high = np.concatenate((self.high, np.ones(t - done)))
        floor = self.low[-1] if done else 0.0
        ceiling = self.high[-1] if done else 1.0
        lo, hi = self.lo, self.hi
        for start in range(done, t, BETTING_BLOCK):
            stop = min(t, start + BETTING_BLOCK)
            if lo > hi:  # every candidate excluded: the sequence has missed; it stays where it was
                low[start:], high[start:] = floor, ceiling
                break
            m = grid[lo : hi + 1]
            n = m.size
            if population is None:
                mean_left = np.broadcast_to(m, (stop - start, n))
                below = np.zeros(stop - start, dtype=int)
                above = np.full(stop - start, n - 1)
            else:
                left = population - np.arange(start, stop, dtype=float)
                mean_left = (population * m - before[start:stop, None]) / left[:, None]
                # The impossible candidates: those below `S_(i-1) / N` (a bound that only rises)
                # and above `(S_(i-1) + N - i + 1) / N` (one that only falls), as indices.
                below = np.searchsorted(m, before[start:stop] / population, side="left")
                above = np.searchsorted(m, (before[start:stop] + left) / population, "right") - 1
            mean_left = np.clip(mean_left, 0.0, 1.0)
            step = lam[start:stop, None]
            with np.errstate(divide="ignore"):
                bet_up = np.minimum(step, LAMBDA_CAP / mean_left)
                bet_down = np.minimum(step, LAMBDA_CAP / (1.0 - mean_left))
            gap = x[start:stop, None] - mean_left
            plus = self.log_plus[lo : hi + 1] + np.cumsum(np.log1p(bet_up * gap), axis=0)
            minus = self.log_minus[lo : hi + 1] + np.cumsum(np.log1p(-bet_down * gap), axis=0)
            # Excluded from below (a lower set of candidates) and from above (an upper set).
            out_low = plus >= edge
            out_high = minus >= edge
            first = np.where(out_low.all(axis=1), n, np.argmin(out_low, axis=1))
            last = np.where(out_high.all(axis=1), -1, n - 1 - np.argmin(out_high[:, ::-1], axis=1))
            first, last = np.maximum(first, below), np.minimum(last, above)
            # The bounds: the nearest excluded candidate on each side (the exact bound lies between
            # it and the first candidate kept).
            low_idx = np.maximum.accumulate(lo + first - 1)
            high_idx = np.minimum.accumulate(lo + last + 1)
            low[start:stop] = np.maximum(
                floor, np.where(low_idx >= 0, grid[np.maximum(low_idx, 0)], 0.0)
            )
            high[start:stop] = np.minimum(
                ceiling,
                np.where(high_idx <= BETTING_GRID, grid[np.minimum(high_idx, BETTING_GRID)], 1.0),
            )
            floor, ceiling = low[stop - 1], high[stop - 1]
            self.log_plus[lo : hi + 1] = plus[-1]
            self.log_minus[lo : hi + 1] = minus[-1]
            lo, hi = int(low_idx[-1]) + 1, int(high_idx[-1]) - 1
        self.lo, self.hi = lo, hi
        self.low, self.high = low, high
        return low, high


def round_values(
    scores: Mapping[str, Sequence[float]], weights: Mapping[str, float] | None = None
) -> np.ndarray:
    """Return each complete round's value in [0, 1]: sample `r` of every task, weighted.

    `scores`: each task's sample scores (0-1) in index order; `weights`: how the suite's average
    weights each task (default equal, as RULER's mean of task means). A round some task has not
    reached yet is left out.
    """
    tasks = sorted(scores)
    if not tasks:
        return np.zeros(0)
    given = weights or {}
    raw = np.array([float(given.get(t, 1.0)) for t in tasks])
    if (raw < 0).any() or raw.sum() <= 0:
        raise ValueError(f"task weights must be non-negative and not all zero: {dict(given)}")
    w = raw / raw.sum()
    rounds = min(len(scores[t]) for t in tasks)
    if rounds == 0:
        return np.zeros(0)
    table = np.array([np.asarray(scores[t][:rounds], dtype=float) for t in tasks])
    return w @ table


def length_bounds(
    length: int,
    values: Sequence[float] | np.ndarray,
    alpha: float,
    population: int | None,
    method: Method = "asymptotic",
) -> Bounds:
    """Return one length's interval (0-100) after its rounds `values`, at level `1 - alpha`."""
    if len(values) == 0:
        return Bounds(length, 0, population, None, 0.0, 100.0)
    low, high = confidence_path(values, alpha, population, method)
    return Bounds(
        length,
        len(values),
        population,
        100.0 * float(np.mean(values)),
        100.0 * float(low[-1]),
        100.0 * float(high[-1]),
    )


def _label(lengths: Sequence[int], passes: Sequence[bool]) -> tuple[str, int | None]:
    """Return the effective length (label, tokens) of pass/fail verdicts, as the full grid's rule."""
    made = effective_length(
        {n: 100.0 if ok else 0.0 for n, ok in zip(lengths, passes, strict=True)}, 50.0
    )
    return made.label, made.tokens


def decide(
    rounds: Mapping[int, Sequence[float] | np.ndarray],
    lengths: Sequence[int],
    rule: Rule = Rule(),
    confidence: float = DEFAULT_CONFIDENCE,
    populations: Mapping[int, int | None] | None = None,
    method: Method = "asymptotic",
) -> Decision:
    """Return the decision after the rounds measured so far at each of the grid's `lengths`.

    `rounds[length]`: that length's round values (0-1) in the order sent; `populations[length]`:
    the rounds its full grid cell holds. The lengths share `1 - confidence` (`length_alphas`).
    """
    alphas = length_alphas(confidence, lengths)
    pops = populations or {}
    bounds = [
        length_bounds(n, rounds.get(n, ()), a, pops.get(n), method) for n, a in alphas.items()
    ]
    return decide_bounds(bounds, rule, confidence)


def length_alphas(confidence: float, lengths: Sequence[int]) -> dict[int, float]:
    """Return the error each length's sequence may spend: `1 - confidence` split over the grid in
    proportion to the square root of each length (a union bound: long cells, dear in tokens, get
    more of it, short ones enough)."""
    grid = sorted(set(int(n) for n in lengths))
    if not grid:
        raise ValueError("an adaptive search needs at least one length")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie between 0 and 1, not {confidence}")
    if grid[0] < 1:
        raise ValueError(f"lengths must be positive token counts, not {grid[0]}")
    weights = {n: math.sqrt(n) for n in grid}
    total = sum(weights.values())
    return {n: (1.0 - confidence) * w / total for n, w in weights.items()}


def decide_bounds(
    bounds: Sequence[Bounds], rule: Rule = Rule(), confidence: float = DEFAULT_CONFIDENCE
) -> Decision:
    """Return the decision from each grid length's interval (`length_bounds` at `length_alphas`)."""
    bounds = sorted(bounds, key=lambda b: b.length)
    grid = [b.length for b in bounds]
    if rule.kind == "relative":
        base = bounds[0]
        bar = (rule.fraction * base.low, rule.fraction * base.high)
    else:
        bar = (rule.threshold, rule.threshold)
    verdicts = []
    for k, b in enumerate(bounds):
        if rule.kind == "relative" and k == 0:
            # The base passes its own fraction whenever it is measured (scores are not negative).
            status = "pass" if b.rounds else "unmeasured"
        elif not b.rounds:
            status = "unmeasured"
        elif b.low >= bar[1]:
            status = "pass"
        elif b.high < bar[0]:
            status = "fail"
        else:
            status = "open"
        verdicts.append(Verdict(b.length, status, b))
    sure = [v.status == "pass" for v in verdicts]
    maybe = [v.status in ("pass", "open", "unmeasured") for v in verdicts]
    low, tokens = _label(grid, sure)
    high, _ = _label(grid, maybe)
    decided = low == high
    non_monotone = tuple(
        (a.length, b.length)
        for i, a in enumerate(verdicts)
        for b in verdicts[i + 1 :]
        if a.status == "fail" and b.status == "pass"
    )
    next_length, next_rounds = (None, 0) if decided else _next(verdicts, rule)
    return Decision(
        decided=decided,
        effective=low if decided else "undecided",
        tokens=tokens if decided else None,
        low=low,
        high=high,
        confidence=confidence,
        rule=rule,
        bar=(round(bar[0], 4), round(bar[1], 4)),
        verdicts=tuple(verdicts),
        non_monotone=non_monotone,
        next_length=next_length,
        next_rounds=next_rounds,
    )


def _grow(b: Bounds) -> int:
    """Return the rounds a length should hold after its next look (capped at its full cell)."""
    first = FIRST_ROUNDS if b.population is None else max(1, min(FIRST_ROUNDS, b.population // 8))
    want = max(b.rounds + first, math.ceil(b.rounds * GROWTH))
    return want if b.population is None else min(want, b.population)


def _full(b: Bounds) -> bool:
    return b.population is not None and b.rounds >= b.population


def _width(b: Bounds) -> float:
    return b.high - b.low


def _next(verdicts: Sequence[Verdict], rule: Rule) -> tuple[int | None, int]:
    """Return the length to measure next and the rounds it should then hold.

    The shortest length still open or unmeasured below the first sure failure: the rule reads every
    length up to there, and shorter lengths cost fewer tokens. Under the relative rule the base
    (shortest) length is measured instead while its interval, scaled by the fraction, is at least
    as wide as that length's, or that length's cell is all in and only the bar keeps it open.
    """
    candidate = None
    for v in verdicts:
        if v.status == "fail":
            break
        if v.status in ("open", "unmeasured"):
            candidate = v
            break
    base = verdicts[0]
    base_first = rule.kind == "relative" and not _full(base.bounds) and base is not candidate
    if base_first and (
        candidate is None
        or _full(candidate.bounds)
        or (
            candidate.bounds.rounds
            and rule.fraction * _width(base.bounds) >= _width(candidate.bounds)
        )
    ):
        candidate = base
    if candidate is None or _full(candidate.bounds):
        return None, 0
    return candidate.length, _grow(candidate.bounds)


@dataclass(frozen=True)
class Simulated:
    """One simulated adaptive run against one simulated full grid of a true curve."""

    truth: int | None
    """The simulated full grid's effective length (tokens; None below the shortest)."""
    decision: Decision
    share: float
    """The full grid's prompt tokens the run sent (cells weighted by `weights`)."""
    looks: int


def grid_effective(scores: Mapping[int, float], rule: Rule) -> int | None:
    """Return the full grid's effective length of a {length: score 0-100} curve under `rule`."""
    bar = rule.threshold
    if rule.kind == "relative":
        bar = rule.fraction * scores[min(scores)]
    return effective_length(scores, bar).tokens


def simulate(
    curve: Mapping[int, float],
    per_round: int,
    rounds: int,
    rule: Rule,
    confidence: float,
    rng: np.random.Generator,
    method: Method = "asymptotic",
    weights: Mapping[int, float] | None = None,
) -> Simulated:
    """Return one adaptive run on a simulated full grid of `curve` (true scores 0-100).

    Each length's full cell holds `rounds` rounds of `per_round` samples scored right (1) or wrong
    (0) at the length's score: the largest variance a round of scores in [0, 1] can have at that
    mean. The run sees the first rounds of the same draws, as `--limit` sends them, and stops by
    `decide_bounds`; `weights` are each full cell's prompt tokens (default: its length).
    """
    lengths = sorted(curve)
    alphas = length_alphas(confidence, lengths)
    draws = {
        n: rng.binomial(per_round, min(max(curve[n] / 100.0, 0.0), 1.0), size=rounds) / per_round
        for n in lengths
    }
    truth = grid_effective({n: 100.0 * float(v.mean()) for n, v in draws.items()}, rule)
    means = {n: np.cumsum(v) / np.arange(1, rounds + 1) for n, v in draws.items()}
    paths: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    running: dict[int, _Betting] = {}  # betting sequences, extended rather than recomputed
    held = dict.fromkeys(lengths, 0)
    looks = 0
    while True:
        bounds = []
        for n in lengths:
            k = held[n]
            if k == 0:
                bounds.append(Bounds(n, 0, rounds, None, 0.0, 100.0))
                continue
            if n not in paths or paths[n][0].size < k:
                # A sequence's prefix is the sequence of the prefix (its bets are predictable):
                # computed as far as needed, doubling, most cells are never sent whole.
                reach = min(rounds, max(k, 2 * (paths[n][0].size if n in paths else 16)))
                if method == "betting":
                    low, high = running.setdefault(n, _Betting(alphas[n], rounds)).extend(
                        draws[n][:reach]
                    )
                    if reach == rounds:  # the census: the cell's own mean, as confidence_path
                        low, high = low.copy(), high.copy()
                        low[-1] = high[-1] = float(np.mean(draws[n]))
                    paths[n] = low, high
                else:
                    paths[n] = confidence_path(draws[n][:reach], alphas[n], rounds, method)
            low, high = paths[n]
            estimate = 100.0 * float(means[n][k - 1])
            bounds.append(Bounds(n, k, rounds, estimate, 100.0 * low[k - 1], 100.0 * high[k - 1]))
        decision = decide_bounds(bounds, rule, confidence)
        if decision.decided or decision.next_length is None:
            break
        held[decision.next_length] = decision.next_rounds
        looks += 1
    weight = {n: float((weights or {}).get(n, n)) for n in lengths}
    share = sum(held[n] / rounds * weight[n] for n in lengths) / sum(weight.values())
    return Simulated(truth, decision, share, looks)


@dataclass(frozen=True)
class Forecast:
    """What an adaptive run is expected to send, from simulated runs on reference curves."""

    mean: float
    """Mean share of the full grid's prompt tokens."""
    median: float
    high: float
    """The 90th percentile share."""
    runs: int
    curves: int
    source: str
    """Where the reference curves came from (published rows, or synthetic ones)."""
    method: Method = "asymptotic"
    """The confidence sequence the simulated runs used (the one the run will use)."""

    def describe(self) -> str:
        """Return the forecast as one line."""
        return (
            f"adaptive forecast: {100 * self.mean:.0f}% of these prompt tokens on average "
            f"(median {100 * self.median:.0f}%, 90th percentile {100 * self.high:.0f}%), from "
            f"{self.runs} simulated runs on {self.curves} {self.source}"
        )


def synthetic_curves(lengths: Sequence[int], rule: Rule) -> list[dict[int, float]]:
    """Return curves that cross the bar at each place on the grid (and one that never does):
    scores 8 points above the bar, then 12 below from the crossing on."""
    grid = sorted(lengths)
    bar = rule.threshold if rule.kind == "absolute" else 80.0 * rule.fraction
    top = min(100.0, bar + 8.0) if rule.kind == "absolute" else 80.0
    curves = []
    for cross in range(len(grid) + 1):
        curves.append({n: top if i < cross else max(0.0, bar - 12.0) for i, n in enumerate(grid)})
    return curves


def forecast(
    curves: Sequence[Mapping[int, float]],
    per_round: int,
    rounds: int,
    rule: Rule,
    confidence: float,
    *,
    weights: Mapping[int, float] | None = None,
    runs: int = 20,
    seed: int = 0,
    source: str = "reference curves",
    method: Method = "asymptotic",
) -> Forecast:
    """Return the expected share of the full grid's prompt tokens over simulated runs."""
    if not curves:
        raise ValueError("a forecast needs at least one reference curve")
    rng = np.random.default_rng(seed)
    shares = np.array(
        [
            simulate(c, per_round, rounds, rule, confidence, rng, method, weights).share
            for c in curves
            for _ in range(runs)
        ]
    )
    return Forecast(
        float(shares.mean()),
        float(np.median(shares)),
        float(np.quantile(shares, 0.9)),
        len(shares),
        len(curves),
        source,
        method,
    )


__all__ = [
    "DEFAULT_CONFIDENCE",
    "METHODS",
    "SINGLE_SAMPLE_METHOD",
    "Bounds",
    "Decision",
    "Forecast",
    "Rule",
    "Simulated",
    "Verdict",
    "confidence_path",
    "decide",
    "decide_bounds",
    "forecast",
    "grid_effective",
    "length_alphas",
    "length_bounds",
    "round_values",
    "simulate",
    "synthetic_curves",
]
