"""Terminal tables for scored runs (rich), from the typed summary: no suite is named here.

A run's completeness comes first: an incomplete run opens with the line saying how many requests
failed and why, its scores are marked provisional, and a run that scored nothing prints no total
and no level. Every string from a store, a dataset or a server is printed through `safe_text.plain`:
as text, never as rich markup, with control characters made visible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from longscope.summary import (
    Breakdown,
    CurveMetrics,
    Error,
    Grid,
    Headline,
    Summary,
    View,
    incomplete_line,
    length_key,
    no_score_text,
    shard_text,
)
from longscope.summary import (
    Table as SummaryTable,
)
from longscope.text.safe_text import plain


def safe_console(**kwargs: Any) -> Console:
    """Return a Console that prints strings as they are: no markup, emoji codes or highlighting.

    Soft wrap: a line longer than the terminal is left to the terminal, never cut into two lines
    (tables still fit their columns to the width).
    """
    return Console(markup=False, emoji=False, highlight=False, soft_wrap=True, **kwargs)


def _say(console: Console, text: Text) -> None:
    # One logical line stays one line (a narrow terminal may still wrap it visually).
    console.print(text, soft_wrap=True)


def _table(title: str) -> Table:
    return Table(title=plain(title), title_justify="left")


def _row(table: Table, *cells: object) -> None:
    table.add_row(*(cell if isinstance(cell, Text) else plain(cell) for cell in cells))


def print_split(
    console: Console,
    title: str,
    keys: Sequence[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    right: bool = True,
) -> None:
    """Print a table whose `keys` columns (rank, model) repeat in as many parts as the console's
    width needs: at 80 columns a 12-length leaderboard is three readable tables, not one squeezed
    into wrapped cells. Each row holds the key cells, then one cell per column."""
    texts = [[cell if isinstance(cell, Text) else plain(cell) for cell in row] for row in rows]

    def width(index: int, header: str) -> int:
        # A cell's text plus rich's padding (one space each side) and its border.
        return max([len(header), *(texts[r][index].cell_len for r in range(len(texts)))]) + 3

    fixed = 1 + sum(width(i, header) for i, header in enumerate(keys))
    parts: list[list[int]] = [[]]
    used = fixed
    for offset, header in enumerate(columns):
        index = len(keys) + offset
        need = width(index, header)
        if parts[-1] and used + need > console.width:
            parts.append([])
            used = fixed
        parts[-1].append(index)
        used += need
    for number, indices in enumerate(parts, start=1):
        suffix = f" ({number}/{len(parts)})" if len(parts) > 1 else ""
        table = Table(title=plain(title + suffix), title_justify="left")
        for header in keys:
            table.add_column(plain(header), justify="right" if header == "#" else "left")
        for index in indices:
            table.add_column(
                plain(columns[index - len(keys)]), justify="right" if right else "left"
            )
        for row in texts:
            table.add_row(*row[: len(keys)], *(row[i] for i in indices))
        console.print(table)


def _headline(*parts: object) -> Text:
    """Join literal parts (str: ours, bold when wrapped in a 1-tuple) and untrusted ones (plain)."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(plain(part[0], "bold"))
        else:
            text.append(plain(part))
    return text


def length_label(length: int | str) -> str:
    """Return `4K` for 4096, the number itself below 1024."""
    n = int(length)
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def headline_text(summary: Summary, view: View) -> Text:
    """Return `LongCtx MODEL  total 62.5/100  (Level)  raw points ...` for one view."""
    name = f" ({view.name})" if view.name else ""
    start = f" {summary.model}{name}  "
    if summary.state == "none":
        return _headline((summary.title,), start + no_score_text(summary.completeness or {}))
    head = view.headline
    if head.score is None:
        return _headline((summary.title,), start + f"{head.label} -")
    level = level_text(summary, head)
    level = f"  ({level})" if level else ""
    note = f"  {head.note}" if head.note else ""
    why = shard_text(summary.completeness) or "incomplete run"
    provisional = f" provisional ({why})" if summary.state == "provisional" else ""
    return _headline(
        (summary.title,),
        start + f"{head.label} ",
        (f"{head.score:.{head.digits}f}{head.scale}",),
        error_text(view, head.digits),
        provisional,
        level + note,
    )


