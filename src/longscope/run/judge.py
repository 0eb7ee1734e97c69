"""The LLM-judge pass: any backend judges what a suite asks it to, cached, resumable, and failures
recorded (never silent zeros).

A suite that uses a judge offers `judge_task(sample, generation) -> JudgeTask | None` (what to ask
about one answer) and `parse_verdict(kind, text) -> float | None` (the judged score in [0, 1]).
Verdicts are stored beside the generations (table `judgements`), keyed by (run, sample, repeat,
judge), so a killed judge pass resumes and re-scoring needs no judge: scoring hands each one to the
suite as a `Judgement`. A reply whose verdict cannot be read is retried twice, then stored as a judge
failure. An empty answer scores 0 without asking (small judges rate it above 0).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.types import SCORABLE, GenerationConfig, JudgeTask, Message, Request

JUDGE_RETRIES = 2


@dataclass(frozen=True)
class Verdict:
    value: float | None
    """The judged score in [0, 1], or None when the judge failed."""
    text: str
    attempts: int
    error: str = ""


def uses_judge(suite: Any) -> bool:
    """Return True when a suite's scores need a judge pass (its `needs_judge`)."""
    return bool(suite.needs_judge)


async def judge_one(backend: Backend, suite: Any, task: JudgeTask, mode: str) -> Verdict:
    """Ask the judge, retrying unreadable replies twice.

    A completion-mode judge (a base model) is handed the task's opening of the verdict and stops
    at its closing brace: base models rarely volunteer JSON, but they continue it.
    """
    text, error = "", ""
    opening = task.opening if mode == "completion" else ""
    for attempt in range(1, JUDGE_RETRIES + 2):
        # Greedy first; a retry samples, or a deterministic judge would repeat its reply.
        temperature = 0.0 if attempt == 1 else 0.7
        config = GenerationConfig(max_tokens=256, temperature=temperature, seed=attempt)
        if mode == "completion":
            config = replace(config, max_tokens=48, stop=("}",))
        request = Request(
            "judge",
            attempt,
            mode,  # type: ignore[arg-type]
            prompt=task.prompt + "\n" + opening if mode == "completion" else "",
            messages=(Message("user", task.prompt),) if mode == "chat" else (),
            config=config,
        )
        generation = await backend.generate(request)
        text = opening + generation.text
        if mode == "completion" and opening and "}" not in generation.text:
            text += "}"  # the stop sequence is not part of the reply
        if generation.status not in SCORABLE:
            error = f"judge {generation.status}: {generation.error}"
            continue
        value = suite.parse_verdict(task.kind, text)
        if value is not None:
            return Verdict(value, text, attempt)
        error = "no valid verdict in the judge's reply"
    return Verdict(None, text, JUDGE_RETRIES + 1, error)


async def judge_run(
    run_dir: str | Path, backend: Backend, run_id: str | None = None
) -> dict[str, int]:
    """Judge every answer the run's suite asks about that has no verdict from this judge yet."""
    info = await backend.info()
    judge_id = info.model_id
    counts = {"judged": 0, "failed": 0, "cached": 0}
    with RunStore(run_dir, create=False) as store:
        run = store.run(run_id)
        run_id = run["run_id"]
        suite = create_suite(run["suite"], run["header"]["params"])
        if not suite.JUDGED:
            raise UsageError(f"{run['suite']} runs are scored without a judge")
        samples = store.samples(run_id)
        done = store.judged_keys(run_id, judge_id)
        for sample_id, repeat, generation in store.generations(run_id):
            sample = samples.get(sample_id)
            task = None if sample is None else suite.judge_task(sample, generation)
            if task is None:
                continue
            if (sample_id, repeat) in done:
                counts["cached"] += 1
                continue
            if not generation.text.strip():
                # Nothing to grade: a wrong answer, not a judge's opinion.
                verdict = Verdict(0.0, "empty answer: 0 without asking the judge", 0)
            else:
                verdict = await judge_one(backend, suite, task, info.prompt_mode)
            store.put_judgement(
                run_id,
                sample_id,
                repeat,
                judge_id,
                verdict.value,
                verdict.text,
                verdict.attempts,
                verdict.error,
            )
            counts["failed" if verdict.value is None else "judged"] += 1
    return counts


def judge(run_dir: str | Path, backend: Backend, run_id: str | None = None) -> dict[str, int]:
    """Blocking `judge_run` that closes the judge backend afterwards."""

    async def main() -> dict[str, int]:
        try:
            return await judge_run(run_dir, backend, run_id)
        finally:
            await backend.aclose()

    return asyncio.run(main())
