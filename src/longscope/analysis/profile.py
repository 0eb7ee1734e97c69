"""Model profiles and a leaderboard across runs, read from typed summaries only.

Any suite whose summary has a score-by-length curve gets an effective length (RULER's absolute
threshold and a relative one), RULER's weighted averages and, where a Base exists (scores at the
base lengths), LongScore; per-category curves (task, type, language) get their own effective length.
Nothing here knows a suite by name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longscope.analysis.budgets import leaderboard_columns
from longscope.analysis.curves import RELATIVE_FRACTION, curve_metrics
from longscope.analysis.effective import (
    RULER_THRESHOLD,
    effective_length,
    relative_threshold,
    weighted_averages,
)
from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS, DEFAULT_FLOOR, LongScore, longscore
from longscope.analysis.published import range_label
from longscope.summary import CurveMetrics, Summary, View, request_counts, shard_text

PROFILE_VERSION = 1


@dataclass(frozen=True)
class LengthCurve:
    suite: str
    model: str
    claimed: int | None
    scores: dict[int, float]
    """Score (0-100) per context length in tokens."""


def as_summary(value: Any) -> Summary:
    """Return a `Summary`, or the summary of a scored run (anything whose `.summary` is one)."""
    if isinstance(value, Summary):
        return value
    summary = getattr(value, "summary", None)
    if isinstance(summary, Summary):
        return summary
    raise TypeError(f"not a summary or a scored run: {type(value).__name__}")


def length_curve(value: Any) -> LengthCurve:
    """Return the score-by-length curve of a summary (its first view) or of a scored run."""
    summary = as_summary(value)
    return LengthCurve(summary.suite, summary.model, summary.claimed, dict(summary.by_length))


def threshold_name(threshold: float) -> str:
    """Return the column of an effective length at `threshold`: `effective@80`."""
    return f"effective@{threshold:g}"


def longscores(
    view: View,
    base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
    floor: float = DEFAULT_FLOOR,
) -> dict[str, LongScore]:
    """Return LongScore per category curve and `overall` (the view's length curve)."""
    curves = {**view.curves, "overall": view.by_length}
    return {name: longscore(c, base_lengths, floor) for name, c in curves.items() if c}


def metrics_of(view: View) -> CurveMetrics | None:
    """Return the view's curve metrics as stored, or computed here for a summary that predates
    them (`analysis.curves`: reports never compute them)."""
    return view.metrics if view.metrics is not None else curve_metrics(view.by_length)


def model_profile(
    runs: Sequence[Any],
    threshold: float = RULER_THRESHOLD,
    relative: float = 0.9,
    *,
    claimed: int | None = None,
    adaptive: Sequence[Mapping[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """A profile the router reads: claimed context, effective lengths and where they came from.

    `runs`: summaries, or scored runs (`run.scoring.ScoreResult`); `adaptive`: beside each run, its
    adaptive decision (`run.adaptive`'s `adaptive.json`) or None. An adaptive run's curve stops
    where its rule stopped reading, so its effective length is the decision, with its interval.
    """
    summaries = [as_summary(r) for r in runs]
    if not summaries:
        raise ValueError("a profile needs at least one scored run")
    scored = dict(zip(map(id, summaries), runs, strict=True))
    decisions = dict(zip(map(id, summaries), adaptive or [None] * len(runs), strict=True))
    models = {s.model for s in summaries}
    if len(models) > 1:
        raise ValueError(f"runs are of different models: {', '.join(sorted(models))}")
    measurements = []
    for summary in summaries:
        run = scored[id(summary)]
        scores = summary.by_length
        if not scores or summary.state == "none":
            continue  # a run that scored nothing measures nothing, not an effective length of 0
        base = scores[min(scores)]
        absolute = effective_length(scores, threshold)
        rel = effective_length(scores, relative_threshold(base, relative))
        inc, dec = weighted_averages(scores)
        made = metrics_of(summary.view)
        categories = {
            name: effective_length(curve, threshold).label
            for name, curve in summary.view.curves.items()
            if curve
        }
        measurements.append(
            {
                "suite": summary.suite,
                "run_id": summary.run_id,
                "view": summary.view.name,
                "threshold": threshold,
                "effective_length": absolute.tokens,
                "effective_label": absolute.label,
                "relative_threshold": round(relative_threshold(base, relative), 2),
                "relative_effective_length": rel.tokens,
                "relative_label": rel.label,
                "wAvg_inc": inc,
                "wAvg_dec": dec,
                "wAvg_inc_SE": None if made is None else made.wavg_inc_se,
                "wAvg_dec_SE": None if made is None else made.wavg_dec_se,
                "AUC": None if made is None else made.auc,
                "AUC_SE": None if made is None else made.auc_se,
                "scores": {str(k): v for k, v in sorted(scores.items())},
                "effective_by_category": categories,
                "complete": summary.state == "complete",
                "requests": request_counts(summary.completeness),
            }
        )
        intervals = _intervals(run, summary, threshold, relative)
        if intervals:
            # The bootstrap's 95% intervals (analysis.uncertainty): both rules at the threshold
            # and fraction asked, and LongScore.
            measurements[-1]["intervals"] = {
                i.name: {"estimate": i.estimate, "median": i.median, "low": i.low, "high": i.high}
                for i in intervals
            }
        record = decisions[id(summary)]
        if record is not None:
            made_here = adaptive_measurement(record, threshold, relative)
            # The bootstrap of a partial curve does not describe the decision: its own interval.
            kept = {
                k: v
                for k, v in measurements[-1].get("intervals", {}).items()
                if not k.startswith("effective length")
            }
            measurements[-1].update(made_here, intervals={**kept, **made_here["intervals"]})
    effective, label = _least(measurements)
    return {
        "profile_version": PROFILE_VERSION,
        "model": summaries[0].model,
        "claimed_context": claimed if claimed is not None else summaries[0].claimed,
        "effective_context": effective,
        "effective_label": label,
        "measured": measurements,
        "date": dt.date.today().isoformat(),
    }


def _least(measurements: list[dict[str, Any]]) -> tuple[int | None, str | None]:
    """Return the model's effective context (tokens, label): the least of its measurements'. A
    measurement below its shortest length (`<N`) leaves no length to rely on: None, labelled
    `<N`; undecided measurements say nothing."""
    below = [
        int(label[1:])
        for m in measurements
        if m["effective_length"] is None
        and (label := str(m.get("effective_label") or "")).startswith("<")
        and label[1:].isdigit()
    ]
    if below:
        return None, f"<{min(below)}"
    known = [m for m in measurements if m["effective_length"]]
    if not known:
        return None, None
    least = min(known, key=lambda m: m["effective_length"])
    return least["effective_length"], str(least["effective_label"])


def adaptive_measurement(
    record: Mapping[str, Any], threshold: float, relative: float
) -> dict[str, Any]:
    """Return what an adaptive decision puts in a profile's measurement, in place of what its
    partial curve would give: the decided length (None while undecided, or where the decision is
    at another rule or bar than the profile's) and its interval at the decision's confidence."""
    rule = record.get("rule") or {}
    kind = rule.get("kind")
    same = (kind == "absolute" and float(rule.get("threshold", -1)) == threshold) or (
        kind == "relative" and float(rule.get("fraction", -1)) == relative
    )
    tokens = record.get("effective_tokens") if record.get("decided") and same else None
    label = str(record.get("effective")) if same else "not decided at this bar"
    low, high = record.get("interval") or ("", "")
    out: dict[str, Any] = {
        "adaptive": {
            "decided": bool(record.get("decided")),
            "stopped": record.get("stopped"),
            "rule": record.get("rule_text"),
            "confidence": record.get("confidence"),
            "method": record.get("method"),
            "interval": [low, high],
            "non_monotone": record.get("non_monotone") or [],
            "sent_prompt_tokens": record.get("sent_prompt_tokens"),
            "grid_prompt_tokens": record.get("grid_prompt_tokens"),
        }
    }
    interval = {"estimate": label, "median": label, "low": low, "high": high}
    name = f"effective length (adaptive, {record.get('rule_text')}, {record.get('confidence')})"
    out["intervals"] = {name: interval}
    if kind == "absolute":
        out.update(effective_length=tokens, effective_label=label)
    else:
        out.update(relative_effective_length=tokens, relative_label=label)
    return out


def _intervals(run: Any, summary: Summary, threshold: float, relative: float) -> tuple[Any, ...]:
    """Return the run's curve intervals at `threshold` and `relative`: as stored when those are
    the defaults they were drawn at, else drawn again from the run's rows (a summary alone, with
    other settings, has none: its stored ones are at other bars)."""
    stored = summary.view.intervals
    if threshold == RULER_THRESHOLD and relative == RELATIVE_FRACTION:
        return stored
    rows = getattr(run, "rows", None)
    if not stored or not rows:
        return ()
    from longscope.analysis.uncertainty import intervals_at

    clusters = getattr(run, "clusters", None) or {}
    return intervals_at(
        summary,
        rows,
        lambda sample: clusters.get(str(sample["id"]), str(sample["id"])),
        threshold=threshold,
        fraction=relative,
    )


def leaderboard(
    runs: Sequence[Any],
    thresholds: Sequence[float] = (RULER_THRESHOLD,),
    base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
) -> list[dict[str, Any]]:
    """One row per run: state and request counts, overall, breakdowns, lengths, effective length.

    `state` is `complete`, `provisional` (some requests failed or were never answered: the scores
    may change when the run is resumed) or `no score` (nothing scored: no overall, no lengths).
    `effective` is at the first threshold, `effective@N` at each further one. Breakdown cells
    shown by `compare` are columns (`VIEW GROUP`) and, for tables per dimension, `cells`:
    [dimension, view, group, score] each.
    """
    summaries = [as_summary(r) for r in runs]
    thresholds = tuple(thresholds) or (RULER_THRESHOLD,)
    rows = []
    for summary in summaries:
        row: dict[str, Any] = {"model": summary.model, "suite": summary.suite}
        if summary.run_id:
            row["run_id"] = summary.run_id  # `compare` pairs its rows with their runs by it
        if summary.state == "none":
            rows.append(
                {**row, "state": "no score", **request_counts(summary.completeness), "lengths": {}}
            )
            continue
        scores = summary.by_length
        made = metrics_of(summary.view)
        if shard_text(summary.completeness):
            # A shard's numbers cover part of the run: the row says which part.
            row["shard"] = shard_text(summary.completeness).removeprefix("shard ")
        stored = made is not None and made.threshold == thresholds[0]
        row.update(
            state=summary.state,
            **request_counts(summary.completeness),
            claimed=summary.claimed,
            effective=made.effective
            if stored and made
            else effective_length(scores, thresholds[0]).label,
        )
        for threshold in thresholds[1:]:
            row[threshold_name(threshold)] = effective_length(scores, threshold).label
        row.update(summary.view.stated)  # the suite's own rule, beside the generic numbers
        intervals = {i.name: i for i in summary.view.intervals}
        if made is not None:
            row["AUC"] = made.auc
            row["AUC_SE"] = made.auc_se
            # An AUC covers the lengths measured: beside another range it reads differently.
            row["AUC_range"] = range_label(sorted(scores))
            if "length AUC" in intervals:
                row["AUC_ci95"] = [intervals["length AUC"].low, intervals["length AUC"].high]
            row.update(wAvg_inc=made.wavg_inc, wAvg_dec=made.wavg_dec)
            if made.wavg_inc_se is not None:
                row.update(wAvg_inc_SE=made.wavg_inc_se, wAvg_dec_SE=made.wavg_dec_se)
        if tuple(base_lengths) == DEFAULT_BASE_LENGTHS and made is not None:
            if made.base is not None:
                row["LongScore"] = (
                    made.longscore if made.longscore is not None else made.longscore_undefined
                )
                if made.longscore_se is not None:
                    row["LongScore_SE"] = made.longscore_se
        else:
            overall = longscore(scores, base_lengths)
            if overall.base is not None:
                row["LongScore"] = (
                    overall.average if overall.average is not None else overall.undefined
                )
        error = summary.view.overall_error
        if error is not None:
            row["SE"] = error.se
            row["SE_plain"] = error.se_plain
        for interval in summary.view.intervals[:1]:
            row["effective_ci95"] = [interval.low, interval.high]
        named = len(summary.views) > 1 or any(v.name for v in summary.views)
        cells: list[list[Any]] = []
        cells_se: list[list[Any]] = []
        for view in summary.views:
            prefix = f"{view.name} " if named else ""
            if view.overall is not None:
                if named:
                    row[f"{prefix}overall"] = view.overall
                row.setdefault("overall", view.overall)
            for breakdown in view.breakdowns:
                if breakdown.compare:
                    for name, cell in breakdown.cells.items():
                        if cell.score is not None:
                            row[f"{prefix}{name}"] = cell.score
                            cells.append([breakdown.key, view.name, name, cell.score])
                            cells_se.append([breakdown.key, view.name, name, cell.se])
        row["cells"] = cells
        if any(se is not None for *_, se in cells_se):
            row["cells_se"] = cells_se
        row["lengths"] = {str(k): v for k, v in sorted(scores.items())}
        lengths_se = {
            str(k): e.se for k, e in sorted(summary.view.length_errors.items()) if e.se is not None
        }
        if lengths_se:
            row["lengths_se"] = lengths_se
        row.update(leaderboard_columns(summary.budgets))
        rows.append(row)
    # Runs without a score rank last, never as a 0.
    return sorted(rows, key=lambda r: (r["state"] == "no score", -(r.get("overall") or 0.0)))


__all__ = [
    "PROFILE_VERSION",
    "LengthCurve",
    "as_summary",
    "leaderboard",
    "length_curve",
    "longscores",
    "metrics_of",
    "model_profile",
    "threshold_name",
    "weighted_averages",
]
