"""The runner: builds requests from a suite, schedules them on a backend, stores every generation.

Deadlines: a backend bounds each HTTP attempt by its request timeout (`--request-timeout`) and the
whole request, retries included, by the suite's limit (`Suite.timeout_s`, carried as
`Request.timeout_s`); the runner cuts off a backend that overruns that limit by more than
`_TIMEOUT_GRACE_S`. Either way the request is stored as `timeout` and the run goes on.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.models.base import Backend, ModelInfo, UsageError
from longscope.run.header import run_header
from longscope.run.progress import RunProgress
from longscope.run.scoring import ScoreResult, score_run
from longscope.run.store import RunLock, RunStore
from longscope.suites.base import BuildContext, Suite
from longscope.types import Generation, GenerationConfig, Request, Sample, stable_hash

# A backend that overruns the suite's own deadline by this much is cut off from the harness side.
_TIMEOUT_GRACE_S = 30.0
# Finished generations are committed together at most this often (and at the end): one commit per
# batch instead of one per answer. A kill -9 loses at most this long's answers, sent again on resume.
_COMMIT_EVERY_S = 0.05
_COMMIT_ROWS = 256


@dataclass(frozen=True)
class RunOptions:
    """How to run: what changes outputs (repeats, seed, generation overrides) and what does not."""

    output: Path | None = None
    limit: int | None = None
    repeats: int = 1
    seed: int = 0
    max_tokens: int | None = None
    temperature: float | None = None
    concurrency: int | None = None
    quiet: bool = False
    serial: bool = False
    """Run requests one by one in order (for stepping through with a debugger)."""


@dataclass(frozen=True)
class RunResult:
    run_id: str
    run_dir: Path
    sent: int
    """Requests sent to the backend in this invocation (0 when everything was already stored)."""
    skipped: int
    result: ScoreResult


def run_identity(suite: Suite, info: ModelInfo, config: GenerationConfig) -> str:
    """Hash of what changes outputs: suite, its params and version, model, prompt mode, settings.

    Transport (URL, concurrency, timeouts, keys) is never part of it, nor are repeats or limit:
    asking for more repeats or a larger limit extends the same run.
    """
    return stable_hash(
        {
            "suite": suite.name,
            "version": suite.version,
            "params": suite.params(),
            "model": info.model_id,
            "prompt_mode": info.prompt_mode,
            "tokenizer": info.tokenizer,
            "config": config,
        }
    )


def default_run_dir(suite: Suite, backend: Backend, run_id: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", backend.name).strip("_")
    shard = getattr(suite, "shard", None)  # a shard (run/shards.py) gets its own directory
    suffix = f"-shard{shard.index}of{shard.count}" if shard is not None else ""
    return Path("runs") / f"{suite.name}-{slug}-{run_id[:8]}{suffix}"


def _fits(sample: Sample, info: ModelInfo) -> str:
    """Return why `sample` cannot fit the backend, or "" when it fits or nothing tells us."""
    if info.context_length is None or sample.length <= info.context_length:
        return ""
    memory = info.limit != "context"
    return (
        f"{'insufficient_memory' if memory else 'insufficient_context'}: needs {sample.length} "
        f"tokens (prompt and answer), backend holds {info.context_length} ({info.context_source})"
    )


async def run_async(
    suite: Suite, backend: Backend, options: RunOptions = RunOptions()
) -> RunResult:
    """Run `suite` on `backend`, resuming whatever the output directory already holds."""
    suite.prepare()
    info = await backend.info()
    tokenizer = backend.tokenizer()
    config = suite.default_config
    overrides: dict[str, Any] = {"seed": options.seed}
    if options.max_tokens is not None:
        overrides["max_tokens"] = options.max_tokens
    if options.temperature is not None:
        overrides["temperature"] = options.temperature
    if info.prompt_mode == "completion":
        overrides["stop"] = suite.template.completion_stop
    config = replace(config, **overrides)
    run_id = run_identity(suite, info, config)
    run_dir = options.output or default_run_dir(suite, backend, run_id)

    started = time.perf_counter()
    samples = suite.build(
        BuildContext(
            tokenizer,
            info.prompt_mode,
            config,
            context_length=info.context_length,
            max_tokens_override=options.max_tokens,
            chat_overhead=info.chat_overhead,
        )
    )
    if options.limit is not None:
        samples = samples[: options.limit]
    check_unique_ids(samples)
    build_s = time.perf_counter() - started

    with RunLock(run_dir), RunStore(run_dir) as store:
        store.put_run(
            run_id,
            suite.name,
            run_header(
                suite,
                backend.name,
                model_info={
                    "model_id": info.model_id,
                    "context_length": info.context_length,
                    "context_source": info.context_source,
                    "prompt_mode": info.prompt_mode,
                    "chat_overhead": info.chat_overhead,
                    "tokenizer": info.tokenizer,
                    "tokenizer_exact": tokenizer.exact,
                    "details": info.details,
                },
                config=config.__dict__,
            ),
        )
        store.put_samples(run_id, samples)
        if callable(getattr(suite, "record", None)):
            # A shard records the whole run's sample ids before sending: merge finds gaps with it.
            from longscope.run.merge import SHARD_KEY, put_meta

            put_meta(store, SHARD_KEY + run_id, suite.record())
        done = store.done_keys(run_id)
        todo = [
            (sample, repeat)
            for sample in samples
            for repeat in range(options.repeats)
            if (sample.id, repeat) not in done
        ]
        sent, skipped = await _execute(suite, backend, info, config, store, run_id, todo, options)
        # Scored under the same lock: no second writer between the last answer and the scores.
        result = score_run(run_dir, run_id)
    result.summary.setdefault("timing", {})["build_s"] = round(build_s, 3)
    return RunResult(run_id=run_id, run_dir=run_dir, sent=sent, skipped=skipped, result=result)


def check_unique_ids(samples: list[Sample]) -> None:
    """Raise UsageError naming both cells when two samples share an id (nothing sent or stored).

    Two grid cells that round to one id (depths 0.1 and 0.101, lengths 1k and 1024) would be sent
    twice and stored once, with the stored sample possibly not the one answered.
    """
    first: dict[str, int] = {}
    for position, sample in enumerate(samples):
        earlier = first.setdefault(sample.id, position)
        if earlier != position:
            raise UsageError(
                f"two samples share the id {sample.id!r}: {_describe(samples[earlier], earlier)} "
                f"and {_describe(sample, position)}; make the suite's parameters distinct "
                "(e.g. depths or lengths that differ after rounding)"
            )


def _describe(sample: Sample, position: int) -> str:
    """Return a short description of a sample's cell from its generic fields and scalar meta."""
    fields = [f"task {sample.task}", f"length {sample.length}"]
    for key, value in sample.meta.items():
        scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
        if scalar and len(fields) < 5 and key not in ("prompt_tokens", "context_tokens"):
            fields.append(f"{key} {value}")
    return f"cell #{position + 1} ({', '.join(fields)})"


