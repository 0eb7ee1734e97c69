"""One self-contained HTML file per report: plots inlined as PNG, every stored string escaped.

Model answers and dataset text are untrusted: jinja2 autoescaping is on for the whole template and
nothing is marked safe except the base64 images this module draws itself.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from longscope import __version__
from longscope.analysis.effective import RULER_THRESHOLD
from longscope.errors import UsageError
from longscope.report.terminal import (
    cluster_line,
    curve_rows,
    error_text,
    grid_cell,
    length_label,
    level_text,
    measured,
    plus_minus,
    se_text,
    table_rows,
    wavg_text,
)
from longscope.run.scoring import ScoreResult
from longscope.run.store import RunStore
from longscope.summary import Breakdown, Grid, View, incomplete_line, length_key, no_score_text
from longscope.text.safe_text import markdown, mpl, visible

HEAD_TAIL_CHARS = 400


def _figure_png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _plt():  # type: ignore[no-untyped-def]
    try:
        import matplotlib
    except ImportError:
        raise UsageError(
            "the HTML report draws its charts with matplotlib, which is not installed: "
            "pip install 'longscope[html]' (tables, --markdown and --json need nothing more)"
        ) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heatmap_png(grid: Grid, title: str) -> str:
    """A grid's heatmap on a fixed 0-100 scale (blank where a cell was not run): its rows along
    the x axis (e.g. lengths), its columns along the y axis (e.g. needle depths)."""
    import numpy as np

    plt = _plt()
    rows = list(grid.rows)
    columns = sorted({c for row in grid.rows.values() for c in row}, key=length_key)
    values = np.full((len(columns), len(rows)), np.nan)
    for j, name in enumerate(rows):
        for i, column in enumerate(columns):
            if column in grid.rows[name]:
                values[i, j] = grid.rows[name][column]
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(rows), 1.0 + 0.45 * len(columns)))
    image = ax.imshow(values, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(rows)), [mpl(length_label(n) if n.isdigit() else n) for n in rows])
    ax.set_yticks(range(len(columns)), [mpl(c) for c in columns])
    ax.set_xlabel(mpl(grid.rows_label))
    ax.set_ylabel(mpl(grid.columns_label))
    for i in range(len(columns)):
        for j in range(len(rows)):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="score %")
    ax.set_title(mpl(title))
    return _figure_png(fig)


def curve_png(
    curves: dict[str, dict[int, float]],
    threshold: float,
    title: str,
    bands: dict[str, dict[int, tuple[float, float]]] | None = None,
) -> str:
    """Score vs length, one line per model, with the effective-length threshold drawn.

    `bands`: per line, the 95% interval at each length, drawn as a shaded band.
    Labels are untrusted (model and task names): escaped so matplotlib never parses mathtext.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for label, points in curves.items():
        xs = sorted(points)
        (line,) = ax.plot(xs, [points[x] for x in xs], marker="o", label=mpl(label))
        band = (bands or {}).get(label, {})
        shaded = [x for x in xs if x in band]
        if len(shaded) > 1:
            ax.fill_between(
                shaded,
                [band[x][0] for x in shaded],
                [band[x][1] for x in shaded],
                color=line.get_color(),
                alpha=0.15,
                linewidth=0,
            )
    ax.axhline(
        threshold, color="grey", linestyle="--", linewidth=1, label=f"threshold {threshold:g}"
    )
    ax.set_xscale("log", base=2)
    all_x = sorted({x for points in curves.values() for x in points})
    ax.set_xticks(all_x, [f"{x // 1024}K" if x >= 1024 else str(x) for x in all_x])
    # A margin past 0 and 100: a line at 100% (or 0%) is drawn whole, never hidden under the
    # frame's edge with its markers cut in half.
    ax.set_ylim(-4, 104)
    ax.set_yticks(range(0, 101, 20))
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("score %")
    ax.set_title(mpl(title))
    ax.legend(fontsize=7)
    return _figure_png(fig)


