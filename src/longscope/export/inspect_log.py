"""Inspect eval logs (`inspect view`, `inspect_ai.log.read_eval_log`), written with inspect-ai's
own types.

One `.eval` file per run: the run header is the eval spec (task = suite, task args = its
parameters, generate config = the run's settings), each stored generation a sample (epoch = repeat
+ 1) with its question, answer, score and metadata, and the results hold the overall score and the
score per length. A run that is not complete is logged with status `error` and the incomplete
line as its error: Inspect shows it as unfinished, never as a successful eval. Contexts (up to
hundreds of thousands of tokens per sample) stay in the run store: each sample names its context
by hash and token count.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from longscope.export.record import ExportRun, metric_points, require, without_local_paths
from longscope.types import SCORABLE

SCORER = "longscope"
SCALE = 100.0
"""longscope scores on 0-100; Inspect's scorers and metrics on 0-1 (what `mean()` gives)."""


def write(run: ExportRun, out: Path) -> Path:
    """Write `run` as an Inspect eval log in `out`; return its path."""
    require("inspect_ai", "inspect", "inspect-ai")
    from inspect_ai.log import EvalLog, write_eval_log

    log = EvalLog(
        version=2,
        status="success" if run.final else "error",
        eval=_spec(run),
        plan=_plan(run),
        results=_results(run),
        stats=_stats(run),
        error=None if run.final else _error(run.completeness()["incomplete"] or run.state),
        samples=[_sample(run, row) for row in run.scores.rows],
        tags=["longscope", run.state],
        metadata={"longscope": _record(run)},
    )
    stamp = run.created_iso.replace(":", "-").replace("+00-00", "")
    # Inspect's own naming, TIMESTAMP_TASK_TASKID.eval: its viewer reads the task from the name.
    path = out / f"{stamp}_{_slug(run.suite)}_{run.run_id}.eval"
    out.mkdir(parents=True, exist_ok=True)
    # Written beside its final name, then renamed: a reader never sees half a log.
    partial = path.with_name(f".{path.stem}.partial.eval")
    write_eval_log(log, str(partial), format="eval")
    os.replace(partial, path)
    return path


def _record(run: ExportRun) -> dict[str, Any]:
    return {
        "identity": run.identity(),
        "completeness": run.completeness(),
        "determinism": run.determinism(),
        "final": run.final,
    }


def _spec(run: ExportRun) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalRevision, EvalSpec

    identity, rules = run.identity(), run.determinism()
    samples = list(dict.fromkeys(row.sample["id"] for row in run.scores.rows))
    repeats = 1 + max((row.repeat for row in run.scores.rows), default=0)
    git = str(run.header.get("git") or "")
    return EvalSpec(
        eval_id=run.run_id,
        run_id=run.run_id,
        created=run.created_iso,
        task=run.suite,
        task_id=run.run_id,
        task_version=str(identity["suite_version"]),
        task_display_name=run.summary.title,
        task_args=dict(identity["params"]),
        dataset=EvalDataset(name=run.suite, samples=len(samples), sample_ids=samples),
        model=run.model,
        model_generate_config=_generate_config(rules),
        model_args={"model_info": without_local_paths(run.header.get("model_info") or {})},
        config=EvalConfig(epochs=repeats),
        revision=EvalRevision(type="git", origin="longscope", commit=git) if git else None,
        packages={"longscope": str(run.header.get("longscope") or "")},
        metadata=_record(run),
    )


def _generate_config(rules: dict[str, Any]) -> Any:
    from inspect_ai.model import GenerateConfig

    def number(key: str) -> Any:
        value = rules.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    return GenerateConfig(
        max_tokens=number("max_tokens"),
        temperature=number("temperature"),
        top_p=number("top_p"),
        seed=number("seed"),
        stop_seqs=list(rules.get("stop") or []) or None,
    )


