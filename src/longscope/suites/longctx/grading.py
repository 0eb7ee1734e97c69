"""LongCtx graders: pure functions of (answer, task) -> Score, keeping their evidence."""

from __future__ import annotations

import re

from longscope.metrics.normalize import answer_tokens, normalize_answer, word_count
from longscope.suites.longctx.tasks import TaskSpec
from longscope.types import Score

MAX_POINTS = 5.0
CONCISE_WORDS = 60
WRONG_CONCLUSION_PENALTY = -5.0
# Words that link a cited fact to the conclusion ("requires 4 ... only 3", "because", "so").
_CHAIN = re.compile(
    r"\b(because|since|therefore|thus|hence|so|as a result|which (is|means|exceeds)|given that|than"
    r"|exceed\w*|after|before|means|requires?|required|needs?|only|at least|ended|passed|within"
    r"|below|above|over|older|newer|lower|higher|later|earlier|beyond|past)\b"
    r"|因为|由于|所以|因此|超过|低于|少于|多于|早于|晚于|大于|小于|届满|要求|只有|仅|以内|之内|期限内|已过"
)


def grade(task: TaskSpec, answer: str, language: str = "en") -> Score:
    """Return the task's score for `answer`: needle rubric, per-fact points, or reasoning rubric."""
    if task.type in ("needle", "position_bias"):
        return grade_needle(task, answer, language)
    if task.type == "multi_fact":
        return grade_multi_fact(task, answer)
    return grade_reasoning(task, answer)


def grade_needle(task: TaskSpec, answer: str, language: str = "en") -> Score:
    """5 exact and concise; 4 correct but > 60 words; 3/2 token overlap > 0.6 / >= 0.3; 1 topic only."""
    text = normalize_answer(answer)
    words = word_count(answer)
    matched = [key.name for key in task.keys if re.search(key.regex, text)]
    evidence: dict[str, object] = {"matched": matched, "words": words}
    if not text:
        return Score(0.0, MAX_POINTS, {**evidence, "rule": "empty"})
    if len(matched) == len(task.keys):
        if words <= CONCISE_WORDS:
            return Score(5.0, MAX_POINTS, {**evidence, "rule": "exact, concise"})
        return Score(4.0, MAX_POINTS, {**evidence, "rule": f"correct, over {CONCISE_WORDS} words"})
    gold = set(answer_tokens(task.answer.get(language, task.answer["en"])))
    overlap = len(gold & set(answer_tokens(answer))) / len(gold) if gold else 0.0
    evidence["overlap"] = round(overlap, 3)
    if overlap > 0.6:
        return Score(3.0, MAX_POINTS, {**evidence, "rule": "overlap > 0.6"})
    if overlap >= 0.3:
        return Score(2.0, MAX_POINTS, {**evidence, "rule": "overlap 0.3-0.6"})
    if task.topic and re.search(task.topic, text):
        return Score(1.0, MAX_POINTS, {**evidence, "rule": "topic mentioned, wrong answer"})
    return Score(0.0, MAX_POINTS, {**evidence, "rule": "wrong or off-topic"})


def grade_multi_fact(task: TaskSpec, answer: str) -> Score:
    """Points per matched fact; the keys' points sum to 5 (3-fact tasks: 5/3 each)."""
    text = normalize_answer(answer)
    matched = [key for key in task.keys if re.search(key.regex, text)]
    value = round(sum(key.points for key in matched), 6)
    return Score(
        value,
        MAX_POINTS,
        {
            "matched": [key.name for key in matched],
            "missed": [key.name for key in task.keys if key not in matched],
        },
    )


def conclusion(task: TaskSpec, text: str) -> str | None:
    """Return "correct", "wrong" or None: whichever conclusion the answer states first."""
    first_correct = re.search(task.correct, text)
    first_wrong = re.search(task.wrong, text)
    if first_correct and (not first_wrong or first_correct.start() <= first_wrong.start()):
        return "correct"
    return "wrong" if first_wrong else None


def grade_reasoning(task: TaskSpec, answer: str) -> Score:
    """Conclusion 2 + citations 2 (shared by the task's keys) + reasoning chain 1; wrong: -5."""
    text = normalize_answer(answer)
    stated = conclusion(task, text)
    cited = [key for key in task.keys if re.search(key.regex, text)]
    total_key_points = sum(key.points for key in task.keys)
    citation_points = 2.0 * sum(key.points for key in cited) / total_key_points
    chain = bool(_CHAIN.search(text)) and bool(cited)
    evidence = {
        "conclusion": stated or "none",
        "cited": [key.name for key in cited],
        "not_cited": [key.name for key in task.keys if key not in cited],
        "reasoning_chain": chain,
    }
    if stated == "wrong":
        return Score(WRONG_CONCLUSION_PENALTY, MAX_POINTS, {**evidence, "rule": "wrong conclusion"})
    value = (2.0 if stated == "correct" else 0.0) + citation_points + (1.0 if chain else 0.0)
    return Score(round(value, 6), MAX_POINTS, evidence)
