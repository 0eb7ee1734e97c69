"""The requests behind a run's numbers as the statistics see them: units, clusters, selections.

A unit is one graded request: its value (0-100), the cluster it shares with others (the suite's
`cluster_key`: a document, a haystack, a question asked at every length) and its sample's fields
as text. A summary cell says which requests it groups (`Cell.where`, `View.length_where`, ...:
sample fields and values); `Columns.select` finds them. Nothing here reads a display label: a
cell named `20%`, `8k` or `fox` is found by the fields it recorded, never by its name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from longscope.summary import View, Where, field_text
from longscope.types import SCORABLE, ScoredRow

ClusterKey = Callable[[Mapping[str, Any]], Hashable]

LENGTH = "@length"
"""The column of each unit's point on a view's length curve (`View.length_where`)."""
CATEGORY = "@category"
"""The column of each unit's category curve (`View.curve_where`)."""
SENT = "@sent"
"""Leading a spec: the score leaves out requests never sent or refused for their length (as
MRCR's means do, following OpenAI's script); without it they count 0, as most suites count them."""
UNSENT = ("skipped", "context_overflow")


def default_cluster_key(sample: Mapping[str, Any]) -> str:
    """The sample itself: its repeats are one cluster."""
    return str(sample["id"])


def cluster_key_of(
    hook: ClusterKey | None, documents: Mapping[str, str] | None = None
) -> ClusterKey:
    """Return the suite's `cluster_key` (`hook`, declared on `Suite`: None by default) when it
    gives one, else the document.

    `documents`: each sample's context hash (the store's); samples reading the same document or
    haystack are one cluster, and a sample's repeats always are.
    """
    if hook is not None:
        return hook
    if not documents:
        return default_cluster_key
    known = dict(documents)
    return lambda sample: known.get(str(sample["id"]), str(sample["id"]))


def cluster_name(hook: ClusterKey | None) -> str:
    """Return what the suite's clusters are, from its `cluster_key` (`hook`) docstring's first
    line."""
    doc = ((hook.__doc__ or "") if hook is not None else "").strip().splitlines()
    if doc:
        line = doc[0].rstrip(".")
        return line[:1].lower() + line[1:]
    return "the document (samples reading the same context are one cluster, with their repeats)"


@dataclass(frozen=True)
class Unit:
    """One request as the statistics see it: its value (0-100), cluster and sample fields."""

    value: float
    cluster: Hashable
    labels: dict[str, str]
    """Sample fields as text (`field_text`), plus `@repeat` and `@status`."""


def fields_of(sample: Mapping[str, Any]) -> dict[str, str]:
    """Return every scalar field of a sample (and of its meta, as `meta.X`) as text."""
    out = {"id": str(sample.get("id"))}
    for key in sample:
        if key in ("context", "question", "meta"):
            continue
        text = field_text(sample, key)
        if text is not None:
            out[key] = text
    for key in sample.get("meta") or {}:
        text = field_text(sample, f"meta.{key}")
        if text is not None:
            out[f"meta.{key}"] = text
    return out


def units_of(rows: Sequence[ScoredRow], cluster_key: ClusterKey) -> list[Unit]:
    """Return a unit per graded request; a failed request counts 0, as every suite counts it.

    A judge that failed to rule is neither right nor wrong: its request leaves the statistics, as
    it leaves the suites' cells.
    """
    units = []
    for row in rows:
        if row.score is not None and row.score.evidence.get("judge_failed"):
            continue
        ok = row.generation.status in SCORABLE and row.score is not None
        value = 100.0 * row.score.fraction if ok and row.score else 0.0
        labels = {
            **fields_of(row.sample),
            "@repeat": str(row.repeat),
            "@status": row.generation.status,
        }
        units.append(Unit(value, cluster_key(row.sample), labels))
    return units


def matches(labels: Mapping[str, str], where: Mapping[str, str]) -> bool:
    """Return True when a unit's fields hold every value `where` names."""
    return all(labels.get(name) == value for name, value in where.items())


