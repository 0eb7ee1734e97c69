"""Coverage of longscope's 95% intervals on synthetic runs whose truth is known (issue 31).

Each scenario draws many runs from a known model of the answers, computes the interval exactly as
`analysis` does for a real run, and counts how often it holds the truth. A 95% interval should
hold it 93-97% of the time (the band allows for the simulation's own error: with 2,000 runs, the
standard error of a 95% coverage is 0.5 points).

Scenarios:
- `clustered`: documents with several questions each; each document has its own difficulty
  (intra-cluster correlation rho): the clustered interval (t, clusters - 1 df), and the plain one
  that ignores the documents, for contrast.
- `ruler-like`: a mean of task means (RULER's average), tasks of different difficulty.
- `small cells`: the same with 5 samples a task, the stratified SE against the single
  G / (G - 1) correction used before it.
- `longctx-like`: 20 tasks of 0-5 points (LongCtx's grading), one per cluster.
- `paired`: two models on the same samples, their answers correlated; the paired difference.
- `curve`: the cluster bootstrap's percentile interval of the score at one length, and of the
  effective length (a discrete number: its coverage is reported as it comes out).

    .venv/bin/python benchmarks/bench_coverage.py            # 2,000 runs per scenario
    .venv/bin/python benchmarks/bench_coverage.py --smoke    # 60 runs: a check that it works
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from collections.abc import Callable

import numpy as np

from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.analysis.stats import estimate, paired_difference, t975
from longscope.analysis.uncertainty import Unit, curve_intervals, curve_replicates
from longscope.summary import View


def _beta(rng: np.random.Generator, mean: float, rho: float, size: int) -> np.ndarray:
    """Per-cluster success rates with mean `mean` and intra-cluster correlation `rho`."""
    if rho <= 0:
        return np.full(size, mean)
    strength = (1 - rho) / rho
    return rng.beta(mean * strength, (1 - mean) * strength, size)


def clustered(rng: np.random.Generator, clusters: int, per: int, rho: float, mean: float = 0.6):
    """Return (truth, clustered holds it, plain holds it) for one run."""
    rates = _beta(rng, mean, rho, clusters)
    values = 100.0 * (rng.random((clusters, per)) < rates[:, None])
    labels = np.repeat(np.arange(clusters), per)
    est = estimate(values.ravel(), labels.tolist())
    low, high = est.interval()
    plain_half = 1.959964 * (est.se_plain or 0.0)
    truth = 100 * mean
    return low <= truth <= high, abs(est.value - truth) <= plain_half


def ruler_like(rng: np.random.Generator, tasks: int = 8, per: int = 30):
    means = np.linspace(0.3, 0.95, tasks)
    values, task_of = [], []
    for t, p in enumerate(means):
        values += list(100.0 * (rng.random(per) < p))
        task_of += [t] * per
    est = estimate(values, list(range(len(values))), [task_of])
    low, high = est.interval()
    return low <= 100 * means.mean() <= high, None


def small_cells(rng: np.random.Generator, tasks: int = 13, per: int = 5):
    """A mean of task means with few samples a task: the stratified SE (each task's n/(n-1)),
    and the one G/(G-1) for all clusters that was used before it, for contrast."""
    means = np.linspace(0.3, 0.8, tasks)
    x = 100.0 * (rng.random((tasks, per)) < means[:, None])
    task_of = np.repeat(np.arange(tasks), per).tolist()
    est = estimate(x.ravel(), list(range(tasks * per)), [task_of])
    low, high = est.interval()
    truth = 100 * means.mean()
    residual = (x - x.mean(axis=1, keepdims=True)) / (tasks * per)
    groups = tasks * per
    before = math.sqrt(groups / (groups - 1) * float(np.sum(residual**2)))
    half = t975(groups - 1) * before
    return low <= truth <= high, abs(est.value - truth) <= half


def longctx_like(rng: np.random.Generator, tasks: int = 20):
    # Points 0-5 per task; each task has its own difficulty: P(points = k) from a task's skill.
    skill = rng.beta(2, 1.5, tasks)
    points = rng.binomial(5, skill)
    truth = 100 * (2 / 3.5)  # E[binomial(5, p)] / 5 = E[p] = 2 / 3.5
    est = estimate(100 * points / 5, list(range(tasks)))
    low, high = est.interval()
    return low <= truth <= high, None


def paired(
    rng: np.random.Generator, truth: float, clusters: int = 60, per: int = 3, rho: float = 0.3
):
    """Model B answers each document's questions 5 points more often than A (capped at 100%)."""
    base = _beta(rng, 0.6, rho, clusters)
    a = 100.0 * (rng.random((clusters, per)) < base[:, None])
    b = 100.0 * (rng.random((clusters, per)) < np.clip(base + 0.05, 0, 1)[:, None])
    diff = paired_difference((b - a).ravel(), np.repeat(np.arange(clusters), per).tolist())
    return diff.low <= truth <= diff.high, None


CURVE = {1024: 0.97, 2048: 0.93, 4096: 0.88, 8192: 0.80, 16384: 0.60}
"""True success rate per length; RULER's 85.6 is crossed between 4K and 8K: effective 4096."""


def curve(rng: np.random.Generator, per: int = 100, replicates: int = 400):
    units = []
    for length, p in CURVE.items():
        right = rng.random(per) < p
        units += [
            Unit(100.0 * r, f"{length}-{i}", {"length": str(length)}) for i, r in enumerate(right)
        ]
    shown = {
        n: float(np.mean([u.value for u in units if u.labels["length"] == str(n)])) for n in CURVE
    }
    specs = {n: () for n in CURVE}
    seed = int(rng.integers(1 << 31))
    reps = curve_replicates(units, "length", specs, seed, replicates)
    low, high = np.quantile(reps[4096], [0.025, 0.975])
    score_holds = low <= 100 * CURVE[4096] <= high
    found = curve_intervals(
        View(by_length=shown), units, "length", specs, seed=seed, replicates=replicates
    )[0]
    truth = effective_length({n: 100 * p for n, p in CURVE.items()}, RULER_THRESHOLD).label
    order = [f"<{min(CURVE)}", *(str(n) for n in sorted(CURVE)[:-1]), f">{max(CURVE)}"]
    effective_holds = order.index(found.low) <= order.index(truth) <= order.index(found.high)
    return score_holds, effective_holds


def _paired_truth(rng: np.random.Generator, rho: float = 0.3) -> float:
    """The expected gain over documents like these (a large draw of the same model)."""
    base = _beta(rng, 0.6, rho, 2_000_000)
    return float(100 * (np.clip(base + 0.05, 0, 1).mean() - base.mean()))


def coverage(draw: Callable[[np.random.Generator], tuple], runs: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    hits = [draw(rng) for _ in range(runs)]
    columns = list(zip(*hits, strict=True))
    return [100 * float(np.mean(c)) for c in columns if c[0] is not None]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--curve-runs", type=int, default=500)
    parser.add_argument("--smoke", action="store_true", help="60 runs per scenario (a check)")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    runs = 60 if args.smoke else args.runs
    curve_runs = 20 if args.smoke else args.curve_runs
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, "
        f"{runs} runs per scenario ({curve_runs} for the curve), seed {args.seed}"
    )
    gain = _paired_truth(np.random.default_rng(args.seed))
    scenarios: list[tuple[str, Callable, int, list[str]]] = [
        (
            "clustered: 30 documents x 5 questions, rho 0.3",
            lambda r: clustered(r, 30, 5, 0.3),
            runs,
            ["clustered", "plain (ignores documents)"],
        ),
        (
            "clustered: 100 documents x 3 questions, rho 0.1",
            lambda r: clustered(r, 100, 3, 0.1),
            runs,
            ["clustered", "plain (ignores documents)"],
        ),
        (
            "independent: 50 samples, rho 0",
            lambda r: clustered(r, 50, 1, 0.0),
            runs,
            ["clustered", "plain"],
        ),
        ("ruler-like: mean of 8 task means, 30 samples each", ruler_like, runs, ["stratified"]),
        (
            "small cells: mean of 13 task means, 5 samples each",
            small_cells,
            runs,
            ["stratified (each task's n/(n-1))", "one G/(G-1) for all (before 2026-11)"],
        ),
        ("longctx-like: 20 tasks of 0-5 points", longctx_like, runs, ["clustered"]),
        (
            f"paired: 60 documents x 3, rho 0.3, true gain {gain:.2f}",
            lambda r: paired(r, gain),
            runs,
            ["paired difference"],
        ),
        (
            "curve: 5 lengths x 100 samples, bootstrap (400 replicates)",
            curve,
            curve_runs,
            ["score at 4K (percentile)", "effective length (discrete)"],
        ),
    ]
    print("| scenario | interval | runs | coverage of 95% |")
    print("|---|---|---:|---:|")
    for number, (name, draw, count, labels) in enumerate(scenarios):
        started = time.perf_counter()
        found = coverage(draw, count, args.seed + number)
        took = time.perf_counter() - started
        for label, value in zip(labels, found, strict=False):
            print(f"| {name} | {label} | {count} | {value:.1f}% |")
        print(f"<!-- {name}: {took:.1f} s -->")


if __name__ == "__main__":
    main()
