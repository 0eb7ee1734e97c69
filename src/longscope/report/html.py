"""One self-contained HTML file per report: plots inlined as PNG, every stored string escaped.

Model answers and dataset text are untrusted: jinja2 autoescaping is on for the whole template and
nothing is marked safe except the base64 images this module draws itself.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import jinja2

from longscope import __version__
from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.report.safe_text import markdown, mpl, visible
from longscope.run.scoring import ScoreResult, incomplete_line, no_score_text, result_state
from longscope.run.store import RunStore

HEAD_TAIL_CHARS = 400


def _figure_png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def heatmap_png(heatmap: dict[str, dict[str, float]], title: str) -> str:
    """Depth x length heatmap on a fixed 0-100 scale (blank where a cell was not run)."""
    import numpy as np

    plt = _plt()
    lengths = sorted(heatmap, key=int)
    depths = sorted(
        {d for row in heatmap.values() for d in row}, key=lambda d: float(d.rstrip("%"))
    )
    grid = np.full((len(depths), len(lengths)), np.nan)
    for j, length in enumerate(lengths):
        for i, depth in enumerate(depths):
            if depth in heatmap[length]:
                grid[i, j] = heatmap[length][depth]
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(lengths), 1.0 + 0.45 * len(depths)))
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(
        range(len(lengths)), [f"{int(n) // 1024}K" if int(n) >= 1024 else n for n in lengths]
    )
    ax.set_yticks(range(len(depths)), [mpl(d) for d in depths])
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("needle depth")
    for i in range(len(depths)):
        for j in range(len(lengths)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="score %")
    ax.set_title(mpl(title))
    return _figure_png(fig)


def curve_png(curves: dict[str, dict[int, float]], threshold: float, title: str) -> str:
    """Score vs length, one line per model, with the effective-length threshold drawn.

    Labels are untrusted (model and task names): escaped so matplotlib never parses mathtext.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for label, points in curves.items():
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=mpl(label))
    ax.axhline(
        threshold, color="grey", linestyle="--", linewidth=1, label=f"threshold {threshold:g}"
    )
    ax.set_xscale("log", base=2)
    all_x = sorted({x for points in curves.values() for x in points})
    ax.set_xticks(all_x, [f"{x // 1024}K" if x >= 1024 else str(x) for x in all_x])
    ax.set_ylim(0, 100)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("score %")
    ax.set_title(mpl(title))
    ax.legend(fontsize=7)
    return _figure_png(fig)


def bars_png(values: dict[str, float], title: str) -> str:
    """Horizontal bars on a 0-100 scale."""
    plt = _plt()
    labels = list(values)
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.35 * len(labels)))
    ax.barh(range(len(labels)), [values[k] for k in labels], color="#4c72b0")
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
    """What the router did for one answer: its decision, then each part's answer (model text)."""
    if not plan:
        return ""
    lines = [f"{plan['decision']}: {plan['prompt_tokens']} prompt tokens, budget {plan['budget']}"]
    for chunk in plan.get("chunks", []):
        lines.append(
            f"part {chunk['part']} ({chunk['context_tokens']} tokens, {chunk['status']}): "
            f"{chunk['answer'].strip()}"
        )
    if plan.get("reduce"):
        lines.append(f"combined: {plan['reduce']}; {plan.get('calls', 1)} calls")
    return "\n".join(lines)


