"""GraphWalks' answer extraction and grade, as OpenAI's dataset card defines them
(huggingface.co/datasets/openai/graphwalks, "Extraction and Grading").

Extraction (the card's `get_list`): only the response's very last line (`split("\\n")[-1]`, so a
response ending in a newline has an empty last line) is read; without `Final Answer:` in it, or
without `Final Answer: ?[...]` (greedy, to the last `]`), the parse fails. The items are the list's
text split on commas, each stripped, empty ones dropped (`[]` is the empty list, not `[""]`).

Grade (the card's formula): precision = overlap / answered, recall = overlap / gold, F1 their
harmonic mean; an empty answer to an empty gold scores 1.

Two places where the card's snippet, read literally, contradicts its own intent; we follow the
intent and say so in docs/suites/graphwalks.md:
- the snippet strips `[]` from the whole match (`"Final Answer: [a, b]".strip("[]")`), which leaves
  `Final Answer: [` on the first item, so a correct answer would never score 1: the items are read
  from inside the brackets (as lm-evaluation-harness and NeMo do);
- the snippet's `else 1` gives F1 = 1 whenever precision + recall = 0, which includes disjoint
  non-empty sets and a failed parse: F1 is 1 only when both sets are empty, 0 on no overlap, and a
  failed parse scores 0.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MARKER = "Final Answer:"
_LIST = re.compile(r"Final Answer: ?\[(.*)\]")


class Parsed(NamedTuple):
    """The node list read from a response, and why it could not be read ("" when it could)."""

    nodes: tuple[str, ...]
    failure: str

    @property
    def failed(self) -> bool:
        return bool(self.failure)


class Graded(NamedTuple):
    """A graded answer: set precision, recall and F1 in [0, 1], and what was parsed."""

    precision: float
    recall: float
    f1: float
    parsed: Parsed


def parse_final_answer(response: str) -> Parsed:
    """Return the nodes of the response's last line `Final Answer: [a, b, ...]` (the card's rule)."""
    line = response.split("\n")[-1]
    if MARKER not in line:
        return Parsed((), "no 'Final Answer:' on the last line")
    found = _LIST.search(line)
    if found is None:
        return Parsed((), "'Final Answer:' without a [list]")
    items = (item.strip() for item in found.group(1).split(","))
    return Parsed(tuple(item for item in items if item), "")


def set_scores(answered: set[str], gold: set[str]) -> tuple[float, float, float]:
    """Return (precision, recall, F1) of an answered node set against the gold set."""
    if not answered and not gold:
        return 1.0, 1.0, 1.0
    overlap = len(answered & gold)
    recall = overlap / len(gold) if gold else 0.0
    precision = overlap / len(answered) if answered else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
    return precision, recall, f1


def grade(response: str, gold: tuple[str, ...] | list[str]) -> Graded:
    """Return the card's grade of `response` against the gold nodes (0 when the parse fails)."""
    parsed = parse_final_answer(response)
    if parsed.failed:
        return Graded(0.0, 0.0, 0.0, parsed)
    precision, recall, f1 = set_scores(set(parsed.nodes), set(gold))
    return Graded(precision, recall, f1, parsed)


__all__ = ["MARKER", "Graded", "Parsed", "grade", "parse_final_answer", "set_scores"]
