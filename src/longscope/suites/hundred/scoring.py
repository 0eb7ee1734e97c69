"""100-LongBench's scores of one answer: synthetic tasks 0/1 on the first line, token F1 for QA,
ROUGE-L over the whole summary, or an LLM judge's verdict where the judge applies."""

from __future__ import annotations

import re
from typing import Any

from longscope.metrics.qa import best_f1
from longscope.metrics.rouge import rouge_l
from longscope.suites.hundred import judging
from longscope.types import Judgement, Score

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_INT = re.compile(r"\d+")


def score_answer(
    sample: dict[str, Any], text: str, metric: str, judgement: Judgement | None = None
) -> Score:
    """Score `text` for a stored sample; `metric` is the suite's (deterministic or judge)."""
    kind = sample["meta"].get("metric")
    if metric == "judge" and judging.judged(sample):
        if judgement is None:
            return Score(0.0, 1.0, {"metric": "judge", "judge_failed": "not judged yet"})
        if judgement.value is None:
            return Score(
                0.0,
                1.0,
                {"metric": "judge", "judge": judgement.judge, "judge_failed": judgement.error},
            )
        return Score(judgement.value, 1.0, {"metric": "judge", "judge": judgement.judge})
    if kind == "f1":
        value = best_f1(text, sample["gold"])
        return Score(value, 1.0, {"metric": "token F1", "gold": sample["gold"][:5]})
    if kind == "rouge_l":
        # The whole summary is scored: never only its first line.
        value = max(rouge_l(text.lower(), g.lower()).f for g in sample["gold"])
        return Score(value, 1.0, {"metric": "ROUGE-L F"})
    return grade(sample["task"], text, str(sample["meta"]["answer"]))


def grade(task: str, answer: str, gold: str) -> Score:
    """kv: last UUID of the first line; stars: the chosen option number; count: the number. 0/1."""
    first = answer.strip().split("\n", 1)[0] if answer.strip() else ""
    if task == "kv_retrieval":
        found = _UUID.findall(first)
        got = found[-1].lower() if found else ""
    else:
        numbers = _INT.findall(first)
        got = numbers[0] if numbers else ""
    return Score(
        1.0 if got == gold.lower() else 0.0,
        1.0,
        {"got": got, "gold": gold, "first_line": first[:200]},
    )
