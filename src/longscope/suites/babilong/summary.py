"""BABILong's aggregation: the authors' table (accuracy per task and length), its qa1-qa5 mean.

That mean per length is the length curve, its mean over the lengths the overall; a run that also
holds other tasks gets a second view (`qa6-qa20`), each view recording its rows (`meta.group`)
and each cell its requests, for their standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean

from longscope.analysis.effective import effective_length
from longscope.suites.babilong import data
from longscope.suites.babilong.prompts import (
    MAX_NEW_TOKENS,
)
from longscope.suites.babilong.schema import HEADLINE_TASKS, LENGTHS, TASKS
from longscope.suites.babilong.scoring import (
    SOURCE,
)
from longscope.summary import (
    Breakdown,
    Cell,
    Headline,
    Summary,
    Table,
    View,
    group_cells,
)
from longscope.types import (
    SCORABLE,
    ScoredRow,
)

SATISFACTORY = 85.0
"""The paper's bar: accuracy above 85% is "satisfactory" (and below 30% a failure)."""


UNSENT = ("skipped", "context_overflow")


LENGTH_NAMES = {tokens: name for name, tokens in LENGTHS.items()}
"""Each length in tokens by the dataset's name for it (`4k`)."""


def _sent(rows: Sequence[ScoredRow]) -> list[ScoredRow]:
    return [r for r in rows if r.generation.status not in UNSENT]


def _name(tokens: int) -> str:
    return LENGTH_NAMES.get(tokens, str(tokens))


HEADLINE_GROUP, OTHER_GROUP = "qa1-qa5", "qa6-qa20"
"""The views of a run holding tasks of both groups (each sample names its group in `meta.group`,
so the statistics find each view's requests): the headline's mean is never mixed with others."""


def group_of(task: str) -> str:
    """Return the group a task is summed up in: the headline's tasks (`qa1-qa5`) or the others."""
    return HEADLINE_GROUP if task in HEADLINE_TASKS else OTHER_GROUP


def _label(tasks: Sequence[str]) -> str:
    """Return `qa1-qa5` for a run of consecutive tasks, else the tasks by name."""
    first, last = TASKS.index(tasks[0]), TASKS.index(tasks[-1])
    if len(tasks) > 1 and list(tasks) == list(TASKS[first : last + 1]):
        return f"{tasks[0]}-{tasks[-1]}"
    return ",".join(tasks)


@dataclass(frozen=True)
class _Curves:
    """One group's accuracies: per task and length, and their mean per length (the authors')."""

    tasks: tuple[str, ...]
    rows: dict[str, list[ScoredRow]]
    curves: dict[str, dict[int, float]]
    by_length: dict[int, float]


def _curves(sent: Sequence[ScoredRow]) -> _Curves:
    by_task: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in sent:
        by_task[str(row.sample["task"])].append(row)
    tasks = tuple(sorted(by_task, key=TASKS.index))
    curves = {}
    for task in tasks:
        cells = group_cells(by_task[task], _length_of)
        curves[task] = {int(n): c.score for n, c in cells.items() if c.score is not None}
    lengths = sorted({n for c in curves.values() for n in c})
    # As the authors' table: a length has a mean only where every task of it has a score.
    by_length = {
        n: round(mean(curves[t][n] for t in tasks), 2)
        for n in lengths
        if all(n in curves[t] for t in tasks)
    }
    return _Curves(tasks, dict(by_task), curves, by_length)


def _length_of(row: ScoredRow) -> int:
    return int(row.sample["meta"]["dataset_length"])


def _view(name: str, made: _Curves, facts: tuple[tuple[str, str], ...]) -> View:
    """Return one group's view: the mean of its tasks per length as the curve, the authors' table."""
    label, by_length, curves = _label(made.tasks), made.by_length, made.curves
    overall = round(mean(by_length.values()), 2) if by_length else None
    lengths = sorted({n for c in curves.values() for n in c})
    sent = [r for rows in made.rows.values() for r in rows]
    length_cells = {
        str(n): Cell(
            by_length[n],
            sum(1 for r in sent if _length_of(r) == n),
            where={"meta.dataset_length": str(n)},
        )
        for n in by_length
    }
    table_rows = tuple(
        (t, *(f"{curves[t][n]:.2f}" if n in curves[t] else "-" for n in lengths))
        for t in made.tasks
    )
    mean_row = (
        f"mean {label}",
        *(f"{by_length[n]:.2f}" if n in by_length else "-" for n in lengths),
    )
    where = (
        *(
            (None, *({"task": t, "meta.dataset_length": str(n)} for n in lengths))
            for t in made.tasks
        ),
        (None, *({"meta.dataset_length": str(n), "@mean_of": "task"} for n in lengths)),
    )
    effective = effective_length(by_length, SATISFACTORY).label if by_length else "n/a"
    return View(
        name=name,
        where={"meta.group": name} if name else {},
        headline=Headline(
            f"mean of {label}",
            overall,
            digits=1,
            note=f"over {len(by_length)} length{'s' if len(by_length) != 1 else ''}",
        ),
        overall=overall,
        by_length=by_length,
        curves=curves,
        curve_where={t: {"task": t} for t in curves},
        breakdowns=(
            Breakdown("length", f"By length (GPT-2 tokens): mean of {label}", length_cells),
            Breakdown(
                "task",
                "By task (mean over lengths)",
                {
                    t: Cell(
                        round(mean(curves[t].values()), 2), len(made.rows[t]), where={"task": t}
                    )
                    for t in made.tasks
                    if curves[t]
                },
                compare=True,
                plot=True,
            ),
        ),
        tables=(
            Table(
                "Accuracy by task and length (%), the authors' table",
                ("task", *(_name(n) for n in lengths)),
                (*table_rows, mean_row),
                where,
            ),
        ),
        facts=((f"effective length at {SATISFACTORY:g} (the paper's 'satisfactory')", effective),
               *facts),
    )  # fmt: skip