def level_text(summary: Summary, head: Headline) -> str:
    """Return the headline's level (`Functional Retention`), or why a level is not given: where
    a budget ended too many answers (`analysis.budgets`), the score measures the budget."""
    from longscope.analysis.budgets import bound_lengths

    if not head.level:
        return ""
    bound = bound_lengths(summary.budgets or {})
    if bound:
        where = ", ".join(length_label(n) if str(n).isdigit() else str(n) for n in bound)
        return f"no level: budget-bound at {where}"
    return head.level


def error_text(view: View, digits: int = 1) -> str:
    """Return ` ± 3.1 (95% 55.2 to 67.6, 40 clusters)` for the view's overall score, or ""."""
    error = view.overall_error
    if error is None or view.headline.score != view.overall:
        return ""
    if error.se is None:
        return f" ± n/a ({error.clusters} cluster)"
    return (
        f" ± {error.se:.{digits}f} (95% {error.low:.{digits}f} to {error.high:.{digits}f}, "
        f"{error.clusters} clusters)"
    )


def se_text(se: float | None, clusters: int | None = None) -> str:
    """Return a standard error as a table shows it: `3.1`, or `n/a` (one cluster, or none)."""
    if se is None:
        return "n/a" if clusters else ""
    return f"{se:.1f}"


def scored_text(score: float, error: Error | None, measured: bool = False) -> str:
    """Return `84.2 ±3.1` (a curve's cell); `84.2 ±n/a` where a measured run has no SE for it
    (one cluster behind it); the score alone in a summary that never had errors."""
    if error is not None and error.se is not None:
        return f"{score:.1f} ±{error.se:.1f}"
    return f"{score:.1f} ±n/a" if measured or error is not None else f"{score:.1f}"


def _se_suffix(se: float | None, measured: bool) -> str:
    if se is not None:
        return f" ±{se:.1f}"
    return " ±n/a" if measured else ""


def interval_lines(summary: Summary, view: View) -> list[str]:
    """Return a line per number read off the length curve, with its SE and bootstrap interval:
    `effective length (>= 85.6): 4096 (95% interval 2048 to 4096, ...)`, `length AUC: 61.3
    ± 2.0 (95% interval ...)`. Without intervals (one length, no requests), the numbers alone."""
    boot = summary.uncertainty.get("bootstrap", {})
    how = f"cluster bootstrap, {boot.get('replicates')} replicates, seed {boot.get('seed')}"
    prefix = f"{view.name}: " if view.name else ""
    lines = [
        f"{prefix}{i.name}: {i.estimate}{plus_minus(i.se)} (95% interval {i.low} to {i.high}, "
        f"median {i.median}; {how})"
        for i in view.intervals
    ]
    metrics = view.metrics
    if metrics is not None:
        named = {i.name for i in view.intervals}
        if not any(n.startswith("effective length") for n in named):
            lines.append(
                f"{prefix}effective length (>= {metrics.threshold:g}): {metrics.effective}"
            )
        if "length AUC" not in named and metrics.auc is not None:
            lines.append(f"{prefix}length AUC: {metrics.auc:.1f}{plus_minus(metrics.auc_se)}")
    return lines


def plus_minus(se: float | None, digits: int = 1) -> str:
    """Return ` ± 2.0` for a standard error, "" without one."""
    return "" if se is None else f" ± {se:.{digits}f}"


def longscore_text(metrics: CurveMetrics | None, measured: bool = False) -> str:
    """Return `-12.3 ±4.1`, why LongScore is undefined, or `-` (`±n/a`: a measured run without
    an SE for it)."""
    if metrics is None:
        return "-"
    if metrics.longscore is None:
        return metrics.longscore_undefined or "-"
    return f"{metrics.longscore:+.1f}{_se_suffix(metrics.longscore_se, measured)}"


def base_text(metrics: CurveMetrics | None, measured: bool = False) -> str:
    """Return LongScore's Base as a table shows it: `73.3 ±2.1`, or `-`."""
    if metrics is None or metrics.base is None:
        return "-"
    return f"{metrics.base:.1f}{_se_suffix(metrics.base_se, measured)}"


