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


def write_predictions(data: str | Path, folder: Path, name: str, right: set[str]) -> Path:
    """Write `folder/NAME.jsonl`: predictions for the fixture's accuracy rows (T3.1, T3.2 in
    English and Chinese), the right answer for the ids in `right`, a wrong one for the others."""
    import json

    rows = {r["id"]: r for r in json.loads(Path(data).read_text(encoding="utf-8"))}
    lines = []
    for rid in ("mini-T3.2-en", "mini-T3.2-zh", "mini-T3.1-en", "mini-T3.1-zh"):
        answer = rows[rid]["answer"][0] if rid in right else "Z"
        lines.append(json.dumps({"id": rid, "prediction": f"[Answer] {answer}"}))
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
