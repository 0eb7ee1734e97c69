"""100-LongBench's LLM-judge prompts and verdicts for its QA and summary tasks.

The judge pass itself (any backend, cached, resumable, failures recorded) is `longscope.run.judge`;
this module says what to ask about one answer and how to read the reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

from longscope.types import SCORABLE, Generation, JudgeTask

_JSON = re.compile(r"\{[^{}]*\}")
JUDGED_METRICS = ("f1", "rouge_l")

QA_PROMPT = """You are grading an answer to a question against the correct answers.
Question: {question}
Correct answers: {gold}
Answer to grade: {answer}

Rate fluency from 0 to 2 (0: incoherent or repetitive, 1: understandable, 2: fluent) and correctness
from 0 to 3 (0: wrong, 1: partly right, 2: mostly right, 3: fully right). Explain briefly, then end
with exactly one JSON object: {{"fluency": <0-2>, "correctness": <0-3>}}"""

SUMMARY_PROMPT = """You are grading a summary against a reference summary.
Reference summary: {gold}
Summary to grade: {answer}

Decide whether the summary is fluent (1) or not (0). Then count its sentences and how many of them
are supported by the reference. Explain briefly, then end with exactly one JSON object:
{{"fluency": <0 or 1>, "sentences": <number of sentences>, "supported": <supported sentences>}}"""

VERDICT_OPENING = 'Verdict: {"fluency":'


def parse_verdict(kind: str, text: str) -> float | None:
    """Return the score from the judge's last JSON object, or None if it is missing or invalid."""
    for raw in reversed(_JSON.findall(text)):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            continue
        try:
            if kind == "qa":
                fluency, correct = int(data["fluency"]), int(data["correctness"])
                if 0 <= fluency <= 2 and 0 <= correct <= 3:
                    return fluency * correct / 6
            else:
                fluency, sentences, supported = (
                    int(data[k]) for k in ("fluency", "sentences", "supported")
                )
                if fluency in (0, 1) and sentences > 0 and 0 <= supported <= sentences:
                    return fluency * supported / sentences
        except (KeyError, TypeError, ValueError):
            continue
        return None
    return None


def judge_prompt(kind: str, question: str, gold: list[str], answer: str) -> str:
    """Return the judge's prompt; the judge never sees the context."""
    if kind == "qa":
        return QA_PROMPT.format(question=question, gold=" | ".join(gold), answer=answer)
    return SUMMARY_PROMPT.format(gold=gold[0], answer=answer)


def judged(sample: dict[str, Any]) -> bool:
    """A QA or summary sample with a context (the QA filter stays deterministic)."""
    meta = sample["meta"]
    return meta.get("metric") in JUDGED_METRICS and not meta.get("no_context")


def judge_task(sample: dict[str, Any], generation: Generation) -> JudgeTask | None:
    """Return what to ask the judge about this answer, or None when it is not judged."""
    if not judged(sample) or generation.status not in SCORABLE:
        return None
    kind = "qa" if sample["meta"]["metric"] == "f1" else "summary"
    prompt = judge_prompt(
        kind, sample["meta"].get("question_text", ""), sample["gold"], generation.text
    )
    return JudgeTask(kind, prompt, VERDICT_OPENING)
