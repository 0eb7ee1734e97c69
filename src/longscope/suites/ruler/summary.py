"""RULER's aggregation: per task x length scores, the average per length, nulls, effective length.

`summarize_ruler` is RULER's own summary (kept key for key as the native part) and
`comparability` says whether a run compares with RULER's published table; `ruler_summary` is the
typed summary every report reads, its curves recording the requests they average
(`View.length_where`, `curve_where`) for their standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.analysis.profile import weighted_averages
from longscope.suites.ruler.scoring import postprocess, task_score
from longscope.suites.ruler.tasks import ALL_TASKS, DEFAULT_SAMPLES
from longscope.summary import Breakdown, Cell, Headline, Summary, Table, View
from longscope.types import SCORABLE, ScoredRow

THRESHOLDS = (RULER_THRESHOLD, 80.0, 70.0, 50.0)
"""The thresholds RULER's own summary states an effective length at."""


def summarize_ruler(
    rows: Sequence[ScoredRow], skipped: dict[str, str], differences: list[str]
) -> dict[str, Any]:
    """Per task x length RULER scores, the average per length, nulls, effective length and wAvg."""
    values: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    nulls: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    statuses: dict[str, dict[int, dict[str, int]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(int))
    )
    achieved: dict[int, list[int]] = defaultdict(list)
    short_cells: set[tuple[str, int]] = set()
    for row in rows:
        task, meta = row.sample["task"], row.sample["meta"]
        length = int(meta["target_length"])
        ok = row.generation.status in SCORABLE and row.score is not None
        # A failed request scores 0 and its empty prediction counts as a null, as in RULER.
        values[task][length].append(row.score.value if ok and row.score else 0.0)
        nulls[task][length] += 0 if ok and postprocess(row.generation.text) else 1
        statuses[task][length][row.generation.status] += 1
        achieved[length].append(int(meta["achieved_length"]))
        if meta.get("word_list_exhausted"):
            short_cells.add((task, length))
    by_task = {
        t: {str(n): task_score(v) for n, v in sorted(by_len.items())}
        for t, by_len in sorted(values.items())
    }
    lengths = sorted({n for by_len in values.values() for n in by_len})
    by_length = {
        str(n): round(mean(by_task[t][str(n)] for t in by_task if str(n) in by_task[t]), 2)
        for n in lengths
    }
    curve = {int(k): v for k, v in by_length.items()}
    inc, dec = weighted_averages(curve)
    verdict, failing = comparability(rows, differences)
    notes = list(failing)
    notes += [
        f"{t} at {n}: more distinct words needed than the word list holds (pass words=FILE)"
        for t, n in sorted(short_cells)
    ]
    return {
        "headline": {
            "metric": "RULER average (x100)",
            "by_length": by_length,
            "average": round(mean(curve.values()), 2) if curve else None,
        },
        "by_task": by_task,
        "by_length": by_length,
        "nulls": {
            t: {str(n): f"{c}/{len(values[t][n])}" for n, c in sorted(v.items())}
            for t, v in sorted(nulls.items())
        },
        "statuses": {
            t: {str(n): dict(s) for n, s in sorted(v.items())} for t, v in sorted(statuses.items())
        },
        "achieved_length": {str(n): round(mean(v)) for n, v in sorted(achieved.items())},
        "effective_length": {str(th): effective_length(curve, th).label for th in THRESHOLDS},
        "wAvg_inc": inc,
        "wAvg_dec": dec,
        "skipped": dict(skipped),
        "comparable_with_published": verdict,
        "differences": notes,
    }


