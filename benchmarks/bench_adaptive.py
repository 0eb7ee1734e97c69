"""The adaptive search for effective length (issue 45) replayed on the published curves we ship.

    .venv/bin/python benchmarks/bench_adaptive.py             # every published row, 200 runs each
    .venv/bin/python benchmarks/bench_adaptive.py --smoke     # 6 rows per suite, 10 runs each

Each published row (RULER's table, LongBench Pro's summaries) is taken as a model's true curve. A
simulated full grid draws every sample of every cell at that length's published score, with the
suite's task mix: RULER's 13 tasks x 500 samples, averaged as the mean of task means (one round =
one sample of each task); LongBench Pro's 250 samples per length bucket (25 secondary tasks x 2
languages x 5), a plain mean: built whole, `run --adaptive` sends each bucket's samples in a fixed
pseudo-random order, one a round, by the betting sequence, and so does this. Per-task
scores are not published, so every task is drawn at the length's score with right/wrong (0/1)
outcomes: for scores in [0, 1] with a given mean this is the largest variance a round can have, so
the tokens spent here are an upper bound for that mix (graded partial credit and tasks of unequal
difficulty only narrow the intervals).

The adaptive run sees the first rounds of the same draws, in index order, as `--limit` sends them,
and stops by `analysis.adaptive.decide_bounds`. Reported per suite and overall: how often its answer
equals the full grid's effective length (exactly, and within one length step), and the share of the
full grid's prompt tokens it sent (a sample's prompt counted at its length), beside a floor: what a
fixed-size test that knew each true score would spend (`oracle_share`). 100-LongBench ships no
per-length published rows, so it has none to replay.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from longscope.analysis.adaptive import (
    METHODS,
    SINGLE_SAMPLE_METHOD,
    Method,
    Rule,
    length_alphas,
    simulate,
)
from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.analysis.published import read_published
from longscope.suites import suite_factory, suite_options


@dataclass(frozen=True)
class Mix:
    """A suite's full grid as the simulation draws it, and the rule its effective length uses."""

    suite: str
    per_round: int
    """Samples in one round (one per task, or per task and language)."""
    rounds: int
    """Rounds in a full cell (samples per task and length)."""
    rule: Rule
    method: Method
    """The sequence the driver uses for this suite (`--method` replays another)."""


def ruler_mix() -> Mix:
    """RULER's declared defaults: its tasks, averaged equally, and its samples per cell."""
    options = {p.name: p.default for p in suite_options("ruler")}
    return Mix(
        "ruler", len(options["tasks"]), int(options["samples"]), Rule("absolute"), "asymptotic"
    )


def longbench_pro_mix() -> Mix:
    """LongBench Pro: 1,500 samples = 25 secondary tasks x 2 languages x 6 buckets x 5, built
    whole: `run --adaptive` sees each bucket as one cell of 250 samples in a fixed pseudo-random
    order (`run.prepared.CellSelection`), rounds of one sample, by the betting sequence
    (run/adaptive.py), and its score is the bucket's plain mean."""
    return Mix("longbench-pro", 1, 250, Rule("relative", fraction=0.9), SINGLE_SAMPLE_METHOD)


def curves(mix: Mix) -> list[tuple[str, dict[int, float]]]:
    """Return (model, {length: score 0-100}) for each published row with two lengths or more."""
    factory = suite_factory(mix.suite)
    table = factory.published() or read_published(factory.PUBLISHED)
    out = []
    for row in table.rows:
        if len(row.lengths) >= 2:
            name = f"{row.model} [{row.mode}]" if row.mode else row.model
            out.append((name, dict(sorted(row.lengths.items()))))
    return out


def position(tokens: int | None, lengths: Sequence[int]) -> int:
    """Return an effective length's step on the grid: 0 below the shortest, i + 1 at lengths[i]."""
    return 0 if tokens is None else list(lengths).index(tokens) + 1


@dataclass(frozen=True)
class Outcome:
    exact: bool
    within_one: bool
    share: float
    """Prompt tokens sent over the full grid's."""
    decided: bool
    looks: int
    non_monotone: bool


def replay(
    curve: dict[int, float],
    mix: Mix,
    confidence: float,
    rng: np.random.Generator,
    method: Method | None = None,
) -> Outcome:
    """Return one simulated adaptive run against one simulated full grid of `curve` (by `method`,
    else the suite's driver's)."""
    made = simulate(
        curve, mix.per_round, mix.rounds, mix.rule, confidence, rng, method or mix.method
    )
    lengths = sorted(curve)
    decision = made.decision
    step = abs(position(decision.tokens, lengths) - position(made.truth, lengths))
    return Outcome(
        decision.decided and decision.tokens == made.truth,
        decision.decided and step <= 1,
        made.share,
        decision.decided,
        made.looks,
        bool(decision.non_monotone),
    )