def wavg_text(metrics: CurveMetrics, measured: bool = False) -> str:
    """Return RULER's weighted averages with their SEs: `66.1 ±1.2 / 82.7 ±0.9`."""
    inc = f"{metrics.wavg_inc}{_se_suffix(metrics.wavg_inc_se, measured)}"
    dec = f"{metrics.wavg_dec}{_se_suffix(metrics.wavg_dec_se, measured)}"
    return f"{inc} / {dec}"


def auc_text(metrics: CurveMetrics | None, measured: bool = False) -> str:
    """Return the length AUC as a table shows it: `61.3 ±2.0`, or `-`."""
    if metrics is None or metrics.auc is None:
        return "-"
    return f"{metrics.auc:.1f}{_se_suffix(metrics.auc_se, measured)}"


def measured(view: View) -> bool:
    """True when the view's errors were computed (a scored run): a missing SE then reads n/a."""
    return view.overall_error is not None or bool(view.length_errors)


def grid_cell(grid: Grid, row: str, column: str) -> str:
    """Return a heatmap cell as tables show it: `84 ±6`, `84 (1 sample: no SE)`, or ""."""
    if column not in grid.rows[row]:
        return ""
    value = f"{grid.rows[row][column]:.0f}"
    errors = grid.errors.get(row, {})
    if column not in errors:
        return value
    se = errors[column]
    return f"{value} ±{se:.1f}" if se is not None else f"{value} ±n/a"


def table_rows(table: SummaryTable) -> list[list[str]]:
    """Return a suite table's cells, each score cell with its standard error (`84.20 ±1.3`)."""
    out = []
    for r, cells in enumerate(table.rows):
        errors = table.errors[r] if r < len(table.errors) else ()
        wheres = table.where[r] if r < len(table.where) else ()
        row = []
        for c, text in enumerate(cells):
            se = errors[c] if c < len(errors) else None
            named = c < len(wheres) and wheres[c] is not None
            if se is not None:
                row.append(f"{text} ±{se:.1f}")
            elif named and c < len(errors) and text.strip() not in ("", "-"):
                row.append(f"{text} ±n/a")
            else:
                row.append(text)
        out.append(row)
    return out


def cluster_line(summary: Summary) -> str:
    """Return the line that says what ± means in this run's tables."""
    record = summary.uncertainty
    if not record:
        return ""
    return (
        f"±: standard error clustered by {record['cluster']} "
        f"({record['clusters']} clusters, {record['requests']} requests); "
        "n/a where one cluster (a single sample) stands behind a score; length AUC: trapezoid "
        "over the lengths measured (tokens, linear axis), divided by their range"
    )


def breakdown_table(breakdown: Breakdown) -> Table:
    table = _table(breakdown.title)
    table.add_column(breakdown.key)
    points = any(c.points is not None for c in breakdown.cells.values())
    if points:
        table.add_column("points", justify="right")
        table.add_column("max", justify="right")
    table.add_column("score %", justify="right")
    table.add_column("± SE", justify="right")
    table.add_column("n", justify="right")
    for key, cell in breakdown.cells.items():
        score = "-" if cell.score is None else f"{cell.score:.1f}"
        extra = (se_text(cell.se, cell.clusters), "" if cell.n is None else str(cell.n))
        if points:
            _row(table, key, f"{cell.points or 0:g}", f"{cell.max or 0:g}", score, *extra)
        else:
            _row(table, key, score, *extra)
    return table


def grid_table(grid: Grid) -> Table:
    columns = sorted({c for row in grid.rows.values() for c in row}, key=length_key)
    table = _table(grid.title)
    table.add_column(grid.rows_label)
    for column in columns:
        table.add_column(column, justify="right")
    for name in grid.rows:
        _row(table, name, *(grid_cell(grid, name, c) for c in columns))
    return table