def comparability(rows: Sequence[ScoredRow], settings: Sequence[str]) -> tuple[str, list[str]]:
    """Return ("yes" | "subset of N" | "no", the conditions that fail) from the scored rows.

    Comparable with RULER's published table: all 13 tasks scored; RULER's base template in
    completion mode with its answer prefixes; `fill=ruler`; RULER's data (the essay cut by punkt);
    500 samples per task and length (fewer: "subset of N"); no failed or unanswered request.
    `settings` are what the run's parameters already rule out (seed, skipped tasks).
    """
    # Lengths, sample counts and the fill are judged from the rows themselves below.
    failing = [
        d
        for d in settings
        if not d.startswith(("lengths ", "fill=")) and "samples per task" not in d
    ]
    per_cell: dict[tuple[str, int], set[str]] = defaultdict(set)
    modes: dict[str, int] = defaultdict(int)
    fills: dict[str, int] = defaultdict(int)
    regex = failed = 0
    for row in rows:
        meta = row.sample["meta"]
        cell = per_cell[(row.sample["task"], int(meta["target_length"]))]
        cell.add(str(row.sample.get("id", len(cell))))
        mode, template = meta.get("prompt_mode", "?"), meta.get("model_template", "?")
        if mode != "completion" or template != "base" or not meta.get("answer_prefix"):
            modes[f"{mode} mode" if mode != "completion" else f"model template {template}"] += 1
        fills[str(meta.get("fill", "exact"))] += 1
        regex += meta.get("sentences") == "regex"
        failed += row.generation.status not in SCORABLE
    scored = {t for t, _ in per_cell}
    missing = [t for t in ALL_TASKS if t not in scored]
    if missing and not any(d.startswith("tasks not run") for d in failing):
        failing.append(f"tasks not scored: {', '.join(missing)} (RULER averages all 13)")
    for what, n in sorted(modes.items()):
        failing.append(
            f"{n} samples sent in {what} (RULER: base template, completion mode, answer prefix)"
        )
    if fills.get("exact"):
        failing.append(
            f"{fills['exact']} samples built with fill=exact (prompts up to 19% longer than "
            "RULER's at the same length; fill=ruler builds RULER's own samples)"
        )
    if regex:
        failing.append(
            f"{regex} essay samples cut into sentences without nltk's punkt (RULER's splitter): "
            "install nltk and run `longscope data ruler`"
        )
    if failed:
        failing.append(f"{failed} requests failed or unanswered (they score 0)")
    if failing or not per_cell:
        return "no", failing or ["nothing scored"]
    fewest = min(len(ids) for ids in per_cell.values())
    if fewest < DEFAULT_SAMPLES:
        return f"subset of {fewest}", [
            f"{fewest} of RULER's {DEFAULT_SAMPLES} samples per task and length: scores vary "
            "more than the published ones"
        ]
    return "yes", []


def _k(length: int) -> str:
    return f"{length // 1024}K" if length % 1024 == 0 else str(length)


def ruler_summary(native: dict[str, Any]) -> Summary:
    """The typed summary: RULER's average by length, a curve per task, RULER's table and facts."""
    by_length = {int(k): v for k, v in native["by_length"].items()}
    curves = {t: {int(k): v for k, v in c.items()} for t, c in native["by_task"].items()}
    lengths = sorted(by_length)
    columns = ("task", *(_k(n) for n in lengths))
    scores = tuple(
        (t, *(f"{curves[t][n]:.2f}" if n in curves[t] else "-" for n in lengths)) for t in curves
    )
    average = ("average", *(f"{by_length[n]:.2f}" for n in lengths))
    # The requests behind each score cell, for its standard error (analysis.uncertainty): a
    # task's cell is its samples at that length, the average row RULER's mean of task means.
    cells = [(None, *({"task": t, "meta.target_length": str(n)} for n in lengths)) for t in curves]
    mean_row = (None, *({"meta.target_length": str(n), "@mean_of": "task"} for n in lengths))
    where = (*cells, mean_row)
    nulls = tuple((t, *(c.get(str(n), "-") for n in lengths)) for t, c in native["nulls"].items())
    effective = tuple((k, v) for k, v in native["effective_length"].items())
    tasks = {
        t: Cell(round(mean(c.values()), 2), len(c), where={"task": t})
        for t, c in curves.items()
        if c
    }
    facts = (
        *((f"effective length at {k}", v) for k, v in effective),
        ("comparable with RULER's published table", str(native["comparable_with_published"])),
        *((f"tokens sent at target {k}", str(v)) for k, v in native["achieved_length"].items()),
    )
    verdict = native["comparable_with_published"]
    lead = "not comparable" if verdict == "no" else "comparable on a subset"
    notes = [f"{lead} with RULER's published table: {d}" for d in native["differences"]]
    view = View(
        headline=Headline("RULER average", native["headline"]["average"], digits=2),
        overall=native["headline"]["average"],
        by_length=by_length,
        curves=curves,
        breakdowns=(Breakdown("task", "By task (mean over lengths)", tasks, compare=True),),
        length_where={n: {"meta.target_length": str(n)} for n in by_length},
        curve_where={t: {"task": t} for t in curves},
        tables=(
            Table("RULER score by task and length (x100)", columns, (*scores, average), where),
            Table("Nulls (empty predictions) by task and length", columns, nulls),
            Table(
                "Effective length (largest length whose average passes)",
                ("threshold", "length"),
                effective,
            ),
        ),
        facts=facts,
    )
    return Summary(suite="ruler", title="RULER", views=(view,), notes=tuple(notes), native=native)
