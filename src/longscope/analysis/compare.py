"""Paired comparisons of two runs: the difference per length and overall, and whether it is noise.

Two runs that answered the same samples are compared sample by sample: each sample's score (the
mean over its repeats; a failed request counts 0, as in the suites' cells) in one run minus the
other's, averaged over the samples both runs hold, with a standard error clustered by the unit
the samples share. Pairing removes what the samples themselves contribute to the variance (a hard
question is hard for both models), so paired differences are far tighter than the two runs'
own errors added up. Runs on different samples (another seed, another data revision) cannot be
paired: the difference of their scores gets the two standard errors added in quadrature, and the
result says so. Nothing here knows a suite.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

import numpy as np

from longscope.analysis.clusters import LENGTH, Unit, grouped_units, units_of, view_units
from longscope.analysis.curves import auc_weights
from longscope.analysis.stats import (
    Difference,
    Estimate,
    clustered_se,
    paired_difference,
    t975,
    unpaired_difference,
)
from longscope.summary import Error, Summary
from longscope.types import ScoredRow


@dataclass(frozen=True)
class Comparison:
    """`run` minus `reference`, overall and per length (points of 100)."""

    reference: str
    run: str
    paired: bool
    note: str
    overall: Difference | None
    by_length: dict[int, Difference] = field(default_factory=dict)
    auc: Difference | None = None
    """Length AUC of `run` minus the reference's, over the reference's lengths."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "run": self.run,
            "paired": self.paired,
            "note": self.note,
            "overall": None if self.overall is None else self.overall.as_dict(),
            "by_length": {str(k): d.as_dict() for k, d in sorted(self.by_length.items())},
            "auc": None if self.auc is None else self.auc.as_dict(),
        }


