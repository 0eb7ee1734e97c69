"""LongBench Pro's summary file, computed as the official scorer computes it, key for key.

The official scorer (caskcsg/longcontext, LongBench-Pro/modules) aggregates the rows of its
inference files in file order: a question's average is the mean of ALL its rows, run i is the rows
whose `bon_idx` equals i, BoN-i keeps per question the first best row with `bon_idx` <= i (so 0 or
negative numbers count in every BoN, and numbers above N in none), and values are fractions in
[0, 1], unrounded. Sums use Python's `sum` in the same order, so the floats match to the last digit
on the same interpreter. Where the official code crashes (a breakdown group with no rows: KeyError;
a BoN-i with no rows: ZeroDivisionError) the group is left out, or the value is 0.0, and the reason
is reported as `official_would_refuse`.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from longscope.suites.longbench_pro.schema import (
    DIFFICULTIES,
    LANGUAGES,
    LENGTHS,
    PRIMARY_TASKS,
    REQUIREMENTS,
)

OFFICIAL_DIMENSIONS: dict[str, tuple[str, ...]] = {
    "token_length": LENGTHS,
    "contextual_requirement": REQUIREMENTS,
    "difficulty": DIFFICULTIES,
    "primary_task": PRIMARY_TASKS,
    "language": tuple(sorted(LANGUAGES)),  # "Chinese" before "English", as there
}
"""The official breakdowns, each with its groups in the official order."""


@dataclass(frozen=True)
class OfficialRow:
    """One row as the official summary sees it: one run of one question, in file order."""

    id: str
    bon_idx: int
    metric: float
    failed: bool
    groups: dict[str, str] = field(hash=False, compare=False)
    """The row's group per breakdown (the official ones and any extra)."""
    solved_above: float | None = None
    """Summary tasks pass@ above this score; other tasks only at 1.0."""


def _mean(rows: Sequence[OfficialRow]) -> float:
    return sum(row.metric for row in rows) / len(rows) if rows else 0.0


def _by_group(
    rows: Sequence[OfficialRow], dimension: str, order: Iterable[str] | None, refusals: list[str]
) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[row.groups[dimension]].append(row.metric)
    means = {key: sum(values) / len(values) for key, values in groups.items()}
    if order is None:
        return means
    missing = [key for key in order if key not in means]
    if missing and rows:
        refusals.append(f"no rows for {dimension} {', '.join(missing)} (official: KeyError)")
    return {key: means[key] for key in order if key in means}


def _averages(rows: Sequence[OfficialRow], bon_num: int) -> tuple[list[OfficialRow], int]:
    """Per question the mean of all its rows (first row's groups), and how many lack N rows."""
    per_question: dict[str, list[OfficialRow]] = defaultdict(list)
    for row in rows:
        per_question[row.id].append(row)
    averaged = []
    inconsistent = 0
    for items in per_question.values():
        inconsistent += len(items) != bon_num
        first = items[0]
        value = sum(item.metric for item in items) / len(items)
        averaged.append(
            OfficialRow(first.id, first.bon_idx, value, False, first.groups, first.solved_above)
        )
    return averaged, inconsistent


def _best_of(rows: Sequence[OfficialRow], i: int) -> list[OfficialRow]:
    best: dict[str, OfficialRow] = {}
    for row in rows:
        if row.bon_idx > i:
            continue
        if row.id not in best or row.metric > best[row.id].metric:
            best[row.id] = row
    return list(best.values())


def _pass_rate(best: Sequence[OfficialRow]) -> float:
    passed = sum(
        1
        for row in best
        if (row.metric > row.solved_above if row.solved_above is not None else row.metric == 1.0)
    )
    return passed / len(best) if best else 0.0


@dataclass(frozen=True)
class OfficialSummary:
    """The official summary dict, and longscope's breakdowns computed the same way."""

    summary: dict[str, Any]
    extra_average: dict[str, dict[str, float]]
    extra_bon: dict[str, dict[str, dict[str, float]]]
    refusals: list[str]


def official_summary(
    rows: Sequence[OfficialRow],
    bon_num: int,
    *,
    extra_dimensions: Sequence[str] = (),
    date: str | None = None,
) -> OfficialSummary:
    """Return the official summary of `rows` (in file order) for N = `bon_num` runs."""
    refusals: list[str] = []
    averaged, inconsistent = _averages(rows, bon_num)
    out: dict[str, Any] = {
        "date": date or dt.datetime.now().strftime("%Y-%m-%d"),
        "total_questions_num": len(averaged),
        "inference_iterations": bon_num,
        "total_samples_num": len(rows),
        "fail_samples_num": sum(1 for row in rows if row.failed),
        "inference_inconsistent_samples_num": inconsistent,
        "average_overall_metric": _mean(averaged),
    }
    for i in range(1, bon_num + 1):
        out[f"inference_iteration_{i}_overall_metric"] = _mean(
            [row for row in rows if row.bon_idx == i]
        )
    for dimension, order in OFFICIAL_DIMENSIONS.items():
        out[f"average_{dimension}_metric"] = _by_group(averaged, dimension, order, refusals)
    extra_average = {d: _by_group(averaged, d, None, []) for d in extra_dimensions}
    extra_bon = {}
    for i in range(1, bon_num + 1):
        best = _best_of(rows, i)
        if not best:
            refusals.append(f"no rows with bon_idx <= {i} (official: KeyError)")
        bon: dict[str, Any] = {"overall_metric": _mean(best)}
        for dimension, order in OFFICIAL_DIMENSIONS.items():
            bon[dimension] = _by_group(best, dimension, order, refusals if best else [])
        out[f"BoN-{i}"] = bon
        out[f"pass@{i}"] = _pass_rate(best)
        extra_bon[f"BoN-{i}"] = {d: _by_group(best, d, None, []) for d in extra_dimensions}
    return OfficialSummary(out, extra_average, extra_bon, list(dict.fromkeys(refusals)))
