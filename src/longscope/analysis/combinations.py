"""Standard errors of numbers read off a length curve: linear combinations of its scores.

Length AUC, wAvg, LongScore's Base, its mean longer score, each LC_n = 100 (S_n / Base - 1) and
LongScore itself are (or linearize to) sum_n c_n S_n over the curve's scores S_n. Each S_n is a
(mean of means of) request values, so the sum is linear in the values: its sandwich SE counts a
cluster that spans several lengths (a question asked at each: the paired case, where a length's
score and the next one's move together) once, with its covariance. Nothing here knows a suite.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from longscope.analysis.clusters import Columns, Fitted, chosen
from longscope.analysis.curves import auc_weights
from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS
from longscope.analysis.stats import clustered_se, stratified_weights
from longscope.summary import CurveMetrics


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class CurveDesign:
    """Each length's requests and their weights in its score, found once per curve, for the SEs
    of several combinations of the curve's scores (AUC, wAvg, Base, LongScore, LC)."""

    def __init__(self, table: Columns, fitted: Fitted, category: str | None = None) -> None:
        self.table = table
        self.parts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        specs = fitted.lengths if category is None else fitted.categories.get(category, {})
        if fitted.length_field is None or (category is not None and fitted.category_field is None):
            return
        lengths = table.column(fitted.length_field)
        mask = np.ones(len(lengths), dtype=bool)
        if category is not None and fitted.category_field is not None:
            mask &= table.column(fitted.category_field) == category
        for length, spec in specs.items():
            index, names = chosen(table, np.flatnonzero(mask & (lengths == str(length))), spec)
            if len(index):
                levels = [table.column(name)[index].tolist() for name in names]
                weights, leaves = stratified_weights(levels, len(index))
                self.parts[length] = (index, weights, leaves)

    def se(
        self, coefficients: Mapping[int, float], plain: bool = True
    ) -> tuple[float | None, float | None]:
        """Return the clustered and plain SEs of sum_n c_n S_n (None where a length is unknown;
        the plain one only when asked: reports print the clustered one)."""
        chosen = []
        offset = 0
        for length, c in coefficients.items():
            if length not in self.parts:
                return None, None
            index, weights, leaves = self.parts[length]
            chosen.append((index, c * weights, leaves + offset))
            offset += int(leaves.max()) + 1
        if not chosen:
            return None, None
        index = np.concatenate([p[0] for p in chosen])
        weights = np.concatenate([p[1] for p in chosen])
        leaves = np.concatenate([p[2] for p in chosen])
        x = self.table.value[index]
        _, clusters = np.unique(self.table.cluster[index], return_inverse=True)
        return (
            clustered_se(x, weights, leaves, clusters.reshape(-1)),
            clustered_se(x, weights, leaves, np.arange(len(index))) if plain else None,
        )


def combination_se(
    table: Columns,
    fitted: Fitted,
    coefficients: Mapping[int, float],
    category: str | None = None,
) -> tuple[float | None, float | None]:
    """Return the clustered and plain SEs of sum_n c_n S_n over a curve's scores S_n.

    Each S_n is a (mean of means of) request values, so the sum is linear in the values: its
    sandwich SE counts a cluster that spans several lengths (a question asked at each) once, with
    its covariance. Smooth functions of the curve (LongScore) pass their gradient as `c`.
    """
    return CurveDesign(table, fitted, category).se(coefficients)


def longscore_gradient(
    lengths: Sequence[int],
    base: float,
    longer: float,
    base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
) -> dict[int, float]:
    """Return d LongScore / d S_n at Base `base` and mean longer score `longer`.

    LongScore = 100 (longer / Base - 1), Base the mean at the base lengths, `longer` the mean at
    the lengths beyond them.
    """
    base_n = [n for n in base_lengths if n in lengths]
    long_n = [n for n in lengths if n not in base_lengths and n > max(base_lengths, default=0)]
    if not base_n or not long_n or base <= 0:
        return {}
    out = {n: 100.0 / (base * len(long_n)) for n in long_n}
    for n in base_n:
        out[n] = -100.0 * longer / (base**2 * len(base_n))
    return out


def metric_errors(
    metrics: CurveMetrics | None,
    table: Columns,
    fitted: Fitted,
    category: str | None,
    curve: Mapping[int, float],
) -> CurveMetrics | None:
    """Return the metrics with the SE of every number on the score scale: each a linear (or
    linearized) combination of the curve's scores (`combination_se`)."""
    if metrics is None:
        return None
    specs = fitted.lengths if category is None else fitted.categories.get(category, {})
    lengths = sorted(specs)
    if not lengths or set(lengths) != set(curve):
        # A length whose score was not found again: no SE of a number read off the whole curve.
        return metrics

    design = CurveDesign(table, fitted, category)

    def se(coefficients: Mapping[int, float]) -> float | None:
        return _round(design.se(coefficients, plain=False)[0]) if coefficients else None

    count = len(lengths)
    total = count * (count + 1) / 2
    base_n = [n for n in DEFAULT_BASE_LENGTHS if n in specs]
    long_n = [n for n in lengths if n not in DEFAULT_BASE_LENGTHS and n > max(DEFAULT_BASE_LENGTHS)]
    made = replace(
        metrics,
        auc_se=se(auc_weights(lengths)) if metrics.auc is not None else None,
        wavg_inc_se=se({n: (i + 1) / total for i, n in enumerate(lengths)}),
        wavg_dec_se=se({n: (count - i) / total for i, n in enumerate(lengths)}),
        base_se=se({n: 1 / len(base_n) for n in base_n}) if metrics.base is not None else None,
        longscore_raw_se=se({n: 1 / len(long_n) for n in long_n}) if long_n else None,
    )
    base = metrics.base
    if not base or metrics.longscore is None or metrics.longscore_raw is None:
        return made
    lc_se = {}
    for n, lc in metrics.lc.items():
        # LC_n = 100 (S_n / Base - 1): d/dS_n = 100 / Base, d/dS_b = -100 S_n / (Base^2 |base|)
        score = base * (1 + lc / 100.0)
        gradient = {b: -100.0 * score / (base**2 * len(base_n)) for b in base_n}
        gradient[n] = 100.0 / base
        value = se(gradient)
        if value is not None:
            lc_se[n] = value
    return replace(
        made,
        longscore_se=se(longscore_gradient(lengths, base, metrics.longscore_raw)),
        lc_se=lc_se,
    )


__all__ = ["CurveDesign", "combination_se", "longscore_gradient", "metric_errors"]
