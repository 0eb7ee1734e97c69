"""LongProc's aggregation: the authors' table, per level the mean over tasks, and the headline.

The table holds per task and output level the task's metric; the headline is the mean over the
levels run; each cell records its requests (`Cell.where`) for its standard error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from longscope.suites.longproc.data import (
    LABELS,
)
from longscope.summary import Breakdown, Cell, Headline, Summary, Table, View, percent
from longscope.types import SCORABLE, ScoredRow

TITLES = {
    "html_to_tsv": "HTML to TSV",
    "pseudo_to_code": "Pseudocode to Code",
    "path_traversal": "Path Traversal",
    "tom_tracking": "ToM Tracking",
    "countdown": "Countdown",
    "travel_planning": "Travel Planning",
}


METRICS = {
    "html_to_tsv": "row F1",
    "pseudo_to_code": "accuracy (all of the first 10 test cases pass)",
    "path_traversal": "accuracy (exact route)",
    "tom_tracking": "accuracy (exact belief trace)",
    "countdown": "accuracy (three equations reaching the target)",
    "travel_planning": "accuracy (every stay of the plan, in order)",
}


UNFIT = ("skipped", "context_overflow")


def _value(row: ScoredRow) -> float:
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.fraction
    return 0.0


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def longproc_summary(rows: Sequence[ScoredRow]) -> Summary:
    """The authors' table: per task and level the task's metric, per level the mean over tasks,
    and the headline: the mean over the levels run. Rows that could not fit are left out of the
    means (counted as skipped); a failed request counts 0."""
    sent = [r for r in rows if r.generation.status not in UNFIT]
    per: dict[tuple[str, str], list[ScoredRow]] = defaultdict(list)
    for row in sent:
        per[(str(row.sample["task"]), str(row.sample["meta"]["level"]))].append(row)
    cell = {key: percent(_value(r) for r in members) for key, members in per.items()}
    levels = [label for label in LABELS.values() if any(k[1] == label for k in per)]
    tasks = [t for t in TITLES if any(k[0] == t for k in per)]
    by_level = {
        label: _mean([v for (t, lv), v in cell.items() if lv == label and v is not None])
        for label in levels
    }
    by_task = {
        task: _mean([v for (t, lv), v in cell.items() if t == task and v is not None])
        for task in tasks
    }
    overall = _mean([v for v in by_level.values() if v is not None])
    level_rows = {
        label: sum(len(m) for (t, lv), m in per.items() if lv == label) for label in levels
    }
    task_rows = {task: sum(len(m) for (t, lv), m in per.items() if t == task) for task in tasks}
    table = Table(
        "By task and output level (the task's metric, %)",
        ("task", "metric", *levels),
        tuple(
            (
                TITLES[task],
                METRICS.get(task, "-"),
                *(
                    "-" if cell.get((task, lv)) is None else f"{cell[(task, lv)]:.1f}"
                    for lv in levels
                ),
            )
            for task in tasks
        ),
        where=tuple(
            (
                None,
                None,
                *({"task": task, "meta.level": lv} if (task, lv) in per else None for lv in levels),
            )
            for task in tasks
        ),
    )
    skipped = len(rows) - len(sent)
    cut = sum(1 for r in sent if r.generation.status == "length")
    view = View(
        headline=Headline(
            "mean over tasks, then output levels",
            overall,
            digits=1,
            note=f"{len(sent)} rows sent, {skipped} skipped (too long), {cut} cut by the budget",
        ),
        overall=overall,
        breakdowns=(
            Breakdown(
                "level",
                "By output level (mean over tasks, as the authors' table)",
                {lv: Cell(by_level[lv], level_rows[lv], where={"meta.level": lv}) for lv in levels},
                compare=True,
                plot=True,
            ),
            Breakdown(
                "task_level",
                "By task and output level (as the authors' full table)",
                {
                    f"{task} {lv}": Cell(
                        cell[(task, lv)],
                        len(per[(task, lv)]),
                        where={"task": task, "meta.level": lv},
                    )
                    for task in tasks
                    for lv in levels
                    if (task, lv) in per
                },
                compare=True,
            ),
            Breakdown(
                "task",
                "By task (mean over levels)",
                {
                    task: Cell(by_task[task], task_rows[task], where={"task": task})
                    for task in tasks
                },
                compare=True,
                plot=True,
            ),
        ),
        tables=(table,) if per else (),
        facts=(("rows sent / skipped", f"{len(sent)} / {skipped}"),),
    )
    ran = set(tasks)
    differences = []
    missing = [TITLES[t] for t in TITLES if t not in ran]
    if missing:
        differences.append(
            f"tasks not run: {', '.join(missing)} (the authors' level means average all six "
            "that have the level)"
        )
    data = sorted({str(r.sample["meta"].get("data")) for r in rows})
    if any(d.startswith("unpinned") for d in data):
        differences.append(f"data not the pinned commit's: {', '.join(data)}")
    failed = sum(1 for r in rows if r.generation.status not in (*SCORABLE, *UNFIT))
    if failed:
        differences.append(f"{failed} requests failed or were never answered (they score 0)")
    notes = (
        f"data: {', '.join(data) or '-'}",
        "scores: the authors' evaluators (row F1 for HTML to TSV, accuracy for the others); "
        "an answer cut by its budget is graded on the text it has, as theirs",
        *(f"not comparable with the published table: {d}" for d in differences),
    )
    return Summary(
        suite="longproc",
        title="LongProc",
        views=(view,),
        notes=notes,
        native={
            "longproc": {
                "levels": by_level,
                "tasks": {
                    task: {lv: cell.get((task, lv)) for lv in levels if (task, lv) in cell}
                    for task in tasks
                },
                "mean": overall,
            },
            "comparable_with_published": "no" if differences else "yes",
            "differences": differences,
        },
    )


__all__ = ["METRICS", "TITLES", "UNFIT", "longproc_summary"]