def _longctx_section(result: ScoreResult) -> dict[str, Any]:
    summary = result.summary
    by_length = {int(k): v["percent"] for k, v in summary["by_length"].items()}
    eff = effective_length(by_length, RULER_THRESHOLD)
    claimed = result.header.get("model_info", {}).get("context_length")
    images = []
    if summary["heatmap"]:
        images.append(
            (
                "Needle score by depth and length",
                heatmap_png(summary["heatmap"], "needle / position-bias score %"),
            )
        )
    if len(by_length) > 1:
        images.append(
            (
                "Score vs length",
                curve_png(
                    {summary.get("model") or "model": by_length},
                    RULER_THRESHOLD,
                    "LongCtx score by length",
                ),
            )
        )
    images.append(
        (
            "By task type",
            bars_png(
                {k: v["percent"] for k, v in summary["by_type"].items()}, "score % by task type"
            ),
        )
    )
    tables = [
        ("By tier", "tier", summary["by_tier"]),
        ("By length (tokens)", "length", summary["by_length"]),
        ("By task type", "type", summary["by_type"]),
        ("By needle depth", "depth", summary["by_depth"]),
    ]
    status_cells: dict[str, dict[str, int]] = {}
    for row in summary["per_sample"].values():
        cell = status_cells.setdefault(str(row["length"]), {})
        for status, count in row["statuses"].items():
            cell[status] = cell.get(status, 0) + count
    return {
        "headline": f"{summary['total']:.1f} / 100 ({summary['level']})",
        "facts": [
            ("raw points", f"{summary['raw_points']:g} of {summary['max_points']:g}"),
            ("effective length (>= 85.6)", eff.label),
            ("claimed / held context", str(claimed)),
        ],
        "images": images,
        "tables": [
            (title, label, rows)
            for title, label, rows in tables
            if rows and any(k != "None" for k in rows)
        ],
        "status_cells": status_cells,
    }


def _longbench_pro_section(result: ScoreResult) -> dict[str, Any]:
    images = []
    facts = []
    tables = []
    from longscope.suites.longbench_pro.suite import display_modes

    for mode, data in display_modes(result.summary).items():
        facts.append((f"{mode} overall", f"{data['average_overall_metric']:.2f}"))
        facts.append(
            (
                f"{mode} failed / truncated",
                f"{data['fail_samples_num']} / {data['truncated_questions_num']}",
            )
        )
        for dimension in ("language", "difficulty", "contextual_requirement", "primary_task"):
            values = data[f"average_{dimension}_metric"]
            images.append(
                (
                    f"{mode}: by {dimension}",
                    bars_png(values, f"{mode}: score by {dimension.replace('_', ' ')}"),
                )
            )
        lengths = {int(k[:-1]) * 1024: v for k, v in data["average_token_length_metric"].items()}
        if len(lengths) > 1:
            images.append(
                (
                    f"{mode}: score vs length",
                    curve_png({mode: lengths}, RULER_THRESHOLD, "LongBench Pro score by length"),
                )
            )
        for dimension in ("token_length", "secondary_task", "language_x_length"):
            rows = {k: {"percent": v} for k, v in data[f"average_{dimension}_metric"].items()}
            tables.append((f"{mode}: by {dimension.replace('_', ' ')}", dimension, rows))
    return {
        "headline": "; ".join(f"{k} {v}" for k, v in facts[::2]),
        "facts": facts,
        "images": images,
        "tables": tables,
        "status_cells": {},
    }


def _hundred_section(result: ScoreResult) -> dict[str, Any]:
    summary = result.summary
    curves = {
        task: {int(k): v for k, v in scores.items()} for task, scores in summary["by_task"].items()
    }
    overall = {int(k): v for k, v in summary["by_length"].items()}
    scores = summary["longscore"]
    images = []
    if len(overall) > 1:
        images.append(
            (
                "Score vs length per task",
                curve_png(
                    {**curves, "overall": overall}, RULER_THRESHOLD, "100-LongBench score by length"
                ),
            )
        )
    defined = {task: ls["average"] for task, ls in scores.items() if ls["average"] is not None}
    if defined:
        # LongScore is a relative change (%): shift to a 0-100 bar where 100 means no loss.
        images.append(
            (
                "LongScore (100 = no loss vs base)",
                bars_png(
                    {k: max(0.0, 100 + v) for k, v in defined.items()}, "100 + average LongScore"
                ),
            )
        )
    facts = [
        (f"{task} LongScore", ls["undefined"] or f"{ls['average']:+.1f} (base {ls['base']})")
        for task, ls in scores.items()
        if ls["average"] is not None or ls["undefined"]
    ]
    tables = [
        (f"{task}: score by target length", "length", {k: {"percent": v} for k, v in s.items()})
        for task, s in summary["by_task"].items()
    ]
    facts += [(f"tokens sent at target {k}", str(v)) for k, v in summary["achieved_length"].items()]
    head = scores.get("overall", {})
    headline = (
        f"overall LongScore {head['average']:+.1f}"
        if head.get("average") is not None
        else "LongScore undefined"
    )
    return {
        "headline": headline,
        "facts": facts,
        "images": images,
        "tables": tables,
        "status_cells": {},
    }