def curve_rows(view: View) -> tuple[list[str], list[list[str]]] | None:
    """Return the score-by-length table (columns, rows): each category and overall, each cell
    with its SE, then length AUC, and Base and LongScore where a Base exists (all read from the
    view's metrics). None with fewer than two lengths."""
    curves: dict[str, Mapping[int, float]] = {**view.curves, "overall": view.by_length}
    lengths = sorted({n for c in curves.values() for n in c})
    if len(lengths) < 2:
        return None
    metrics = {**view.curve_metrics}
    if view.metrics is not None:
        metrics["overall"] = view.metrics
    with_base = any(m.base is not None for m in metrics.values())
    columns = ["category", *(length_label(n) for n in lengths), "AUC"]
    columns += ["Base", "LongScore"] if with_base else []
    errors = {**view.curve_errors, "overall": view.length_errors}
    known = measured(view)
    rows = []
    for name, points in curves.items():
        mine = errors.get(name, {})
        cells = [
            name,
            *(scored_text(points[n], mine.get(n), known) if n in points else "" for n in lengths),
        ]
        made = metrics.get(name)
        cells.append(auc_text(made, known))
        if with_base:
            cells.append(base_text(made, known))
            cells.append(longscore_text(made, known))
        rows.append(cells)
    return columns, rows


def curves_table(view: View) -> Table | None:
    """Score % by length per category and overall, with AUC, Base and LongScore (see curve_rows)."""
    made = curve_rows(view)
    if made is None:
        return None
    columns, rows = made
    table = _table("Score % by length")
    table.add_column(columns[0])
    for column in columns[1:]:
        table.add_column(column, justify="right")
    for cells in rows:
        _row(table, *cells)
    return table


def print_summary(summary: Summary, console: Console | None = None) -> None:
    """Print a run's summary: the incomplete line, each view's tables, notes, completeness."""
    console = console or safe_console()
    line = incomplete_line(summary.completeness)
    if line:
        _say(console, plain(line, "bold red"))
    if summary.state == "none":
        _say(console, headline_text(summary, summary.view))
    else:
        for view in summary.views:
            _say(console, headline_text(summary, view))
            curves = curves_table(view)
            if curves is not None:
                console.print(curves)
            for breakdown in view.breakdowns:
                if breakdown.cells:
                    console.print(breakdown_table(breakdown))
            for grid in view.grids:
                console.print(grid_table(grid))
            for table in view.tables:
                rich_table = _table(table.title)
                for column in table.columns:
                    rich_table.add_column(column)
                for cells in table_rows(table):
                    _row(rich_table, *cells)
                console.print(rich_table)
        for view in summary.views:
            for line in interval_lines(summary, view):
                _say(console, plain(line))
        for note in summary.notes:
            _say(console, plain(note))
        if cluster_line(summary):
            _say(console, plain(cluster_line(summary)))
    if summary.statuses:
        _say(
            console,
            plain(
                "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
            ),
        )
    table = completeness_table(summary)
    if table is not None:
        console.print(table)
    print_budgets(summary, console)


def print_budgets(summary: Summary, console: Console) -> None:
    """Print the budgets table (analysis.budgets) when a budget touched the run."""
    from longscope.analysis.budgets import BUDGET_COLUMNS, BUDGET_TITLE, budget_note, budget_rows

    if not summary.budgets:
        return
    table = _table(BUDGET_TITLE)
    for name in BUDGET_COLUMNS:
        table.add_column(name, justify="right")
    for cells in budget_rows(summary.budgets, summary.by_length):
        _row(table, *cells)
    console.print(table)
    _say(console, plain(budget_note(summary.budgets)))


def completeness_table(summary: Summary) -> Table | None:
    """Return requested / scored / skipped / failed / not run per length, or None without a record."""
    record = summary.completeness
    if record is None:
        return None
    table = _table("Completeness by length (requests)")
    for name in ("length", "requested", "scored", "skipped", "failed", "not run"):
        table.add_column(name, justify="right")
    for length, cell in record["by_length"].items():
        _row(
            table,
            length,
            *(str(cell[k]) for k in ("requested", "scored", "skipped", "failed", "missing")),
        )
    if len(record["by_length"]) > 1:
        _row(
            table,
            "all",
            *(str(record[k]) for k in ("requested", "scored", "skipped", "failed", "missing")),
        )
    return table


