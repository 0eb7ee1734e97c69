"""Scoring predictions made elsewhere (the official inference script, another harness).

Each JSONL row: `id`, `prediction`, optional `run` or `bon_idx` (which of the N runs), optional
`thinking` (true for thinking-mode predictions). They become a stored run, so every report,
breakdown and re-score works on them exactly as on a run made here.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.jsonl import iter_jsonl
from longscope.models.base import UsageError
from longscope.run.scoring import ScoreResult, score_run
from longscope.run.store import RunStore
from longscope.suites.longbench_pro.loader import load
from longscope.suites.longbench_pro.schema import describe_error
from longscope.suites.longbench_pro.suite import LongBenchProSuite, row_sample
from longscope.types import Generation, stable_hash


class PredictionRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | int
    prediction: str | None
    run: int | None = None
    bon_idx: int | None = None
    thinking: bool = False


def _read(path: Path) -> list[tuple[int, PredictionRow]]:
    rows = []
    for number, raw in iter_jsonl(path, "predictions file"):
        try:
            rows.append((number, PredictionRow.model_validate(raw)))
        except ValidationError as exc:
            raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
    if not rows:
        raise UsageError(f"{path}: holds no predictions")
    return rows


def score_predictions(
    data: str, predictions: str | Path, output: str | Path, **scoring: Any
) -> ScoreResult:
    """Store `predictions` against `data` as a run in `output`, score it, and return the result."""
    dataset = load(data)
    by_id = {row.id: row for row in dataset.rows}
    pred_path = Path(predictions)
    rows = _read(pred_path)
    modes = sorted({"thinking" if p.thinking else "nonthinking" for _, p in rows})
    suite = LongBenchProSuite(data, modes=modes, **scoring)
    # Number runs per (sample, mode) in the order of their run / bon_idx, else of appearance.
    grouped: dict[str, list[tuple[int, int, PredictionRow]]] = defaultdict(list)
    for number, pred in rows:
        row = by_id.get(str(pred.id))
        if row is None:
            raise UsageError(f"{pred_path}: row {number}: field 'id': {pred.id!r} is not in {data}")
        mode = "thinking" if pred.thinking else "nonthinking"
        order = pred.run if pred.run is not None else pred.bon_idx
        grouped[f"{row.id}#{mode}"].append((order if order is not None else number, number, pred))
    samples = [
        row_sample(row, mode)
        for row in dataset.rows
        for mode in modes
        if f"{row.id}#{mode}" in grouped
    ]
    run_id = stable_hash(
        {"suite": suite.name, "data": dataset.revision, "predictions": _digest(pred_path)}
    )
    with RunStore(output) as store:
        store.put_run(
            run_id,
            suite.name,
            {
                "suite": suite.name,
                "suite_version": f"longbench-pro-1/{dataset.revision}",
                "params": {**suite.params(), **{k: v for k, v in scoring.items() if v is not None}},
                "model": f"predictions:{pred_path.name}",
                "predictions": str(pred_path),
            },
        )
        store.put_samples(run_id, samples)
        for sample_id, preds in grouped.items():
            for repeat, (_, _, pred) in enumerate(sorted(preds, key=lambda x: (x[0], x[1]))):
                text = pred.prediction or ""
                status = "ok" if pred.prediction is not None else "error"
                store.put_generation(run_id, sample_id, repeat, Generation(text, status))
    return score_run(output, run_id)


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
