"""Effective context length from a length sweep (RULER's convention and a relative one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RULER_THRESHOLD = 85.6
"""Llama-2-7B's score at 4K on RULER: RULER's absolute bar for "effective"."""


@dataclass(frozen=True)
class EffectiveLength:
    tokens: int | None
    """The largest tested length up to which every score stays at or above the threshold."""
    label: str
    """`tokens` as text, `>MAX` when every length passes, `<MIN` when none does."""
    threshold: float


def effective_length(
    scores: Mapping[int, float], threshold: float = RULER_THRESHOLD
) -> EffectiveLength:
    """Return the effective length of a {length: score (0-100)} sweep at `threshold`."""
    if not scores:
        return EffectiveLength(None, "n/a", threshold)
    lengths = sorted(scores)
    passed: int | None = None
    for length in lengths:
        if scores[length] < threshold:
            break
        passed = length
    if passed is None:
        return EffectiveLength(None, f"<{lengths[0]}", threshold)
    if passed == lengths[-1]:
        return EffectiveLength(passed, f">{passed}", threshold)
    return EffectiveLength(passed, str(passed), threshold)


def relative_threshold(base_ability: float, fraction: float = 0.9) -> float:
    """Return a threshold relative to the model's own short-context score (ties to LongScore)."""
    return base_ability * fraction


def weighted_averages(scores: Mapping[int, float]) -> tuple[float, float]:
    """RULER's wAvg: weights rising linearly with length (inc) and falling (dec)."""
    lengths = sorted(scores)
    n = len(lengths)
    if not n:
        return 0.0, 0.0
    inc = sum((i + 1) * scores[x] for i, x in enumerate(lengths)) / (n * (n + 1) / 2)
    dec = sum((n - i) * scores[x] for i, x in enumerate(lengths)) / (n * (n + 1) / 2)
    return round(inc, 2), round(dec, 2)
