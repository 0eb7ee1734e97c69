"""Standard errors and bootstrap intervals for every score of a scored run, whatever the suite.

`with_uncertainty(summary, rows, cluster_key)` returns the summary with:
- its curve metrics (`analysis.curves`: effective length, length AUC, wAvg, LongScore), each
  number on the score scale with its clustered SE (a linear, or linearized, combination of the
  curve's scores: `combination_se`);
- a clustered and a plain standard error on every breakdown cell, every point of the length curve
  and of the per-category curves, the overall score, every heatmap cell, and every cell of a
  suite's own table that names its requests (`Table.where`);
- bootstrap intervals (clusters resampled, seeded, recorded) of the effective length at RULER's
  threshold and at the relative one (90% of the score at the shortest length), of the length AUC
  and of LongScore.

Nothing here knows a suite. A suite's cells are means of per-request values (or means of group
means, as RULER averages tasks then lengths), so each shown score is found again from the requests:
the group a request counts in is read from its sample's fields (the breakdown's key, else the field
whose values are the cell names), and the way the suite averaged (plain mean, mean over samples of
their repeats, mean over tasks, mean over lengths...) is the first of a few candidates that gives
back the shown number to its rounding. A score that no candidate reproduces gets no standard error
(counted in `uncertainty.unmatched`): an error bar is never drawn on a number it does not describe.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from longscope.analysis.curves import auc_weights, length_auc, view_metrics
from longscope.analysis.effective import RULER_THRESHOLD, effective_length, relative_threshold
from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS, longscore
from longscope.analysis.stats import (
    Estimate,
    clustered_se,
    estimate,
    quantile_index,
    stratified_weights,
)
from longscope.summary import Breakdown, CurveMetrics, Error, Grid, Interval, Summary, Table, View
from longscope.types import SCORABLE, ScoredRow

DEFAULT_SEED = 0
DEFAULT_REPLICATES = 1000
RELATIVE_FRACTION = 0.9
TOLERANCE = 0.051
"""How far a recomputed score may sit from the shown one: shown scores are rounded to 0.1."""

ClusterKey = Callable[[Mapping[str, Any]], Hashable]


def default_cluster_key(sample: Mapping[str, Any]) -> str:
    """The sample itself: its repeats are one cluster."""
    return str(sample["id"])


def cluster_key_of(
    hook: ClusterKey | None, documents: Mapping[str, str] | None = None
) -> ClusterKey:
    """Return the suite's `cluster_key` (`hook`, declared on `Suite`: None by default) when it
    gives one, else the document.

    `documents`: each sample's context hash (the store's); samples reading the same document or
    haystack are one cluster, and a sample's repeats always are.
    """
    if hook is not None:
        return hook
    if not documents:
        return default_cluster_key
    known = dict(documents)
    return lambda sample: known.get(str(sample["id"]), str(sample["id"]))


def cluster_name(hook: ClusterKey | None) -> str:
    """Return what the suite's clusters are, from its `cluster_key` (`hook`) docstring's first
    line."""
    doc = ((hook.__doc__ or "") if hook is not None else "").strip().splitlines()
    if doc:
        line = doc[0].rstrip(".")
        return line[:1].lower() + line[1:]
    return "the document (samples reading the same context are one cluster, with their repeats)"


@dataclass(frozen=True)
class Unit:
    """One request as the statistics see it: its value (0-100), cluster and sample labels."""

    value: float
    cluster: Hashable
    labels: dict[str, str]


_BUCKET = re.compile(r"^(\d+)[kK]$")


def labels_of(sample: Mapping[str, Any]) -> dict[str, str]:
    """Every scalar field of a sample (and of its meta) as text, with two derived forms.

    A fraction in [0, 1] also reads as a percentage (`depth` 0.5 -> `50%`, as depth cells are
    named) and a bucket like `8k` as tokens (`8192`, as length curves are keyed).
    """
    out = {"id": str(sample.get("id"))}
    for key, value in sample.items():
        if isinstance(value, str | int | float) and key not in ("context", "question"):
            out[key] = str(value)
    meta = sample.get("meta") or {}
    for key, value in meta.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        out[f"meta.{key}"] = str(value)
        if isinstance(value, float) and 0.0 <= value <= 1.0:
            out[f"meta.{key}%"] = f"{round(value * 100)}%"
        if isinstance(value, str):
            bucket = _BUCKET.match(value)
            if bucket:
                out[f"meta.{key}#"] = str(int(bucket.group(1)) * 1024)
            if "language" in sample:
                out[f"language+{key}"] = f"{sample['language']} {value}"
    return out


def units_of(rows: Sequence[ScoredRow], cluster_key: ClusterKey) -> list[Unit]:
    """Return a unit per graded request; a failed request counts 0, as every suite counts it.

    A judge that failed to rule is neither right nor wrong: its request leaves the statistics, as
    it leaves the suites' cells.
    """
    units = []
    for row in rows:
        if row.score is not None and row.score.evidence.get("judge_failed"):
            continue
        ok = row.generation.status in SCORABLE and row.score is not None
        value = 100.0 * row.score.fraction if ok and row.score else 0.0
        labels = {
            **labels_of(row.sample),
            "@repeat": str(row.repeat),
            "@status": row.generation.status,
        }
        units.append(Unit(value, cluster_key(row.sample), labels))
    return units


class Columns:
    """Units as columns (values, cluster codes, one array per label) for fast selection."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.units = list(units)
        self.value = np.array([u.value for u in self.units], dtype=float)
        codes: dict[Hashable, int] = {}
        self.cluster = np.array(
            [codes.setdefault(u.cluster, len(codes)) for u in self.units], dtype=np.int64
        )
        names = dict.fromkeys(f for u in self.units for f in u.labels)
        self.labels = {
            f: np.array([u.labels.get(f, "") for u in self.units], dtype=object) for f in names
        }

    @functools.cached_property
    def unsent(self) -> np.ndarray:
        """True for each request never sent (skipped) or refused for its length."""
        status = self.column("@status")
        return np.logical_or.reduce([status == name for name in UNSENT])

    def column(self, name: str) -> np.ndarray:
        return self.labels.get(name, np.full(len(self.units), "", dtype=object))

    def where(self, **equal: str) -> np.ndarray:
        """Return the indices of units whose labels equal the given values (`field=value`)."""
        mask = np.ones(len(self.units), dtype=bool)
        for name, value in equal.items():
            mask &= self.column(name) == value
        return np.flatnonzero(mask)


