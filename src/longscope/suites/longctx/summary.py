"""LongCtx's aggregation: the total /100 and its level, per tier, type, depth and length.

`summarize_longctx` is LongCtx's own summary (kept key for key as the native part);
`longctx_summary` the typed one every report reads, each cell recording the requests it groups
(`Cell.where`, `Grid.where`) for its standard error.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from longscope.suites.longctx.grading import MAX_POINTS
from longscope.summary import (
    Breakdown,
    Cell,
    Grid,
    Headline,
    Summary,
    Table,
    View,
    Where,
    curve_where,
    grid_where,
    group_where,
    length_key,
)
from longscope.types import SCORABLE, ScoredRow

LEVELS = (
    (90, "Excellent Retention"),
    (75, "Strong Retention"),
    (60, "Functional Retention"),
    (40, "Partial Retention"),
    (20, "Limited Retention"),
    (0, "Severe Context Loss"),
)


def level(total: float) -> str:
    """Return the seed's level name for a total out of 100."""
    return next(name for floor, name in LEVELS if total >= floor)


def summarize_longctx(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """Total /100 with its level, per tier, per type, per depth, per length, and status counts.

    Each sample's points are the mean over its repeats; a generation that is not scorable (skipped,
    overflow, timeout, error) counts 0. The raw total keeps reasoning penalties; the total floors at 0.
    """
    by_sample: dict[str, list[float]] = defaultdict(list)
    samples: dict[str, dict[str, Any]] = {}
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: dict[str, str] = {}
    for row in rows:
        sid = row.sample["id"]
        samples[sid] = row.sample
        status = row.generation.status
        statuses[sid][status] += 1
        if status not in SCORABLE and row.generation.error:
            reasons[sid] = row.generation.error
        scorable = status in SCORABLE and row.score is not None
        by_sample[sid].append(row.score.value if scorable and row.score else 0.0)
    points = {sid: mean(values) for sid, values in by_sample.items()}

    def group(key: str) -> dict[str, dict[str, float]]:
        out: dict[str, list[float]] = defaultdict(list)
        for sid, value in points.items():
            out[str(_group_value(samples[sid], key))].append(value)
        return {
            k: {
                "points": round(sum(v), 3),
                "max": MAX_POINTS * len(v),
                "percent": round(100 * max(0.0, sum(v)) / (MAX_POINTS * len(v)), 1),
                "n": len(v),
            }
            for k, v in sorted(out.items(), key=lambda kv: length_key(kv[0]))
        }

    raw = sum(points.values())
    max_points = MAX_POINTS * len(points)
    # The level is read from the total as shown: 5/3-point facts sum to 89.999999 where a person
    # adds up 90, and "90.0 Strong Retention" would contradict itself.
    total = round(100 * max(0.0, raw) / max_points, 2) if max_points else 0.0
    heatmap: dict[str, dict[str, float]] = defaultdict(dict)
    for sid, value in points.items():
        s = samples[sid]
        if s["task"] in ("needle", "position_bias"):
            heatmap[str(s["length"])][f"{round(s['meta']['depth'] * 100)}%"] = round(
                100 * max(0.0, value) / MAX_POINTS, 1
            )
    status_counts = Counter()
    for counter in statuses.values():
        status_counts.update(counter)
    return {
        "total": total,
        "raw_points": round(raw, 3),
        "max_points": max_points,
        "level": level(total),
        "samples": len(points),
        "by_tier": group("tier"),
        "by_length": group("length"),
        "by_type": group("task"),
        "by_depth": {k: v for k, v in group("depth_pct").items() if k != "None"},
        "heatmap": dict(heatmap),
        "statuses": dict(status_counts),
        "per_sample": {
            sid: {
                "task": samples[sid]["task"],
                "length": samples[sid]["length"],
                "points": round(points[sid], 3),
                "statuses": dict(statuses[sid]),
                **({"reason": reasons[sid]} if sid in reasons else {}),
            }
            for sid in sorted(points, key=length_key)
        },
    }


def _cells(groups: dict[str, dict[str, Any]], where: dict[Any, Where]) -> dict[str, Cell]:
    return {
        k: Cell(v["percent"], v["n"], v["points"], v["max"], where=where.get(k))
        for k, v in groups.items()
    }


_NEEDLES = ("needle", "position_bias")
"""The tasks placed at a depth: the heatmap's and the depth breakdown's."""


_FIELDS = {"tier": "meta.tier", "length": "length", "task": "task", "depth_pct": "meta.depth"}
"""The sample field each of LongCtx's groupings (`_group_value`) groups by."""


def _where(rows: Sequence[ScoredRow], key: str) -> dict[Any, Where]:
    """Return the requests of each group of `key` (`_group_value`), for its standard error."""

    def label(row: ScoredRow) -> str | None:
        value = _group_value(row.sample, key)
        return None if value is None else str(value)

    return group_where(rows, label, _FIELDS[key])


def longctx_summary(native: dict[str, Any], rows: Sequence[ScoredRow]) -> Summary:
    """The typed summary of LongCtx's own (`native`): total and level, breakdowns, heatmap."""
    scored = bool(native["per_sample"])
    total = native["total"] if scored else None
    by_type_length: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in native["per_sample"].values():
        by_type_length[row["task"]][int(row["length"])].append(row["points"])
    curves = {
        kind: {
            n: round(100 * max(0.0, sum(v)) / (MAX_POINTS * len(v)), 1)
            for n, v in sorted(by_length.items())
        }
        for kind, by_length in sorted(by_type_length.items())
    }
    if len({n for c in curves.values() for n in c}) < 2:
        curves = {}
    breakdowns = []
    if any(k != "None" for k in native["by_tier"]):
        breakdowns.append(
            Breakdown("tier", "By tier", _cells(native["by_tier"], _where(rows, "tier")))
        )
    by_length = _cells(native["by_length"], _where(rows, "length"))
    breakdowns.append(Breakdown("length", "By length (tokens)", by_length))
    by_type = _cells(native["by_type"], _where(rows, "task"))
    breakdowns.append(Breakdown("type", "By task type", by_type, compare=True, plot=True))
    if native["by_depth"]:
        by_depth = _cells(native["by_depth"], _where(rows, "depth_pct"))
        breakdowns.append(Breakdown("depth", "Needle depth (position bias)", by_depth))
    heat = native["heatmap"]
    grids = ()
    if len(heat) > 1 or any(len(v) > 1 for v in heat.values()):
        ordered = {k: heat[k] for k in sorted(heat, key=int)}
        # The heatmap's cells, as `summarize_longctx` places a needle: length, depth in percent.
        where = grid_where(
            rows,
            lambda r: r.sample["length"] if r.sample["task"] in _NEEDLES else None,
            "length",
            lambda r: _group_value(r.sample, "depth_pct"),
            "meta.depth",
        )
        grids = (Grid("Needle score % (length x depth)", "length", "depth", ordered, where=where),)
    per_task = Table(
        "Per task",
        ("id", "type", "length", "points", "status", "reason"),
        tuple(
            (
                sid,
                row["task"],
                str(row["length"]),
                f"{row['points']:g}",
                ", ".join(f"{k} {v}" if v > 1 else k for k, v in row["statuses"].items()),
                row.get("reason", ""),
            )
            for sid, row in native["per_sample"].items()
        ),
    )
    view = View(
        headline=Headline(
            "total",
            total,
            scale="/100",
            digits=1,
            level=native["level"] if scored else None,
            note=f"raw points {native['raw_points']:g} of {native['max_points']:g}",
        ),
        overall=total,
        by_length={int(k): v["percent"] for k, v in native["by_length"].items()},
        curves=curves,
        length_where=curve_where(by_length),
        curve_where={kind: {"task": kind} for kind in curves},
        breakdowns=tuple(breakdowns),
        grids=grids,
        tables=(per_task,),
        facts=(("raw points", f"{native['raw_points']:g} of {native['max_points']:g}"),),
    )
    return Summary(suite="longctx", title="LongCtx", views=(view,), native=native)


def _group_value(sample: dict[str, Any], key: str) -> Any:
    if key == "tier":
        return sample["meta"].get("tier")
    if key == "depth_pct":
        if sample["task"] not in ("needle", "position_bias"):
            return None
        return f"{round(sample['meta']['depth'] * 100)}%"
    return sample[key]
