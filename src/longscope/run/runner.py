"""The runner: sends a prepared run (run/prepared.py) to a backend as its samples are made, stores
every generation.

One path: every request travels in a group (`Backend.generate_group`): a document's requests
together where the backend shares their prefill (`shares_prefill`), else a group of one, and
always a group of one with `--serial`. Retries (models/retry.py) cover groups as they cover
single requests.

Deadlines: a backend bounds each HTTP attempt by its request timeout (`--request-timeout`) and the
whole request, retries included, by the suite's limit (`Suite.timeout_s`, carried as
`Request.timeout_s`); the runner cuts off a group that overruns that limit by more than
`_TIMEOUT_GRACE_S` (unless the backend `bounds_own_deadline`). Either way a request without an
answer is stored as `timeout` and the run goes on.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from longscope.errors import DiskFull
from longscope.files import disk_full
from longscope.models.base import Backend, OnResult
from longscope.models.groups import group_by_prefix
from longscope.run.header import run_header
from longscope.run.prepared import PreparedRun, RunOptions, Unit
from longscope.run.progress import RunProgress, TokenEta
from longscope.run.scoring import ScoreResult, reclassify_overflows, score_run
from longscope.run.store import RunLock, RunStore
from longscope.suites.base import Suite
from longscope.types import Generation, Request, Sample

if TYPE_CHECKING:
    from longscope.run.plan import Plan

# A backend that overruns the suite's own deadline by this much is cut off from the harness side.
_TIMEOUT_GRACE_S = 30.0
# Finished generations are committed together at most this often (and at the end): one commit per
# batch instead of one per answer. A kill -9 loses at most this long's answers, sent again on resume
# (a group's members included: each is handed over as it arrives, see `_execute`).
_COMMIT_EVERY_S = 0.05
_COMMIT_ROWS = 256


@dataclass(frozen=True)
class RunResult:
    """What one run did: where it is stored, what this invocation sent, and the run's scores."""

    run_id: str
    run_dir: Path
    sent: int
    """Requests sent to the backend in this invocation (0 when everything was already stored)."""
    skipped: int
    scores: ScoreResult | None
    """The scores; None only when the caller scores later (a judged suite, after its judge)."""
    timing: dict[str, Any] = field(default_factory=dict)
    """This invocation's timing (seconds building, sending; requests sent and skipped)."""


def default_run_dir(suite: Suite, backend: Backend, run_id: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", backend.name).strip("_")
    shard = suite.shard  # a shard (run/shards.py) gets its own directory
    suffix = f"-shard{shard.index}of{shard.count}" if shard is not None else ""
    return Path("runs") / f"{suite.name}-{slug}-{run_id[:8]}{suffix}"


async def run_async(suite: Suite, backend: Backend, options: RunOptions | None = None) -> RunResult:
    """Run `suite` on `backend`, resuming whatever the output directory already holds."""
    return await run_prepared(await PreparedRun.create(suite, backend, options or RunOptions()))


async def run_prepared(
    prepared: PreparedRun, *, score: bool = True, plan: Plan | None = None
) -> RunResult:
    """Send what `prepared` holds and is not stored yet, store every answer; score unless told not
    to (a judged suite is scored once, after its judge pass). `plan` (the forecast printed before)
    gives the progress bar's ETA the prompt tokens still to send."""
    suite, backend, info, options = (
        prepared.suite,
        prepared.backend,
        prepared.info,
        prepared.options,
    )
    config, run_id = prepared.config, prepared.run_id
    run_dir = options.output or default_run_dir(suite, backend, run_id)
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
                    "tokenizer_exact": prepared.source.ctx.tokenizer.exact,
                    "details": info.details,
                },
                config=config.__dict__,
                scheduling=_scheduling(prepared),
            ),
        )
        record = suite.record()
        if record is not None:
            # A shard records the whole run's sample ids before sending: merge finds gaps with it.
            from longscope.run.merge import SHARD_KEY, put_meta

            put_meta(store, SHARD_KEY + run_id, record)
        # A length refusal stored as `error` before its wording was known is final: not re-sent.
        reclassify_overflows(store, run_id)
        done = store.done_keys(run_id)
        timing = await _execute(prepared, store, done, plan)
        # Scored under the same lock: no second writer between the last answer and the scores.
        result = score_run(run_dir, run_id) if score else None
    return RunResult(
        run_id=run_id,
        run_dir=run_dir,
        sent=timing.sent,
        skipped=timing.skipped,
        scores=result,
        timing=timing.rounded(),
    )


