"""Scoring predictions made elsewhere (the official inference script, another harness).

Each JSONL row: `id`, `prediction`, optional `bon_idx` (or `run`: which of the N runs, 1-based).
Official inference files score as they are: their `thinking` is the reasoning text or null (kept
as the generation's reasoning, never scored), the prompt mode comes from the file name
(`thinking_...` / `nonthinking_...`) or a `mode` field; longscope's own files may instead set
`thinking` to true / false. Rows keep their file order and `bon_idx`, which the official summary
depends on (see official.py); N is the row count over the data's question count when it divides,
as the official scorer requires, else the most rows any question has. The rows become a stored
run (`longscope.run.predictions`), so every report, breakdown and re-score works on them as on a
run made here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.errors import UsageError
from longscope.jsonl import iter_jsonl
from longscope.suites.base import ImportedRun
from longscope.suites.longbench_pro.loader import load
from longscope.suites.longbench_pro.schema import describe_error, row_sample
from longscope.types import Generation


class PredictionRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | int
    prediction: str | None
    run: int | None = None
    bon_idx: int | None = None
    thinking: bool | str | None = None
    """A mode flag (longscope's files) or the reasoning text / null (official files)."""
    mode: Literal["thinking", "nonthinking"] | None = None

    def prompt_mode(self, path: Path) -> str:
        """Return the prompt mode: the flag, else the `mode` field, else the file name's prefix."""
        if isinstance(self.thinking, bool):
            return "thinking" if self.thinking else "nonthinking"
        if self.mode is not None:
            return self.mode
        return "thinking" if path.name.startswith("thinking_") else "nonthinking"


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


def read_predictions(
    data: str, predictions: str | Path, make_suite: Callable[[list[str]], Any]
) -> ImportedRun:
    """Read `predictions` against `data`: the samples, one generation per row, the run's identity.

    `make_suite(modes)` returns the suite that scores them (the modes the file holds).
    """
    dataset = load(data)
    by_id = {row.id: row for row in dataset.rows}
    pred_path = Path(predictions)
    rows = _read(pred_path)
    modes = sorted({p.prompt_mode(pred_path) for _, p in rows})
    suite = make_suite(modes)
    # Per (question, mode): its rows in file order, each with its line and official run number.
    grouped: dict[str, list[tuple[int, PredictionRow]]] = defaultdict(list)
    for number, pred in rows:
        row = by_id.get(str(pred.id))
        if row is None:
            raise UsageError(f"{pred_path}: row {number}: field 'id': {pred.id!r} is not in {data}")
        grouped[f"{row.id}#{pred.prompt_mode(pred_path)}"].append((number, pred))
    bon_num, refusal = {}, {}
    for mode in modes:
        count = sum(len(g) for key, g in grouped.items() if key.endswith("#" + mode))
        questions = len(dataset.rows)
        if count % questions == 0:
            bon_num[mode], refusal[mode] = count // questions, ""
        else:
            bon_num[mode] = max(len(g) for key, g in grouped.items() if key.endswith("#" + mode))
            refusal[mode] = (
                f"{count} {mode} rows are not N x {questions} questions (official: AssertionError)"
            )
    samples = []
    for row in dataset.rows:
        for mode in modes:
            preds = grouped.get(f"{row.id}#{mode}")
            if not preds:
                continue
            numbered = {
                str(repeat): {"line": number, "bon_idx": _bon_idx(pred, repeat)}
                for repeat, (number, pred) in enumerate(preds)
            }
            samples.append(
                row_sample(
                    row,
                    mode,
                    prediction_rows=numbered,
                    bon_num=bon_num[mode],
                    file_refusal=refusal[mode],
                )
            )
    generations = []
    for sample_id, preds in grouped.items():
        for repeat, (_, pred) in enumerate(preds):
            reasoning = pred.thinking if isinstance(pred.thinking, str) else ""
            if pred.prediction is None:
                generation = Generation("", "error", reasoning, error="prediction is null")
            else:
                generation = Generation(pred.prediction, "ok", reasoning)
            generations.append((sample_id, repeat, generation))
    return ImportedRun(
        suite=suite,
        samples=samples,
        generations=generations,
        model=f"predictions:{pred_path.name}",
        identity={"data": dataset.revision, "predictions": _digest(pred_path)},
        params=suite.stored_params(),
        fields={"predictions": str(pred_path)},
    )


def _bon_idx(pred: PredictionRow, repeat: int) -> int:
    """The row's run number: `bon_idx`, else `run`, else its place among the question's rows."""
    if pred.bon_idx is not None:
        return pred.bon_idx
    return pred.run if pred.run is not None else repeat + 1


def _digest(path: Path) -> str:
    from longscope.files import sha256_of

    return sha256_of(path)[:16]
