"""Scoring of stored generations: recomputable at any time without a model.

`score_run` grades a run in memory; with `persist=True` (the `score` command, and `run` when it
ends) it also stores the scores and writes `summary.json`. Every other reader (`report`,
`compare`, `profile`, `longscore`, `calibrate`) opens the store read-only and never writes, so an
archived read-only run can be reported.

Every summary carries `completeness`: how many requests the run asked for, how many were scored,
deliberately skipped (the context cannot fit the model), failed (with the reasons counted) or never
answered, overall and per length.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.analysis.budgets import budget_record
from longscope.analysis.uncertainty import cluster_key_of, cluster_name, with_uncertainty
from longscope.files import write_atomic
from longscope.models.base import VISIBLE_ANSWER_RULE
from longscope.models.overflow import is_stored_overflow
from longscope.run.store import SHARD_KEY, RunStore, StoreError
from longscope.suites import create_suite
from longscope.summary import (
    Summary,
    incomplete_line,
    no_score_text,
    statuses_of,
)
from longscope.types import SANITIZED, SCORABLE, Generation, ScoredRow

SUMMARY_NAME = "summary.json"
NOT_RUN = "not run"
"""The failure reason of a request a run asked for but never answered (interrupted)."""


@dataclass(frozen=True)
class ScoreResult:
    """A stored run's scores: its identity, header, typed summary and every scored row."""

    run_id: str
    suite: str
    header: dict[str, Any]
    summary: Summary
    """The typed summary every report and analysis reads (`to_dict()`: summary.json)."""
    rows: list[ScoredRow]
    run_dir: Path | None = None
    clusters: dict[str, Any] | None = None
    """Each sample's cluster (the unit it shares with others), for paired comparisons."""

    def to_dict(self) -> dict[str, Any]:
        """Return the summary as summary.json holds it."""
        return self.summary.to_dict()

    @property
    def claimed(self) -> int | None:
        """Return the context length the backend said it holds, when the run recorded it."""
        return (self.header.get("model_info") or {}).get("context_length")

    @property
    def completeness(self) -> dict[str, Any]:
        """Return the summary's completeness record (requested, scored, skipped, failed...)."""
        return self.summary.completeness or {}


def score_run(
    run_dir: str | Path,
    run_id: str | None = None,
    scoring: dict[str, Any] | None = None,
    *,
    persist: bool = True,
) -> ScoreResult:
    """Grade every scorable generation of a stored run; with `persist`, store scores and summary.

    `scoring` overrides options that change scores but not generations (e.g. the embedder).
    Without `persist` the store is opened read-only and nothing in `run_dir` changes.
    """
    opened = RunStore(run_dir, create=False) if persist else RunStore.open_readonly(run_dir)
    with opened as store:
        run = store.run(run_id)
        run_id = run["run_id"]
        header = run["header"]
        overrides = {k: v for k, v in (scoring or {}).items() if v is not None}
        suite = create_suite(run["suite"], {**header["params"], **overrides})
        samples = store.samples(run_id)
        documents = store.context_hashes(run_id)
        # A suite that uses a judge is handed each answer's stored verdict (run.judge).
        judging = suite.JUDGED
        judgements = store.judgements(run_id) if judging else {}
        rows: list[ScoredRow] = []
        scores = []
        stored = store.generations(run_id)
        answered = store.answer_times(run_id)
        if persist:
            reclassify_overflows(store, run_id, stored)
        for sample_id, repeat, generation in stored:
            generation = reclassified(generation)
            sample = samples.get(sample_id)
            if sample is None:
                continue
            score = None
            if generation.status in SCORABLE and judging:
                verdict = judgements.get((sample_id, repeat))
                score = suite.score(sample, generation, judgement=verdict)
            elif generation.status in SCORABLE:
                score = suite.score(sample, generation)
            if score is not None and generation.error.startswith(SANITIZED):
                # Scored as the text that was stored; the evidence says it was cleaned first.
                score = replace(score, evidence={**score.evidence, "sanitized": generation.error})
            if score is not None:
                scores.append((sample_id, repeat, score))
            rows.append(
                ScoredRow(sample, repeat, generation, score, answered.get((sample_id, repeat)))
            )
        if persist:
            store.put_scores(run_id, scores)
        shard = store.get_meta(SHARD_KEY + run_id)
    if not samples and not shard:
        # A header alone (a run stopped before its first sample was stored) is no result: a
        # table of "none of 0 requests" would pass for one. A shard may hold none of many.
        raise StoreError(
            f"run {run_id[:12]} in {run_dir} stored no samples (it stopped before its first "
            "request): nothing to score or report; run the same command again to send them"
        )
    statuses, by_length = statuses_of(rows)
    typed = replace(
        as_summary(run["suite"], suite.summarize(rows)),
        run_id=run_id,
        suite=run["suite"],
        model=header.get("model") or "",
        claimed=(header.get("model_info") or {}).get("context_length"),
        completeness=completeness(samples, rows, shard),
        statuses=statuses,
        statuses_by_length=by_length,
        budgets=budget_record(rows),
    )
    typed = replace(typed, notes=typed.notes + answer_rule_notes(rows))
    cluster_key = cluster_key_of(suite.cluster_key, documents)
    typed = with_uncertainty(typed, rows, cluster_key, cluster_name=cluster_name(suite.cluster_key))
    summary = typed.to_dict()
    if persist:
        write_atomic(
            Path(run_dir) / SUMMARY_NAME, json.dumps(summary, indent=2, ensure_ascii=False)
        )
    return ScoreResult(
        run_id=run_id,
        suite=run["suite"],
        header=header,
        summary=typed,
        rows=rows,
        run_dir=Path(run_dir),
        clusters={sid: cluster_key(sample) for sid, sample in samples.items()},
    )