def bars_png(values: dict[str, float], title: str, errors: dict[str, float] | None = None) -> str:
    """Horizontal bars on a 0-100 scale, with ±1 standard error whiskers where `errors` has one."""
    plt = _plt()
    labels = list(values)
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.35 * len(labels)))
    whiskers = [(errors or {}).get(k, 0.0) for k in labels]
    ax.barh(
        range(len(labels)),
        [values[k] for k in labels],
        color="#4c72b0",
        xerr=whiskers if any(whiskers) else None,
        ecolor="#333",
        capsize=3,
    )
    ax.set_yticks(range(len(labels)), [mpl(k) for k in labels])
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_xlabel("score %")
    ax.set_title(mpl(title))
    return _figure_png(fig)


def _head_tail(text: str) -> tuple[str, str]:
    if len(text) <= 2 * HEAD_TAIL_CHARS:
        return text, ""
    return text[:HEAD_TAIL_CHARS], text[-HEAD_TAIL_CHARS:]


def _drilldown(result: ScoreResult, run_dir: Path) -> list[dict[str, Any]]:
    items = []
    with RunStore.open_readonly(run_dir) as store:
        routes = store.routes(result.run_id)
        for row in result.rows:
            sample = row.sample
            context = store.context(result.run_id, sample["id"])
            head, tail = _head_tail(context + "\n\n" + sample.get("question", ""))
            items.append(
                {
                    "id": sample["id"],
                    "repeat": row.repeat,
                    "task": sample["task"],
                    "language": sample["language"],
                    "length": sample.get("length"),
                    "status": row.generation.status,
                    "error": visible(row.generation.error, one_line=False),
                    "score": None if row.score is None else row.score.value,
                    "max": None if row.score is None else row.score.max,
                    "evidence": json.dumps(
                        row.score.evidence if row.score else {}, ensure_ascii=False
                    ),
                    # Escaped by jinja; control and bidi characters made visible too, so that an
                    # answer cannot reorder or hide the text around it.
                    "answer": visible(row.generation.text, one_line=False),
                    "reasoning": visible(row.generation.reasoning, one_line=False),
                    "gold": visible(" | ".join(sample.get("gold", [])), one_line=False),
                    "prompt_head": visible(head, one_line=False),
                    "prompt_tail": visible(tail, one_line=False),
                    "route": visible(
                        _route_text(routes.get((sample["id"], row.repeat))), one_line=False
                    ),
                }
            )
    return items


def _route_text(plan: dict[str, Any] | None) -> str:
    """What the router did for one answer (router/backend.py says it; the text is model text)."""
    from longscope.router.backend import describe_plan

    return describe_plan(plan)


def _breakdown_table(breakdown: Breakdown) -> dict[str, Any]:
    points = any(c.points is not None for c in breakdown.cells.values())
    columns = [breakdown.key, *(["points", "max"] if points else []), "score %", "± SE", "n"]
    rows = []
    for key, cell in breakdown.cells.items():
        score = "-" if cell.score is None else f"{cell.score:.1f}"
        extra = [se_text(cell.se, cell.clusters), "" if cell.n is None else str(cell.n)]
        rows.append(
            [key, *([f"{cell.points:g}", f"{cell.max:g}"] if points else []), score, *extra]
        )
    return {"title": breakdown.title, "columns": columns, "rows": rows}


def _curves_table(view: View) -> dict[str, Any] | None:
    if not view.curves:
        return None
    made = curve_rows(view)
    if made is None:
        return None
    columns, rows = made
    return {"title": "Score % by length", "columns": columns, "rows": rows}