@dataclass(frozen=True)
class TableParts:
    """One table of `compare`, as the terminal splits it and the HTML page shows it whole."""

    title: str
    keys: list[str]
    """The columns every part repeats (rank, model)."""
    columns: list[str]
    rows: list[list[Text]]
    """Each row: the key cells, then one cell per column."""
    right: bool = True


def leaderboard_tables(rows: Sequence[dict[str, Any]]) -> list[TableParts]:
    """Return `compare`'s tables: the leaderboard (scores, effective length, lengths), then one
    per breakdown dimension and view (models as rows, groups as columns)."""
    cell_keys = {f"{v} {g}" if v else g for row in rows for _, v, g, _ in row.get("cells", [])}
    skip = {
        "lengths",
        "cells",
        "source",
        "model",
        "run_id",
        "SE_plain",
        "lengths_se",
        "cells_se",
        "vs_reference",
        "AUC_SE",
        "LongScore_SE",
        "wAvg_inc_SE",
        "wAvg_dec_SE",
        "AUC_range",
        "AUC_note",
        "overall_note",
        *cell_keys,
    }
    columns = list(dict.fromkeys(k for row in rows for k in row if k not in skip))
    # What a reader looks for first comes first (the first part of a split table).
    first = (
        "overall",
        "SE",
        "state",
        "claimed",
        "effective",
        "effective_ci95",
        "AUC",
        "AUC_ci95",
        "suite",
        "comparable",
    )
    columns.sort(key=lambda c: first.index(c) if c in first else len(first))
    lengths = sorted({int(k) for row in rows for k in row.get("lengths", {})})
    # An AUC covers the lengths it was computed over: the column names them (or each cell does).
    ranges = {row["AUC_range"] for row in rows if row.get("AUC_range")}
    headers = [
        f"AUC {next(iter(ranges))}" if c == "AUC" and len(ranges) == 1 else c for c in columns
    ]
    tables = [
        TableParts(
            "Leaderboard",
            ["#", "model"],
            [*headers, *(length_label(n) for n in lengths)],
            [
                [
                    _cell(rank),
                    _cell(row.get("model")),
                    *(_column_cell(row, c, len(ranges) > 1) for c in columns),
                    *(_length_cell(row, str(n)) for n in lengths),
                ]
                for rank, row in enumerate(rows, start=1)
            ],
            right=False,
        )
    ]
    groups: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        for dimension, view, group, _ in row.get("cells", []):
            names = groups.setdefault((dimension, view), [])
            if group not in names:
                names.append(group)
    for (dimension, view), names in groups.items():
        title = f"By {dimension.replace('_', ' ')}" + (f" ({view})" if view else "")
        table_rows = []
        for rank, row in enumerate(rows, start=1):
            values = {g: v for d, w, g, v in row.get("cells", []) if (d, w) == (dimension, view)}
            errors = {g: e for d, w, g, e in row.get("cells_se", []) if (d, w) == (dimension, view)}
            if values:
                table_rows.append(
                    [
                        _cell(rank),
                        _cell(row["model"]),
                        *(_with_se(values.get(n), errors.get(n)) for n in names),
                    ]
                )
        tables.append(TableParts(title, ["#", "model"], list(names), table_rows))
    return tables


PUBLISHED_SE_NOTE = (
    "published rows carry no standard error (their sources print none): their SE "
    "reads `not published` and their cells have no ±; runs' cells show ± SE"
)
NOISE_NOTE = "noise: the 95% interval holds 0; the runs do not differ measurably there"


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Return the lines printed under the leaderboard: each row's AUC and overall notes, and
    what a published row's missing standard errors mean."""
    notes = []
    for row in rows:
        for key in ("AUC_note", "overall_note"):
            if row.get(key):
                label = "AUC" if key == "AUC_note" else "overall"
                notes.append(f"{row.get('model')}: {label}: {row[key]}")
    if any(row.get("state") == "published" for row in rows):
        notes.append(PUBLISHED_SE_NOTE)
    return notes


def print_leaderboard(rows: Sequence[dict[str, Any]], console: Console | None = None) -> None:
    """Print `compare`'s rows (`leaderboard_tables`), each table split into parts where the
    terminal is narrower than the table, their notes, then the differences from the first run."""
    console = console or safe_console()
    for table in leaderboard_tables(rows):
        print_split(console, table.title, table.keys, table.columns, table.rows, right=table.right)
    for note in leaderboard_notes(rows):
        _say(console, plain(note))
    print_differences(rows, console)


