"""RULER's published table (its README), as rows a comparison can place a run among.

The numbers are shipped as published (`published.tsv`, with its source line). Rows whose stated
effective length disagrees with their own scores under RULER's 85.6 bar, or whose weighted averages
do not follow from their scores, are flagged, never corrected.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass

from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.analysis.profile import weighted_averages

LENGTHS = {"4K": 4096, "8K": 8192, "16K": 16384, "32K": 32768, "64K": 65536, "128K": 131072}


@dataclass(frozen=True)
class PublishedRow:
    """One model of RULER's table: scores by length in tokens, and what the README states."""

    model: str
    size: str | None
    claimed: str | None
    effective: str | None
    """The effective length as the README states it (`>128K`, `64K`, `<4K`)."""
    scores: dict[int, float]
    avg: float | None
    wavg_inc: float | None
    wavg_dec: float | None
    tbd: bool
    """The README gives the weighted averages as TBD (they stay TBD, never computed here)."""
    reported_by_authors: bool
    """The README marks the row with `*`: numbers from the model's own report, not RULER's run."""
    flags: tuple[str, ...]
    """Why the row is inconsistent with RULER's own rules (empty when it is consistent)."""

    @property
    def label(self) -> str:
        return f"{self.model} ({self.size})" if self.size else self.model


def _label(tokens_label: str) -> str:
    """Return an effective-length label in the README's style (`>131072` -> `>128K`)."""
    prefix = tokens_label[0] if tokens_label[:1] in "<>" else ""
    tokens = int(tokens_label.lstrip("<>"))
    return f"{prefix}{tokens // 1024}K"


def _flags(row: PublishedRow) -> tuple[str, ...]:
    out = []
    if len(row.scores) < 2:
        return ("a reference row (the threshold itself), not a sweep",)
    computed = effective_length(row.scores, RULER_THRESHOLD).label
    stated = (row.effective or "").upper()
    if _label(computed) != stated:
        out.append(
            f"stated effective length {row.effective} but its scores give {_label(computed)} "
            f"at {RULER_THRESHOLD}"
        )
    if row.wavg_inc is not None and len(row.scores) == len(LENGTHS):
        inc, dec = weighted_averages(row.scores)
        # Six scores rounded to 0.1 move a weighted mean by up to 0.05, its own rounding by 0.05.
        if abs(inc - row.wavg_inc) > 0.1 or abs(dec - (row.wavg_dec or 0.0)) > 0.1:
            out.append(f"stated wAvg {row.wavg_inc}/{row.wavg_dec}, its scores give {inc}/{dec}")
    return tuple(out)


@functools.cache
def published_rows() -> tuple[PublishedRow, ...]:
    """Return RULER's published rows as shipped, each with its consistency flags."""
    text = (importlib.resources.files("longscope.suites.ruler") / "published.tsv").read_text(
        "utf-8"
    )
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        cell = dict(zip(header, line.split("\t"), strict=True))

        def number(key: str, cell: dict[str, str] = cell) -> float | None:
            return None if cell[key] in ("-", "TBD") else float(cell[key])

        scores = {n: v for k, n in LENGTHS.items() if (v := number(k)) is not None}
        row = PublishedRow(
            model=cell["model"],
            size=None if cell["size"] == "-" else cell["size"],
            claimed=None if cell["claimed"] == "-" else cell["claimed"],
            effective=None if cell["effective"] == "-" else cell["effective"],
            scores=scores,
            avg=number("avg"),
            wavg_inc=number("wavg_inc"),
            wavg_dec=number("wavg_dec"),
            tbd=cell["wavg_inc"] == "TBD",
            reported_by_authors=cell["model"].endswith("*"),
            flags=(),
        )
        rows.append(PublishedRow(**{**row.__dict__, "flags": _flags(row)}))
    return tuple(rows)


PUBLISHED_SOURCE = (
    "RULER README (NVIDIA/RULER@c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a), "
    "https://github.com/NVIDIA/RULER"
)
