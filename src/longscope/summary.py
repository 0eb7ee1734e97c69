"""The typed result of a scored run: what every report, comparison and profile reads.

Every suite's `summarize` returns a `Summary`. Renderers (terminal, HTML, Markdown, JSON) and
analyses (`compare`, `profile`, LongScore, effective length) read only this type and never switch
on a suite's name: a new suite shows up everywhere by filling it in.

A summary holds one or more `View`s: one set of results each (LongBench Pro has one per prompt
mode; most suites have one). A view has a headline (score, scale, level), an overall score, the
score by context length (the curve effective length and LongScore are read from), per-category
curves (score by length per task or type), breakdowns (by depth, task, type, language,
difficulty...), grids (a length x depth heatmap), and whatever tables and facts the suite adds.

Scores are on a 0-100 scale. `native` is the suite's own summary (an official format, kept key for
key: written at the top of summary.json); `extras` are longscope's suite-specific additions,
written under the `longscope` key beside the generic view.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from statistics import mean
from typing import Any

from longscope.types import SCORABLE, ScoredRow

SUMMARY_VERSION = 1

Where = dict[str, str]
"""The requests a number groups, as sample fields and their values as text (`field_text`):
`{"meta.depth": "0.2"}`, `{"task": "qa_1", "meta.target_length": "4096"}`. Statistics select rows
by it (`analysis.uncertainty`), never by parsing a display label such as `20%` or `8k`."""

GROUPING = "where"
"""The name of the grouping fields on `Cell`, `Grid` and `View` (`where`, `length_where`,
`curve_where`): kept in the typed summary that every reader rebuilds from the store, not written to
summary.json, so reports of runs stored before the fields existed stay byte for byte the same."""


@dataclass(frozen=True)
class Cell:
    """One score in a breakdown: 0-100, and how many samples stand behind it."""

    score: float | None
    n: int | None = None
    points: float | None = None
    """Raw points, for suites that count points (LongCtx); `score` is then their percentage."""
    max: float | None = None
    se: float | None = None
    """Standard error of `score`, clustered by the suite's unit (`analysis.uncertainty`)."""
    se_plain: float | None = None
    """Standard error of `score` as if every request were independent."""
    clusters: int | None = None
    """Independent units (documents, haystacks, questions) behind `score`."""
    where: Where | None = field(default=None, compare=False)
    """The requests the cell groups (`{"meta.depth": "0.2"}` for `20%`); None: not recorded, no
    standard error. Not written to summary.json (`GROUPING`)."""


@dataclass(frozen=True)
class Breakdown:
    """Scores per group of one dimension (`depth`, `task`, `language`, `difficulty`, ...)."""

    key: str
    """The dimension, as analyses and published tables name it (`length`, `language`, ...)."""
    title: str
    cells: dict[str, Cell]
    compare: bool = False
    """Shown as columns by `longscope compare` (a model's profile across runs)."""
    plot: bool = False
    """Drawn as bars in the HTML report."""