class _GenerationWriter:
    """Buffers finished generations and commits them in one transaction per short interval."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.pending: list[tuple[str, int, Generation]] = []
        self._last = time.perf_counter()

    def add(self, sample_id: str, repeat: int, generation: Generation) -> None:
        self.pending.append((sample_id, repeat, generation))
        now = time.perf_counter()
        if len(self.pending) >= _COMMIT_ROWS or now - self._last >= _COMMIT_EVERY_S:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        if self.pending:
            self.store.put_generations(self.run_id, self.pending)
            self.pending = []
        self._last = now if now is not None else time.perf_counter()


async def _execute(
    suite: Suite,
    backend: Backend,
    info: ModelInfo,
    config: GenerationConfig,
    store: RunStore,
    run_id: str,
    todo: list[tuple[Sample, int]],
    options: RunOptions,
) -> tuple[int, int]:
    concurrency = 1 if options.serial else (options.concurrency or backend.max_concurrency)
    semaphore = asyncio.Semaphore(max(1, concurrency))
    progress = RunProgress(
        total=len(todo), quiet=options.quiet, retries=lambda: getattr(backend, "retries_done", 0)
    )
    counts = {"sent": 0, "skipped": 0}
    writer = _GenerationWriter(store, run_id)

    async def one(sample: Sample, repeat: int) -> None:
        reason = _fits(sample, info)
        if reason:
            generation = Generation(text="", status="skipped", error=reason)
            counts["skipped"] += 1
        else:
            request = build_request(suite, sample, repeat, info, config)
            async with semaphore:
                counts["sent"] += 1
                generation = await _generate_with_deadline(backend, request)
        writer.add(sample.id, repeat, generation)
        progress.advance(generation)

    # A quiet time (a slow model) must not keep finished answers uncommitted: flush on a timer too.
    async def flush_periodically() -> None:
        while True:
            await asyncio.sleep(_COMMIT_EVERY_S)
            writer.flush()

    flusher = asyncio.create_task(flush_periodically())
    try:
        with progress:
            if options.serial:
                for sample, repeat in todo:
                    await one(sample, repeat)
            elif callable(getattr(backend, "generate_group", None)):
                # One prefill per shared prefix (a document's repeats): see models/groups.py.
                from longscope.models.groups import group_by_prefix

                await asyncio.gather(*(one(s, r) for s, r in todo if _fits(s, info)))
                fits = [(s, r) for s, r in todo if not _fits(s, info)]
                requests = [build_request(suite, s, r, info, config) for s, r in fits]

                async def group(indices: tuple[int, ...]) -> None:
                    async with semaphore:
                        counts["sent"] += len(indices)
                        generations = await backend.generate_group([requests[i] for i in indices])  # type: ignore[attr-defined]
                    for i, generation in zip(indices, generations, strict=True):
                        writer.add(fits[i][0].id, fits[i][1], generation)
                        progress.advance(generation)

                await asyncio.gather(*(group(g) for g in group_by_prefix(requests)))
            else:
                await asyncio.gather(*(one(sample, repeat) for sample, repeat in todo))
    finally:
        flusher.cancel()
        # What finished before an interruption (Ctrl-C, an exception) is kept.
        writer.flush()
    return counts["sent"], counts["skipped"]


def build_request(
    suite: Suite, sample: Sample, repeat: int, info: ModelInfo, config: GenerationConfig
) -> Request:
    """Render a sample into the request its model's prompt mode needs."""
    prompt, messages = suite.template.render(sample, info.prompt_mode)
    # Repeats must differ when sampling; with greedy decoding the seed changes nothing.
    seeded = replace(
        config,
        seed=config.seed + repeat,
        max_tokens=sample.output_budget(config.max_tokens),
    )
    return Request(
        sample_id=sample.id,
        repeat=repeat,
        mode=info.prompt_mode,
        prompt=prompt,
        messages=messages,
        config=seeded,
        prompt_tokens=sample.counted_prompt(),
        timeout_s=suite.timeout_s(sample),
        parts=suite.template.parts(sample, info.prompt_mode) if sample.context else None,
    )


async def _generate_with_deadline(backend: Backend, request: Request) -> Generation:
    if getattr(backend, "bounds_own_deadline", False):
        # It queues requests itself and times each from when it sends it (models/endpoints.py).
        return await backend.generate(request)
    started = time.perf_counter()
    limit = (request.timeout_s or 0) + _TIMEOUT_GRACE_S if request.timeout_s else None
    calls = getattr(backend, "calls_for", None)
    if limit is not None and calls is not None:
        # A backend that answers one request with several calls (the router) gets a limit per call.
        limit *= calls(request)
    try:
        # A timeout scope, not wait_for: no extra task per request.
        async with asyncio.timeout(limit):
            return await backend.generate(request)
    except TimeoutError:
        return Generation(
            text="",
            status="timeout",
            latency_s=time.perf_counter() - started,
            error=f"no answer within {limit:.0f}s (task limit {request.timeout_s:.0f}s)",
        )


def run(suite: Suite, backend: Backend, options: RunOptions = RunOptions()) -> RunResult:
    """Run `suite` on `backend` (blocking) and close the backend afterwards."""

    async def main() -> RunResult:
        try:
            return await run_async(suite, backend, options)
        finally:
            await backend.aclose()

    return asyncio.run(main())
