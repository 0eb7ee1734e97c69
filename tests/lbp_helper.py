"""LongBench Pro predictions made elsewhere, stored and scored as a run (through the registry)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longscope.run.predictions import import_predictions
from longscope.run.scoring import ScoreResult


def score_predictions(
    data: str | Path, predictions: str | Path, output: str | Path, **scoring: Any
) -> ScoreResult:
    """`longscope score longbench-pro --predictions PREDICTIONS -S data=DATA -S key=value...`"""
    return import_predictions("longbench-pro", predictions, output, {"data": str(data), **scoring})
