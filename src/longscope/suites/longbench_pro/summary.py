"""LongBench Pro's aggregation: per prompt mode the official summary, key for key, and its view.

`summarize_mode` gives the official summary file's dict of one mode (with longscope's extras
apart); `longbench_pro_summary` the typed summary every report reads, one view per mode, each
cell recording the requests it groups (`Cell.where`, `View.where`, `length_where`) for its
standard error.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from longscope.suites.longbench_pro.official import (
    OFFICIAL_DIMENSIONS,
    OfficialRow,
    official_summary,
)
from longscope.suites.longbench_pro.schema import DIFFICULTIES, LENGTHS
from longscope.suites.longbench_pro.scoring import SUMMARY_PASS
from longscope.summary import Breakdown, Cell, Headline, Summary, Table, View, Where
from longscope.types import SCORABLE, ScoredRow

BUCKET_TOKENS = {bucket: int(bucket[:-1]) * 1024 for bucket in LENGTHS}
"""Each length bucket (`8k`) as the tokens of the length curve (8192)."""

EXTRA_DIMENSIONS = ("secondary_task", "language_x_length")
"""Breakdowns beyond the official summary (kept under the `longscope` key)."""


def relabel(rows: Sequence[ScoredRow], path: str) -> list[ScoredRow]:
    """Return the rows with each sample's difficulty replaced by calibrated labels (`-S
    difficulty_labels=FILE`); unlabelled samples keep theirs."""
    from longscope.suites.longbench_pro.calibrate import load_labels

    labels = load_labels(path)
    out = []
    for row in rows:
        label = labels.get(row.sample["id"])
        if label is None:
            out.append(row)
            continue
        sample = {**row.sample, "meta": {**row.sample["meta"], "difficulty": label}}
        out.append(replace(row, sample=sample))
    return out


def _answered_on(rows: Sequence[ScoredRow]) -> str | None:
    """Return the UTC date of the run's last stored answer, the official summary's `date` (the
    upstream script writes the day it evaluates, right after inference), or None where no row
    says when (the summary then dates itself today)."""
    times = [row.answered for row in rows if row.answered is not None]
    return dt.datetime.fromtimestamp(max(times), dt.UTC).strftime("%Y-%m-%d") if times else None


def _row_value(row: ScoredRow) -> float:
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.value
    return 0.0


def _row_failed(row: ScoredRow, official_parity: bool) -> bool:
    """The official count: no reply, a reply that is exactly "", or a metric crash (under parity)."""
    if row.generation.status not in SCORABLE or row.score is None:
        return True
    evidence = row.score.evidence
    if not evidence.get("official_failed"):
        return False
    return official_parity or not evidence.get("official_error")


def _group(sample: dict[str, Any], dimension: str) -> str:
    meta = sample["meta"]
    if dimension == "language":
        return sample["language"]
    if dimension == "language_x_length":
        return f"{sample['language']} {meta['token_length']}"
    return str(meta[dimension])


def _numbering(row: ScoredRow, index: int) -> tuple[tuple[int, int], int]:
    """Return (position in the official file order, bon_idx) of a row.

    Imported prediction files keep their line order and `bon_idx`; a run made here numbers its
    repeats 1..N and orders run by run, like the official inference file before shuffling.
    """
    recorded = row.sample["meta"].get("prediction_rows", {}).get(str(row.repeat))
    if recorded is not None:
        return (0, int(recorded["line"])), int(recorded["bon_idx"])
    return (row.repeat, index), row.repeat + 1


def summarize_mode(rows: Sequence[ScoredRow], official_parity: bool = False) -> dict[str, Any]:
    """The official summary of one prompt mode, key for key, plus longscope's extras."""
    placed = []
    for index, row in enumerate(rows):
        position, bon_idx = _numbering(row, index)
        placed.append((position, bon_idx, row))
    placed.sort(key=lambda item: item[0])
    official_rows = [
        OfficialRow(
            id=row.sample["id"],
            bon_idx=bon_idx,
            metric=_row_value(row),
            failed=_row_failed(row, official_parity),
            groups={d: _group(row.sample, d) for d in (*OFFICIAL_DIMENSIONS, *EXTRA_DIMENSIONS)},
            solved_above=SUMMARY_PASS if row.sample["meta"]["metric"] == "summary" else None,
        )
        for _, bon_idx, row in placed
    ]
    declared = [r.sample["meta"].get("bon_num") for r in rows if r.sample["meta"].get("bon_num")]
    bon_num = int(declared[0]) if declared else max((r.repeat + 1 for r in rows), default=0)
    result = official_summary(
        official_rows, bon_num, extra_dimensions=EXTRA_DIMENSIONS, date=_answered_on(rows)
    )
    scored = [r.score for r in rows if r.generation.status in SCORABLE and r.score is not None]
    crashes: dict[str, int] = defaultdict(int)
    for score in scored:
        if score.evidence.get("official_error"):
            crashes[score.evidence["official_error"]] += 1
    questions = {r.sample["id"]: r.sample for r in rows}
    extras: dict[str, Any] = {
        "official_parity": official_parity,
        "truncated_questions_num": sum(1 for s in questions.values() if s["meta"].get("truncated")),
        "not_generated_samples_num": sum(1 for r in rows if r.generation.status not in SCORABLE),
        "blank_answers_num": sum(1 for s in scored if s.evidence.get("blank_answer")),
        "unparsable_answers_num": sum(1 for s in scored if s.evidence.get("unparsable_answer")),
        "official_crash_samples_num": sum(crashes.values()),
        "official_crash_causes": dict(sorted(crashes.items())),
        "official_would_refuse": [
            *dict.fromkeys(
                r.sample["meta"]["file_refusal"]
                for r in rows
                if r.sample["meta"].get("file_refusal")
            ),
            *result.refusals,
        ],
        **{f"average_{d}_metric": _ordered(v) for d, v in result.extra_average.items()},
        **{k: {d: _ordered(v) for d, v in bon.items()} for k, bon in result.extra_bon.items()},
    }
    return {"official": result.summary, "longscope": extras}


def _ordered(groups: dict[str, float]) -> dict[str, float]:
    return dict(sorted(groups.items(), key=_order))


def _order(item: tuple[str, Any]) -> tuple[int, str]:
    """Length buckets short to long, difficulty easy to extreme, the rest alphabetically."""
    key = item[0]
    for ranks in (LENGTHS, DIFFICULTIES):
        for index, name in enumerate(ranks):
            if key == name or key.endswith(" " + name):
                return (index, key)
    return (len(LENGTHS), key)


def _percent(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _percent(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(100 * value, 2)
    return value


def display_modes(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return per mode the official summary in percent (2 decimals) merged with longscope's extras.

    For reports and tables; summary.json keeps the official fractions under `modes`.
    """
    out = {}
    for mode, official in summary["modes"].items():
        extras = summary.get("longscope", {}).get("modes", {}).get(mode, {})
        view = _percent(official)
        for key, value in extras.items():
            if key.startswith("BoN-"):
                view[key] = {**view.get(key, {}), **_percent(value)}
            elif key.startswith("average_"):
                view[key] = _percent(value)
            else:
                view.setdefault(key, value)
        out[mode] = view
    return out


_BREAKDOWNS = (
    # (official key, breakdown key, title, shown by compare, drawn as bars)
    ("token_length", "length", "By length", False, False),
    ("language", "language", "By language", True, True),
    ("difficulty", "difficulty", "By difficulty", True, True),
    ("contextual_requirement", "requirement", "By contextual requirement", True, True),
    ("primary_task", "primary_task", "By primary task", True, True),
    ("secondary_task", "secondary_task", "By secondary task", False, False),
    ("language_x_length", "language_x_length", "By language x length", False, False),
)


def _group_where(dimension: str, group: str) -> Where:
    """Return the requests of one group of an official dimension (as `_group` names it)."""
    if dimension == "language":
        return {"language": group}
    if dimension == "language_x_length":
        language, _, bucket = group.rpartition(" ")
        return {"language": language, "meta.token_length": bucket}
    return {f"meta.{dimension}": group}


def _tokens(bucket: str) -> int:
    return int(bucket[:-1]) * 1024


def budget_notes(rows: Sequence[ScoredRow]) -> tuple[str, ...]:
    """Return one line per prompt mode whose answers a thinking budget touched: how many had their
    thinking closed for them (the official protocol scores those 0) and how many were cut."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    budgets: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        gen = row.generation
        if gen.status not in SCORABLE:
            continue
        mode = row.sample["meta"]["mode"]
        counts[mode][0] += 1
        counts[mode][2] += gen.status == "length"
        if gen.budget is not None:
            budgets[mode].add(gen.budget.thinking_budget)
            counts[mode][1] += gen.budget.forced
    lines = []
    for mode, (answered, forced, cut) in sorted(counts.items()):
        if not budgets[mode]:
            continue
        sizes = "/".join(str(b) for b in sorted(budgets[mode]))
        lines.append(
            f"{mode}: {forced} of {answered} answers ({100 * forced / answered:.1f}%) had their "
            f"thinking closed at its budget ({sizes} tokens; the official protocol scores an "
            f"unclosed thinking 0); {cut} ({100 * cut / answered:.1f}%) cut at the answer budget"
        )
    return tuple(lines)


def longbench_pro_summary(native: dict[str, Any]) -> Summary:
    """The typed summary: one view per prompt mode, read from the official numbers in percent."""
    views = []
    for mode, result in display_modes(native).items():
        breakdowns = []
        for official, key, title, compare, plot in _BREAKDOWNS:
            groups = result.get(f"average_{official}_metric")
            if isinstance(groups, dict):
                cells = {g: Cell(v, where=_group_where(official, g)) for g, v in groups.items()}
                breakdowns.append(Breakdown(key, title, cells, compare, plot))
        curves: dict[str, dict[int, float]] = {}
        for group, value in result.get("average_language_x_length_metric", {}).items():
            language, _, bucket = group.rpartition(" ")
            if bucket in BUCKET_TOKENS:
                curves.setdefault(language, {})[_tokens(bucket)] = value
        iterations = range(1, result["inference_iterations"] + 1)
        # pass@i as the official scorer counts a solved row: summary tasks above SUMMARY_PASS,
        # every other task only at the full score.
        solved = f"meta.metric=summary:>{100 * SUMMARY_PASS:g};*:>=100"
        runs = Table(
            "Runs, best-of-N and pass@N",
            ("i", "run i overall", "BoN-i", "pass@i"),
            tuple(
                (
                    str(i),
                    f"{result[f'inference_iteration_{i}_overall_metric']:.2f}",
                    f"{result[f'BoN-{i}']['overall_metric']:.2f}",
                    f"{result[f'pass@{i}']:.2f}",
                )
                for i in iterations
            ),
            # The requests behind each cell, for its standard error (analysis.uncertainty).
            tuple(
                (
                    None,
                    {"@repeat": str(i - 1)},
                    {"@repeats": str(i), "@per_sample": "max"},
                    {"@repeats": str(i), "@per_sample": "pass", "@pass": solved},
                )
                for i in iterations
            ),
        )
        overall = result["average_overall_metric"]
        views.append(
            View(
                name=mode,
                headline=Headline(
                    "overall",
                    overall,
                    digits=2,
                    note=f"questions {result['total_questions_num']}, runs "
                    f"{result['inference_iterations']}, failed {result['fail_samples_num']}, "
                    f"truncated {result['truncated_questions_num']}",
                ),
                overall=overall,
                by_length={_tokens(k): v for k, v in result["average_token_length_metric"].items()},
                curves=dict(sorted(curves.items())) if len(curves) > 0 else {},
                where={"meta.mode": mode},
                length_where={
                    _tokens(k): {"meta.token_length": k}
                    for k in result["average_token_length_metric"]
                },
                curve_where={language: {"language": language} for language in curves},
                breakdowns=tuple(breakdowns),
                tables=(runs,),
                facts=(
                    (
                        "failed / truncated",
                        f"{result['fail_samples_num']} / {result['truncated_questions_num']}",
                    ),
                ),
            )
        )
    extras = native.get("longscope", {})
    notes = (
        f"summary similarity: {extras.get('embedder')}; "
        f"official parity: {extras.get('official_parity')}",
    )
    return Summary(
        suite="longbench-pro",
        title="LongBench Pro",
        views=tuple(views) or (View(),),
        notes=notes,
        native={"modes": native["modes"]},
        extras=extras,
    )


__all__ = [
    "BUCKET_TOKENS",
    "EXTRA_DIMENSIONS",
    "budget_notes",
    "display_modes",
    "longbench_pro_summary",
    "relabel",
    "summarize_mode",
]