def _view_parts(result: ScoreResult, view: View, draw: bool = True) -> dict[str, Any]:
    """Images (unless not `draw`: Markdown shows none, and needs no matplotlib), facts and tables
    of one view, whatever the suite."""
    summary = result.summary
    prefix = f"{view.name}: " if view.name else ""
    images = []
    for grid in view.grids if draw else ():
        images.append((prefix + grid.title, heatmap_png(grid, prefix + grid.title)))
    if draw and len(view.by_length) > 1:
        lines = dict(view.curves)
        overall_name = "overall" if lines else (summary.model or "model")
        lines[overall_name] = view.by_length
        # One band per plot: the overall curve's (categories' bands would hide each other; their
        # errors are in the score-by-length table).
        errors = {overall_name: view.length_errors}
        bands = {
            name: {
                n: (e.low, e.high)
                for n, e in points.items()
                if e.low is not None and e.high is not None
            }
            for name, points in errors.items()
        }
        images.append(
            (
                prefix + f"Score vs length (band: {overall_name}'s 95% interval)",
                curve_png(
                    lines, RULER_THRESHOLD, f"{prefix}{summary.title} score by length", bands
                ),
            )
        )
    for breakdown in view.breakdowns:
        values = {k: c.score for k, c in breakdown.cells.items() if c.score is not None}
        if draw and breakdown.plot and values:
            title = f"{prefix}{breakdown.title}"
            whiskers = {k: c.se for k, c in breakdown.cells.items() if c.se is not None}
            images.append(
                (f"{title} (whiskers: ±1 SE)", bars_png(values, f"{title} (score %)", whiskers))
            )
    metrics = {**view.curve_metrics}
    if view.metrics is not None:
        metrics["overall"] = view.metrics
    defined = {name: m.longscore for name, m in metrics.items() if m.longscore is not None}
    if draw and defined and len(view.by_length) > 1 and view.curves:
        # LongScore is a relative change (%): shift to a 0-100 bar where 100 means no loss.
        images.append(
            (
                prefix + "LongScore (100 = no loss vs base)",
                bars_png(
                    {k: max(0.0, 100 + v) for k, v in defined.items()}, "100 + average LongScore"
                ),
            )
        )
    facts = [(prefix + name, value) for name, value in view.facts]
    made = view.metrics
    named = {i.name for i in view.intervals}
    if made is not None:
        if not any(n.startswith("effective length") for n in named):
            facts.append((f"{prefix}effective length (>= {made.threshold:g})", made.effective))
        if "length AUC" not in named and made.auc is not None:
            facts.append((f"{prefix}length AUC", f"{made.auc:.1f}{plus_minus(made.auc_se)}"))
        facts.append((f"{prefix}wAvg inc / dec", wavg_text(made, measured(view))))
    for interval in view.intervals:
        facts.append(
            (
                f"{prefix}{interval.name}",
                f"{interval.estimate}{plus_minus(interval.se)} (95% interval {interval.low} to "
                f"{interval.high}, median {interval.median})",
            )
        )
    tables = []
    curves = _curves_table(view)
    if curves is not None:
        tables.append(curves)
    tables += [_breakdown_table(b) for b in view.breakdowns if b.cells]
    for grid in view.grids:
        columns = sorted({c for row in grid.rows.values() for c in row}, key=length_key)
        tables.append(
            {
                "title": grid.title,
                "columns": [grid.rows_label, *columns],
                "rows": [
                    [name, *(grid_cell(grid, name, c) for c in columns)] for name in grid.rows
                ],
            }
        )
    tables += [
        {"title": t.title, "columns": list(t.columns), "rows": table_rows(t)} for t in view.tables
    ]
    for table in tables:
        if prefix:
            table["title"] = prefix + table["title"]
    return {"images": images, "facts": facts, "tables": tables}


def _budget_tables(summary: Any) -> list[dict[str, Any]]:
    """Return the budgets table (analysis.budgets), its note as the title's second line."""
    from longscope.analysis.budgets import BUDGET_COLUMNS, BUDGET_TITLE, budget_note, budget_rows

    if not summary.budgets:
        return []
    return [
        {
            "title": f"{BUDGET_TITLE}: {budget_note(summary.budgets)}",
            "columns": list(BUDGET_COLUMNS),
            "rows": budget_rows(summary.budgets, summary.by_length),
        }
    ]