def _scheduling(prepared: PreparedRun) -> dict[str, Any]:
    """Return how requests were sent (for the determinism record of exports): batch-dependent
    numerics make answers depend on what else was in flight."""
    backend, options = prepared.backend, prepared.options
    return {
        "requests_in_flight": 1
        if options.serial
        else (options.concurrency or backend.max_concurrency),
        "grouped_by_prefix": not options.serial and backend.shares_prefill,
    }


@dataclass
class _Timing:
    """What one invocation spent making samples, and when its first request left."""

    sent: int = 0
    skipped: int = 0
    build_s: float = 0.0
    """Seconds spent making samples (in the builder thread, overlapping the requests)."""
    first_request_s: float | None = None
    """Seconds from the start of sending to the first request handed to the backend."""

    def rounded(self) -> dict[str, float]:
        out = {"build_s": round(self.build_s, 3)}
        if self.first_request_s is not None:
            out["first_request_s"] = round(self.first_request_s, 3)
        return out


class _GenerationWriter:
    """Buffers finished generations and commits them in one transaction per short interval.

    When the disk fills (the store gave its reserve back, or a commit failed even so) the writer
    says `full`: the run sends nothing more, and answers that could not be committed stay in
    `pending` and are tried again at each flush (space may be freed meanwhile).
    """

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.pending: list[tuple[str, int, Generation]] = []
        self.stored = 0
        self.failure: DiskFull | None = None
        self._last = time.perf_counter()

    @property
    def full(self) -> bool:
        """Whether the disk filled: nothing more is sent."""
        return self.failure is not None or self.store.low_on_space

    def add(self, sample_id: str, repeat: int, generation: Generation) -> None:
        self.pending.append((sample_id, repeat, generation))
        now = time.perf_counter()
        if len(self.pending) >= _COMMIT_ROWS or now - self._last >= _COMMIT_EVERY_S:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        if self.pending:
            try:
                self.store.put_generations(self.run_id, self.pending)
            except DiskFull as exc:
                self.failure = exc  # kept in memory; tried again at the next flush
            else:
                self.stored += len(self.pending)
                self.pending = []
        self._last = now if now is not None else time.perf_counter()

    def stopped(self, unsent: int) -> DiskFull:
        """Return the one-line error of a run the disk stopped (exit 3: answers are kept)."""
        lost = f", {len(self.pending)} could not be (no space even so)" if self.pending else ""
        done = (
            f"{self.stored} answer(s) received this time are stored{lost}; the run stopped with "
            f"{unsent} request(s) not sent"
        )
        return disk_full(self.store.path, exit_code=3, done=done)


