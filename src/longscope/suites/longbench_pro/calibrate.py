"""Model-calibrated difficulty (LongBench Pro paper, section 3.5), renewable as models improve.

Three tiers of models (high, mid, low). A model solves a sample when its score (mean over runs) is
1.0 (summaries: above 0.65). Extreme: at most one high-tier model solves it. Hard: not Extreme and at
most one mid-tier model solves it. Moderate: neither, and at most one low-tier model solves it.
Easy: the rest.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from longscope.suites.longbench_pro.scoring import solved
from longscope.types import SCORABLE

# A scored run (run.scoring.ScoreResult): `suite`, `run_id`, `rows` and `summary` are read.
ScoreResult = Any

LABELS_VERSION = 1
TIERS = ("high", "mid", "low")


def _solved_by_model(result: ScoreResult) -> dict[str, bool]:
    values: dict[str, list[float]] = defaultdict(list)
    metric: dict[str, str] = {}
    for row in result.rows:
        key = f"{row.sample['meta']['row_id']}#{row.sample['meta']['mode']}"
        ok = row.generation.status in SCORABLE and row.score is not None
        values[key].append(row.score.value if ok and row.score else 0.0)
        metric[key] = row.sample["meta"]["metric"]
    return {key: solved(mean(v), metric[key]) for key, v in values.items()}


def difficulty_labels(tiers: dict[str, list[ScoreResult]]) -> dict[str, Any]:
    """Return versioned labels {row_id#mode: difficulty} from runs grouped by model tier."""
    unknown = set(tiers) - set(TIERS)
    if unknown or not all(tiers.get(t) for t in TIERS):
        raise ValueError("calibration needs at least one run for each of --high, --mid and --low")
    solved_by: dict[str, dict[str, list[bool]]] = {t: defaultdict(list) for t in TIERS}
    for tier, results in tiers.items():
        for result in results:
            if result.suite != "longbench-pro":
                raise ValueError(f"run {result.run_id} is {result.suite}, not longbench-pro")
            for key, ok in _solved_by_model(result).items():
                solved_by[tier][key].append(ok)
    keys = set().union(*(solved_by[t].keys() for t in TIERS))
    labels = {}
    for key in sorted(keys):
        counts = {t: sum(solved_by[t].get(key, [])) for t in TIERS}
        if counts["high"] <= 1:
            labels[key] = "Extreme"
        elif counts["mid"] <= 1:
            labels[key] = "Hard"
        elif counts["low"] <= 1:
            labels[key] = "Moderate"
        else:
            labels[key] = "Easy"
    return {
        "labels_version": LABELS_VERSION,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "tiers": {
            t: [{"model": r.summary.model, "run_id": r.run_id} for r in tiers[t]] for t in TIERS
        },
        "rule": "solved = mean score 1.0 (summary > 0.65); Extreme <= 1 high, Hard <= 1 mid, "
        "Moderate <= 1 low, else Easy",
        "labels": labels,
    }


def load_labels(path: str | Path) -> dict[str, str]:
    """Read a labels file written by `longscope calibrate`."""
    from longscope.files import parse_json, read_user_text

    data = parse_json(read_user_text(path, "labels file"), str(path))
    if (
        not isinstance(data, dict)
        or data.get("labels_version") != LABELS_VERSION
        or not isinstance(data.get("labels"), dict)
    ):
        raise ValueError(
            f"{path} is not a longscope difficulty-labels file (version {LABELS_VERSION})"
        )
    return {str(k): str(v) for k, v in data["labels"].items()}