def view_units(view: View, units: Sequence[Unit], views: int) -> list[Unit]:
    """Return the units of one view: those its `where` selects (all when it is a suite's only
    view; none when one of several views recorded no selection: no error bar beats a wrong one)."""
    if view.where:
        return [u for u in units if matches(u.labels, view.where)]
    return list(units) if views <= 1 else []


def grouped_units(view: View, units: Sequence[Unit]) -> list[Unit]:
    """Return `units` with the view's curve groups as columns: `@length` (the length whose
    `length_where` selects the unit) and `@category` (the category curve whose `curve_where` does).

    A unit no selection holds gets `~` and its own values of the fields the selections use, so
    it stays apart from the others as its fields keep it apart (a mean over lengths of requests
    outside the curve still averages their own groups).
    """
    if not view.length_where and not view.curve_where:
        return list(units)
    out = []
    for unit in units:
        labels = dict(unit.labels)
        for column, groups in ((LENGTH, view.length_where), (CATEGORY, view.curve_where)):
            if groups:
                labels[column] = _group_of(unit.labels, groups)
        out.append(Unit(unit.value, unit.cluster, labels))
    return out


def _group_of(labels: Mapping[str, str], groups: Mapping[Any, Where]) -> str:
    for name, where in groups.items():
        if where and matches(labels, where):
            return str(name)
    fields = sorted({f for where in groups.values() for f in where})
    return "~" + "\x1f".join(labels.get(f, "") for f in fields)


class Columns:
    """Units as columns (values, cluster codes, one array per field) for fast selection."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.units = list(units)
        self.value = np.array([u.value for u in self.units], dtype=float)
        codes: dict[Hashable, int] = {}
        self.cluster = np.array(
            [codes.setdefault(u.cluster, len(codes)) for u in self.units], dtype=np.int64
        )
        names = dict.fromkeys(f for u in self.units for f in u.labels)
        self.labels = {
            f: np.array([u.labels.get(f, "") for u in self.units], dtype=object) for f in names
        }

    @functools.cached_property
    def unsent(self) -> np.ndarray:
        """True for each request never sent (skipped) or refused for its length."""
        status = self.column("@status")
        return np.logical_or.reduce([status == name for name in UNSENT])

    def column(self, name: str) -> np.ndarray:
        """Return one field's values (empty text where a unit lacks it)."""
        return self.labels.get(name, np.full(len(self.units), "", dtype=object))

    def where(self, **equal: str) -> np.ndarray:
        """Return the indices of units whose fields equal the given values (`field=value`)."""
        return self.select(equal)

    def select(self, where: Mapping[str, str]) -> np.ndarray:
        """Return the indices of the units a recorded selection (`Cell.where`) names."""
        mask = np.ones(len(self.units), dtype=bool)
        for name, value in where.items():
            mask &= self.column(name) == value
        return np.flatnonzero(mask)


def chosen(table: Columns, index: np.ndarray, spec: Sequence[str]) -> tuple[np.ndarray, tuple]:
    """Return the requests a spec averages (all, or the sent ones under `@sent`) and its levels."""
    if spec and spec[0] == SENT:
        return index[~table.unsent[index]], tuple(spec[1:])
    return index, tuple(spec)


@dataclass(frozen=True)
class Fitted:
    """How a view's curves were found again from its requests (for SEs of numbers read off them)."""

    length_field: str | None
    """The column whose values (`str(length)`) place a request on the curve (`@length`)."""
    category_field: str | None
    lengths: dict[int, tuple[str, ...]]
    """Per length of `by_length`: the averaging that gives back the shown score."""
    categories: dict[str, dict[int, tuple[str, ...]]]
    """The same per category curve and length."""


__all__ = [
    "CATEGORY",
    "LENGTH",
    "SENT",
    "UNSENT",
    "ClusterKey",
    "Columns",
    "Fitted",
    "Unit",
    "chosen",
    "cluster_key_of",
    "cluster_name",
    "default_cluster_key",
    "fields_of",
    "grouped_units",
    "matches",
    "units_of",
    "view_units",
]