async def _execute(
    prepared: PreparedRun, store: RunStore, done: set[tuple[str, int]], plan: Plan | None = None
) -> _Timing:
    backend, options, run_id = prepared.backend, prepared.options, prepared.run_id
    concurrency = 1 if options.serial else (options.concurrency or backend.max_concurrency)
    semaphore = asyncio.Semaphore(max(1, concurrency))
    total = prepared.to_send(done)
    progress = RunProgress(
        total=total,
        quiet=options.quiet,
        retries=lambda: backend.retries_done,
        eta=TokenEta(
            total,
            planned_tokens=None if plan is None else plan.prompt_tokens,
            decode_per_prefill=None
            if plan is None or plan.rates is None
            else plan.rates.prefill_tps / plan.rates.decode_tps,
        ),
    )
    bounded = plan is not None and plan.bounded

    def planned(sample: Sample, request: Request | None) -> int:
        # What the plan counted for this request: its cell's length (a forecast from the cells),
        # else the counted prompt of a request sent and nothing for one skipped.
        if bounded:
            return sample.length
        return 0 if request is None else request.prompt_tokens or sample.counted_prompt()

    timing = _Timing(build_s=prepared.made_s)
    started = time.perf_counter()
    writer = _GenerationWriter(store, run_id)
    grouped = not options.serial and backend.shares_prefill
    running: set[asyncio.Task[None]] = set()
    failed: list[BaseException] = []

    def finished(task: asyncio.Task[None]) -> None:
        running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            failed.append(task.exception())  # type: ignore[arg-type]

    def leaving(count: int) -> None:
        progress.sending()
        timing.sent += count
        if timing.first_request_s is None:
            timing.first_request_s = time.perf_counter() - started

    async def group(members: list[tuple[Sample, int, Request]]) -> None:
        # One prefill per shared prefix (a document's repeats): see models/groups.py. Each member
        # is stored as it arrives where the backend says when (a server that ignores `n` answers
        # a document's repeats one by one): a kill then loses at most the last `_COMMIT_EVERY_S`
        # of answers, not every answer of the groups in flight.
        stored: set[int] = set()

        def arrived(position: int, generation: Generation) -> None:
            stored.add(position)
            sample, repeat, request = members[position]
            writer.add(sample.id, repeat, generation)
            progress.advance(generation, planned(sample, request))

        requests = [m[2] for m in members]
        try:
            leaving(len(members))
            generations = await _group_with_deadline(backend, requests, arrived)
        finally:
            semaphore.release()
        for position, generation in enumerate(generations):
            if position not in stored:
                arrived(position, generation)

    async def start(job: Any) -> None:
        # Waiting for a free slot before making the next sample keeps memory to what is in flight.
        try:
            await semaphore.acquire()
        except BaseException:  # cancelled while waiting (Ctrl-C): the job never runs
            job.close()  # (unclosed, Python warns "coroutine ... was never awaited" at exit)
            raise
        if failed:
            job.close()
            raise failed[0]
        if writer.full:  # the disk filled: nothing more is sent, what is in flight is awaited
            job.close()
            semaphore.release()
            return
        if options.serial:
            await job
            return
        task = asyncio.create_task(job)
        running.add(task)
        task.add_done_callback(finished)

    # A quiet time (a slow model) must not keep finished answers uncommitted: flush on a timer too.
    async def flush_periodically() -> None:
        while True:
            await asyncio.sleep(_COMMIT_EVERY_S)
            writer.flush()

    flusher = asyncio.create_task(flush_periodically())
    units = _made_ahead(
        prepared.units(done), max(2, concurrency), timing, threaded=prepared.limit_per_cell
    )
    total = progress.total
    try:
        with progress:
            async for unit in units:
                if writer.full:
                    break
                try:
                    store.put_samples(
                        run_id, [m[1] for m in unit.members], [m[0] for m in unit.members]
                    )
                except DiskFull as exc:
                    writer.failure = exc
                    break
                ready: list[tuple[Sample, int, Request]] = []
                for _, sample, repeats in unit.members:
                    reason = prepared.skip_reason(sample)
                    for repeat in repeats:
                        if reason:
                            generation = Generation(text="", status="skipped", error=reason)
                            timing.skipped += 1
                            writer.add(sample.id, repeat, generation)
                            progress.advance(generation, planned(sample, None))
                        else:
                            ready.append((sample, repeat, prepared.request(sample, repeat)))
                if grouped:
                    for indices in group_by_prefix([m[2] for m in ready]):
                        await start(group([ready[i] for i in indices]))
                else:
                    for member in ready:
                        await start(group([member]))
            await asyncio.gather(*running)
            if failed:
                raise failed[0]
    finally:
        await units.aclose()
        for task in running:
            task.cancel()
        flusher.cancel()
        # What finished before an interruption (Ctrl-C, an exception) is kept.
        writer.flush()
    if writer.full:
        answered = sum(progress.statuses.values())
        raise writer.stopped(max(0, total - answered))
    return timing


