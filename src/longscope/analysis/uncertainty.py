"""Standard errors and bootstrap intervals for every score of a scored run, whatever the suite.

`with_uncertainty(summary, rows, cluster_key)` returns the summary with:
- its curve metrics (`analysis.curves`: effective length, length AUC, wAvg, LongScore), each
  number on the score scale with its clustered SE (`analysis.combinations`: a linear, or
  linearized, combination of the curve's scores);
- a clustered and a plain standard error on every breakdown cell, every point of the length curve
  and of the per-category curves, the overall score, every heatmap cell, and every cell of a
  suite's own table that names its requests (`analysis.cells`);
- bootstrap intervals (clusters resampled, seeded, recorded) of the effective length at RULER's
  threshold and at the relative one (90% of the score at the shortest length), of the length AUC
  and of LongScore (`analysis.bootstrap`).

The rooms, in dependency order: `clusters` (requests as units, their clusters, the selections a
summary records), `combinations` (SEs of sums over a curve's scores), `cells` (each shown score
found again from the requests it records), `bootstrap` (intervals of numbers read off the curve).
Nothing here knows a suite, and nothing reads a display label: a summary cell records the sample
field and value it groups (`Cell.where`, `View.length_where`...), and statistics select rows by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from longscope.analysis.bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    curve_intervals,
    curve_replicates,
    with_se,
)
from longscope.analysis.cells import Tally, errors_of_view
from longscope.analysis.clusters import (
    SENT,
    ClusterKey,
    Columns,
    Fitted,
    Unit,
    cluster_key_of,
    cluster_name,
    default_cluster_key,
    fields_of,
    grouped_units,
    units_of,
    view_units,
)
from longscope.analysis.combinations import CurveDesign, combination_se, longscore_gradient
from longscope.analysis.curves import view_metrics
from longscope.summary import Interval, Summary
from longscope.types import ScoredRow


def with_uncertainty(
    summary: Summary,
    rows: Sequence[ScoredRow],
    cluster_key: ClusterKey = default_cluster_key,
    *,
    seed: int = DEFAULT_SEED,
    replicates: int = DEFAULT_REPLICATES,
    cluster_name: str = "the sample (its repeats are one cluster)",
) -> Summary:
    """Return `summary` with its curve metrics (`analysis.curves`), standard errors on its
    scores and intervals on its curve numbers."""
    units = units_of(rows, cluster_key)
    tally = Tally()
    views = []
    for view in summary.views:
        mine = grouped_units(view, view_units(view, units, len(summary.views)))
        filled, fitted = errors_of_view(view_metrics(view), mine, tally)
        intervals = curve_intervals(
            filled, mine, fitted.length_field, fitted.lengths, seed=seed, replicates=replicates
        )
        views.append(replace(filled, intervals=with_se(intervals, filled.metrics)))
    record = {
        "cluster": cluster_name,
        "clusters": len({u.cluster for u in units}),
        "requests": len(units),
        "standard_errors": tally.matched,
        "unmatched": tally.unmatched,
        "interval": "95%: t with clusters - 1 degrees of freedom",
        "bootstrap": {
            "seed": seed,
            "replicates": replicates,
            "method": "clusters resampled with replacement within the lengths they span; "
            "percentile interval (2.5%, 50%, 97.5%)",
        },
    }
    return replace(summary, views=tuple(views), uncertainty=record)


def intervals_at(
    summary: Summary,
    rows: Sequence[ScoredRow],
    cluster_key: ClusterKey,
    *,
    threshold: float,
    fraction: float,
) -> tuple[Interval, ...]:
    """Return the first view's bootstrap intervals at another `threshold` and relative `fraction`
    (`profile --threshold/--relative`), drawn with the run's recorded seed and replicates."""
    drawn = summary.uncertainty.get("bootstrap") or {}
    view = summary.view
    units = grouped_units(view, view_units(view, units_of(rows, cluster_key), len(summary.views)))
    filled, fitted = errors_of_view(view_metrics(view), units, Tally())
    made = curve_intervals(
        filled,
        units,
        fitted.length_field,
        fitted.lengths,
        seed=int(drawn.get("seed", DEFAULT_SEED)),
        replicates=int(drawn.get("replicates", DEFAULT_REPLICATES)),
        threshold=threshold,
        fraction=fraction,
    )
    return with_se(made, filled.metrics)


__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "SENT",
    "ClusterKey",
    "Columns",
    "CurveDesign",
    "Fitted",
    "Unit",
    "cluster_key_of",
    "cluster_name",
    "combination_se",
    "curve_intervals",
    "curve_replicates",
    "default_cluster_key",
    "errors_of_view",
    "fields_of",
    "grouped_units",
    "intervals_at",
    "longscore_gradient",
    "units_of",
    "view_units",
    "with_uncertainty",
]
