"""LongBench v2's official prompts, answer extraction and splits (github.com/THUDM/LongBench:
`prompts/0shot.txt`, `prompts/0shot_cot.txt`, `pred.py`'s `extract_answer`, `result.py`).

The prompt texts are the repository's files, character for character (the CoT one with its
typographic apostrophe); they are filled as `pred.py` fills them: `str.replace` of `$DOC$`, `$Q$`,
`$C_A$` ... `$C_D$` in that order, each value stripped (so a document holding `$Q$` has it
replaced too, as officially).
"""

from __future__ import annotations

import re
from typing import NamedTuple

DIRECT = (
    "Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n"
    'Format your response as follows: "The correct answer is (insert answer here)".'
)
"""`prompts/0shot.txt` (the direct setting, w/o CoT)."""
COT = (
    "Please read the following text and answer the questions below.\n\n<text>\n$DOC$\n</text>\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\nLet\u2019s think step by step:"
)
"""`prompts/0shot_cot.txt` (the w/ CoT setting's first request)."""
TEMPLATES = {"direct": DIRECT, "cot": COT}
OUTPUT_TOKENS = {"direct": 128, "cot": 1024}
"""`pred.py`'s `max_new_tokens`: 128 for a direct answer, 1024 for the CoT."""
TEMPERATURE = 0.1
"""`pred.py`'s temperature in both settings."""
MODE_NAMES = {"direct": "w/o CoT", "cot": "w/ CoT"}
"""The leaderboard's names of the two settings (each a view)."""

_PAREN = re.compile(r"The correct answer is \(([A-D])\)")
_BARE = re.compile(r"The correct answer is ([A-D])")


def fill(template: str, doc: str, question: str, choices: tuple[str, str, str, str]) -> str:
    """Return `template` filled as `pred.py` fills it (sequential replaces, values stripped)."""
    text = template.replace("$DOC$", doc.strip()).replace("$Q$", question.strip())
    for letter, choice in zip("ABCD", choices, strict=True):
        text = text.replace(f"$C_{letter}$", choice.strip())
    return text


def extract_answer(response: str) -> str | None:
    """Return the letter `pred.py`'s `extract_answer` reads from a response, or None.

    Asterisks are removed first (markdown bold); `The correct answer is (X)` is looked for, then
    `The correct answer is X`, X in A-D, the first occurrence each; case-sensitive.
    """
    response = response.replace("*", "")
    found = _PAREN.search(response) or _BARE.search(response)
    return found.group(1) if found else None


class Judged(NamedTuple):
    """A response's extracted letter and its credit (1, 0, or 0.25 for no letter if compensated)."""

    pred: str | None
    credit: float


def judge(output: str, answer: str, compensated: bool = False) -> Judged:
    """Return `pred.py`'s judgement of an output (`output.strip()`, then `extract_answer`).

    `compensated` is `result.py`'s switch (off there): a response with no letter counts 0.25.
    """
    pred = extract_answer(output.strip())
    if pred is None and compensated:
        return Judged(None, 0.25)
    return Judged(pred, 1.0 if pred == answer else 0.0)


__all__ = [
    "COT",
    "DIRECT",
    "MODE_NAMES",
    "OUTPUT_TOKENS",
    "TEMPERATURE",
    "TEMPLATES",
    "Judged",
    "extract_answer",
    "fill",
    "judge",
]