def find_field(units: Sequence[Unit] | Columns, key: str, names: Sequence[str]) -> str | None:
    """Return the label whose values name `names` (the breakdown's own key first), or None."""
    table = units if isinstance(units, Columns) else Columns(units)
    wanted = set(names)
    if not wanted:
        return None
    seen = {f: set(column.tolist()) for f, column in table.labels.items()}
    covering = [f for f, values in seen.items() if wanted <= values]
    if not covering:
        return None
    for field in (key, f"meta.{key}", f"meta.{key}%", f"meta.{key}#"):
        if field in covering:
            return field
    return min(covering, key=lambda f: (len(seen[f] - wanted), f))


SENT = "@sent"
"""Leading a spec: the score leaves out requests never sent or refused for their length (as
MRCR's means do, following OpenAI's script); without it they count 0, as most suites count them."""
UNSENT = ("skipped", "context_overflow")


def chosen(table: Columns, index: np.ndarray, spec: Sequence[str]) -> tuple[np.ndarray, tuple]:
    """Return the requests a spec averages (all, or the sent ones under `@sent`) and its levels."""
    if spec and spec[0] == SENT:
        return index[~table.unsent[index]], tuple(spec[1:])
    return index, tuple(spec)


def _fit(
    shown: float | None, table: Columns, index: np.ndarray, specs: Sequence[Sequence[str]]
) -> tuple[Estimate, tuple[str, ...]] | None:
    """Return the estimate (and its averaging) that gives back the shown score, else None.

    Each averaging is tried over every request, then (where some were never sent) over the sent
    ones only.
    """
    if shown is None or not len(index):
        return None
    candidates = [tuple(s for s in spec if s) for spec in specs]
    if table.unsent[index].any():
        candidates += [(SENT, *spec) for spec in candidates]
    tried: set[tuple[str, ...]] = set()
    for spec in candidates:
        if spec in tried:
            continue
        tried.add(spec)
        mine, levels = chosen(table, index, spec)
        if not len(mine):
            continue
        values = table.value[mine]
        clusters = table.cluster[mine]
        est = estimate(values, clusters.tolist(), [table.column(n)[mine].tolist() for n in levels])
        if min(abs(est.value - shown), abs(max(0.0, est.value) - shown)) <= TOLERANCE:
            return est, spec
    return None