def babilong_summary(rows: Sequence[ScoredRow], differences: Sequence[str] = ()) -> Summary:
    """The authors' table (accuracy per task and length, the qa1-qa5 mean per length) as a typed
    summary: that mean is the length curve, its mean over the lengths the overall. A run that also
    holds other tasks gets a second view (`qa6-qa20`), so the headline stays the authors'."""
    sent = _sent(rows)
    groups: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in sent:
        groups[group_of(str(row.sample["task"]))].append(row)
    skipped = len(rows) - len(sent)
    failed = sum(1 for r in sent if r.generation.status not in SCORABLE)
    verdict, reasons = comparability(rows, differences)
    prompts = sorted({str(r.sample["meta"].get("prompt")) for r in rows})
    facts = (
        ("rows sent / skipped (too long) / failed", f"{len(sent)} / {skipped} / {failed}"),
        ("prompt", ", ".join(prompts) or "-"),
        ("comparable with the published rows", verdict),
    )
    made = {name: _curves(group) for name, group in sorted(groups.items())}
    if len(made) > 1:
        views = tuple(
            _view(name, made[name], facts if name == HEADLINE_GROUP else ())
            for name in (HEADLINE_GROUP, OTHER_GROUP)
        )
    else:
        views = tuple(_view("", m, facts) for m in made.values()) or (View(),)
    first = next(iter(made.values()), None)
    headline = made.get(HEADLINE_GROUP, first)
    by_length = headline.by_length if headline else {}
    effective = effective_length(by_length, SATISFACTORY).label if by_length else "n/a"
    lead = "not comparable" if verdict == "no" else "comparable on a subset"
    notes = (
        f"score: the authors' compare_answers ({SOURCE}); skipped rows (too long for the model) "
        "are left out of the means, failed requests count 0",
        f"lengths are the dataset's, in GPT-2 tokens (1k = 1000); effective length at "
        f"{SATISFACTORY:g}: {effective}",
        f"data licence: {data.LICENCE}",
        f"answers stop at {MAX_NEW_TOKENS} new tokens, as the authors' runs do (their check reads "
        "the first sentence): answers cut there (budget-bound in the budgets table) are the "
        "benchmark's setting, not a budget of this run",
        *(f"{lead} with the published rows: {d}" for d in reasons if verdict != "yes"),
    )
    curves = {t: c for m in made.values() for t, c in m.curves.items()}
    native = {
        "babilong": {
            "tasks": {
                t: {_name(n): v for n, v in curves[t].items()}
                for t in sorted(curves, key=TASKS.index)
            },
            "avg": {_name(n): v for n, v in by_length.items()},
            "headline_tasks": list(headline.tasks) if headline else [],
            "rows": {"sent": len(sent), "skipped": skipped, "failed": failed},
            "effective_length_85": effective,
            "licence": data.LICENCE,
        },
        "comparable_with_published": verdict,
        "differences": reasons,
    }
    return Summary(suite="babilong", title="BABILong", views=views, notes=notes, native=native)


def comparability(rows: Sequence[ScoredRow], differences: Sequence[str]) -> tuple[str, list[str]]:
    """Return ("yes" | "subset of N" | "no", why) against the authors' published runs: their
    tasks, prompt and data (`differences`), every row sent and answered, and every row of their
    sets (1000 per task and length up to 32k, 100 from 64k; fewer: "subset of N")."""
    reasons = list(differences)
    skipped = sum(1 for r in rows if r.generation.status in UNSENT)
    if skipped:
        reasons.append(f"{skipped} rows too long for the model were not sent")
    failed = sum(1 for r in _sent(rows) if r.generation.status not in SCORABLE)
    if failed:
        reasons.append(f"{failed} requests failed or were never answered (they score 0)")
    if reasons or not rows:
        return "no", reasons or ["nothing scored"]
    per_cell: dict[tuple[str, int], int] = defaultdict(int)
    for row in rows:
        per_cell[(str(row.sample["task"]), int(row.sample["meta"]["dataset_length"]))] += 1
    short = {
        key: n
        for key, n in per_cell.items()
        if n < (1000 if key[1] <= data.THOUSAND_UP_TO else 100) - 1  # some splits hold 999
    }
    if short:
        fewest = min(short.values())
        return f"subset of {fewest}", [
            f"{fewest} rows per task and length where the authors ran 1000 (up to 32k) or 100: "
            "scores vary more than the published ones"
        ]
    return "yes", []


__all__ = [
    "HEADLINE_GROUP",
    "LENGTH_NAMES",
    "OTHER_GROUP",
    "SATISFACTORY",
    "UNSENT",
    "babilong_summary",
    "comparability",
    "group_of",
]