def _column_cell(row: Mapping[str, Any], column: str, ranged: bool = False) -> Text:
    """A leaderboard cell; AUC and LongScore with their ± SE where the row has one (an AUC with
    its range when `ranged`: the rows cover different ones)."""
    if column in ("AUC", "LongScore", "wAvg_inc", "wAvg_dec"):
        made = _with_se(row.get(column), row.get(f"{column}_SE"))
        if column == "AUC" and ranged and row.get("AUC") is not None and row.get("AUC_range"):
            made.append(f" ({row['AUC_range']})")
        return made
    return _cell(row.get(column))


def difference_table(rows: Sequence[dict[str, Any]]) -> TableParts | None:
    """Return each run minus the first run given: overall, AUC and per length, with 95%
    intervals (None when there is no second run)."""
    compared = [row for row in rows if row.get("vs_reference")]
    if not compared:
        return None
    lengths = sorted({int(k) for r in compared for k in r["vs_reference"]["by_length"]})
    reference = compared[0]["vs_reference"]["reference"]
    table_rows = []
    for row in compared:
        made = row["vs_reference"]
        table_rows.append(
            [
                _cell(row.get("model")),
                _cell("paired" if made["paired"] else "unpaired"),
                difference_text(made["overall"]),
                difference_text(made.get("auc")),
                *(difference_text(made["by_length"].get(str(n))) for n in lengths),
            ]
        )
    return TableParts(
        f"Difference from {reference} (run - reference, points; 95% interval)",
        ["model", "pairing"],
        ["overall", "AUC", *(length_label(n) for n in lengths)],
        table_rows,
    )


def print_differences(rows: Sequence[dict[str, Any]], console: Console | None = None) -> None:
    """Print each run minus the first run given: overall and per length, with 95% intervals;
    a difference whose interval holds 0 is marked `noise`."""
    table = difference_table(rows)
    if table is None:
        return
    console = console or safe_console()
    print_split(console, table.title, table.keys, table.columns, table.rows)
    for row in rows:
        if row.get("vs_reference"):
            _say(console, plain(f"{row.get('model')}: {row['vs_reference']['note']}"))
    _say(console, plain(NOISE_NOTE))


def difference_text(made: Mapping[str, Any] | None) -> Text:
    """Return `+3.2 [+1.0, +5.4]`, with ` noise` when the interval holds 0."""
    if not made:
        return plain("")
    text = f"{made['difference']:+.1f}"
    if made.get("ci95"):
        low, high = made["ci95"]
        text += f" [{low:+.1f}, {high:+.1f}]"
    if made.get("within_noise"):
        return plain(text + " noise", "dim")
    return plain(text, "bold")


def _with_se(value: Any, se: Any) -> Text:
    if value is None:
        return plain("")
    return plain(f"{value} ±{se:.1f}" if isinstance(se, float) else f"{value}")


def _length_cell(row: Mapping[str, Any], length: str) -> Text:
    return _with_se(row.get("lengths", {}).get(length), row.get("lengths_se", {}).get(length))


def _cell(value: Any) -> Text:
    if isinstance(value, list):
        return plain(" to ".join(str(v) for v in value))
    return plain("" if value is None else value)