@dataclass(frozen=True)
class Error:
    """The standard errors of one score on a curve or of a headline (points of 100)."""

    se: float | None
    """Clustered by the unit samples share (the suite's `cluster_key`)."""
    se_plain: float | None
    """As if every request were independent."""
    n: int = 0
    clusters: int = 0
    low: float | None = None
    """The 95% interval (t with clusters - 1 degrees of freedom), when there is an SE."""
    high: float | None = None


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval of a number read off the length curve (effective length, LongScore).

    Texts as reports show them (`32768`, `>65536`, `<4096`, `-12.3`); `estimate` is the number
    from the run itself, `median`, `low` and `high` the bootstrap's 50%, 2.5% and 97.5% points.
    """

    name: str
    estimate: str
    median: str
    low: str
    high: str
    se: float | None = None
    """The standard error of a numeric estimate (LongScore, length AUC); None for a length."""


@dataclass(frozen=True)
class CurveMetrics:
    """The numbers read off one score-by-length curve, computed once (`analysis.curves`).

    Renderers, `compare` and `profile` print these; none of them recomputes a number here.
    """

    effective: str
    """Effective length at `threshold` as text: `32768`, `>65536` (every length passes),
    `<4096` (none does)."""
    effective_tokens: int | None
    threshold: float
    relative: str
    """Effective length at `relative_threshold` (a fraction of the shortest length's score)."""
    relative_tokens: int | None
    relative_threshold: float | None
    auc: float | None
    """Length AUC (0-100): trapezoid area under score by length (tokens, linear axis) divided by
    the width of the lengths measured, as MRCR's boards and lm-evaluation-harness define it."""
    auc_se: float | None = None
    """Clustered standard error of `auc` (filled by `analysis.uncertainty`)."""
    wavg_inc: float | None = None
    wavg_dec: float | None = None
    base: float | None = None
    """LongScore's Base: mean score at the base lengths (None when none was measured)."""
    longscore: float | None = None
    """LongScore: mean over longer lengths of (S_l - Base) / Base x 100; None when undefined."""
    longscore_se: float | None = None
    longscore_raw: float | None = None
    """Mean raw score over the longer lengths."""
    longscore_undefined: str = ""
    """Why LongScore is undefined (no base length measured, Base below the floor)."""
    lc: dict[int, float] = field(default_factory=dict)
    """(S_l - Base) / Base x 100 per longer length."""
    base_se: float | None = None
    longscore_raw_se: float | None = None
    lc_se: dict[int, float] = field(default_factory=dict)
    wavg_inc_se: float | None = None
    wavg_dec_se: float | None = None


@dataclass(frozen=True)
class Grid:
    """A two-dimensional table of scores (0-100), drawn as a heatmap: e.g. depth x length."""

    title: str
    rows_label: str
    columns_label: str
    rows: dict[str, dict[str, float]]
    errors: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Clustered standard error per cell (`analysis.uncertainty`): None where one cluster (a
    single sample) stands behind the cell; a cell absent here was not matched."""
    where: dict[str, dict[str, Where]] = field(default_factory=dict, compare=False)
    """Parallel to `rows`: the requests each cell groups (`grid_where`); a cell absent here has
    no standard error. Not written to summary.json (`GROUPING`)."""


@dataclass(frozen=True)
class Table:
    """Anything else a suite shows as a table: cells are text, formatted by the suite."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    where: tuple[tuple[dict[str, str] | None, ...], ...] = ()
    """Optional, parallel to `rows`: for each cell that shows a score, the requests behind it
    as sample fields and values (`{"task": "qa_1", "meta.target_length": "4096"}`), plus how
    they combine: `@repeat` (one repeat), `@repeats` (the first N), `@per_sample` (`max`:
    best-of-N; `pass`: pass@N by the rule in `@pass`), `@mean_of` (a mean of group means).
    `analysis.uncertainty._fit_cell` reads it to give the cell its standard error."""
    errors: tuple[tuple[float | None, ...], ...] = ()
    """Parallel to `rows`: each score cell's standard error (filled by `analysis.uncertainty`)."""


@dataclass(frozen=True)
class Headline:
    """The one number a run is known by, as the suite states it."""

    label: str = "overall"
    score: float | None = None
    scale: str = ""
    """Printed after the score, e.g. `/100`."""
    digits: int = 1
    level: str | None = None
    """A named band of the score (LongCtx's retention levels), when the suite has one."""
    note: str = ""
    """Printed after the score and level: raw points, question counts..."""

    def text(self) -> str:
        """Return `62.5/100 (Functional Retention)`, or `no score` without a score."""
        if self.score is None:
            return "no score"
        level = f" ({self.level})" if self.level else ""
        return f"{self.score:.{self.digits}f}{self.scale}{level}"


@dataclass(frozen=True)
class View:
    """One set of results: the headline, the length curve and the breakdowns."""

    name: str = ""
    """Empty for a suite's only view; else what tells the views apart (a prompt mode)."""
    headline: Headline = Headline()
    overall: float | None = None
    """0-100; None when nothing was scored."""
    by_length: dict[int, float] = field(default_factory=dict)
    """Score (0-100) per context length in tokens: the curve of effective length and LongScore."""
    curves: dict[str, dict[int, float]] = field(default_factory=dict)
    """Score by length per category (task, type): LongScore and effective length per category."""
    breakdowns: tuple[Breakdown, ...] = ()
    grids: tuple[Grid, ...] = ()
    tables: tuple[Table, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    overall_error: Error | None = None
    length_errors: dict[int, Error] = field(default_factory=dict)
    """Standard error of each `by_length` score (filled by `analysis.uncertainty`)."""
    curve_errors: dict[str, dict[int, Error]] = field(default_factory=dict)
    intervals: tuple[Interval, ...] = ()
    """Bootstrap intervals: effective length (absolute, relative), LongScore, length AUC."""
    metrics: CurveMetrics | None = None
    """Effective length, length AUC, wAvg and LongScore of `by_length` (`analysis.curves`)."""
    curve_metrics: dict[str, CurveMetrics] = field(default_factory=dict)
    """The same per category curve."""
    stated: dict[str, str] = field(default_factory=dict)
    """Numbers the suite reads off its own curve by its benchmark's published rule (NoLiMa's
    effective length: 85% of the model's own base score), named as its published rows name them;
    `compare` shows them as columns beside the generic ones, never in their place."""
    where: Where = field(default_factory=dict, compare=False)
    """The requests this view summarises (`{"meta.mode": "thinking"}`); empty: every request."""
    length_where: dict[int, Where] = field(default_factory=dict, compare=False)
    """Per length of `by_length`: the requests its score averages (`curve_where`); a length
    absent here gets no standard error, and numbers read off the curve get none either. Left
    empty, it is the `length` breakdown's recorded cells of the same lengths and scores."""
    curve_where: dict[str, Where] = field(default_factory=dict, compare=False)
    """Per category of `curves`: its requests (`{"task": "qa_1"}`); a point of the curve is those
    at the length's `length_where`."""

    def __post_init__(self) -> None:
        # A view built as `by_length=curve(cells)` beside `Breakdown("length", ..., cells)` has
        # its curve's requests in those cells: recorded without being restated.
        if not self.length_where and self.by_length:
            cells = self.breakdown("length")
            made = curve_where(cells.cells) if cells else {}
            found = {
                n: where
                for n, where in made.items()
                if n in self.by_length and cells and cells.cells[str(n)].score == self.by_length[n]
            }
            if found:
                object.__setattr__(self, "length_where", found)

    def breakdown(self, key: str) -> Breakdown | None:
        return next((b for b in self.breakdowns if b.key == key), None)


@dataclass(frozen=True)
class Summary:
    """A scored run: its views, statuses and completeness, and the suite's own summary."""

    suite: str
    title: str
    """How reports name the suite (`LongCtx`, `LongBench Pro`)."""
    views: tuple[View, ...] = (View(),)
    notes: tuple[str, ...] = ()
    """Lines printed under the tables (which embedder scored, which metric...)."""
    native: dict[str, Any] = field(default_factory=dict)
    """The suite's own summary, key for key (an official format): the top of summary.json."""
    extras: dict[str, Any] = field(default_factory=dict)
    """longscope's suite-specific additions, under the `longscope` key of summary.json."""
    run_id: str = ""
    model: str = ""
    claimed: int | None = None
    """The context length the model's backend said it holds (the run header), when known."""
    completeness: dict[str, Any] | None = None
    """Requested / scored / skipped / failed / missing, overall and per length (run.scoring)."""
    statuses: dict[str, int] = field(default_factory=dict)
    statuses_by_length: dict[str, dict[str, int]] = field(default_factory=dict)
    uncertainty: dict[str, Any] = field(default_factory=dict)
    """How the errors were computed: cluster unit, bootstrap seed and replicates, caveats."""
    budgets: dict[str, Any] = field(default_factory=dict)
    """Answers cut by a budget and thinking forced closed, per length (`analysis.budgets`);
    empty when no budget touched the run."""

    # What every consumer asks first: the first view's numbers.
    @property
    def view(self) -> View:
        return self.views[0] if self.views else View()

    @property
    def headline(self) -> Headline:
        return self.view.headline

    @property
    def overall(self) -> float | None:
        return self.view.overall

    @property
    def by_length(self) -> dict[int, float]:
        return self.view.by_length

    @property
    def state(self) -> str:
        """`none` (nothing scored: no total, no level), `provisional` or `complete`."""
        return state_of(self.completeness)

    def to_dict(self) -> dict[str, Any]:
        """Return summary.json: identity, completeness, the suite's own keys, then `longscope`."""
        generic = {
            "summary_version": SUMMARY_VERSION,
            "title": self.title,
            "views": [_view_dict(v) for v in self.views],
            "notes": list(self.notes),
            "statuses": dict(self.statuses),
            "statuses_by_length": {k: dict(v) for k, v in self.statuses_by_length.items()},
        }
        if self.uncertainty:
            generic["uncertainty"] = self.uncertainty
        if self.budgets:
            generic["budgets"] = self.budgets
        out: dict[str, Any] = {"run_id": self.run_id, "suite": self.suite, "model": self.model}
        if self.claimed is not None:
            generic["claimed"] = self.claimed
        if self.completeness is not None:
            out["completeness"] = self.completeness
        for key, value in self.native.items():
            if key not in ("run_id", "suite", "model", "completeness", "longscope"):
                out[key] = value
        out["longscope"] = {**self.extras, **generic}
        return out

    @classmethod
    def from_native(cls, suite: str, native: Mapping[str, Any]) -> Summary:
        """Read a suite's own summary dict as best it can be (for suites that return a dict).

        `by_length` ({length: score} or {length: {"percent": score}}), `by_task` ({task: {length:
        score}}) and `overall` / `total` / `average` become the view; the dict is kept whole.
        """

        def number(value: Any) -> float | None:
            if isinstance(value, Mapping):
                value = value.get("percent", value.get("score"))
            return finite(value)

        by_length = {}
        for key, value in (native.get("by_length") or {}).items():
            score = number(value)
            if str(key).isdigit() and score is not None:
                by_length[int(key)] = score
        curves = {}
        for task, cells in (native.get("by_task") or {}).items():
            if isinstance(cells, Mapping):
                points = {int(k): number(v) for k, v in cells.items() if str(k).isdigit()}
                curves[str(task)] = {k: v for k, v in sorted(points.items()) if v is not None}
        overall = None
        headline = native.get("headline") if isinstance(native.get("headline"), Mapping) else {}
        for value in (native.get("overall"), native.get("total"), headline.get("average")):
            overall = finite(value)
            if overall is not None:
                break
        if overall is None and by_length:
            overall = round(mean(by_length.values()), 2)
        tasks = {
            t: Cell(round(mean(c.values()), 2), len(c), where={"task": t})
            for t, c in curves.items()
            if c
        }
        breakdowns = (Breakdown("task", "By task", tasks, compare=True),) if tasks else ()
        # The dict format's keys say what they group: `by_length` by `Sample.length`, `by_task`
        # by `Sample.task`.
        view = View(
            headline=Headline("overall", overall, digits=2),
            overall=overall,
            by_length=dict(sorted(by_length.items())),
            curves=curves,
            breakdowns=breakdowns,
            length_where={n: {"length": str(n)} for n in by_length},
            curve_where={t: {"task": t} for t in curves},
        )
        return cls(suite=suite, title=suite, views=(view,), native=dict(native))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        """Read a summary.json written by `to_dict` back (the inverse, for stored summaries)."""
        generic = dict(data.get("longscope") or {})
        if "views" not in generic:
            # A summary from before the typed view: read the suite's own keys as best they can be.
            native = {k: v for k, v in data.items() if k not in ("run_id", "model", "completeness")}
            return replace(
                cls.from_native(str(data.get("suite") or ""), native),
                run_id=str(data.get("run_id") or ""),
                model=str(data.get("model") or ""),
                completeness=data.get("completeness"),
                statuses=dict(data.get("statuses") or {}),
            )
        reserved = {
            "summary_version",
            "title",
            "views",
            "notes",
            "statuses",
            "statuses_by_length",
            "claimed",
            "uncertainty",
            "budgets",
        }
        native = {
            k: v
            for k, v in data.items()
            if k not in ("run_id", "suite", "model", "completeness", "longscope")
        }
        return cls(
            suite=str(data.get("suite") or ""),
            title=str(generic.get("title") or data.get("suite") or ""),
            views=tuple(_view_from(v) for v in generic["views"]),
            notes=tuple(generic.get("notes") or ()),
            native=native,
            extras={k: v for k, v in generic.items() if k not in reserved},
            run_id=str(data.get("run_id") or ""),
            model=str(data.get("model") or ""),
            claimed=generic.get("claimed"),
            completeness=data.get("completeness"),
            statuses=dict(generic.get("statuses") or {}),
            statuses_by_length=dict(generic.get("statuses_by_length") or {}),
            uncertainty=dict(generic.get("uncertainty") or {}),
            budgets=dict(generic.get("budgets") or {}),
        )


def _cell_dict(cell: Cell) -> dict[str, Any]:
    return {
        f.name: getattr(cell, f.name)
        for f in fields(cell)
        if getattr(cell, f.name) is not None and f.name != GROUPING
    }


def _view_dict(view: View) -> dict[str, Any]:
    return {
        "name": view.name,
        "headline": {f.name: getattr(view.headline, f.name) for f in fields(view.headline)},
        "overall": view.overall,
        "by_length": {str(k): v for k, v in sorted(view.by_length.items())},
        "curves": {
            name: {str(k): v for k, v in sorted(curve.items())}
            for name, curve in view.curves.items()
        },
        "breakdowns": [
            {
                "key": b.key,
                "title": b.title,
                "compare": b.compare,
                "plot": b.plot,
                "cells": {k: _cell_dict(c) for k, c in b.cells.items()},
            }
            for b in view.breakdowns
        ],
        "grids": [
            {
                "title": g.title,
                "rows_label": g.rows_label,
                "columns_label": g.columns_label,
                "rows": g.rows,
                **({"errors": g.errors} if g.errors else {}),
            }
            for g in view.grids
        ],
        "tables": [
            {
                "title": t.title,
                "columns": list(t.columns),
                "rows": [list(r) for r in t.rows],
                **({"where": [list(r) for r in t.where]} if t.where else {}),
                **({"errors": [list(r) for r in t.errors]} if t.errors else {}),
            }
            for t in view.tables
        ],
        "facts": [list(f) for f in view.facts],
        "errors": {
            "overall": None if view.overall_error is None else asdict(view.overall_error),
            "by_length": {str(k): asdict(e) for k, e in sorted(view.length_errors.items())},
            "curves": {
                name: {str(k): asdict(e) for k, e in sorted(c.items())}
                for name, c in view.curve_errors.items()
            },
        },
        "intervals": [asdict(i) for i in view.intervals],
        "metrics": None if view.metrics is None else _metrics_dict(view.metrics),
        "curve_metrics": {name: _metrics_dict(m) for name, m in view.curve_metrics.items()},
        **({"stated": dict(view.stated)} if view.stated else {}),
    }


def _metrics_dict(metrics: CurveMetrics) -> dict[str, Any]:
    data = asdict(metrics)
    data["lc"] = {str(k): v for k, v in sorted(metrics.lc.items())}
    data["lc_se"] = {str(k): v for k, v in sorted(metrics.lc_se.items())}
    return data


def _metrics_from(data: Mapping[str, Any] | None) -> CurveMetrics | None:
    if not data:
        return None
    lc = {int(k): v for k, v in (data.get("lc") or {}).items()}
    lc_se = {int(k): v for k, v in (data.get("lc_se") or {}).items()}
    return CurveMetrics(**{**data, "lc": lc, "lc_se": lc_se})


def _view_from(data: Mapping[str, Any]) -> View:
    errors = data.get("errors") or {}
    return View(
        name=data.get("name", ""),
        headline=Headline(**data.get("headline", {})),
        overall=data.get("overall"),
        by_length={int(k): v for k, v in data.get("by_length", {}).items()},
        curves={n: {int(k): v for k, v in c.items()} for n, c in data.get("curves", {}).items()},
        breakdowns=tuple(
            Breakdown(
                b["key"],
                b["title"],
                {k: Cell(**{"score": None, **c}) for k, c in b["cells"].items()},
                b.get("compare", False),
                b.get("plot", False),
            )
            for b in data.get("breakdowns", [])
        ),
        grids=tuple(
            Grid(g["title"], g["rows_label"], g["columns_label"], g["rows"], g.get("errors", {}))
            for g in data.get("grids", [])
        ),
        tables=tuple(
            Table(
                t["title"],
                tuple(t["columns"]),
                tuple(tuple(r) for r in t["rows"]),
                tuple(tuple(r) for r in t.get("where", [])),
                tuple(tuple(r) for r in t.get("errors", [])),
            )
            for t in data.get("tables", [])
        ),
        facts=tuple(tuple(f) for f in data.get("facts", [])),  # type: ignore[misc]
        overall_error=Error(**errors["overall"]) if errors.get("overall") else None,
        length_errors={int(k): Error(**e) for k, e in errors.get("by_length", {}).items()},
        curve_errors={
            name: {int(k): Error(**e) for k, e in c.items()}
            for name, c in errors.get("curves", {}).items()
        },
        intervals=tuple(Interval(**i) for i in data.get("intervals", [])),
        metrics=_metrics_from(data.get("metrics")),
        curve_metrics={
            name: m
            for name, m in (
                (n, _metrics_from(d)) for n, d in (data.get("curve_metrics") or {}).items()
            )
            if m is not None
        },
        stated={str(k): str(v) for k, v in (data.get("stated") or {}).items()},
    )


# --- completeness: how much of a run stands behind its numbers -----------------------------------


def state_of(record: Mapping[str, Any] | None) -> str:
    """Return `none` (nothing scored), `provisional` (failed or unanswered requests) or `complete`."""
    if record is None:
        return "complete"
    if record.get("scored", 0) == 0:
        return "none"
    return "complete" if record.get("complete", True) else "provisional"


def incomplete_line(record: Mapping[str, Any] | None) -> str:
    """Return the one line that opens the output of an incomplete run ("" when complete).

    e.g. `incomplete: 12 of 40 requests failed: 503 ×9, timeout ×3; re-run the same command to
    retry them`.
    """
    if not record or record.get("complete", True):
        return ""
    shard = shard_text(record)
    unfinished = record["failed"] + record["missing"]
    if shard and not unfinished:
        return f"{shard}: provisional until `longscope merge` joins every shard"
    verb = "failed" if record["missing"] == 0 else "were not answered"
    reasons = ", ".join(f"{reason} ×{count}" for reason, count in record["reasons"].items())
    line = (
        f"incomplete: {unfinished} of {record['requested']} requests {verb}: {reasons}; "
        "re-run the same command to retry them"
    )
    return f"{shard}; {line}" if shard else line


def shard_text(record: Mapping[str, Any] | None) -> str:
    """Return `shard 1/4: 29 of 88 samples` when the record is a shard's ("" otherwise)."""
    shard = (record or {}).get("shard")
    if not isinstance(shard, Mapping):
        return ""
    return (
        f"shard {shard.get('index')}/{shard.get('count')}: {shard.get('samples')} of "
        f"{shard.get('of')} samples"
    )


def no_score_text(record: Mapping[str, Any]) -> str:
    """Return what stands where a total would: `no score: none of 40 requests was scored (...)`."""
    return (
        f"no score: none of {record['requested']} requests was scored "
        f"({record['skipped']} skipped, {record['failed']} failed, {record['missing']} not run)"
    )


def request_counts(record: Mapping[str, Any] | None) -> dict[str, int]:
    record = record or {}
    return {k: record.get(k, 0) for k in ("requested", "scored", "skipped", "failed", "missing")}


# --- building blocks for suites ------------------------------------------------------------------


def row_value(row: ScoredRow) -> float:
    """Return a row's score as a fraction of its maximum; an unscored request counts 0."""
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.fraction
    return 0.0


def percent(values: Iterable[float], digits: int = 2) -> float | None:
    """Return the mean of fractions as a percentage, or None when there are none."""
    items = list(values)
    return round(100 * mean(items), digits) if items else None


def length_key(text: object) -> tuple[int, float, str]:
    """Sort key for group names: numbers (4096, 50%) in numeric order, then the rest by name.

    The one number-aware order: reports and suites sort columns and groups with it."""
    text = str(text)
    digits = "".join(ch for ch in text if ch.isdigit() or ch == ".")
    try:
        return (0, float(digits), text)
    except ValueError:
        return (1, 0.0, text)


def field_text(sample: Mapping[str, Any], name: str) -> str | None:
    """Return a sample field (`task`, `length`, `meta.depth`) as the text statistics match it by.

    `meta.X` reads the sample's meta; a number or a string is its `str`; anything else (a list, a
    missing field, a bool in meta) is None: it groups nothing.
    """
    if name.startswith("meta."):
        value = (sample.get("meta") or {}).get(name[5:])
        if isinstance(value, bool):
            return None
    else:
        value = sample.get(name)
    if isinstance(value, str | int | float):
        return str(value)
    return None


def field_name(sample: Mapping[str, Any], name: str) -> str:
    """Return how statistics name a field given bare (`depth`): the sample's own, else `meta.`'s."""
    if name.startswith("meta.") or name in sample:
        return name
    return f"meta.{name}"


def group_where(
    rows: Iterable[ScoredRow], key: Any, fields: str | Sequence[str]
) -> dict[Any, Where]:
    """Return per group (`key(row)`; None leaves the row out) the values of `fields` its rows share.

    The selection a cell records (`Cell.where`, `Grid.where`): a group whose rows hold more than
    one value of a field, or none, is left out (no selection names exactly its rows).
    """
    names = (fields,) if isinstance(fields, str) else tuple(fields)
    seen: dict[Any, list[set[str | None]]] = {}
    for row in rows:
        group = key(row)
        if group is not None:
            values = seen.setdefault(group, [set() for _ in names])
            for found, name in zip(values, names, strict=True):
                found.add(field_text(row.sample, name))
    out = {}
    for group, values in seen.items():
        if all(len(v) == 1 and None not in v for v in values):
            out[group] = {name: str(next(iter(v))) for name, v in zip(names, values, strict=True)}
    return out


def partition_field(rows: Sequence[ScoredRow], key: Any) -> str | None:
    """Return the sample field whose values split `rows` exactly as `key(row)` groups them.

    Each group's rows share one value of it and no other row holds that value (rows `key` leaves
    out included), so selecting by the value selects the group: what a suite that groups with a
    function records without naming the field. The sample's own fields first, then its meta's,
    each by name; None when no field does.
    """
    names = dict.fromkeys(
        name
        for row in rows
        for name in (
            *(k for k in row.sample if k not in ("context", "question", "meta")),
            *(f"meta.{k}" for k in row.sample.get("meta") or {}),
        )
    )
    groups = [key(row) for row in rows]
    for name in sorted(names, key=lambda n: (n.startswith("meta."), n)):
        owner: dict[str | None, Any] = {}
        held: dict[Any, str | None] = {}
        for row, group in zip(rows, groups, strict=True):
            value = field_text(row.sample, name)
            if owner.setdefault(value, group) != group:
                break  # one value in two groups (or in a group and among the rows left out)
            if group is not None and (value is None or held.setdefault(group, value) != value):
                break  # a group holding two values, or none
        else:
            return name
    return None


def grid_where(
    rows: Iterable[ScoredRow], row: Any, row_field: str, column: Any, column_field: str
) -> dict[str, dict[str, Where]]:
    """Return `Grid.where`: per row name (`row(r)`) and column name (`column(r)`) the fields and
    values of the requests in the cell."""
    pairs = group_where(
        rows,
        lambda r: None if row(r) is None or column(r) is None else (str(row(r)), str(column(r))),
        (row_field, column_field),
    )
    out: dict[str, dict[str, Where]] = {}
    for (name, col), where in pairs.items():
        out.setdefault(name, {})[col] = where
    return out


def group_cells(
    rows: Iterable[ScoredRow],
    key: Any,
    *,
    value: Any = row_value,
    digits: int = 2,
    field: str | None = None,
) -> dict[str, Cell]:
    """Return a cell per group: `key(row)` names the group (None leaves the row out).

    `key` may be a field's name (`task`, `length`, `depth` or `meta.depth`: the sample's own
    field, else its meta's): groups are then its values, and each cell records them (`Cell.where`)
    for its standard error. With a function, `field` names the sample field it groups by (a label
    like `20%` for `meta.depth` 0.2 then still selects the right rows); without it, the field
    whose values split the rows as the groups do (`partition_field`), when one does.
    """
    rows = list(rows)
    by = key
    if isinstance(key, str):
        field = field_name(rows[0].sample, key) if rows else key
        named = field

        def by(row: ScoredRow) -> str | None:
            return field_text(row.sample, named)

    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        group = by(row)
        if group is not None:
            groups[str(group)].append(value(row))

    def group_of(row: ScoredRow) -> str | None:
        group = by(row)
        return None if group is None else str(group)

    where = group_where(rows, group_of, field or partition_field(rows, group_of) or ())
    return {
        name: Cell(percent(scores, digits), len(scores), where=where.get(name) or None)
        for name, scores in sorted(groups.items(), key=lambda kv: length_key(kv[0]))
    }


def curve(cells: Mapping[str, Cell]) -> dict[int, float]:
    """Return the {length: score} curve of a by-length breakdown (numeric keys only)."""
    out = {}
    for name, cell in cells.items():
        if cell.score is not None and name.isdigit():
            out[int(name)] = cell.score
    return dict(sorted(out.items()))


def curve_where(cells: Mapping[str, Cell]) -> dict[int, Where]:
    """Return the requests of each point of `curve(cells)` (`View.length_where`)."""
    return {
        int(name): dict(cell.where)
        for name, cell in cells.items()
        if cell.score is not None and name.isdigit() and cell.where
    }


def simple_summary(
    suite: str,
    title: str,
    rows: Sequence[ScoredRow],
    *,
    dimensions: Sequence[tuple[str, str]] = (("task", "task"), ("language", "language")),
    native: dict[str, Any] | None = None,
) -> Summary:
    """A complete summary of any suite whose score is the mean over samples of `Score.fraction`.

    Overall, the curve by `Sample.length`, a curve per task, and one breakdown per
    (title word, sample field) in `dimensions` (fields of the sample or of its `meta`).
    """

    def field_of(name: str) -> Any:
        return lambda row: row.sample.get(name, row.sample.get("meta", {}).get(name))

    def grouped(members: Sequence[ScoredRow], name: str) -> dict[str, Cell]:
        named = field_name(members[0].sample, name) if members else None
        return group_cells(members, field_of(name), field=named)

    by_length = grouped(rows, "length")
    curves: dict[str, dict[int, float]] = {}
    by_task: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_task[str(row.sample.get("task"))].append(row)
    if len(by_task) > 1:
        curves = {t: curve(grouped(r, "length")) for t, r in sorted(by_task.items())}
    overall = percent(row_value(r) for r in rows)
    breakdowns = [Breakdown("length", "By length (tokens)", by_length)]
    for word, name in dimensions:
        cells = grouped(rows, name)
        if len(cells) > 1:
            breakdowns.append(Breakdown(name, f"By {word}", cells, compare=True, plot=True))
    view = View(
        headline=Headline("overall", overall, digits=1),
        overall=overall,
        by_length=curve(by_length),
        curves=curves,
        breakdowns=tuple(breakdowns),
        length_where=curve_where(by_length),
        curve_where={t: {"task": t} for t in curves},
    )
    return Summary(suite=suite, title=title, views=(view,), native=dict(native or {}))


def statuses_of(rows: Iterable[ScoredRow]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Return the status counts of the generations, overall and per sample length."""
    total: Counter[str] = Counter()
    by_length: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        total[row.generation.status] += 1
        by_length[str(row.sample.get("length"))][row.generation.status] += 1
    ordered = sorted(by_length.items(), key=lambda kv: length_key(kv[0]))
    return dict(sorted(total.items())), {k: dict(sorted(v.items())) for k, v in ordered}


def finite(value: Any) -> float | None:
    """Return `value` as a float when it is a finite number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def with_run(summary: Summary, **identity: Any) -> Summary:
    """Return `summary` with run identity, completeness and statuses filled in (run.scoring)."""
    return replace(summary, **identity)


__all__ = [
    "GROUPING",
    "SUMMARY_VERSION",
    "Breakdown",
    "Cell",
    "CurveMetrics",
    "Error",
    "Grid",
    "Headline",
    "Interval",
    "Summary",
    "Table",
    "View",
    "Where",
    "curve",
    "curve_where",
    "field_name",
    "field_text",
    "grid_where",
    "group_cells",
    "group_where",
    "incomplete_line",
    "no_score_text",
    "partition_field",
    "percent",
    "request_counts",
    "row_value",
    "shard_text",
    "simple_summary",
    "state_of",
    "statuses_of",
]
