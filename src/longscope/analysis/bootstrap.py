"""Bootstrap intervals of the numbers read off a length curve: effective length, AUC, LongScore.

Clusters are resampled with replacement (seeded, recorded in the summary) within the lengths they
span, each replicate's curve is averaged as the suite averaged the run's (`Fitted`), and the
percentile interval (2.5%, 50%, 97.5%) of each number is reported. Effective length is a step
function of the curve, so it gets an interval of lengths, not a standard error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from longscope.analysis.clusters import Columns, Unit, chosen
from longscope.analysis.curves import length_auc
from longscope.analysis.effective import RULER_THRESHOLD, effective_length, relative_threshold
from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS, longscore
from longscope.analysis.stats import quantile_index
from longscope.summary import CurveMetrics, Interval, View

DEFAULT_SEED = 0
DEFAULT_REPLICATES = 1000
RELATIVE_FRACTION = 0.9


def _weighted_stratified(x: np.ndarray, mult: np.ndarray, paths: Sequence[tuple]) -> np.ndarray:
    """Return, per replicate (rows of `mult`), the mean of means over `paths` of x weighted by mult.

    A group left empty by the resampling drops out of its parent's mean, as the suites average
    only the groups they have.
    """
    depth = len(paths[0]) if paths else 0
    leaves: dict[tuple, int] = {}
    leaf = np.array([leaves.setdefault(p, len(leaves)) for p in paths])
    onehot = np.zeros((len(paths), len(leaves)))
    onehot[np.arange(len(paths)), leaf] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        nodes = (mult * x) @ onehot / (mult @ onehot)
    node_paths = list(leaves)
    for level in range(depth, 0, -1):
        parents: dict[tuple, int] = {}
        parent = np.array([parents.setdefault(p[: level - 1], len(parents)) for p in node_paths])
        up = np.zeros((len(node_paths), len(parents)))
        up[np.arange(len(node_paths)), parent] = 1.0
        present = ~np.isnan(nodes)
        with np.errstate(invalid="ignore", divide="ignore"):
            nodes = (np.where(present, nodes, 0.0) @ up) / (present.astype(float) @ up)
        node_paths = list(parents)
    return nodes[:, 0]


def _ordinal(curve: Mapping[int, float], threshold: float) -> int:
    """Return the effective length as an index into the sorted lengths (-1: below the first)."""
    found = effective_length(curve, threshold)
    lengths = sorted(curve)
    return -1 if found.tokens is None else lengths.index(found.tokens)


def _ordinal_label(index: int, lengths: Sequence[int]) -> str:
    if index < 0:
        return f"<{lengths[0]}"
    if index == len(lengths) - 1:
        return f">{lengths[-1]}"
    return str(lengths[index])


def curve_replicates(
    units: Sequence[Unit],
    length_field: str,
    specs: Mapping[int, tuple[str, ...]],
    seed: int,
    replicates: int,
) -> dict[int, np.ndarray]:
    """Return {length: score per bootstrap replicate}, clusters resampled with replacement.

    Clusters are resampled within strata of the lengths they span (a haystack at one length stays
    at that length; a question asked at every length moves with all its lengths), so every
    replicate keeps the run's design.
    """
    table = Columns(units)
    lengths = table.column(length_field)
    keep = np.flatnonzero(np.isin(lengths, [str(n) for n in specs]))
    cluster = table.cluster[keep]
    length_of = lengths[keep]
    spans: dict[int, set[str]] = {}
    for c, length in zip(cluster.tolist(), length_of.tolist(), strict=True):
        spans.setdefault(c, set()).add(length)
    strata: dict[frozenset[str], list[int]] = {}
    for c, span in sorted(spans.items()):
        strata.setdefault(frozenset(span), []).append(c)
    groups = int(cluster.max()) + 1 if len(cluster) else 0
    rng = np.random.default_rng(seed)
    members: dict[int, np.ndarray] = {}
    levels: dict[int, tuple] = {}
    for n, spec in specs.items():
        # `chosen` works on indices into the table; members are indices into `keep`.
        index, levels[n] = chosen(table, keep[np.flatnonzero(length_of == str(n))], spec)
        members[n] = np.searchsorted(keep, index)
    paths = {
        n: list(zip(*(table.column(s)[keep][m].tolist() for s in levels[n]), strict=True))
        if levels[n]
        else [()] * len(m)
        for n, m in members.items()
    }
    out: dict[int, list[np.ndarray]] = {n: [] for n in specs}
    batch = max(1, min(replicates, 2_000_000 // max(1, groups)))
    for start in range(0, replicates, batch):
        size = min(batch, replicates - start)
        counts = np.zeros(size * groups)
        offsets = (np.arange(size) * groups)[:, None]
        for group in strata.values():
            ids = np.asarray(group)[rng.integers(0, len(group), size=(size, len(group)))]
            counts += np.bincount((ids + offsets).ravel(), minlength=size * groups)
        counts = counts.reshape(size, groups)
        for length, index in members.items():
            x = table.value[keep][index]
            out[length].append(_weighted_stratified(x, counts[:, cluster[index]], paths[length]))
    return {n: np.concatenate(parts) for n, parts in out.items()}


def curve_intervals(
    view: View,
    units: Sequence[Unit],
    length_field: str | None,
    specs: Mapping[int, tuple[str, ...]],
    *,
    seed: int = DEFAULT_SEED,
    replicates: int = DEFAULT_REPLICATES,
    threshold: float = RULER_THRESHOLD,
    fraction: float = RELATIVE_FRACTION,
) -> tuple[Interval, ...]:
    """Return bootstrap intervals of effective length (absolute, relative), length AUC and
    LongScore; the numeric ones carry the view's clustered SE (`View.metrics`)."""
    if length_field is None or len(specs) < 2 or set(specs) != set(view.by_length):
        return ()
    reps = curve_replicates(units, length_field, specs, seed, replicates)
    lengths = sorted(reps)
    curves = [{n: float(reps[n][r]) for n in lengths} for r in range(replicates)]
    curves = [c for c in curves if not any(math.isnan(v) for v in c.values())]
    if not curves:
        return ()
    shown = dict(view.by_length)
    out = []
    absolute = np.array([_ordinal(c, threshold) for c in curves])
    out.append(
        _ordinal_interval(f"effective length (>= {threshold:g})", shown, absolute, threshold)
    )
    base = shown[lengths[0]]
    relative = np.array([_ordinal(c, relative_threshold(c[lengths[0]], fraction)) for c in curves])
    out.append(
        _ordinal_interval(
            f"effective length (>= {fraction:.0%} of the {lengths[0]} score)",
            shown,
            relative,
            relative_threshold(base, fraction),
        )
    )
    auc = length_auc(shown)
    if auc is not None:
        values_auc = np.array([length_auc(c) or 0.0 for c in curves])
        low, mid, high = np.quantile(values_auc, [0.025, 0.5, 0.975])
        out.append(Interval("length AUC", f"{auc:.1f}", f"{mid:.1f}", f"{low:.1f}", f"{high:.1f}"))
    own = longscore(shown, DEFAULT_BASE_LENGTHS)
    if own.average is not None:
        values = [longscore(c, DEFAULT_BASE_LENGTHS).average for c in curves]
        defined = np.array([v for v in values if v is not None])
        if len(defined):
            low, mid, high = np.quantile(defined, [0.025, 0.5, 0.975])
            out.append(
                Interval(
                    "LongScore",
                    f"{own.average:+.1f}",
                    f"{mid:+.1f}",
                    f"{low:+.1f}",
                    f"{high:+.1f}",
                )
            )
    return tuple(out)


def _ordinal_interval(
    name: str, shown: Mapping[int, float], outcomes: np.ndarray, threshold: float
) -> Interval:
    lengths = sorted(shown)
    own = _ordinal(shown, threshold)
    return Interval(
        name,
        _ordinal_label(own, lengths),
        _ordinal_label(quantile_index(outcomes, 0.5), lengths),
        _ordinal_label(quantile_index(outcomes, 0.025), lengths),
        _ordinal_label(quantile_index(outcomes, 0.975), lengths),
    )


def with_se(intervals: Sequence[Interval], metrics: CurveMetrics | None) -> tuple[Interval, ...]:
    """Give the numeric intervals (length AUC, LongScore) their clustered SE from the metrics."""
    if metrics is None:
        return tuple(intervals)
    se = {"length AUC": metrics.auc_se, "LongScore": metrics.longscore_se}
    return tuple(replace(i, se=se.get(i.name)) for i in intervals)


__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "RELATIVE_FRACTION",
    "curve_intervals",
    "curve_replicates",
    "with_se",
]