def print_longscore(
    model: str,
    title: str,
    summary: Summary,
    base_lengths: Sequence[int],
    console: Console | None = None,
) -> dict[str, Any]:
    """Print Base, raw score and LC per length and LongScore per category, as the summary's
    curve metrics carry them (`api.longscore` sets them at the chosen base lengths and floor);
    return `overall`'s metrics."""
    view = summary.view
    curves = {**view.curves, "overall": view.by_length}
    lengths = sorted({n for c in curves.values() for n in c})
    console = console or safe_console()
    headers = [
        "Base",
        *[f"{length_label(n)} raw" for n in lengths],
        *[f"{length_label(n)} LC" for n in lengths if n not in base_lengths],
        "avg raw",
        "LongScore",
    ]
    metrics = {**view.curve_metrics}
    if view.metrics is not None:
        metrics["overall"] = view.metrics
    rows = []
    for name, scores in curves.items():
        made = metrics.get(name)
        if made is None:
            continue
        errors = view.length_errors if name == "overall" else view.curve_errors.get(name, {})
        known = measured(view)
        cells = [name, base_text(made, known)]
        cells += [
            scored_text(scores[n], errors.get(n), known) if n in scores else "" for n in lengths
        ]
        cells += [
            f"{made.lc[n]:+.1f}" + ("" if n not in made.lc_se else f" ±{made.lc_se[n]:.1f}")
            if n in made.lc
            else ""
            for n in lengths
            if n not in base_lengths
        ]
        raw = "-" if made.longscore_raw is None else f"{made.longscore_raw:.1f}"
        if made.longscore_raw is not None and made.longscore_raw_se is not None:
            raw += f" ±{made.longscore_raw_se:.1f}"
        cells += [raw, longscore_text(made, known)]
        rows.append(cells)
    print_split(console, title, ["task"], headers, rows)
    for line in interval_lines(summary, view):
        if line.startswith("LongScore"):
            console.print(plain(f"overall {line}"))
    return {"model": model, "longscore": metrics.get("overall")}


def print_longscores(
    runs: Sequence[tuple[Any, Summary, Sequence[int], float]], console: Console | None = None
) -> None:
    """Print each run's LongScore table, then both rankings when there are several runs."""
    console = console or safe_console()
    ranking = []
    for run_dir, summary, base_lengths, _floor in runs:
        model = summary.model or str(run_dir)
        title = f"{model} ({summary.suite}, {run_dir})"
        made = print_longscore(model, title, summary, base_lengths, console)
        ranking.append((model, made["longscore"]))
    if len(ranking) > 1:

        def raw(m: CurveMetrics | None) -> float:
            return -(m.longscore_raw or 0.0) if m else 0.0

        def ls(m: CurveMetrics | None) -> float:
            return -(m.longscore if m and m.longscore is not None else -1e9)

        by_raw = sorted(ranking, key=lambda r: raw(r[1]))
        by_ls = sorted(ranking, key=lambda r: ls(r[1]))
        console.print(plain("ranking by raw average:  " + " > ".join(m for m, _ in by_raw)))
        console.print(plain("ranking by LongScore:    " + " > ".join(m for m, _ in by_ls)))


def print_catalogue(console: Console, listed: Any) -> None:
    """Print a `results.Catalogue`: the suites, named models and providers, or one name's
    `-S` parameters and/or `-M` options."""
    for options in listed.options:
        console.print(plain(options.title, "bold"))
        if not options.rows:
            console.print(plain(f"  ({options.none})"))
        for usage, default, text in options.rows:
            console.print(plain(f"  {options.flag} {usage}"))
            console.print(plain(f"      {text} (default: {default})"))
    if listed.options:
        return
    console.print(Text("Suites", style="bold"))
    for name, text in listed.suites:
        console.print(plain(f"  {name:<14} {text}"))
    console.print(
        Text.assemble(("Named models", "bold"), " (llamacpp/NAME; any .gguf path works too)")
    )
    for name, text in listed.models:
        console.print(plain(f"  {name:<14} {text}"))
    console.print(
        Text.assemble(
            ("Providers", "bold"), " (--model PROVIDER/NAME; `longscope list PROVIDER`: its -M)"
        )
    )
    for name, text in listed.providers:
        console.print(plain(f"  {name:<14} {text}"))


__all__ = [
    "auc_text",
    "base_text",
    "breakdown_table",
    "cluster_line",
    "completeness_table",
    "curve_rows",
    "curves_table",
    "difference_text",
    "error_text",
    "grid_cell",
    "headline_text",
    "interval_lines",
    "length_label",
    "longscore_text",
    "measured",
    "plus_minus",
    "print_catalogue",
    "print_differences",
    "print_leaderboard",
    "print_longscore",
    "print_longscores",
    "print_summary",
    "safe_console",
    "scored_text",
    "se_text",
    "table_rows",
    "wavg_text",
]