SECTIONS = {
    "longctx": _longctx_section,
    "longbench-pro": _longbench_pro_section,
    "hundred": _hundred_section,
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
{% for title, label, rows in run.section.tables %}
<h3>{{ title }}</h3>
<table><tr><th>{{ label }}</th>{% if rows.values()|first is mapping and 'points' in (rows.values()|first) %}<th>points</th><th>max</th>{% endif %}<th>score %</th></tr>
{% for key, row in rows.items() %}<tr><td>{{ key }}</td>{% if 'points' in row %}<td class="num">{{ row.points }}</td><td class="num">{{ row.max }}</td>{% endif %}<td class="num">{{ row.percent }}</td></tr>{% endfor %}
</table>
{% endfor %}
{% if run.section.status_cells %}<h3>Statuses per length</h3>
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


def _section(result: ScoreResult) -> dict[str, Any] | None:
    """Return the suite's section, its headline marked provisional or replaced when nothing scored."""
    build = SECTIONS.get(result.suite)
    if build is None:
        return None
    state = result_state(result.summary)
    if state == "none":
        # Plots and totals of a run that scored nothing would read as a 0 score: show none.
        return {
            "headline": no_score_text(result.summary),
            "facts": [],
            "images": [],
            "tables": [],
            "status_cells": {},
        }
    section = build(result)
    if state == "provisional":
        section["headline"] += " (provisional: incomplete run)"
    return section


def _completeness_rows(result: ScoreResult) -> dict[str, dict[str, int]]:
    record = result.summary.get("completeness")
    if record is None:
        return {}
    rows = dict(record["by_length"])
    if len(rows) > 1:
        rows["all"] = {
            k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")
        }
    return rows


def render_html(results: list[tuple[Path, ScoreResult]]) -> str:
    """Return one self-contained HTML page for one or more scored runs."""
    runs = []
    for run_dir, result in results:
        section = _section(result)
        if section is None:
            continue
        runs.append(
            {
                "suite": result.suite,
                "model": visible(result.summary.get("model") or ""),
                "run_id": result.run_id,
                "run_dir": visible(run_dir),
                "incomplete": incomplete_line(result.summary.get("completeness") or {}),
                "completeness": _completeness_rows(result),
                "section": section,
                "samples": _drilldown(result, run_dir),
            }
        )
    return _TEMPLATE.render(version=__version__, runs=runs)


def render_markdown(results: list[tuple[Path, ScoreResult]]) -> str:
    """Return the headline numbers and breakdown tables of each run as Markdown.

    Every string is escaped (`safe_text.markdown`): HTML in a model name or a dataset key comes
    out as text, never as a tag, a link or an image.
    """
    md = markdown
    lines = []
    for run_dir, result in results:
        section = _section(result)
        if section is None:
            continue
        lines += [f"## {md(result.suite)}: {md(result.summary.get('model') or '')}", ""]
        incomplete = incomplete_line(result.summary.get("completeness") or {})
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
        for title, label, rows in section["tables"]:
            lines += [f"### {md(title)}", "", f"| {md(label)} | score % |", "|---|---|"]
            lines += [f"| {md(key)} | {md(row['percent'])} |" for key, row in rows.items()] + [""]
    return "\n".join(lines)
