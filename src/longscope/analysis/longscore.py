"""LongScore (100-LongBench, Eq. 1-2): length degradation with base ability factored out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import mean
from typing import Any

DEFAULT_BASE_LENGTHS = (2048, 4096, 6144)
DEFAULT_FLOOR = 5.0
"""Below this Base Ability (points of 100) LongScore is undefined: no division by ~0."""


@dataclass(frozen=True)
class LongScore:
    base: float | None
    raw: dict[int, float]
    lc: dict[int, float]
    """(S_l - Base) / Base x 100 for each length beyond the base lengths."""
    average: float | None
    raw_average: float | None
    undefined: str = ""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["raw"] = {str(k): v for k, v in self.raw.items()}
        data["lc"] = {str(k): v for k, v in self.lc.items()}
        return data


def longscore(
    scores: Mapping[int, float],
    base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
    floor: float = DEFAULT_FLOOR,
) -> LongScore:
    """Return Base (mean at the base lengths), LC per longer length x100, and their average."""
    raw = {int(k): float(v) for k, v in sorted(scores.items())}
    present = [n for n in base_lengths if n in raw]
    long_lengths = [n for n in raw if n not in base_lengths and n > max(base_lengths, default=0)]
    raw_average = round(mean(raw[n] for n in long_lengths), 2) if long_lengths else None
    if not present:
        return LongScore(None, raw, {}, None, raw_average, "no score at any base length")
    base = mean(raw[n] for n in present)
    if base < floor:
        return LongScore(
            round(base, 2),
            raw,
            {},
            None,
            raw_average,
            f"base ability {base:.2f} is below the floor {floor:g}",
        )
    lc = {n: round(100 * (raw[n] - base) / base, 2) for n in long_lengths}
    average = round(mean(lc.values()), 2) if lc else None
    return LongScore(round(base, 2), raw, lc, average, raw_average)
