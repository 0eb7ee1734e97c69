"""Scoring of stored generations: recomputable at any time without a model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import ScoredRow
from longscope.types import SCORABLE

SUMMARY_NAME = "summary.json"


@dataclass(frozen=True)
class ScoreResult:
    run_id: str
    suite: str
    header: dict[str, Any]
    summary: dict[str, Any]
    rows: list[ScoredRow]


def score_run(
    run_dir: str | Path, run_id: str | None = None, scoring: dict[str, Any] | None = None
) -> ScoreResult:
    """Grade every scorable generation of a stored run, store the scores, write summary.json.

    `scoring` overrides options that change scores but not generations (e.g. the embedder).
    """
    with RunStore(run_dir, create=False) as store:
        run = store.run(run_id)
        run_id = run["run_id"]
        header = run["header"]
        overrides = {k: v for k, v in (scoring or {}).items() if v is not None}
        suite = create_suite(run["suite"], {**header["params"], **overrides})
        samples = store.samples(run_id)
        judgements = store.judgements(run_id)
        rows: list[ScoredRow] = []
        scores = []
        for sample_id, repeat, generation in store.generations(run_id):
            sample = samples.get(sample_id)
            if sample is None:
                continue
            if judgements:
                sample = {**sample, "judgement": judgements.get((sample_id, repeat))}
            score = suite.score(sample, generation) if generation.status in SCORABLE else None
            if score is not None:
                scores.append((sample_id, repeat, score))
            rows.append(ScoredRow(sample, repeat, generation, score))
        store.put_scores(run_id, scores)
    summary = suite.summarize(rows)
    summary = {"run_id": run_id, "suite": run["suite"], "model": header.get("model"), **summary}
    (Path(run_dir) / SUMMARY_NAME).write_text(
        json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    return ScoreResult(run_id=run_id, suite=run["suite"], header=header, summary=summary, rows=rows)