def answer_rule_notes(rows: list[ScoredRow]) -> tuple[str, ...]:
    """Return the line saying how thinking was set apart from the scored answers, when any
    answer had thinking (the same rule for inline blocks and a server's reasoning field)."""
    answered = [row.generation for row in rows if row.generation.status in SCORABLE]
    thought = sum(1 for generation in answered if generation.reasoning)
    if not thought:
        return ()
    return (
        f"scored text: the visible answer; {thought} of {len(answered)} answers had thinking "
        f"set apart ({VISIBLE_ANSWER_RULE})",
    )


def reclassified(generation: Generation) -> Generation:
    """Return `generation` as `context_overflow` when its stored `error` is a length refusal.

    Runs stored before a server's wording was known (models/overflow.py) hold such refusals as
    `error`; read through here they count as final, not as failures to re-run.
    """
    if generation.status == "error" and is_stored_overflow(generation.error):
        return replace(generation, status="context_overflow")
    return generation


def reclassify_overflows(
    store: RunStore,
    run_id: str,
    stored: list[tuple[str, int, Generation]] | None = None,
) -> int:
    """Store as `context_overflow` the run's `error` rows that are length refusals; return how many.

    Called by a resumed run before it decides what to send (a refusal is final: never sent again)
    and by `score`; `stored` is the run's generations when the caller already read them.
    """
    rows = store.generations(run_id) if stored is None else stored
    changed = [
        (sample_id, repeat, reclassified(generation))
        for sample_id, repeat, generation in rows
        if generation.status == "error" and is_stored_overflow(generation.error)
    ]
    if changed:
        store.put_generations(run_id, changed)
    return len(changed)


def as_summary(suite: str, value: Any) -> Summary:
    """Return a suite's summary, which `Suite.summarize` declares a `Summary`; anything else (a
    plain dict, as suites returned before the typed summary) is refused with the suite's name."""
    if isinstance(value, Summary):
        return value
    raise TypeError(f"suite {suite!r} summarize() returned {type(value).__name__}, not a Summary")


def read_run(
    run_dir: str | Path, run_id: str | None = None, scoring: dict[str, Any] | None = None
) -> ScoreResult:
    """Return a run scored in memory, its store opened read-only: nothing in `run_dir` changes."""
    return score_run(run_dir, run_id, scoring, persist=False)


_HTTP = re.compile(r"\bHTTP (\d{3})\b")
_PREFIX = re.compile(
    r"^(?:gave up after \d+ attempts?: |.*?; last: "
    # several endpoints (models/endpoints.py): the endpoints tried, then the last error
    r"|failed after \d+ attempt\(s\) on endpoint\(s\) .*?: )"
)