async def _made_ahead(
    units: Iterator[Unit], ahead: int, timing: _Timing, *, threaded: bool
) -> AsyncIterator[Unit]:
    """Yield `units`, made in a worker thread up to `ahead` in advance of what is sent.

    Making a long sample takes tokenizer time: in a thread, the event loop keeps sending and
    receiving meanwhile, and the model's queue is fed as it frees. Samples made already (a suite
    without cells) are handed over without a turn of the loop between them: a backend that
    orders what it holds (longest prefill first, models/endpoints.py) sees them all at once.
    """
    if not threaded:
        for unit in units:
            yield unit
        return
    queue: asyncio.Queue[Unit | BaseException | None] = asyncio.Queue(maxsize=ahead)

    def pull() -> tuple[Unit | None, float]:
        began = time.perf_counter()
        unit = next(units, None)
        return unit, time.perf_counter() - began

    async def produce() -> None:
        try:
            while True:
                unit, took = await asyncio.to_thread(pull)
                timing.build_s += took
                await queue.put(unit)
                if unit is None:
                    return
        except Exception as exc:  # handed to the consumer, which raises it where it sends
            await queue.put(exc)

    producer = asyncio.create_task(produce())
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        producer.cancel()


def group_limit(backend: Backend, requests: Sequence[Request]) -> float | None:
    """Return the seconds the runner waits for a group before cutting it off, or None (no limit:
    a request without a task limit, or a backend that bounds its own deadline)."""
    if backend.bounds_own_deadline or any(not r.timeout_s for r in requests):
        return None
    # A backend that answers one request with several calls (the router) gets a limit per call.
    limit = max(((r.timeout_s or 0) + _TIMEOUT_GRACE_S) * backend.calls_for(r) for r in requests)
    # A backstop, not the task limit: a group's members may be answered one after another (a
    # server that ignores `n`, a backend's slots shared with other groups), each within its own.
    return limit * len(requests)


async def _group_with_deadline(
    backend: Backend, requests: Sequence[Request], on_result: OnResult
) -> list[Generation]:
    """Return the group's generations; past `group_limit`, every member not answered yet is a
    `timeout` (those answered were handed to `on_result` already)."""
    limit = group_limit(backend, requests)
    started = time.perf_counter()
    answered: dict[int, Generation] = {}

    def arrived(index: int, generation: Generation) -> None:
        answered[index] = generation
        on_result(index, generation)

    try:
        # A timeout scope, not wait_for: no extra task per group.
        async with asyncio.timeout(limit):
            return await backend.generate_group(requests, arrived)
    except TimeoutError:
        waited = time.perf_counter() - started
        return [
            answered.get(i)
            or Generation(
                text="",
                status="timeout",
                latency_s=waited,
                error=f"no answer within {limit:.0f}s (task limit {r.timeout_s:.0f}s)",
            )
            for i, r in enumerate(requests)
        ]


async def _generate_with_deadline(backend: Backend, request: Request) -> Generation:
    """Return one request's generation under the runner's deadline (a group of one)."""
    return (await _group_with_deadline(backend, [request], lambda _i, _g: None))[0]


def run(suite: Suite, backend: Backend, options: RunOptions | None = None) -> RunResult:
    """Run `suite` on `backend` (blocking) and close the backend afterwards."""

    async def main() -> RunResult:
        try:
            return await run_async(suite, backend, options)
        finally:
            await backend.aclose()

    return asyncio.run(main())
