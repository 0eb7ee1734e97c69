"""NoLiMa's published tables (its README), as rows a comparison can place a run among.

The numbers are shipped as published (`published.tsv`, `published_hard.tsv`, each with its source
line). A row whose stated threshold is not 85% of its base score (to the README's one decimal), or
whose stated effective length does not follow from its own scores under that bar, is flagged,
never corrected.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from typing import Any

from longscope.analysis.effective import effective_length
from longscope.suites.nolima.scoring import EFFECTIVE_FRACTION

PACKAGE = "longscope.suites.nolima"
LENGTHS = {"1K": 1000, "2K": 2000, "4K": 4000, "8K": 8000, "16K": 16000, "32K": 32000}
"""The README's columns in book tokens (decimal: the run configurations' `context_length`)."""
THRESHOLD_SLACK = 0.05 * EFFECTIVE_FRACTION + 0.05 + 1e-9
"""Base rounded by up to 0.05 moves 85% of it by 0.0425; the threshold's own rounding adds 0.05."""
HARD_LENGTHS = {k: v for k, v in LENGTHS.items() if v >= 4000}
PUBLISHED_SOURCE = (
    "NoLiMa README (adobe-research/NoLiMa@7532e4eebf095c5540dc256900a63968da58a9d0), "
    "https://github.com/adobe-research/NoLiMa"
)


@dataclass(frozen=True)
class PublishedRow:
    """One model of NoLiMa's main table: scores by length in tokens, and what the README states."""

    model: str
    claimed: str
    effective: str
    """The effective length as the README states it (`8K`, `<1K`)."""
    base: float
    threshold: float
    """The README's `Thr.`: 85% of the base score, to one decimal."""
    scores: dict[int, float]
    pending: tuple[int, ...]
    """Lengths the README leaves pending (an hourglass), absent from `scores`."""
    added_later: bool
    """Marked new in the README's 2025-04-10 update."""
    flags: tuple[str, ...]
    """Why the row is inconsistent with NoLiMa's own rules (empty when it is consistent)."""


@dataclass(frozen=True)
class HardRow:
    """One row of the NoLiMa-Hard table (no effective length is published for it)."""

    model: str
    setting: str | None
    base: float
    scores: dict[int, float]


def _label(tokens: int | None, prefix: str = "") -> str:
    return "n/a" if tokens is None else f"{prefix}{tokens // 1000}K"


def effective_label(scores: dict[int, float], base: float) -> str:
    """Return the effective length of published scores in the README's style (`2K`, `<1K`)."""
    result = effective_length(scores, base * EFFECTIVE_FRACTION)
    if result.tokens is None:
        return _label(min(scores), "<") if scores else "n/a"
    # The README writes the longest passing length plainly, even when every length passes.
    return _label(result.tokens)


def _flags(row: PublishedRow) -> tuple[str, ...]:
    out = []
    expected = row.base * EFFECTIVE_FRACTION
    # Both numbers are rounded to one decimal and the threshold comes from the unrounded base
    # (Jamba: 92.4 -> 78.6, so the base was at least 92.45): allow both roundings, no more.
    if abs(expected - row.threshold) > THRESHOLD_SLACK:
        out.append(f"stated threshold {row.threshold} but 85% of {row.base} is {expected:.2f}")
    computed = effective_label(row.scores, row.base)
    if computed != row.effective:
        out.append(
            f"stated effective length {row.effective} but its scores give {computed} "
            f"at {row.base * EFFECTIVE_FRACTION:.2f}"
        )
    return tuple(out)


def _table(name: str) -> list[dict[str, str]]:
    text = (importlib.resources.files(PACKAGE) / name).read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@functools.cache
def published_rows() -> tuple[PublishedRow, ...]:
    """Return NoLiMa's main published rows as shipped, each with its consistency flags."""
    rows = []
    for cell in _table("published.tsv"):
        scores = {n: float(cell[k]) for k, n in LENGTHS.items() if cell[k] != "-"}
        row = PublishedRow(
            model=cell["model"],
            claimed=cell["claimed"],
            effective=cell["effective"],
            base=float(cell["base"]),
            threshold=float(cell["threshold"]),
            scores=scores,
            pending=tuple(n for k, n in LENGTHS.items() if cell[k] == "-"),
            added_later=cell["new"] == "yes",
            flags=(),
        )
        rows.append(PublishedRow(**{**row.__dict__, "flags": _flags(row)}))
    return tuple(rows)


@functools.cache
def published_hard_rows() -> tuple[HardRow, ...]:
    """Return the NoLiMa-Hard rows as shipped."""
    return tuple(
        HardRow(
            model=cell["model"],
            setting=None if cell["setting"] == "-" else cell["setting"],
            base=float(cell["base"]),
            scores={n: float(cell[k]) for k, n in HARD_LENGTHS.items()},
        )
        for cell in _table("published_hard.tsv")
    )


STATED_EFFECTIVE = "NoLiMa effective"
"""The column of NoLiMa's own effective length (85% of the base score), runs and published alike."""
STATED_BASE = "NoLiMa base"
"""The column of NoLiMa's base score (the best of 250, 500 and 1K)."""


def _claimed(text: str) -> int | None:
    """Return a claimed context (`128K`, `2M`) in tokens, as models count them (K = 1024)."""
    units = {"K": 1024, "M": 1024 * 1024}
    unit = units.get(text[-1:].upper())
    try:
        return int(float(text[:-1]) * unit) if unit else int(text)
    except ValueError:
        return None


def as_published() -> Any:
    """Return the README's main table as `compare --published nolima` reads it.

    Each row keeps the README's effective length and base score under the columns a run fills
    by the same rule (`STATED_EFFECTIVE`, `STATED_BASE`); a row whose stated effective length or
    threshold disagrees with its own scores carries a dagger.
    """
    from longscope.analysis.published import Published
    from longscope.analysis.published import PublishedRow as Row

    rows = []
    for row in published_rows():
        flagged = " \u2020" if row.flags else ""
        rows.append(
            Row(
                f"{row.model}{flagged}",
                "",
                _claimed(row.claimed),
                # The README prints no overall: the mean of its scores by length ranks the row,
                # and `compare` takes that mean again over the lengths the runs measured.
                round(sum(row.scores.values()) / len(row.scores), 2),
                dict(row.scores),
                stated={STATED_EFFECTIVE: row.effective, STATED_BASE: f"{row.base:.1f}"},
            )
        )
    source = (
        f"{PUBLISHED_SOURCE}; lengths in book tokens (1K = 1000); overall: the mean of a row's "
        f"scores by length (the README prints none); {STATED_EFFECTIVE}: the longest length at 85% "
        "of the base score; \u2020: the README's numbers disagree with the row's own scores"
    )
    return Published(source, tuple(rows), "nolima")