def failure_reason(generation: Generation) -> str:
    """Return a short name for why a generation failed: `503`, `timeout`, `connection error`..."""
    if generation.status == "timeout":
        return "timeout"
    text = _PREFIX.sub("", generation.error.strip())
    code = _HTTP.search(text)
    if code:
        return code.group(1)
    head = re.split(r"[:;]", text, maxsplit=1)[0].strip()
    if not head:
        return generation.status
    if len(head) <= 32:
        return head
    # Cut at a word: a label is read, not parsed (`failed after 0 attempt(s) on en…` was not).
    return head[:31].rsplit(" ", 1)[0] + "…"


def _cell() -> dict[str, int]:
    return {"requested": 0, "scored": 0, "skipped": 0, "failed": 0, "missing": 0}


def completeness(
    samples: dict[str, dict[str, Any]],
    rows: list[ScoredRow],
    shard: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return requested / scored / skipped / failed / missing counts, overall and per length.

    A shard's run (`shard`: its record, run/shards.py) holds part of the samples: it says which
    part (`shard`: index, count, samples, of) and is never complete on its own.

    Requested is every stored sample times the repeats seen (a run's repeats are uniform); a
    request without a generation is `missing` (the run was interrupted). `skipped` is deliberate:
    the sample cannot fit the model (`skipped`, `context_overflow`). An answer the suite could not
    grade (a judge that failed to rule) counts as failed: re-running `judge` retries it.
    """
    repeats = 1 + max((row.repeat for row in rows), default=0)
    done: dict[tuple[str, int], ScoredRow] = {(row.sample["id"], row.repeat): row for row in rows}
    total = _cell()
    by_length: dict[str, dict[str, int]] = {}
    reasons: Counter[str] = Counter()
    for sample_id, sample in samples.items():
        cell = by_length.setdefault(str(sample.get("length")), _cell())
        for repeat in range(repeats):
            row = done.get((sample_id, repeat))
            if row is None:
                outcome, reason = "missing", NOT_RUN
            elif row.score is not None and row.score.evidence.get("judge_failed"):
                outcome, reason = "failed", "judge failed"
            elif row.generation.status in SCORABLE and row.score is not None:
                outcome, reason = "scored", ""
            elif row.generation.status in ("skipped", "context_overflow"):
                outcome, reason = "skipped", ""
            elif row.generation.status in SCORABLE:
                outcome, reason = "failed", "not gradable"
            else:
                outcome, reason = "failed", failure_reason(row.generation)
            for counts in (cell, total):
                counts["requested"] += 1
                counts[outcome] += 1
            if reason:
                reasons[reason] += 1
    # Extra repeats beyond what the samples table holds cannot happen; rows of unknown samples
    # were dropped by the caller, so every count above refers to a stored sample.
    unfinished = total["failed"] + total["missing"]
    part: dict[str, Any] = {}
    if shard:
        part["shard"] = {
            "index": shard.get("index"),
            "count": shard.get("count"),
            "samples": len(samples),
            "of": len(shard.get("ids") or ()),
        }
    return {
        **total,
        **part,
        "complete": unfinished == 0 and not shard,
        "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_length": dict(sorted(by_length.items(), key=lambda kv: _length_key(kv[0]))),
    }


def _length_key(length: str) -> tuple[int, str]:
    return (int(length), "") if length.isdigit() else (1 << 62, length)


def nothing_scored(record: dict[str, Any]) -> bool:
    """Return True when a run scored no request at all: its totals mean nothing."""
    return record.get("scored", 0) == 0


def result_state(summary: Summary) -> str:
    """Return `none` (nothing scored: print no total, no level), `provisional` or `complete`."""
    return summary.state


__all__ = [
    "NOT_RUN",
    "SUMMARY_NAME",
    "ScoreResult",
    "as_summary",
    "completeness",
    "failure_reason",
    "incomplete_line",
    "no_score_text",
    "nothing_scored",
    "read_run",
    "reclassified",
    "reclassify_overflows",
    "result_state",
    "score_run",
]
