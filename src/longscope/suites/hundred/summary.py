"""100-LongBench's summary: per task x length scores, the QA filter, LongScore per task."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from longscope.analysis.longscore import longscore
from longscope.metrics.qa import normalize_qa
from longscope.summary import Breakdown, Cell, Headline, Summary, View
from longscope.types import SCORABLE, ScoredRow


def _answered_from_memory(rows: Sequence[ScoredRow], threshold: float) -> set[tuple[str, str]]:
    """(task, source row) pairs the model answers with no context (score >= threshold)."""
    known = set()
    for row in rows:
        meta = row.sample["meta"]
        if not meta.get("no_context") or row.score is None or row.generation.status not in SCORABLE:
            continue
        said = normalize_qa(row.generation.text.split("\n", 1)[0])
        if row.score.value >= threshold and "unanswerable" not in said:
            known.add((row.sample["task"], meta["source_row"]))
    return known


def summarize_hundred(
    rows: Sequence[ScoredRow], base_lengths: Sequence[int], qa_filter: float = 0.5
) -> dict[str, Any]:
    """Per task x length scores (x100), achieved lengths, statuses, QA filter, LongScore per task."""
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    achieved: dict[int, list[int]] = defaultdict(list)
    statuses: dict[str, int] = defaultdict(int)
    known = _answered_from_memory(rows, qa_filter)
    dropped: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    judge_failures: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        meta = row.sample["meta"]
        if meta.get("no_context"):
            continue
        if (row.sample["task"], meta.get("source_row")) in known:
            dropped[row.sample["task"]][str(meta["target_length"])] += 1
            continue
        if row.score is not None and row.score.evidence.get("judge_failed"):
            # A judge failure is neither right nor wrong: it leaves the cell and is counted.
            judge_failures[row.sample["task"]][str(meta["target_length"])] += 1
            continue
        ok = row.generation.status in SCORABLE and row.score is not None
        cells[row.sample["task"]][meta["target_length"]].append(
            row.score.value if ok and row.score else 0.0
        )
        achieved[meta["target_length"]].append(meta["achieved_length"])
        statuses[row.generation.status] += 1
    tasks = {
        task: {str(length): round(100 * mean(v), 2) for length, v in sorted(by_len.items())}
        for task, by_len in cells.items()
    }
    overall = {
        str(length): round(mean(tasks[t][str(length)] for t in tasks if str(length) in tasks[t]), 2)
        for length in sorted({n for by_len in cells.values() for n in by_len})
    }
    return {
        "by_task": tasks,
        "by_length": overall,
        "achieved_length": {str(k): round(mean(v)) for k, v in sorted(achieved.items())},
        "longscore": {
            task: longscore({int(k): v for k, v in scores.items()}, base_lengths).as_dict()
            for task, scores in {**tasks, "overall": overall}.items()
        },
        "statuses": dict(statuses),
        "judge_failures": {t: dict(v) for t, v in judge_failures.items()},
        "qa_filter": {"threshold": qa_filter, "dropped": {t: dict(v) for t, v in dropped.items()}},
    }


def hundred_summary(native: dict[str, Any]) -> Summary:
    """The typed summary: the overall curve, one curve per task, the notes the paper asks for."""
    by_length = {int(k): v for k, v in native["by_length"].items()}
    curves = {t: {int(k): v for k, v in s.items()} for t, s in native["by_task"].items()}
    overall = round(mean(by_length.values()), 2) if by_length else None
    head = native["longscore"].get("overall", {})
    if head.get("average") is not None:
        longscore_text = f"LongScore {head['average']:+.1f}"
    else:
        longscore_text = "LongScore undefined" + (
            f" ({head['undefined']})" if head.get("undefined") else ""
        )
    tasks = {
        t: Cell(round(mean(c.values()), 2), len(c), where={"task": t})
        for t, c in curves.items()
        if c
    }
    notes = [
        "tokens sent per target length: "
        + ", ".join(f"{k}: {v}" for k, v in native["achieved_length"].items())
    ]
    present = {
        *native["by_task"],
        *native.get("judge_failures", {}),
        *native.get("qa_filter", {}).get("dropped", {}),
    }
    judged = sorted(t for t in present if t.endswith(("_qa", "_sum")))
    if judged:
        names = "LLM judge" if native.get("metric") == "judge" else "token F1 / ROUGE-L"
        notes.append(f"QA and summary metric: {names} ({', '.join(judged)})")
    dropped = native.get("qa_filter", {}).get("dropped") or {}
    if dropped:
        notes.append(f"QA filter (>= {native['qa_filter']['threshold']}) dropped: {dropped}")
    if native.get("judge_failures"):
        notes.append(f"judge failures (not scored): {native['judge_failures']}")
    facts = tuple(
        (f"tokens sent at target {k}", str(v)) for k, v in native["achieved_length"].items()
    )
    view = View(
        headline=Headline("average", overall, digits=1, note=longscore_text),
        overall=overall,
        by_length=by_length,
        curves=curves,
        breakdowns=(Breakdown("task", "By task (mean over lengths)", tasks, compare=True),),
        facts=facts,
        length_where={n: {"meta.target_length": str(n)} for n in by_length},
        curve_where={t: {"task": t} for t in curves},
    )
    return Summary(
        suite="hundred", title="100-LongBench", views=(view,), notes=tuple(notes), native=native
    )