def _plan(run: ExportRun) -> Any:
    from inspect_ai.log import EvalPlan, EvalPlanStep

    return EvalPlan(
        name="longscope",
        steps=[EvalPlanStep(solver="longscope", params={"suite": run.suite})],
        config=_generate_config(run.determinism()),
    )


def _results(run: ExportRun) -> Any:
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    counts = run.completeness()
    points = metric_points(run.summary, breakdowns=False)
    metrics = {}
    # The headline as Inspect's own scorers give it: `mean` and its `stderr` (0-1); then each
    # view's overall and each length, with their standard errors as the metric's params.
    head = next((p for p in points if p.kind == "overall"), None)
    if head is not None:
        metrics["mean"] = EvalMetric(name="mean", value=head.value / SCALE)
        if head.se is not None:
            metrics["stderr"] = EvalMetric(name="stderr", value=head.se / SCALE)
    for point in points:
        if point is head:
            continue
        params = {} if point.se is None else {"stderr": point.se / SCALE, "n": point.n}
        metrics[point.name] = EvalMetric(name=point.name, value=point.value / SCALE, params=params)
    score = EvalScore(
        name=SCORER,
        scorer=run.suite,
        scored_samples=counts["scored"],
        unscored_samples=counts["requested"] - counts["scored"],
        metrics=metrics,
        metadata={"scale": "0-1", "headline": run.summary.headline.text()},
    )
    return EvalResults(
        total_samples=counts["requested"],
        completed_samples=counts["scored"],
        scores=[score],
        metadata={"completeness": counts},
    )


def _stats(run: ExportRun) -> Any:
    from inspect_ai.log import EvalStats
    from inspect_ai.model import ModelUsage

    rows = run.scores.rows
    prompt = sum(row.generation.prompt_tokens for row in rows)
    output = sum(row.generation.completion_tokens for row in rows)
    usage = ModelUsage(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)
    return EvalStats(
        started_at=run.created_iso,
        completed_at=run.finished_iso or run.created_iso,
        model_usage={run.model: usage},
    )


def _sample(run: ExportRun, row: Any) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageUser,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.scorer import Score

    sample, generation, score = row.sample, row.generation, row.score
    stop = "max_tokens" if generation.status == "length" else "stop"
    output = ModelOutput.from_content(run.model, generation.text, stop_reason=stop)
    usage = ModelUsage(
        input_tokens=generation.prompt_tokens,
        output_tokens=generation.completion_tokens,
        total_tokens=generation.prompt_tokens + generation.completion_tokens,
    )
    output.usage = usage
    scores = None
    if score is not None:
        scores = {
            SCORER: Score(
                value=score.fraction,
                answer=generation.text,
                metadata={"points": score.value, "max": score.max, "evidence": score.evidence},
            )
        }
    failed = generation.status not in SCORABLE and generation.status not in (
        "skipped",
        "context_overflow",
    )
    return EvalSample(
        id=sample["id"],
        epoch=row.repeat + 1,
        input=str(sample.get("question") or ""),
        target=[str(g) for g in sample.get("gold") or []],
        messages=[
            ChatMessageUser(content=str(sample.get("question") or "")),
            ChatMessageAssistant(content=generation.text),
        ],
        output=output,
        scores=scores,
        metadata={
            "task": sample.get("task"),
            "language": sample.get("language"),
            "length": sample.get("length"),
            "status": generation.status,
            "error": generation.error,
            "reasoning": generation.reasoning,
            "context_sha": run.context_hashes.get(sample["id"], ""),
            "prompt_tokens": sample.get("prompt_tokens") or generation.prompt_tokens,
            "meta": sample.get("meta") or {},
        },
        model_usage={run.model: usage},
        total_time=generation.latency_s,
        error=_error(f"{generation.status}: {generation.error}") if failed else None,
    )


def _error(message: str) -> Any:
    from inspect_ai.log import EvalError

    return EvalError(message=message, traceback="", traceback_ansi="")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"
