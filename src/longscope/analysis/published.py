"""Published results (a paper's table, an official leaderboard) beside the user's runs.

One format, JSON or CSV, always with the line saying where the numbers come from:

    JSON  {"source": "...", "scale": "percent"|"fraction", "columns": [...], "rows": [[...], ...]}
    CSV   # source: ...
          # scale: fraction            (optional; percent by default)
          model,mode,overall,length/8k,length/16k,language/English,...

Columns: `model` (required); `mode` (which view of a suite the row is, e.g. `thinking`);
`context` (the model's claimed context); `overall`; `length/L` (a score at context length L:
`8k` or a token count); `DIMENSION/GROUP` (a breakdown cell: `language/English`,
`difficulty/Hard`, `primary_task/T3. Evidence-Grounded QA`). Empty cells are left out. Numbers stay
as published; `scale: fraction` ones are shown x100, as runs are.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longscope.analysis.curves import length_auc
from longscope.analysis.effective import RULER_THRESHOLD, effective_length, weighted_averages
from longscope.errors import UsageError

NO_SE = "not published"
"""What a published row shows where a run shows its standard error: sources print none."""


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


@dataclass(frozen=True)
class Published:
    source: str
    rows: tuple[PublishedRow, ...]

    def leaderboard_rows(
        self, thresholds: Sequence[float] = (RULER_THRESHOLD,)
    ) -> list[dict[str, Any]]:
        """Return the rows as `compare` shows runs: columns named as a run's are named."""
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
                shown["wAvg_inc"], shown["wAvg_dec"] = weighted_averages(row.lengths)
                auc = length_auc(row.lengths)
                shown["AUC"] = None if auc is None else round(auc, 2)
                shown["AUC_SE"] = NO_SE
            shown.update(row.stated)
            if row.overall is not None:
                if prefix:
                    shown[f"{prefix}overall"] = row.overall
                shown["overall"] = row.overall
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
        raise UsageError(f"{where}: {value!r} is not a number") from exc
    return number


def _rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], scale: float, name: str
) -> tuple[PublishedRow, ...]:
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
    else:
        comments = {}
        body = []
        for line in text.splitlines():
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                comments[key.strip().lower()] = value.strip()
            elif line.strip():
                body.append(line)
        table = list(csv.reader(io.StringIO("\n".join(body))))
        if not table:
            raise UsageError(f"{name}: no header row")
        columns, rows = [c.strip() for c in table[0]], table[1:]
        source = comments.get("source")
        scale = _scale(comments.get("scale"), name)
    if not isinstance(source, str) or not source.strip():
        raise UsageError(
            f"{name}: no source line: say where the numbers come from "
            '("source" in JSON, "# source: ..." in CSV)'
        )
    return Published(source.strip(), _rows(columns, rows, scale, name))


def from_json_text(text: str, name: str) -> Published:
    """Read the JSON format from text (a data file shipped inside a package)."""
    data = json.loads(text)
    return Published(
        str(data["source"]),
        _rows(data["columns"], data["rows"], _scale(data.get("scale"), name), name),
    )


__all__ = ["NO_SE", "Published", "PublishedRow", "from_json_text", "read_published"]
