"""Every number read off a score-by-length curve, computed once and carried in the summary.

Effective length (RULER's absolute threshold and the relative rule), RULER's weighted averages,
LongScore (100-LongBench) and the length AUC are computed here for each view's curve and each
category curve, and stored in `View.metrics` / `View.curve_metrics`. Reports, `compare` and
`profile` print them; none recomputes them. Nothing here knows a suite.

Length AUC, as MRCR's boards (contextarena.ai) and lm-evaluation-harness's MRCR task (PR #3754,
`lm_eval/tasks/mrcr/utils.py: AUC`) define it: the trapezoid area under the score at each
measured length, the x axis in tokens on a linear scale (not log), divided by the width from the
shortest to the longest length measured; one measured length gives its own score. The result is
the curve's mean height, on the score's 0-100 scale (AUC / 100 is the [0, 1] form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from longscope.analysis.effective import (
    RULER_THRESHOLD,
    effective_length,
    relative_threshold,
    weighted_averages,
)
from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS, DEFAULT_FLOOR, longscore
from longscope.summary import CurveMetrics, Summary, View

RELATIVE_FRACTION = 0.9
"""The relative rule: effective while the score stays at 90% of the shortest length's."""


def auc_weights(lengths: Sequence[int]) -> dict[int, float]:
    """Return each length's weight in the length AUC (they sum to 1).

    Trapezoid on a linear token axis over the measured range: an inner length weighs half the gap
    to each neighbour, an end length half its one gap, all divided by the range's width.
    """
    xs = sorted(set(lengths))
    if not xs:
        return {}
    if len(xs) == 1:
        return {xs[0]: 1.0}
    width = float(xs[-1] - xs[0])
    out = {}
    for i, x in enumerate(xs):
        left = xs[i] - xs[i - 1] if i > 0 else 0
        right = xs[i + 1] - xs[i] if i < len(xs) - 1 else 0
        out[x] = (left + right) / 2.0 / width
    return out


def length_auc(curve: Mapping[int, float]) -> float | None:
    """Return the length AUC (0-100) of a {length: score} curve, None for an empty one."""
    if not curve:
        return None
    weights = auc_weights(list(curve))
    return sum(weights[n] * float(curve[n]) for n in weights)


def curve_metrics(
    curve: Mapping[int, float],
    *,
    threshold: float = RULER_THRESHOLD,
    fraction: float = RELATIVE_FRACTION,
    base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
    floor: float = DEFAULT_FLOOR,
) -> CurveMetrics | None:
    """Return the numbers of one {length: score} curve, or None for an empty curve."""
    if not curve:
        return None
    scores = {int(k): float(v) for k, v in sorted(curve.items())}
    absolute = effective_length(scores, threshold)
    bar = relative_threshold(scores[min(scores)], fraction)
    relative = effective_length(scores, bar)
    inc, dec = weighted_averages(scores)
    ls = longscore(scores, base_lengths, floor)
    auc = length_auc(scores)
    return CurveMetrics(
        effective=absolute.label,
        effective_tokens=absolute.tokens,
        threshold=threshold,
        relative=relative.label,
        relative_tokens=relative.tokens,
        relative_threshold=round(bar, 2),
        auc=None if auc is None else round(auc, 2),
        wavg_inc=inc,
        wavg_dec=dec,
        base=ls.base,
        longscore=ls.average,
        longscore_raw=ls.raw_average,
        longscore_undefined=ls.undefined,
        lc=dict(ls.lc),
    )


def view_metrics(view: View) -> View:
    """Return `view` with the metrics of its length curve and of each category curve."""
    return replace(
        view,
        metrics=curve_metrics(view.by_length),
        curve_metrics={
            name: made
            for name, made in ((n, curve_metrics(c)) for n, c in view.curves.items())
            if made is not None
        },
    )


def with_curve_metrics(summary: Summary) -> Summary:
    """Return `summary` with every view's curve metrics filled in."""
    return replace(summary, views=tuple(view_metrics(v) for v in summary.views))


def at_base_lengths(summary: Summary, base_lengths: Sequence[int], floor: float) -> Summary:
    """Return `summary` with LongScore (and the rest) at other base lengths or floor.

    For `longscope longscore --base ... --floor ...`: the stored metrics use the defaults and
    carry SEs; other choices are computed here (without SEs) and carried in the summary, so the
    renderer only prints.
    """
    defaults = tuple(base_lengths) == DEFAULT_BASE_LENGTHS and floor == DEFAULT_FLOOR
    if defaults and all(v.metrics is not None or not v.by_length for v in summary.views):
        return summary

    def made(curve: Mapping[int, float]) -> CurveMetrics | None:
        return curve_metrics(curve, base_lengths=base_lengths, floor=floor)

    views = []
    for view in summary.views:
        curves = {n: m for n, m in ((n, made(c)) for n, c in view.curves.items()) if m is not None}
        views.append(replace(view, metrics=made(view.by_length), curve_metrics=curves))
    return replace(summary, views=tuple(views))


__all__ = [
    "RELATIVE_FRACTION",
    "at_base_lengths",
    "auc_weights",
    "curve_metrics",
    "length_auc",
    "view_metrics",
    "with_curve_metrics",
]
