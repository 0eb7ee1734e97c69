"""Per-length curves from stored runs, model profiles, and a leaderboard across runs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from longscope.analysis.effective import RULER_THRESHOLD, effective_length, relative_threshold
from longscope.run.scoring import ScoreResult, result_state

PROFILE_VERSION = 1


@dataclass(frozen=True)
class LengthCurve:
    suite: str
    model: str
    claimed: int | None
    scores: dict[int, float]
    """Score (0-100) per context length in tokens."""


def length_curve(result: ScoreResult, mode: str = "nonthinking") -> LengthCurve:
    """Return the score-by-length curve of a scored run (any suite with lengths)."""
    summary = result.summary
    if result.suite == "longctx":
        scores = {int(k): v["percent"] for k, v in summary["by_length"].items()}
    elif result.suite == "longbench-pro":
        from longscope.suites.longbench_pro.suite import display_modes

        modes = display_modes(summary)
        data = modes.get(mode) or next(iter(modes.values()))
        scores = {int(k[:-1]) * 1024: v for k, v in data["average_token_length_metric"].items()}
    else:
        scores = {}
    claimed = result.header.get("model_info", {}).get("context_length")
    return LengthCurve(result.suite, summary.get("model") or "", claimed, scores)


def weighted_averages(scores: dict[int, float]) -> tuple[float, float]:
    """RULER's wAvg: weights rising linearly with length (inc) and falling (dec)."""
    lengths = sorted(scores)
    n = len(lengths)
    if not n:
        return 0.0, 0.0
    inc = sum((i + 1) * scores[x] for i, x in enumerate(lengths)) / (n * (n + 1) / 2)
    dec = sum((n - i) * scores[x] for i, x in enumerate(lengths)) / (n * (n + 1) / 2)
    return round(inc, 2), round(dec, 2)


def model_profile(
    results: list[ScoreResult], threshold: float = RULER_THRESHOLD, relative: float = 0.9
) -> dict[str, Any]:
    """A profile the router reads: claimed context, effective lengths and where they came from."""
    if not results:
        raise ValueError("a profile needs at least one scored run")
    curves = [length_curve(r) for r in results]
    models = {c.model for c in curves}
    if len(models) > 1:
        raise ValueError(f"runs are of different models: {', '.join(sorted(models))}")
    measurements = []
    for curve, result in zip(curves, results, strict=True):
        state = result_state(result.summary)
        if not curve.scores or state == "none":
            continue  # a run that scored nothing measures nothing, not an effective length of 0
        base = curve.scores[min(curve.scores)]
        absolute = effective_length(curve.scores, threshold)
        rel = effective_length(curve.scores, relative_threshold(base, relative))
        measurements.append(
            {
                "suite": curve.suite,
                "run_id": result.run_id,
                "threshold": threshold,
                "effective_length": absolute.tokens,
                "effective_label": absolute.label,
                "relative_threshold": round(relative_threshold(base, relative), 2),
                "relative_effective_length": rel.tokens,
                "relative_label": rel.label,
                "scores": {str(k): v for k, v in sorted(curve.scores.items())},
                "complete": state == "complete",
                "requests": _requests(result),
            }
        )
    known = [m["effective_length"] for m in measurements if m["effective_length"]]
    return {
        "profile_version": PROFILE_VERSION,
        "model": curves[0].model,
        "claimed_context": curves[0].claimed,
        "effective_context": min(known) if known else None,
        "measured": measurements,
        "date": dt.date.today().isoformat(),
    }


def _requests(result: ScoreResult) -> dict[str, int]:
    record = result.summary.get("completeness") or {}
    return {k: record.get(k, 0) for k in ("requested", "scored", "skipped", "failed", "missing")}


def leaderboard(results: list[ScoreResult]) -> list[dict[str, Any]]:
    """One row per run: state and request counts, overall, languages, difficulties, lengths.

    `state` is `complete`, `provisional` (some requests failed or were never answered: the scores
    may change when the run is resumed) or `no score` (nothing scored: no overall, no lengths).
    """
    rows = []
    for result in results:
        state = result_state(result.summary)
        if state == "none":
            counts = _requests(result)
            rows.append(
                {
                    "model": result.summary.get("model") or "",
                    "suite": result.suite,
                    "state": "no score",
                    **counts,
                    "lengths": {},
                }
            )
            continue
        curve = length_curve(result)
        eff = effective_length(curve.scores)
        inc, dec = weighted_averages(curve.scores)
        row: dict[str, Any] = {
            "model": curve.model,
            "suite": result.suite,
            "state": state,
            **_requests(result),
            "claimed": curve.claimed,
            "effective": eff.label,
            "wAvg_inc": inc,
            "wAvg_dec": dec,
            "lengths": {str(k): v for k, v in sorted(curve.scores.items())},
        }
        if result.suite == "longctx":
            row["overall"] = result.summary["total"]
        elif result.suite == "longbench-pro":
            from longscope.suites.longbench_pro.suite import display_modes

            for mode, data in display_modes(result.summary).items():
                row[f"{mode} overall"] = data["average_overall_metric"]
                row.setdefault("overall", data["average_overall_metric"])
                for name in ("English", "Chinese"):
                    if name in data["average_language_metric"]:
                        row[f"{mode} {name}"] = data["average_language_metric"][name]
                for name in ("Extreme", "Hard", "Moderate", "Easy"):
                    if name in data["average_difficulty_metric"]:
                        row[f"{mode} {name}"] = data["average_difficulty_metric"][name]
        rows.append(row)
    # Runs without a score rank last, never as a 0.
    return sorted(rows, key=lambda r: (r["state"] == "no score", -r.get("overall", 0.0)))
