"""Published results (a paper's table, an official leaderboard) beside the user's runs.

One format, JSON or CSV, always with the line saying where the numbers come from:

    JSON  {"source": "...", "scale": "percent"|"fraction", "columns": [...], "rows": [[...], ...]}
    CSV   # source: ...
          # scale: fraction            (optional; percent by default)
          model,mode,overall,length/8k,length/16k,language/English,...

A file may say which suite its rows are (`"suite": "mrcr"` in JSON, `# suite: mrcr` in CSV; a
suite's shipped table always does): `compare` then refuses runs of another suite.

Columns: `model` (required); `mode` (which view of a suite the row is, e.g. `thinking`);
`context` (the model's claimed context); `overall`; `length/L` (a score at context length L:
`8k` or a token count); `DIMENSION/GROUP` (a breakdown cell: `language/English`,
`difficulty/Hard`, `primary_task/T3. Evidence-Grounded QA`). Empty cells are left out. Numbers stay
as published; `scale: fraction` ones are shown x100, as runs are.

Numbers read off a published curve (length AUC, RULER's wAvg, an overall that is the mean over
lengths) cover the lengths they were computed over. Beside runs they are computed again over the
runs' measured lengths from the published scores at those lengths, and the range is named
(`AUC_range`); a row that publishes no score at one of those lengths gets none, with the reason.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longscope.analysis.curves import length_auc
from longscope.analysis.effective import RULER_THRESHOLD, effective_length, weighted_averages
from longscope.errors import UsageError

NO_SE = "not published"
"""What a published row shows where a run shows its standard error: sources print none."""
MAX_FIELD = 4096
"""Characters one cell of a published table may hold: a longer one is not a model name or score."""
_MEAN_TOLERANCE = 0.06
"""How far a published overall may sit from the mean of its length scores and still be that mean
(published scores are rounded to 0.1)."""


def range_label(lengths: Sequence[int]) -> str:
    """Return the range a number read off a curve covers: `8K-128K` (`4K` for one length)."""

    def short(n: int) -> str:
        if n % (1024 * 1024) == 0:
            return f"{n // (1024 * 1024)}M"
        return f"{n // 1024}K" if n % 1024 == 0 else str(n)

    if not lengths:
        return ""
    low, high = min(lengths), max(lengths)
    return short(low) if low == high else f"{short(low)}-{short(high)}"


@dataclass(frozen=True)
class PublishedRow:
    model: str
    mode: str = ""
    context: int | None = None
    overall: float | None = None
    lengths: dict[int, float] = field(default_factory=dict)
    cells: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per dimension (`language`, `difficulty`...) the published score of each group."""
    stated: dict[str, Any] = field(default_factory=dict)
    """What the publication states instead of what its scores give (`effective`, `wAvg_inc`,
    `wAvg_dec`; "TBD" included): shown as published, never recomputed."""


def _over_range(row: PublishedRow, measured: Sequence[int] | None) -> dict[str, Any]:
    """Return AUC, wAvg and (where it is their mean) overall of `row` over the `measured` lengths.

    Without `measured` (no run beside the row) they cover the published lengths. A published row
    that lacks a score at one of the measured lengths gets no AUC or wAvg, and says why.
    """
    lengths = sorted(measured) if measured else sorted(row.lengths)
    missing = [n for n in lengths if n not in row.lengths]
    shown: dict[str, Any] = {"AUC_range": range_label(lengths)}
    if missing:
        shown.update(
            AUC=None,
            wAvg_inc=None,
            wAvg_dec=None,
            AUC_note=f"no published score at {', '.join(map(str, missing))}: no AUC over "
            f"{range_label(lengths)}",
        )
        return shown
    curve = {n: row.lengths[n] for n in lengths}
    auc = length_auc(curve)
    shown["AUC"] = None if auc is None else round(auc, 2)
    shown["wAvg_inc"], shown["wAvg_dec"] = weighted_averages(curve)
    return shown


def _overall(row: PublishedRow, measured: Sequence[int] | None) -> tuple[float | None, str]:
    """Return the row's overall over the `measured` lengths and a note when it is not that.

    An overall that is the mean of the row's length scores (RULER's average) is computed again
    over the measured lengths; any other published overall covers what its source measured.
    """
    if row.overall is None or not measured or set(measured) == set(row.lengths):
        return row.overall, ""
    published = range_label(sorted(row.lengths)) or "its source's lengths"
    is_mean = bool(row.lengths) and (
        abs(sum(row.lengths.values()) / len(row.lengths) - row.overall) <= _MEAN_TOLERANCE
    )
    if is_mean and all(n in row.lengths for n in measured):
        value = round(sum(row.lengths[n] for n in measured) / len(measured), 2)
        return (
            value,
            f"mean over {range_label(sorted(measured))} (published: {row.overall} over {published})",
        )
    return (
        row.overall,
        f"as published, over {published}: not the runs' {range_label(sorted(measured))}",
    )


