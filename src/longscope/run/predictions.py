"""Predictions made elsewhere (another harness, an official inference script) stored as a run.

The suite reads the file (`import_predictions(path, params) -> ImportedRun`, optional); this module
stores what it read as a run, with the same header as a run made here, and scores it, so every
report, comparison and re-score works on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.run.header import run_header
from longscope.run.scoring import ScoreResult, score_run
from longscope.run.store import RunStore
from longscope.suites import REGISTRY, suite_factory
from longscope.types import stable_hash


def score_predictions(
    suite: str, predictions: str | Path, options: Sequence[str], output: str | Path | None
) -> ScoreResult:
    """Store and score `predictions` made elsewhere for suite `suite` (`options`: its `-S`
    pairs, e.g. `data=FILE`), in `output` (default: `runs/SUITE-predictions-STEM`)."""
    suite_factory(suite)  # an unknown suite: one line naming the known ones
    params = REGISTRY.parse(suite, options)
    stem = Path(predictions).stem
    where = Path(output) if output else Path("runs") / f"{suite}-predictions-{stem}"
    return import_predictions(suite, predictions, where, params)


def import_predictions(
    suite: str, predictions: str | Path, output: str | Path, params: dict[str, Any]
) -> ScoreResult:
    """Store `predictions` for suite `suite` as a run in `output`, score it, return the result."""
    try:
        imported = suite_factory(suite).import_predictions(Path(predictions), dict(params))
    except UsageError:
        raise
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    name = imported.suite.name
    run_id = stable_hash({"suite": name, **imported.identity})
    header = {
        **run_header(imported.suite, imported.model, **imported.fields),
        "params": imported.params,
    }
    with RunStore(output) as store:
        store.put_run(run_id, name, header)
        store.put_samples(run_id, imported.samples)
        for sample_id, repeat, generation in imported.generations:
            store.put_generation(run_id, sample_id, repeat, generation)
    return score_run(output, run_id)