def oracle_share(curve: dict[int, float], mix: Mix, confidence: float, split: bool = True) -> float:
    """Return the prompt-token share a fixed-size test that knew the true curve would need.

    For each length the rule reads (up to the first true failure), the fewest samples whose
    normal interval at that length's error (`length_alphas`; the whole `1 - confidence` when not
    `split`), with the finite-population correction, excludes the bar at the true margin; the bar
    taken as known exactly (free). No sound search that must tell each verdict at that confidence
    can expect to spend much less: a floor for the targets, not a method.
    """
    lengths = sorted(curve)
    alphas = length_alphas(confidence, lengths) if split else dict.fromkeys(lengths, 1 - confidence)
    bar = _bar(curve, mix.rule)
    size = mix.per_round * mix.rounds
    spent = 0.0
    for i, n in enumerate(lengths):
        if not (mix.rule.kind == "relative" and i == 0):
            p, margin = curve[n] / 100.0, abs(curve[n] - bar) / 100.0
            z2v = NormalDist().inv_cdf(1 - alphas[n] / 2) ** 2 * max(p * (1 - p), 1e-9)
            need = z2v * size / (margin**2 * (size - 1) + z2v) if margin > 0 else size
            spent += min(size, math.floor(need) + 1) / size * n
        if curve[n] < bar:
            break
    return spent / sum(lengths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="6 rows per suite, 10 runs each")
    parser.add_argument("--runs", type=int, default=200, help="simulated runs per published row")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--method",
        choices=METHODS,
        default=None,
        help="the confidence sequence (analysis.adaptive.confidence_path); default: each "
        "suite's, as run --adaptive chooses it",
    )
    parser.add_argument("--per-model", action="store_true", help="print every row's figures")
    args = parser.parse_args()
    runs = 10 if args.smoke else args.runs
    rng = np.random.default_rng(args.seed)
    started = time.process_time()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    print(
        f"# {args.method or 'driver'} sequences at confidence {args.confidence}, {runs} simulated runs per row, seed {args.seed}; "
        f"RULER at {RULER_THRESHOLD}, LongBench Pro at 0.9 x its 8K score"
    )
    every: list[Outcome] = []
    for mix in (ruler_mix(), longbench_pro_mix()):
        rows = curves(mix)
        if args.smoke:
            rows = rows[:: max(1, len(rows) // 6)][:6]
        outcomes: list[Outcome] = []
        for model, curve in rows:
            mine = [replay(curve, mix, args.confidence, rng, args.method) for _ in range(runs)]
            outcomes += mine
            if args.per_model:
                print(
                    f"  {model}: exact {np.mean([o.exact for o in mine]):.1%}, within one "
                    f"{np.mean([o.within_one for o in mine]):.1%}, tokens "
                    f"{np.mean([o.share for o in mine]):.1%} of the full grid, published "
                    f"{effective_length(curve, _bar(curve, mix.rule)).label}"
                )
        every += outcomes
        method = args.method or mix.method
        _line(
            f"{mix.suite} ({len(rows)} rows, {mix.per_round} x {mix.rounds} per length, {method})",
            outcomes,
        )
        floors = [oracle_share(c, mix, args.confidence) for _, c in rows]
        bare = [oracle_share(c, mix, args.confidence, split=False) for _, c in rows]
        print(
            f"  floor: a fixed-size test knowing each true margin spends {np.mean(floors):.1%} "
            f"(median {np.median(floors):.1%}); with no union bound over lengths {np.mean(bare):.1%}"
        )
        assert all(o.decided for o in outcomes), "a run stopped undecided with cells left to send"
    _line("overall", every)
    spent = time.process_time() - started
    print(f"# {len(every)} simulated runs in {spent:.1f} s CPU")
    assert all(0.0 < o.share <= 1.0 for o in every)
    # The census of every cell gives the full grid's own answer: never worse than the grid.
    assert all(o.share < 1.0 or o.exact for o in every)


def _bar(curve: dict[int, float], rule: Rule) -> float:
    return rule.fraction * curve[min(curve)] if rule.kind == "relative" else rule.threshold


def _line(name: str, outcomes: Sequence[Outcome]) -> None:
    shares = np.array([o.share for o in outcomes])
    print(
        f"{name}: exact {np.mean([o.exact for o in outcomes]):.1%}, within one step "
        f"{np.mean([o.within_one for o in outcomes]):.1%}, prompt tokens {shares.mean():.1%} of "
        f"the full grid (median {np.median(shares):.1%}, max {shares.max():.1%}), "
        f"{np.mean([o.looks for o in outcomes]):.1f} looks, non-monotone flagged in "
        f"{sum(o.non_monotone for o in outcomes)}"
    )
    if not math.isfinite(float(shares.mean())):
        raise SystemExit("no run simulated")


if __name__ == "__main__":
    main()
