"""RULER's scoring (`scripts/eval/evaluate.py`, `scripts/eval/synthetic/constants.py`), per sample.

RULER scores a task as the mean over samples x 100, rounded to 2 decimals; the per-sample values
here are the terms of that mean, so `round(100 * mean(values), 2)` equals RULER's task score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_NON_PRINTABLE = re.compile(r"[\x00-\x1f]")


def postprocess(prediction: str) -> str:
    """Return the prediction as RULER scores it: stripped, control characters to newlines, stripped."""
    return _NON_PRINTABLE.sub("\n", prediction.strip()).strip()


def match_all(prediction: str, references: Sequence[str]) -> float:
    """Return the fraction of references found in the prediction (case-insensitive substrings)."""
    lowered = prediction.lower()
    return sum(1.0 if r.lower() in lowered else 0.0 for r in references) / len(references)


def match_part(prediction: str, references: Sequence[str]) -> float:
    """Return 1.0 when any reference is found in the prediction (case-insensitive), else 0.0."""
    lowered = prediction.lower()
    return max(1.0 if r.lower() in lowered else 0.0 for r in references)


def task_score(values: Sequence[float]) -> float:
    """Return RULER's task score from per-sample values: mean x 100, rounded to 2 decimals."""
    return round(sum(values) / len(values) * 100, 2)
