"""MRCR's grade, as OpenAI's dataset card defines it (huggingface.co/datasets/openai/mrcr).

The answer must start with the row's random string, else it scores 0; otherwise the random string
is removed from the front of both the answer and the gold (`str.removeprefix`, nothing else is
stripped: no whitespace, no case) and the score is `difflib.SequenceMatcher(None, a, b).ratio()`.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import NamedTuple


class Graded(NamedTuple):
    """A graded answer: the ratio in [0, 1] and whether the random prefix was there."""

    ratio: float
    prefixed: bool


def grade(response: str, answer: str, random_string_to_prepend: str) -> Graded:
    """Return the card's grade of `response` against `answer` (0 without the random prefix)."""
    if not response.startswith(random_string_to_prepend):
        return Graded(0.0, False)
    rest = response.removeprefix(random_string_to_prepend)
    gold = answer.removeprefix(random_string_to_prepend)
    # The card's own call: no junk function, difflib's default autojunk.
    return Graded(float(SequenceMatcher(None, rest, gold).ratio()), True)


__all__ = ["Graded", "grade"]