def _error(est: Estimate) -> Error:
    interval = est.interval()
    # Scores live on 0-100: an interval past either end says nothing more than the end itself.
    low, high = (
        (None, None) if interval is None else (max(0.0, interval[0]), min(100.0, interval[1]))
    )
    return Error(
        _round(est.se), _round(est.se_plain), est.n, est.clusters, _round(low), _round(high)
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass
class _Tally:
    matched: int = 0
    unmatched: int = 0

    def count(self, found: object) -> None:
        if found is None:
            self.unmatched += 1
        else:
            self.matched += 1


def view_units(view: View, units: Sequence[Unit], views: int) -> list[Unit]:
    """Return the units of one view: all of them, or those whose sample names the view (a mode)."""
    if views <= 1 and not view.name:
        return list(units)
    return [u for u in units if view.name in u.labels.values()]


@dataclass(frozen=True)
class Fitted:
    """How a view's curves were found again from its requests (for SEs of numbers read off them)."""

    length_field: str | None
    category_field: str | None
    lengths: dict[int, tuple[str, ...]]
    """Per length of `by_length`: the averaging that gives back the shown score."""
    categories: dict[str, dict[int, tuple[str, ...]]]
    """The same per category curve and length."""


def errors_of_view(view: View, units: Sequence[Unit], tally: _Tally) -> tuple[View, Fitted]:
    """Return the view with standard errors filled in, and how its curves were found again."""
    table = Columns(units)
    lengths = [str(n) for n in view.by_length]
    length_field = find_field(table, "length", lengths)
    category_field = find_field(table, "task", list(view.curves)) if view.curves else None
    # The averaging a suite's own table declares (`@mean_of`, RULER's mean of task means) is
    # tried first: the same number then has the same standard error wherever it is shown.
    declared = list(
        dict.fromkeys(
            tuple(f for f in where["@mean_of"].split(",") if f)
            for shown_table in view.tables
            for row in shown_table.where
            for where in row
            if where and where.get("@mean_of")
        )
    )
    length_specs: dict[int, tuple[str, ...]] = {}
    length_errors: dict[int, Error] = {}
    if length_field:
        for length, shown in view.by_length.items():
            index = table.where(**{length_field: str(length)})
            found = _fit(shown, table, index, [*declared, (), ("id",), (category_field or "",)])
            tally.count(found)
            if found:
                length_errors[length] = _error(found[0])
                length_specs[length] = found[1]
    curve_errors: dict[str, dict[int, Error]] = {}
    curve_specs: dict[str, dict[int, tuple[str, ...]]] = {}
    if length_field and category_field:
        for name, points in view.curves.items():
            for length, shown in points.items():
                index = table.where(**{category_field: name, length_field: str(length)})
                found = _fit(shown, table, index, [(), ("id",)])
                tally.count(found)
                if found:
                    curve_errors.setdefault(name, {})[length] = _error(found[0])
                    curve_specs.setdefault(name, {})[length] = found[1]
    everything = np.arange(len(units))
    in_curve = everything
    if length_field and view.by_length:
        in_curve = np.flatnonzero(np.isin(table.column(length_field), lengths))
    overall_specs = [
        *((length_field or "", *spec) for spec in declared),
        (),
        ("id",),
        (length_field or "",),
        (length_field or "", category_field or ""),
        (category_field or "",),
    ]
    overall = None
    if view.overall is not None:
        found = _fit(view.overall, table, everything, overall_specs) or _fit(
            view.overall, table, in_curve, overall_specs
        )
        tally.count(found)
        overall = _error(found[0]) if found else None
    breakdowns = []
    for breakdown in view.breakdowns:
        breakdowns.append(_breakdown_errors(breakdown, table, length_field, category_field, tally))
    fitted = Fitted(length_field, category_field, length_specs, curve_specs)
    return (
        replace(
            view,
            overall_error=overall,
            length_errors=length_errors,
            curve_errors=curve_errors,
            breakdowns=tuple(breakdowns),
            grids=tuple(_grid_errors(g, table, tally) for g in view.grids),
            tables=tuple(_table_errors(t, table, tally) for t in view.tables),
            metrics=_metric_errors(view.metrics, table, fitted, None, view.by_length),
            curve_metrics={
                name: _metric_errors(m, table, fitted, name, view.curves.get(name, {})) or m
                for name, m in view.curve_metrics.items()
            },
        ),
        fitted,
    )


def _grid_errors(grid: Grid, table: Columns, tally: _Tally) -> Grid:
    """Return the grid with a clustered SE per cell: rows and columns are sample fields."""
    rows = list(grid.rows)
    columns = sorted({c for row in grid.rows.values() for c in row})
    row_field = find_field(table, grid.rows_label, rows)
    column_field = find_field(table, grid.columns_label, columns)
    if row_field is None or column_field is None:
        for row in grid.rows.values():
            for _ in row:
                tally.count(None)
        return grid
    errors: dict[str, dict[str, float | None]] = {}
    for name, row in grid.rows.items():
        for column, shown in row.items():
            index = table.where(**{row_field: name, column_field: column})
            found = _fit(shown, table, index, [(), ("id",)])
            tally.count(found)
            if found:
                errors.setdefault(name, {})[column] = _round(found[0].se)
    return replace(grid, errors=errors)


_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*%?\s*$")


def _table_errors(shown: Table, table: Columns, tally: _Tally) -> Table:
    """Return the table with an SE on each cell its `where` names (its requests' selection)."""
    if not shown.where:
        return shown
    errors = []
    for cells, wheres in zip(shown.rows, shown.where, strict=False):
        row: list[float | None] = []
        for text, where in zip(cells, wheres, strict=False):
            number = _NUMBER.match(text) if where is not None else None
            if where is None or number is None:
                row.append(None)
                continue
            found = _fit_cell(float(number.group(1)), table, where)
            tally.count(found)
            row.append(None if found is None else _round(found.se))
        errors.append(tuple(row))
    return replace(shown, errors=tuple(errors))


def _fit_cell(shown: float, table: Columns, where: Mapping[str, str]) -> Estimate | None:
    """Return the estimate of a table cell from its selection, when it gives back `shown`.

    `@repeat` i selects one repeat (0-based); `@repeats` N keeps each sample's first N repeats;
    `@per_sample` `max` scores each sample by its best repeat (best-of-N), `pass` by whether one
    repeat passes `@pass` (pass@N); `@mean_of` names fields averaged level by level (a mean of
    task means); else repeats are averaged per sample or taken as they are.
    """
    fields = {k: v for k, v in where.items() if not k.startswith("@") or k == "@repeat"}
    index = table.where(**fields)
    repeats = where.get("@repeats")
    if repeats is not None:
        index = index[table.column("@repeat")[index].astype(int) < int(repeats)]
    if not len(index):
        return None
    if where.get("@per_sample") == "max":
        ids = table.column("id")[index]
        best: dict[str, float] = {}
        cluster_of: dict[str, int] = {}
        for sid, value, cluster in zip(
            ids.tolist(), table.value[index].tolist(), table.cluster[index].tolist(), strict=True
        ):
            best[sid] = max(best.get(sid, value), value)
            cluster_of[sid] = cluster
        est = estimate(list(best.values()), [cluster_of[s] for s in best])
        return est if abs(est.value - shown) <= TOLERANCE else None
    if where.get("@per_sample") == "pass":
        return _pass_rate(shown, table, index, where.get("@pass", ""))
    levels = tuple(f for f in where.get("@mean_of", "").split(",") if f)
    found = _fit(shown, table, index, [levels, (*levels, "id")] if levels else [(), ("id",)])
    return None if found is None else found[0]


def _pass_rate(shown: float, table: Columns, index: np.ndarray, rule: str) -> Estimate | None:
    """Return the share (0-100) of samples with a passing repeat (pass@N), clustered.

    `rule`: `;`-separated `CONDITION:OP THRESHOLD` where CONDITION is `field=value` or `*` (the
    first that holds decides) and OP is `>` or `>=` on the request's value (0-100); e.g.
    `meta.metric=summary:>65;*:>=100`.
    """
    rules = []
    for part in (p for p in rule.split(";") if p.strip()):
        condition, _, test = part.partition(":")
        op = ">=" if test.strip().startswith(">=") else ">"
        rules.append((condition.strip(), op, float(test.strip().lstrip(">="))))
    if not rules:
        return None
    passed: dict[str, float] = {}
    cluster_of: dict[str, int] = {}
    for i in index.tolist():
        labels = table.units[i].labels
        value = float(table.value[i])
        ok = False
        for condition, op, bar in rules:
            name, _, wanted = condition.partition("=")
            if condition == "*" or labels.get(name) == wanted:
                ok = value >= bar if op == ">=" else value > bar
                break
        sid = labels["id"]
        passed[sid] = max(passed.get(sid, 0.0), 100.0 if ok else 0.0)
        cluster_of[sid] = int(table.cluster[i])
    est = estimate(list(passed.values()), [cluster_of[s] for s in passed])
    return est if abs(est.value - shown) <= TOLERANCE else None


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


def _metric_errors(
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


def _breakdown_errors(
    breakdown: Breakdown,
    table: Columns,
    length_field: str | None,
    category_field: str | None,
    tally: _Tally,
) -> Breakdown:
    names = [k for k, c in breakdown.cells.items() if c.score is not None]
    field = find_field(table, breakdown.key, names)
    if field is None:
        for _ in names:
            tally.count(None)
        return breakdown
    specs = [
        (),
        ("id",),
        (length_field or "",),
        (category_field or "",),
        (length_field or "", category_field or ""),
    ]
    cells = {}
    for name, cell in breakdown.cells.items():
        if cell.score is None:
            cells[name] = cell
            continue
        found = _fit(cell.score, table, table.where(**{field: name}), specs)
        tally.count(found)
        if found is None:
            cells[name] = cell
            continue
        est = found[0]
        cells[name] = replace(
            cell,
            se=_round(est.se),
            se_plain=_round(est.se_plain),
            clusters=est.clusters,
            # A suite that gave no count (LongBench Pro's official averages): the requests found.
            n=cell.n if cell.n is not None else est.n,
        )
    return replace(breakdown, cells=cells)


# --- bootstrap of numbers read off the curve ----------------------------------------------------


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


def _with_se(intervals: Sequence[Interval], metrics: CurveMetrics | None) -> tuple[Interval, ...]:
    """Give the numeric intervals (length AUC, LongScore) their clustered SE from the metrics."""
    if metrics is None:
        return tuple(intervals)
    se = {"length AUC": metrics.auc_se, "LongScore": metrics.longscore_se}
    return tuple(replace(i, se=se.get(i.name)) for i in intervals)


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
    tally = _Tally()
    views = []
    for view in summary.views:
        mine = view_units(view, units, len(summary.views))
        filled, fitted = errors_of_view(view_metrics(view), mine, tally)
        intervals = curve_intervals(
            filled, mine, fitted.length_field, fitted.lengths, seed=seed, replicates=replicates
        )
        views.append(replace(filled, intervals=_with_se(intervals, filled.metrics)))
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
    units = view_units(view, units_of(rows, cluster_key), len(summary.views))
    filled, fitted = errors_of_view(view_metrics(view), units, _Tally())
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
    return _with_se(made, filled.metrics)


__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "SENT",
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
    "find_field",
    "intervals_at",
    "labels_of",
    "longscore_gradient",
    "units_of",
    "with_uncertainty",
]
