"""Standard errors of the scores a summary shows: each found again from the requests it groups.

Every shown score (a breakdown cell, a point of a length or category curve, the overall score, a
heatmap cell, a suite's own table cell) is a mean of per-request values, or a mean of group means
(RULER averages tasks, then lengths). Its requests are the ones the summary recorded for it
(`Cell.where`, `Grid.where`, `View.length_where` and `curve_where`, `Table.where`: sample fields
and values): never guessed from a display label. The way the suite averaged (plain mean, mean over
samples of their repeats, mean over tasks, mean over lengths...) is the first of a few candidates
that gives back the shown number to its rounding. A score without a recorded selection, or that
no candidate reproduces, gets no standard error (counted in `uncertainty.unmatched`): an error
bar is never drawn on a number it does not describe.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from longscope.analysis.clusters import (
    CATEGORY,
    LENGTH,
    SENT,
    Columns,
    Fitted,
    Unit,
    chosen,
)
from longscope.analysis.combinations import metric_errors
from longscope.analysis.stats import Estimate, estimate
from longscope.summary import Breakdown, Error, Grid, Table, View

TOLERANCE = 0.051
"""How far a recomputed score may sit from the shown one: shown scores are rounded to 0.1."""


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


def _selected(
    table: Columns, recorded: Mapping[str, str] | None, where: Mapping[str, str]
) -> np.ndarray:
    """Return the rows a recorded selection names (none when nothing was recorded)."""
    if not recorded:
        return np.arange(0)
    return table.select(where)


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
class Tally:
    matched: int = 0
    unmatched: int = 0

    def count(self, found: object) -> None:
        if found is None:
            self.unmatched += 1
        else:
            self.matched += 1


def errors_of_view(view: View, units: Sequence[Unit], tally: Tally) -> tuple[View, Fitted]:
    """Return the view with standard errors filled in, and how its curves were found again.

    `units`: the view's requests with its curve groups as columns (`clusters.grouped_units`).
    """
    table = Columns(units)
    lengths = [str(n) for n in view.by_length]
    length_field = LENGTH if view.length_where else None
    category_field = CATEGORY if view.curves and view.curve_where else None
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
            index = _selected(table, view.length_where.get(length), {length_field: str(length)})
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
                where = {category_field: name, length_field: str(length)}
                if name not in view.curve_where or length not in view.length_where:
                    where = {}
                index = _selected(table, where or None, where)
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
            metrics=metric_errors(view.metrics, table, fitted, None, view.by_length),
            curve_metrics={
                name: metric_errors(m, table, fitted, name, view.curves.get(name, {})) or m
                for name, m in view.curve_metrics.items()
            },
        ),
        fitted,
    )


def _grid_errors(grid: Grid, table: Columns, tally: Tally) -> Grid:
    """Return the grid with a clustered SE per cell, each found from its `Grid.where`."""
    errors: dict[str, dict[str, float | None]] = {}
    for name, row in grid.rows.items():
        for column, shown in row.items():
            where = grid.where.get(name, {}).get(column)
            found = _fit(shown, table, _selected(table, where, where or {}), [(), ("id",)])
            tally.count(found)
            if found:
                errors.setdefault(name, {})[column] = _round(found[0].se)
    return replace(grid, errors=errors)


def _shown_number(text: str) -> float | None:
    """Return the score a table cell shows (`62.50`, `62.5%`), None for text (`-`, `2/3`).

    The cell's requests come from its `where`; only its value is read from the text.
    """
    try:
        number = float(text.strip().removesuffix("%").strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _table_errors(shown: Table, table: Columns, tally: Tally) -> Table:
    """Return the table with an SE on each cell its `where` names (its requests' selection)."""
    if not shown.where:
        return shown
    errors = []
    for cells, wheres in zip(shown.rows, shown.where, strict=False):
        row: list[float | None] = []
        for text, where in zip(cells, wheres, strict=False):
            number = _shown_number(text) if where is not None else None
            if where is None or number is None:
                row.append(None)
                continue
            found = _fit_cell(number, table, where)
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


def _breakdown_errors(
    breakdown: Breakdown,
    table: Columns,
    length_field: str | None,
    category_field: str | None,
    tally: Tally,
) -> Breakdown:
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
        found = _fit(cell.score, table, _selected(table, cell.where, cell.where or {}), specs)
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


__all__ = ["TOLERANCE", "Tally", "errors_of_view"]