def _section(result: ScoreResult, draw: bool = True) -> dict[str, Any]:
    """Return a run's section: headline, facts, images, tables; provisional or no score marked."""
    summary = result.summary
    state = summary.state
    if state == "none":
        # Plots and totals of a run that scored nothing would read as a 0 score: show none.
        return {
            "headline": no_score_text(summary.completeness or {}),
            "facts": [],
            "images": [],
            "tables": [],
            "status_cells": {},
            "notes": [],
        }
    headlines, facts, images, tables = [], [], [], []
    for view in summary.views:
        head = view.headline
        score = "no score" if head.score is None else f"{head.score:.{head.digits}f}{head.scale}"
        level = level_text(summary, head)
        text = f"{head.label} {score}{' (' + level + ')' if level else ''}"
        text += error_text(view, head.digits)
        if view.headline.note:
            text += f", {view.headline.note}"
        headlines.append(f"{view.name}: {text}" if view.name else text)
        parts = _view_parts(result, view, draw)
        facts += parts["facts"]
        images += parts["images"]
        tables += parts["tables"]
    facts.append(("claimed / held context", str(summary.claimed)))
    boot = summary.uncertainty.get("bootstrap")
    if boot:
        facts.append(
            ("bootstrap", f"{boot['replicates']} replicates of the clusters, seed {boot['seed']}")
        )
    tables += _budget_tables(summary)
    headline = "; ".join(headlines)
    if state == "provisional":
        headline += " (provisional: incomplete run)"
    # Suites fill these from stored text (task names, errors): shown as text, controls visible.
    return {
        "headline": visible(headline),
        "facts": [(visible(k), visible(v)) for k, v in facts],
        "images": [(visible(caption), src) for caption, src in images],
        "tables": [
            {
                "title": visible(t["title"]),
                "columns": [visible(c) for c in t["columns"]],
                "rows": [[visible(c) for c in row] for row in t["rows"]],
            }
            for t in tables
        ],
        "status_cells": {
            visible(k): {visible(s): n for s, n in v.items()}
            for k, v in summary.statuses_by_length.items()
        },
        "notes": [visible(n) for n in (*summary.notes, cluster_line(summary)) if n],
    }