def _identity(sample: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two stored samples the same question (ids repeat across seeds and revisions)."""
    return (
        sample.get("task"),
        sample.get("question"),
        tuple(sample.get("gold") or ()),
        sample.get("length"),
    )


def _per_sample(
    rows: Sequence[ScoredRow], summary: Summary, clusters: Mapping[str, Hashable]
) -> dict[str, tuple[float, Unit, tuple[Any, ...]]]:
    """Return {sample id: (mean value over repeats, a unit with its labels, identity)}."""
    samples = {str(r.sample.get("id")): r.sample for r in rows}
    units = units_of(rows, lambda s: clusters.get(str(s.get("id")), str(s.get("id"))))
    view = summary.view
    # Each unit's length on the view's curve (`@length`), from the lengths the summary records.
    mine = grouped_units(view, view_units(view, units, len(summary.views)))
    values: dict[str, list[float]] = defaultdict(list)
    first: dict[str, Unit] = {}
    for unit in mine:
        sid = unit.labels["id"]
        values[sid].append(unit.value)
        first.setdefault(sid, unit)
    return {sid: (mean(v), first[sid], _identity(samples[sid])) for sid, v in values.items()}


def _estimate(value: float | None, error: Error | None) -> Estimate | None:
    if value is None or error is None:
        return None
    return Estimate(value, error.se, error.se_plain, error.n, error.clusters)


def compare_runs(
    reference: tuple[str, Summary, Sequence[ScoredRow], Mapping[str, Hashable]],
    other: tuple[str, Summary, Sequence[ScoredRow], Mapping[str, Hashable]],
) -> Comparison:
    """Return `other` minus `reference`: paired on shared samples, else unpaired (and said so).

    Each run is (name, summary, rows, cluster of each sample id); only the first view is
    compared (LongBench Pro's first prompt mode).
    """
    ref_name, ref_summary, ref_rows, ref_clusters = reference
    name, summary, rows, clusters = other
    if ref_summary.suite != summary.suite:
        return Comparison(ref_name, name, False, "different suites: not compared", None)
    a = _per_sample(ref_rows, ref_summary, ref_clusters)
    b = _per_sample(rows, summary, clusters)
    shared = sorted(sid for sid in a.keys() & b.keys() if a[sid][2] == b[sid][2])
    if not shared:
        return _unpaired(ref_name, ref_summary, name, summary)
    length_field = LENGTH if ref_summary.view.length_where else None
    diffs = {sid: b[sid][0] - a[sid][0] for sid in shared}
    cluster_of = {sid: a[sid][1].cluster for sid in shared}
    by_length = {}
    if length_field:
        for length in ref_summary.by_length:
            members = [sid for sid in shared if a[sid][1].labels.get(length_field) == str(length)]
            if members:
                by_length[length] = paired_difference(
                    [diffs[s] for s in members], [cluster_of[s] for s in members]
                )
    overall = paired_difference([diffs[s] for s in shared], [cluster_of[s] for s in shared])
    note = (
        f"paired by sample id on {len(shared)} samples "
        f"({len(a)} in {ref_name}, {len(b)} in {name}), {overall.clusters} clusters"
    )
    auc = None
    if length_field and set(by_length) == set(ref_summary.by_length):
        members = {
            n: [s for s in shared if a[s][1].labels.get(length_field) == str(n)] for n in by_length
        }
        auc = paired_auc(members, diffs, cluster_of)
    return Comparison(ref_name, name, True, note, overall, by_length, auc)


def paired_auc(
    members: Mapping[int, Sequence[str]],
    diffs: Mapping[str, float],
    cluster_of: Mapping[str, Hashable],
) -> Difference | None:
    """Return the difference of length AUCs from per-sample differences at each length.

    AUC is linear in each length's mean, so the AUC difference is sum_n a_n mean_n(diff), a
    weighted mean of the per-sample differences with the clustered sandwich SE (a sample's
    cluster counted once across the lengths it spans).
    """
    weights = auc_weights(list(members))
    ids = [s for n in members for s in members[n]]
    if len(weights) < 2 or not ids:
        return None
    x = np.array([diffs[s] for s in ids])
    w = np.array([weights[n] / len(members[n]) for n in members for _ in members[n]])
    leaves = np.array([i for i, n in enumerate(members) for _ in members[n]])
    codes: dict[Hashable, int] = {}
    clusters = np.array([codes.setdefault(cluster_of[s], len(codes)) for s in ids])
    value = float(np.dot(w, x))
    se = clustered_se(x, w, leaves, clusters)
    if se is None:
        return Difference(value, None, None, None, len(ids), len(codes), True)
    half = t975(len(codes) - 1) * se
    return Difference(value, se, value - half, value + half, len(ids), len(codes), True)


def _unpaired(ref_name: str, ref: Summary, name: str, run: Summary) -> Comparison:
    overall = None
    a, b = (
        _estimate(ref.overall, ref.view.overall_error),
        _estimate(run.overall, run.view.overall_error),
    )
    if a is not None and b is not None:
        overall = unpaired_difference(b, a)
    by_length = {}
    for length, score in ref.by_length.items():
        a = _estimate(score, ref.view.length_errors.get(length))
        b = _estimate(run.by_length.get(length), run.view.length_errors.get(length))
        if a is not None and b is not None:
            by_length[length] = unpaired_difference(b, a)
    note = (
        "unpaired: the runs share no sample (other seed or data), so each score's own standard "
        "error is used and the difference is much less certain than a paired one"
    )
    auc = None
    mine, theirs = ref.view.metrics, run.view.metrics
    # AUCs over other lengths do not compare.
    same = set(ref.by_length) == set(run.by_length)
    if same and mine and theirs and mine.auc is not None and theirs.auc is not None:
        auc = unpaired_difference(
            Estimate(theirs.auc, theirs.auc_se, None, 0, _clusters(run)),
            Estimate(mine.auc, mine.auc_se, None, 0, _clusters(ref)),
        )
    return Comparison(ref_name, name, False, note, overall, by_length, auc)


def _clusters(summary: Summary) -> int:
    error = summary.view.overall_error
    return error.clusters if error is not None else 0


__all__ = ["Comparison", "compare_runs", "paired_auc"]