@dataclass(frozen=True)
class Published:
    source: str
    rows: tuple[PublishedRow, ...]
    suite: str = ""
    """The suite the rows are scores of (empty: not said): runs of another suite are refused."""

    def leaderboard_rows(
        self,
        thresholds: Sequence[float] = (RULER_THRESHOLD,),
        measured: Sequence[int] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the rows as `compare` shows runs: columns named as a run's are named.

        `measured`: the lengths the runs beside them measured; numbers read off a curve are
        computed over those lengths (see the module docstring).
        """
        thresholds = tuple(thresholds) or (RULER_THRESHOLD,)
        out = []
        for row in self.rows:
            prefix = f"{row.mode} " if row.mode else ""
            shown: dict[str, Any] = {
                "model": f"{row.model} ({row.mode})" if row.mode else row.model,
                "suite": "published",
                "state": "published",
                "source": self.source,
                "claimed": row.context,
                # Published tables print no standard errors: say so where a run shows its own.
                "SE": NO_SE,
            }
            if row.lengths:
                shown["effective"] = effective_length(row.lengths, thresholds[0]).label
                for threshold in thresholds[1:]:
                    shown[f"effective@{threshold:g}"] = effective_length(
                        row.lengths, threshold
                    ).label
                shown.update(_over_range(row, measured))
                shown["AUC_SE"] = NO_SE
            same_range = not measured or set(measured) == set(row.lengths)
            # A stated wAvg covers the source's lengths: shown only where the runs' are the same.
            shown.update(
                {k: v for k, v in row.stated.items() if same_range or not k.startswith("wAvg")}
            )
            overall, note = _overall(row, measured)
            if note:
                shown["overall_note"] = note
            if overall is not None:
                if prefix:
                    shown[f"{prefix}overall"] = overall
                shown["overall"] = overall
            cells = []
            for dimension, groups in row.cells.items():
                for group, value in groups.items():
                    shown[f"{prefix}{group}"] = value
                    cells.append([dimension, row.mode, group, value])
            shown["cells"] = cells
            shown["lengths"] = {str(k): v for k, v in sorted(row.lengths.items())}
            out.append(shown)
        return out


def _length(text: str) -> int:
    lower = text.strip().lower()
    value = float(lower[:-1]) * 1024 if lower.endswith("k") else float(lower)
    return int(value)


def _number(value: Any, where: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: {_shown(value)} is not a number") from exc
    if not math.isfinite(number):
        raise UsageError(f"{where}: {_shown(value)} is not a finite number: give a score")
    return number


def _shown(value: Any) -> str:
    """A cell as a message quotes it: visible characters, cut to 40."""
    from longscope.text.safe_text import visible

    text = visible(str(value))
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _check_sizes(columns: Sequence[Any], rows: Sequence[Sequence[Any]], name: str) -> None:
    """Refuse a cell longer than MAX_FIELD characters (one line naming where it is)."""
    for number, values in enumerate([columns, *rows]):
        for value in values:
            if isinstance(value, str | list | dict) and len(str(value)) > MAX_FIELD:
                where = "the header" if number == 0 else f"row {number}"
                raise UsageError(
                    f"{name}: {where} has a cell of {len(str(value)):,} characters (at most "
                    f"{MAX_FIELD:,}): not a published table"
                )


def _rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], scale: float, name: str
) -> tuple[PublishedRow, ...]:
    _check_sizes(columns, rows, name)
    if "model" not in columns:
        raise UsageError(f"{name}: no `model` column")
    out = []
    for number, values in enumerate(rows, start=1):
        if len(values) != len(columns):
            raise UsageError(
                f"{name}: row {number} has {len(values)} cells for {len(columns)} columns"
            )
        data = dict(zip(columns, values, strict=True))
        where = f"{name}: row {number}"
        lengths: dict[int, float] = {}
        cells: dict[str, dict[str, float]] = {}
        for column, value in data.items():
            dimension, sep, group = column.partition("/")
            if not sep:
                continue
            score = _number(value, f"{where}: {column}")
            if score is None:
                continue
            if dimension == "length":
                try:
                    lengths[_length(group)] = round(score * scale, 2)
                except ValueError as exc:
                    raise UsageError(f"{name}: column {column!r}: not a length") from exc
            else:
                cells.setdefault(dimension, {})[group] = round(score * scale, 2)
        overall = _number(data.get("overall"), f"{where}: overall")
        context = _number(data.get("context"), f"{where}: context")
        out.append(
            PublishedRow(
                model=str(data["model"]),
                mode=str(data.get("mode") or ""),
                context=int(context) if context is not None else None,
                overall=round(overall * scale, 2) if overall is not None else None,
                lengths=dict(sorted(lengths.items())),
                cells=cells,
            )
        )
    return tuple(out)


def _scale(value: Any, name: str) -> float:
    if value in (None, "", "percent"):
        return 1.0
    if value == "fraction":
        return 100.0
    raise UsageError(f"{name}: scale {value!r}: use percent or fraction")


def read_published(path: str | Path) -> Published:
    """Read published rows from a JSON or CSV file in the format above (one line if malformed)."""
    from longscope.files import read_user_text

    name = str(path)
    text = read_user_text(path, "published rows")
    if name.endswith(".json"):
        from longscope.files import parse_json

        data = parse_json(text, name)
        if not isinstance(data, dict) or not isinstance(data.get("columns"), list):
            raise UsageError(f"{name}: expected an object with source, columns and rows")
        source = data.get("source")
        rows = data.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise UsageError(f"{name}: `rows` must be a list of lists")
        columns = [str(c) for c in data["columns"]]
        scale = _scale(data.get("scale"), name)
        suite = data.get("suite")
    else:
        comments = {}
        body = []
        for line in text.splitlines():
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                comments[key.strip().lower()] = value.strip()
            elif line.strip():
                body.append(line)
        try:
            table = list(csv.reader(io.StringIO("\n".join(body))))
        except csv.Error as exc:
            raise UsageError(f"{name}: not a CSV table ({exc}): check the file") from None
        if not table:
            raise UsageError(f"{name}: no header row")
        columns, rows = [c.strip() for c in table[0]], table[1:]
        source = comments.get("source")
        scale = _scale(comments.get("scale"), name)
        suite = comments.get("suite")
    if not isinstance(source, str) or not source.strip():
        raise UsageError(
            f"{name}: no source line: say where the numbers come from "
            '("source" in JSON, "# source: ..." in CSV)'
        )
    if suite is not None and not isinstance(suite, str):
        raise UsageError(f"{name}: `suite` must be a suite's name")
    return Published(source.strip(), _rows(columns, rows, scale, name), (suite or "").strip())


def from_json_text(text: str, name: str) -> Published:
    """Read the JSON format from text (a data file shipped inside a package)."""
    data = json.loads(text)
    return Published(
        str(data["source"]),
        _rows(data["columns"], data["rows"], _scale(data.get("scale"), name), name),
        str(data.get("suite") or ""),
    )


def refuse_other_suites(table: Published, summaries: Sequence[Any], given: str) -> None:
    """Refuse runs of another suite than the published rows' (one line naming the first)."""
    if not table.suite:
        return
    from longscope.text.safe_text import visible

    suite = visible(table.suite)
    for summary in summaries:
        if summary.suite != table.suite:
            raise UsageError(
                f"compare --published {visible(given)}: run "
                f"{visible(summary.run_id or summary.model)} is a {visible(summary.suite)} run; "
                f"these published rows are {suite} scores and compare with {suite} runs only"
            )


def not_comparable(summary: Any, table: Published) -> list[str]:
    """Return why a run's numbers are not comparable with the published rows (empty: they are).

    From what the run's summary states (`comparable_with_published` and `differences`, which a
    suite writes when it knows its published setup) and the run's view against the published modes
    (an incomplete run says so in its own `state`).
    """
    reasons: list[str] = []
    native = summary.native or {}
    verdict = native.get("comparable_with_published")
    # "subset of N" (fewer samples of the same setup) compares, with a note (`runs_beside`).
    subset = isinstance(verdict, str) and verdict.startswith("subset")
    if verdict is not None and verdict is not True and verdict != "yes" and not subset:
        stated = [str(d) for d in native.get("differences") or ()]
        reasons += stated or [f"comparable with the published table: {verdict}"]
    modes = {row.mode for row in table.rows if row.mode}
    view = summary.view.name
    if modes and view and view not in modes:
        reasons.append(
            f"its view {view} is none of the published ones ({', '.join(sorted(modes))})"
        )
    return reasons


def runs_beside(
    rows: list[dict[str, Any]], summaries: Sequence[Any], tables: Sequence[Published]
) -> None:
    """Say on each run's leaderboard row whether it compares with the published rows
    (`comparable`: `yes`, `no: reason; reason`, or the suite's `subset of N: why`)."""
    by_id = {s.run_id: s for s in summaries if s.run_id}
    for row in rows:
        summary = by_id.get(row.get("run_id", ""))
        if summary is None:
            continue
        reasons = [r for table in tables for r in not_comparable(summary, table)]
        verdict = (summary.native or {}).get("comparable_with_published")
        if reasons:
            row["comparable"] = "no: " + "; ".join(dict.fromkeys(reasons))
        elif isinstance(verdict, str) and verdict.startswith("subset"):
            said = "; ".join(str(d) for d in summary.native.get("differences") or ())
            row["comparable"] = f"{verdict}: {said}" if said else verdict
        else:
            row["comparable"] = "yes"


__all__ = [
    "MAX_FIELD",
    "NO_SE",
    "Published",
    "PublishedRow",
    "from_json_text",
    "not_comparable",
    "range_label",
    "read_published",
    "refuse_other_suites",
    "runs_beside",
]
