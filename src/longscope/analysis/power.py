"""Power before the run: how small a difference the chosen sample counts can see, per length.

`plan` prints this so that `-S samples=` is chosen knowingly. Without a pilot the per-unit
standard deviation is the largest a 0-100 score can have (50: right/wrong answers at 50%), so
the numbers are an upper bound; a pilot run's spread can be passed as `sd`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from longscope.analysis.stats import WORST_SD, detectable_difference, score_halfwidth
from longscope.analysis.uncertainty import ClusterKey, cluster_key_of
from longscope.types import Sample, stable_hash


@dataclass(frozen=True)
class Detectable:
    """What a run of this size can tell apart at one length (points of 100)."""

    length: int | None
    """None: all lengths together."""
    samples: int
    clusters: int
    """Independent units: documents, haystacks, questions asked at every length."""
    halfwidth: float | None
    """Half-width of one score's 95% interval."""
    difference: float | None
    """Smallest difference between two models a paired comparison detects (80% power, 5%)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def detectable(
    samples: Sequence[Sample], cluster_key: ClusterKey | None, sd: float = WORST_SD
) -> list[Detectable]:
    """Return per length (and overall) the samples, clusters and the detectable difference
    (empty when nothing would be sent: every sample done, skipped or not fitting).
    `cluster_key`: the suite's (`Suite.cluster_key`), None for the document."""
    if not samples:
        return []
    documents = {s.id: stable_hash(s.context, 32) for s in samples}
    key = cluster_key_of(cluster_key, documents)
    by_length: dict[int | None, tuple[set[str], set[Any]]] = {}
    for sample in samples:
        cluster = key(sample.public())
        for length in (sample.length, None):
            ids, clusters = by_length.setdefault(length, (set(), set()))
            ids.add(sample.id)
            clusters.add(cluster)
    out = []
    for length in [*sorted(k for k in by_length if k is not None), None]:
        ids, clusters = by_length[length]
        out.append(
            Detectable(
                length,
                len(ids),
                len(clusters),
                score_halfwidth(len(clusters), sd),
                detectable_difference(len(clusters), sd),
            )
        )
    if len(out) == 2:
        out.pop()  # one length: "all" says the same again
    return out


def detectable_lines(items: Sequence[Detectable], sd: float = WORST_SD) -> list[str]:
    """Return the plan's power table as plain text lines (empty without samples)."""
    if not items:
        return []
    lines = [
        f"power (per-sample sd {sd:g}, the worst case for right/wrong scores): one score is known "
        "to +-H (95%); two models differing by D or more are told apart (paired, 80% power)",
        f"{'length':>8} {'samples':>8} {'clusters':>9} {'+-H':>7} {'D':>7}",
    ]
    for item in items:
        name = "all" if item.length is None else str(item.length)
        half = "-" if item.halfwidth is None else f"{item.halfwidth:.1f}"
        diff = "-" if item.difference is None else f"{item.difference:.1f}"
        lines.append(f"{name:>8} {item.samples:>8} {item.clusters:>9} {half:>7} {diff:>7}")
    return lines


__all__ = ["Detectable", "detectable", "detectable_lines"]