_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>longscope report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1100px;color:#222}
h1{margin-bottom:0} .sub{color:#666;margin-top:.2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem} td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}
td.num{text-align:right} .fig{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
details{border:1px solid #ddd;margin:.2rem 0;padding:.2rem .5rem} pre{white-space:pre-wrap;background:#f6f6f6;padding:.4rem;max-height:18rem;overflow:auto}
.status-ok{color:#2a7} .status-skipped,.status-context_overflow,.status-timeout,.status-error{color:#c33}
.incomplete{color:#c33;font-weight:bold}
</style></head><body>
<h1>longscope report</h1>
<p class="sub">longscope {{ version }} &middot; {{ runs|length }} run(s)</p>
{% for run in runs %}
<section>
<h2>{{ run.suite }}: {{ run.model }}</h2>
{% if run.incomplete %}<p class="incomplete">{{ run.incomplete }}</p>{% endif %}
<p class="sub">run {{ run.run_id }} &middot; {{ run.run_dir }}</p>
<p><strong>{{ run.section.headline }}</strong></p>
<table>{% for name, value in run.section.facts %}<tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}</table>
{% if run.completeness %}<h3>Completeness by length (requests)</h3>
<table><tr><th>length</th><th>requested</th><th>scored</th><th>skipped</th><th>failed</th><th>not run</th></tr>
{% for length, cell in run.completeness.items() %}<tr><td>{{ length }}</td><td class="num">{{ cell.requested }}</td><td class="num">{{ cell.scored }}</td><td class="num">{{ cell.skipped }}</td><td class="num">{{ cell.failed }}</td><td class="num">{{ cell.missing }}</td></tr>{% endfor %}
</table>{% endif %}
{% for caption, src in run.section.images %}<figure class="fig"><img alt="{{ caption }}" src="{{ src }}"><figcaption>{{ caption }}</figcaption></figure>{% endfor %}
{% for table in run.section.tables %}
<h3>{{ table.title }}</h3>
<table><tr>{% for column in table.columns %}<th>{{ column }}</th>{% endfor %}</tr>
{% for row in table.rows %}<tr>{% for cell in row %}<td{% if not loop.first %} class="num"{% endif %}>{{ cell }}</td>{% endfor %}</tr>{% endfor %}
</table>
{% endfor %}
{% for note in run.section.notes %}<p>{{ note }}</p>{% endfor %}
{% if run.adaptive %}<h3>Adaptive decision</h3><pre>{{ run.adaptive }}</pre>
{% endif %}{% if run.section.status_cells %}<h3>Statuses per length</h3>
<table><tr><th>length</th><th>statuses</th></tr>{% for length, counts in run.section.status_cells.items() %}<tr><td>{{ length }}</td><td>{% for status, n in counts.items() %}<span class="status-{{ status }}">{{ status }} {{ n }}</span> {% endfor %}</td></tr>{% endfor %}</table>{% endif %}
<h3>Samples</h3>
{% for item in run.samples %}
<details><summary>{{ item.id }} (repeat {{ item.repeat }}) &middot; {{ item.task }} &middot; <span class="status-{{ item.status }}">{{ item.status }}</span> &middot; score {{ item.score if item.score is not none else "-" }}{% if item.max %} / {{ item.max }}{% endif %}</summary>
{% if item.error %}<p>reason: {{ item.error }}</p>{% endif %}
<p>gold: {{ item.gold }}</p>
<p>answer:</p><pre>{{ item.answer }}</pre>
{% if item.reasoning %}<p>reasoning:</p><pre>{{ item.reasoning }}</pre>{% endif %}
<p>evidence:</p><pre>{{ item.evidence }}</pre>
{% if item.route %}<p>router:</p><pre>{{ item.route }}</pre>{% endif %}
<p>prompt (head{% if item.prompt_tail %} and tail{% endif %}):</p><pre>{{ item.prompt_head }}</pre>{% if item.prompt_tail %}<pre>&hellip;{{ item.prompt_tail }}</pre>{% endif %}
</details>
{% endfor %}
</section>
{% endfor %}
</body></html>
"""
)


def _completeness_rows(result: ScoreResult) -> dict[str, dict[str, int]]:
    record = result.summary.completeness
    if record is None:
        return {}
    rows = dict(record["by_length"])
    if len(rows) > 1:
        rows["all"] = {
            k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")
        }
    return rows


def render_html(results: list[tuple[Path, ScoreResult]], adaptive: Sequence[str] = ()) -> str:
    """Return one self-contained HTML page for one or more scored runs; `adaptive`: each run's
    adaptive decision and cost as text (`ReportedRun.adaptive_text`), "" for none."""
    runs = []
    for index, (run_dir, result) in enumerate(results):
        section = _section(result)
        told = adaptive[index] if index < len(adaptive) else ""
        runs.append(
            {
                "suite": result.suite,
                "model": visible(result.summary.model or ""),
                "run_id": result.run_id,
                "run_dir": visible(run_dir),
                "incomplete": incomplete_line(result.summary.completeness),
                "completeness": _completeness_rows(result),
                "section": section,
                "samples": _drilldown(result, run_dir),
                "adaptive": visible(told, one_line=False),
            }
        )
    return _TEMPLATE.render(version=__version__, runs=runs)


_COMPARE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>longscope comparison</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1400px;color:#222}
h1{margin-bottom:0} .sub{color:#666;margin-top:.2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem} td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}
td.num{text-align:right} .fig{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
.incomplete{color:#c33;font-weight:bold} .wide{overflow-x:auto} td.num{white-space:nowrap}
</style></head><body>
<h1>longscope comparison</h1>
<p class="sub">longscope {{ version }} &middot; {{ runs|length }} run(s) side by side</p>
<h2>Runs</h2>
<table><tr><th>#</th><th>suite</th><th>model</th><th>headline</th><th>run</th><th>folder</th></tr>
{% for run in runs %}<tr><td class="num">{{ loop.index }}</td><td>{{ run.suite }}</td><td>{{ run.model }}</td><td>{{ run.headline }}{% if run.incomplete %} <span class="incomplete">{{ run.incomplete }}</span>{% endif %}</td><td>{{ run.run_id }}</td><td>{{ run.run_dir }}</td></tr>{% endfor %}
</table>
{% for caption, src in images %}<figure class="fig"><img alt="{{ caption }}" src="{{ src }}"><figcaption>{{ caption }}</figcaption></figure>{% endfor %}
{% for table in tables %}
<h2>{{ table.title }}</h2>
<div class="wide"><table><tr>{% for column in table.columns %}<th>{{ column }}</th>{% endfor %}</tr>
{% for row in table.rows %}<tr>{% for cell in row %}<td{% if loop.index > table.fixed %} class="num"{% endif %}>{{ cell }}</td>{% endfor %}</tr>{% endfor %}
</table></div>
{% endfor %}
{% for note in notes %}<p>{{ note }}</p>{% endfor %}
</body></html>
"""
)


def render_compare_html(
    rows: Sequence[dict[str, Any]], results: Sequence[tuple[Path, ScoreResult]]
) -> str:
    """Return one self-contained page with runs side by side: each run's headline, their scores
    by length on one plot (each with its 95% band), the leaderboard and breakdown tables
    `compare` prints, and each run's difference from the first."""
    from longscope.report.terminal import (
        NOISE_NOTE,
        difference_table,
        leaderboard_notes,
        leaderboard_tables,
    )

    runs, curves, bands = [], {}, {}
    for run_dir, result in results:
        summary = result.summary
        view = summary.view
        runs.append(
            {
                "suite": result.suite,
                "model": visible(summary.model or ""),
                "headline": visible(_section(result)["headline"]),
                "incomplete": visible(incomplete_line(summary.completeness)),
                "run_id": result.run_id[:12],
                "run_dir": visible(run_dir),
            }
        )
        if len(view.by_length) > 1:
            name = f"{summary.model} ({result.run_id[:8]})"
            curves[name] = view.by_length
            bands[name] = {
                n: (e.low, e.high)
                for n, e in view.length_errors.items()
                if e.low is not None and e.high is not None
            }
    images = []
    if curves:
        images.append(
            (
                "Score vs length, one line per run (bands: 95% intervals)",
                curve_png(curves, RULER_THRESHOLD, "score by length", bands),
            )
        )
    parts = leaderboard_tables(rows)
    made = difference_table(rows)
    if made is not None:
        parts.append(made)
    tables = [
        {
            "title": visible(t.title),
            "fixed": len(t.keys),
            "columns": [visible(c) for c in (*t.keys, *t.columns)],
            "rows": [[visible(cell.plain) for cell in row] for row in t.rows],
        }
        for t in parts
    ]
    notes = leaderboard_notes(rows)
    notes += [
        f"{r.get('model')}: {r['vs_reference']['note']}" for r in rows if r.get("vs_reference")
    ]
    if made is not None:
        notes.append(NOISE_NOTE)
    return _COMPARE.render(
        version=__version__,
        runs=runs,
        images=images,
        tables=tables,
        notes=[visible(n) for n in notes],
    )


def render_markdown(results: list[tuple[Path, ScoreResult]], adaptive: Sequence[str] = ()) -> str:
    """Return the headline numbers and breakdown tables of each run as Markdown (and its adaptive
    decision, `adaptive` as in `render_html`).

    Every string is escaped (`safe_text.markdown`): HTML in a model name or a dataset key comes
    out as text, never as a tag, a link or an image.
    """
    md = markdown
    lines = []
    for index, (run_dir, result) in enumerate(results):
        section = _section(result, draw=False)
        lines += [f"## {md(result.suite)}: {md(result.summary.model or '')}", ""]
        incomplete = incomplete_line(result.summary.completeness)
        if incomplete:
            lines += [f"**{md(incomplete)}**", ""]
        lines += [
            f"run {md(result.run_id)} in {md(run_dir)}",
            "",
            f"**{md(section['headline'])}**",
            "",
        ]
        lines += [f"- {md(name)}: {md(value)}" for name, value in section["facts"]] + [""]
        completeness = _completeness_rows(result)
        if completeness:
            lines += [
                "### Completeness by length (requests)",
                "",
                "| length | requested | scored | skipped | failed | not run |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {md(length)} | {c['requested']} | {c['scored']} | {c['skipped']} | "
                f"{c['failed']} | {c['missing']} |"
                for length, c in completeness.items()
            ] + [""]
        for table in section["tables"]:
            lines += [
                f"### {md(table['title'])}",
                "",
                "| " + " | ".join(md(c) for c in table["columns"]) + " |",
                "|" + "---|" * len(table["columns"]),
            ]
            lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in table["rows"]]
            lines.append("")
        lines += [md(note) for note in section["notes"]] + ([""] if section["notes"] else [])
        told = adaptive[index] if index < len(adaptive) else ""
        if told:
            lines += ["### Adaptive decision", ""]
            lines += [f"- {md(line.strip())}" for line in told.splitlines() if line.strip()] + [""]
    return "\n".join(lines)
