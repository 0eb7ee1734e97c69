"""The hf engine: one thread owns the device and runs a continuous batch.

Groups of requests queue as jobs; the engine prefills a job's shared prefix once, in chunks
(bounded activation memory at 128K and beyond), copies the cache per member, and adds the
members' rows to the batch that is decoding, between whose steps the prefill's chunks run. What
fits is decided by the memory plan (`models/memory_plan.py`) against the device's free bytes; a
request that cannot fit is skipped with the reason, and an out-of-memory error while running
skips the units involved and the engine goes on.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import threading
import time
from collections.abc import Generator
from typing import Any

from longscope.models.hf.admission import JOIN_DOES_NOT_PAY, NO_ROWS_FREE, Admission
from longscope.models.hf.decoder import StaticDecoder, graph_unsupported
from longscope.models.hf.eager import Sampler, choose, eager_decode
from longscope.models.hf.kernels import KernelSwitches, decode_kernels, import_torch
from longscope.models.hf.members import (
    Answers,
    Job,
    Member,
    Row,
    Unit,
    drain,
    force_next,
    skipped,
)
from longscope.models.hf.prefill import PhaseClock, prefill_steps, release
from longscope.models.memory_plan import (
    PREFILL_CHUNK_MAX,
    ModelShape,
    decode_capacity,
    insufficient_vram,
)


class Engine(Admission):
    """A continuous-batching scheduler over one model on one device.

    Jobs queue; the engine thread prefills each (one prefill per shared prefix) and decodes its
    members in one batch with the jobs already decoding, where the memory plan and the bytes a
    step reads allow (continuous batching over a fixed-capacity cache, one decode slot per row).
    """

    def __init__(
        self,
        name: str,
        *,
        prefill_chunk: int | None = None,
        max_batch: int = 32,
        vram_gib: float | None = None,
        cuda_graph: bool = True,
    ) -> None:
        self.name = name
        self.prefill_chunk = max(1, prefill_chunk) if prefill_chunk else None
        """Tokens per prefill chunk; None: the memory plan picks the largest multiple of 1024 that
        fits, up to `PREFILL_CHUNK_MAX`."""
        self.max_batch = max(1, max_batch)
        self.vram_gib = vram_gib
        """Device memory longscope may hold in all, weights, caches and activations included (a
        share of a card, e.g. 40 on an 80 GB card shared with another job); None: the card's."""
        self.cuda_graph = cuda_graph
        self.kernels = KernelSwitches()
        """This engine's fused ops and attention kernels (`KernelSwitches`)."""
        self.last_chunk = self.prefill_chunk or PREFILL_CHUNK_MAX
        """The prefill chunk of the last plan; the batch it planned runs with it."""
        self.last_plan: Any = None
        self.last_prefix = 0
        self.last_decode: dict[str, Any] = {}
        """How the last batch decoded: path ("graph", "static", "eager"), why, capture time."""
        self.stats: dict[str, Any] = {
            "units": 0,
            "joined": 0,
            "steps": 0,
            "row_steps": 0,
            "steps_in_prefill": 0,
            "longest_wait_s": 0.0,
            "prefill_s": 0.0,
            "captures": 0,
            "capture_ms": 0.0,
            "rebuilds": 0,
            "rebuild_ms": 0.0,
            "parks": 0,
            "replaces": 0,
        }
        """Units prefilled, units that joined a running batch, decode steps, rows over all
        steps, steps taken between another unit's prefill chunks and the longest a running
        batch waited between two steps then, the last unit's prefill seconds; graph captures
        and cache rebuilds (joins, leaves) of the batches ended, with their host time, and their
        parked units and joins into parked rows' places."""
        self.model: Any = None
        self.shape: ModelShape | None = None
        self.answers: Answers | None = None
        self._pad = 0
        self._cache_kw = "past_key_values"
        self._wake = threading.Condition()
        self._jobs: list[Job] = []
        self._thread: threading.Thread | None = None
        self._closing = False
        self._changed = False
        self._batch: Any = None
        self._rows: list[Row] = []
        self._tokens: Any = None
        self._clock: Any = None
        self._unstepped = 0
        """Prompt tokens admitted since the running batch's last step."""

    def attach(self, model: Any, tokenizer: Any, eos: frozenset[int]) -> None:
        """Run `model` (prepared, in eval mode) with `tokenizer`; `eos` ends an answer."""
        self.model = model
        self.shape = ModelShape.from_config(model.config.to_dict(), str(model.dtype))
        self.answers = Answers(tokenizer, eos)
        self._pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        # transformers renamed `past_key_values` to `cache` (5.2x warns about the old name).
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    # -- the queue ---------------------------------------------------------------------------

    def submit(self, members: list[Member]) -> Job:
        """Queue one group's members as a job (starting the engine thread if needed)."""
        job = Job(members)
        with self._wake:
            if self._closing:
                raise RuntimeError(f"{self.name} is closed")
            self._jobs.append(job)
            self._changed = True
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="hf-engine", daemon=True)
                self._thread.start()
            self._wake.notify()
        return job

    def close(self) -> None:
        """Stop the engine thread once the running batch is done; queued jobs fail."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        with self._wake:
            self._thread, self._closing = None, False

    def _serve(self) -> None:
        """Admit jobs and decode the running batch until closed (the engine thread)."""
        torch, _ = import_torch()
        device = getattr(self.model, "device", None)
        if device is not None and device.type == "cuda":
            # The current device is per thread: graphs, events and streams on this engine's.
            torch.cuda.set_device(device)
        with torch.inference_mode():
            while True:
                with self._wake:
                    while not self._closing and not self._jobs and not self._rows:
                        self._wake.wait()
                    if self._closing and not self._rows:
                        for job in self._jobs:
                            job.fail(RuntimeError(f"{self.name} closed"))
                        self._jobs.clear()
                        return
                job = self._jobs[0] if self._jobs else None
                try:
                    admitted = job is not None and self._admit(job)
                except Exception as exc:  # handed to every caller waiting on it
                    self._fail_running(exc, job)
                    continue
                try:
                    if self._rows and admitted and self._jobs and self._unstepped < self.last_chunk:
                        # Admit the next queued job before stepping, while the prompts admitted
                        # since the last step add up to under one prefill chunk (the running
                        # rows wait no longer than a chunk, as between a long prompt's chunks):
                        # requests handed over together join in one batch change (one graph
                        # capture, no step per join). 64 single requests of 8K-token answers
                        # took 252 extra steps and 127 captures joining one step apart.
                        continue
                    if self._rows:
                        self._decode_once()
                    elif job is not None and not admitted:
                        raise RuntimeError("the engine admitted nothing and decodes nothing")
                except Exception as exc:
                    self._fail_running(exc, None)

    def _admit(self, job: Job) -> bool:
        """Start the next part of `job` if it can run now; return whether anything changed."""
        if not job.pending or job.future.cancelled():
            # Admitted whole (its rows decode on), or its caller is gone.
            job.pending = []
            with self._wake:
                self._jobs.remove(job)
            return True
        why = self._static_unsupported()
        if why and self._rows:
            return False
        if not why and self._rows and not self._changed:
            return False  # nothing freed or arrived since the last try
        take, reason = self._into_parked(job) if self._rows and not why else ([], "")
        if not take:
            # Parked rows leave at the join's rebuild: the plan counts the live ones.
            live = sum(not r.parked for r in self._rows)
            running = (live, self._batch.capacity) if self._rows else (0, 0)
            take, reason = self.next_batch(job.members, job.pending, running)
        if not take:
            if self._rows and reason not in (NO_ROWS_FREE, JOIN_DOES_NOT_PAY) and self._compact():
                return True  # the parked rows' memory is free now: try again
            if self._rows:
                self._changed = False
                return False  # wait for the running batch to free rows and memory
            for index in job.pending:
                job.put(index, skipped(job.members[index], reason))
            job.pending = []
            return True
        job.pending = [i for i in job.pending if i not in take]
        unit = Unit(job, take, chunk=self.last_chunk, plan=self.last_plan, prefix=self.last_prefix)
        if why:
            self._run_eager(unit, why)
        else:
            self._join(unit)
        return True

    def _into_parked(self, job: Job) -> tuple[list[int], str]:
        """Return `job`'s pending members when they can take parked rows' places in the running
        batch (`StaticDecoder.replace`), planned as a prefill alone (nothing is merged), else none."""
        parked = sum(r.parked for r in self._rows)
        if not parked or len(job.pending) > parked:
            return [], ""
        members = [job.members[i] for i in job.pending]
        length = max(len(m.ids) for m in members)
        if decode_capacity(length + max(m.request.config.max_tokens for m in members)) > (
            self._batch.capacity
        ):
            return [], ""
        take, reason = self.next_batch(job.members, job.pending)
        return (take, reason) if take == job.pending else ([], "")

    def _static_unsupported(self) -> str:
        """Return why units decode with the eager loop ("" when the graph step runs them)."""
        if not self.cuda_graph:
            return "cuda_graph off"
        return graph_unsupported(self.model)

    def _prefill_steps(self, unit: Unit) -> Generator[None, None, tuple]:
        return prefill_steps(self.model, self._cache_kw, self._pad, self.kernels, unit)

    # -- running units -----------------------------------------------------------------------

    def _run_eager(self, unit: Unit, why: str) -> None:
        """Run a unit alone with transformers' forward as the decode step (models the graph
        decode does not cover, `cuda_graph=0`)."""
        torch, _ = import_torch()
        assert self.answers is not None
        batch = unit.members
        started = unit.start()
        clock = PhaseClock(torch, self.model.device)
        try:
            cache, logits, mask, positions, _length = drain(self._prefill_steps(unit))
            prefill_s = clock.lap()
            with decode_kernels():
                steps = eager_decode(
                    self.model,
                    self._cache_kw,
                    batch,
                    cache,
                    logits,
                    mask,
                    positions,
                    self.answers.accept,
                )
            del cache, logits
            self.last_decode = {"path": "eager", "why": why, "steps": steps}
            self.last_decode.update(prefill_s=prefill_s, decode_s=clock.lap())
        except torch.OutOfMemoryError:
            self._out_of_memory([unit])
            return
        latency = time.perf_counter() - started
        for member, index in zip(batch, unit.indices, strict=True):
            unit.job.put(index, self.answers.finish(member, latency))

    def _join(self, unit: Unit) -> None:
        """Prefill a unit and add its rows to the running batch (or start one with them).

        The running batch takes one decode step after each prefill chunk, so its answers go on
        while a long prompt prefills; its rows wait at most one chunk.
        """
        torch, _ = import_torch()
        unit.start()
        clock = PhaseClock(torch, self.model.device)
        stepped = time.perf_counter()
        # A prefill that with the prompts admitted since the last step stays under one chunk
        # runs through: the running rows wait less than a chunk without a step in between.
        tokens = unit.prefix + sum(len(m.ids) - unit.prefix for m in unit.members)
        through = self._unstepped + tokens < unit.chunk
        try:
            prefill = self._prefill_steps(unit)
            while True:
                try:
                    next(prefill)
                except StopIteration as done:
                    cache, logits, mask, positions, length = done.value
                    break
                if self._rows and not through:
                    # Its tokens reach the host after the chunk queued before it: from one
                    # step's tokens to the next is how long the running rows wait. Its batch
                    # changes when this prefill ends: no graph is captured for it.
                    self._decode_once(capture=False)
                    self.stats["steps_in_prefill"] += 1
                    now = time.perf_counter()
                    waited = max(self.stats["longest_wait_s"], round(now - stepped, 3))
                    self.stats["longest_wait_s"] = waited
                    stepped = now
            prefill_s = clock.lap()
            self._unstepped += length
            capacity = decode_capacity(length + unit.longest)
            decoder = StaticDecoder(
                torch, self.model, cache, length, capacity, mask, positions, self.kernels
            )
            del cache
        except torch.OutOfMemoryError:
            self._out_of_memory([unit])
            return
        rows = [
            Row(unit, m, i, Sampler(torch, m.request, decoder.device), length)
            for m, i in zip(unit.members, unit.indices, strict=True)
        ]
        first = choose(torch, logits, [r.sampler for r in rows])
        del logits
        self.stats["units"] += 1
        self.stats["prefill_s"] = prefill_s
        if not self._rows:
            self._batch, self._rows, self._tokens = decoder, rows, first
            self._clock = clock
            clock.lap()  # the decode phase starts here (the fixed cache is filled)
            return
        self.stats["joined"] += 1
        places = [i for i, r in enumerate(self._rows) if r.parked][: len(rows)]
        if len(places) == len(rows) and capacity <= self._batch.capacity:
            try:
                self._batch.replace(places, decoder)
            except torch.OutOfMemoryError:
                decoder.close()
                self._out_of_memory([*self._live_units(), unit])
                return
            for place, row in zip(places, rows, strict=True):
                self._rows[place] = row
            self._tokens[places] = first
            return
        try:
            capacity = max(capacity, self._batch.capacity)
            keep = [i for i, r in enumerate(self._rows) if not r.parked]
            self._batch.rebuild(keep, capacity, joining=decoder)
        except torch.OutOfMemoryError:
            decoder.close()
            self._out_of_memory([*self._live_units(), unit])
            return
        self._rows = [*(self._rows[i] for i in keep), *rows]
        self._tokens = torch.cat([self._tokens[keep], first])
        release(torch)

    def _decode_once(self, capture: bool = True) -> None:
        """Feed the chosen tokens and launch the next step before reading them, so the device
        never waits on the host's bookkeeping (stop strings, EOS); finish units that are done."""
        torch, _ = import_torch()
        assert self.answers is not None
        batch, rows, tokens = self._batch, self._rows, self._tokens
        self._unstepped = 0
        cuda = batch.device.type == "cuda"
        host = torch.empty(len(rows), dtype=torch.long, pin_memory=cuda)
        host.copy_(tokens, non_blocking=cuda)
        ready = None
        if cuda:
            ready = torch.cuda.Event()
            ready.record()
        following = None
        # A row whose token now is its last by length needs no step after it.
        if any(not r.member.status and len(r.member.generated) + 1 < r.max_tokens for r in rows):
            try:
                following = choose(torch, batch.step(tokens, capture), [r.sampler for r in rows])
            except torch.OutOfMemoryError:
                self._out_of_memory(self._live_units())
                return
            self.stats["steps"] += 1
            self.stats["row_steps"] += sum(not r.parked for r in rows)
        if ready is not None:
            ready.synchronize()
        now = time.perf_counter()
        for row, token in zip(rows, host.tolist(), strict=True):
            if not row.member.status:
                self.answers.accept(row.member, token, now)
                if not row.member.status and following is None:
                    row.member.status = "length"
        force_next(following, [r.member for r in rows])
        self._tokens = following
        done = [u for u in self._live_units() if all(r.member.status for r in rows if r.unit is u)]
        if not done:
            return
        keep = [i for i, r in enumerate(rows) if r.unit not in done and not r.parked]
        self._changed = True
        if not keep:
            # Before the callers wake: they may read how the batch decoded (`last_decode`).
            self._end_batch()
        for row in rows:
            if row.unit in done:
                generation = self.answers.finish(row.member, now - row.unit.started)
                row.unit.job.put(row.index, generation)
        if not keep:
            return
        # The rows stay, parked: the captured graph goes on (a rebuild and a capture per leave
        # left the device idle 40-60 ms each on an H200) and a request joining may take their
        # places; a job whose plan needs their memory drops them first (`_admit`).
        leaving = [i for i, r in enumerate(rows) if r.unit in done]
        for index in leaving:
            rows[index].parked = True
            rows[index].sampler.generator = None  # greedy: an all-greedy batch picks in one argmax
        if self._parks(batch):
            batch.park(leaving)
        else:
            self._compact(copy=False)

    def _parks(self, batch: StaticDecoder) -> bool:
        """Return whether rows leaving `batch` now stay in it, parked (`KernelSwitches.park_rows`)."""
        rule = self.kernels.park_rows
        return rule == "always" or (
            rule == "auto" and (batch.kernels == "triton" or bool(self._jobs))
        )

    def _live_units(self) -> list[Unit]:
        """Return the running batch's units not yet answered (parked rows' units are)."""
        return list({r.unit: None for r in self._rows if not r.parked})

    def _compact(self, copy: bool = True) -> bool:
        """Drop the running batch's parked rows (a cache rebuild; `copy`: never as a view of the
        old cache, so that their memory goes free); return whether it had any."""
        if not any(r.parked for r in self._rows):
            return False
        torch, _ = import_torch()
        keep = [i for i, r in enumerate(self._rows) if not r.parked]
        kept_rows = [self._rows[i] for i in keep]
        capacity = decode_capacity(max(r.length + r.max_tokens for r in kept_rows))
        try:
            self._batch.rebuild(keep, capacity, copy=copy)
        except torch.OutOfMemoryError:
            self._out_of_memory(self._live_units())
            return True
        self._rows = kept_rows
        self._tokens = self._tokens[keep]
        self._changed = True
        release(torch)
        return True

    def _end_batch(self) -> None:
        torch, _ = import_torch()
        batch = self._batch
        self.last_decode = batch.stats() if batch is not None else {}
        for key in ("captures", "capture_ms", "rebuilds", "rebuild_ms", "parks", "replaces"):
            self.stats[key] += self.last_decode.get(key, 0)
        if self._clock is not None:
            self.last_decode.update(prefill_s=self.stats["prefill_s"])
            self.last_decode.update(decode_s=self._clock.lap())
        if batch is not None:
            batch.close()
        self._batch, self._rows, self._tokens, self._clock = None, [], None, None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _out_of_memory(self, units: list[Unit]) -> None:
        """Record `units` skipped after an out-of-memory error, free, and go on."""
        torch, _ = import_torch()
        running = {r.unit for r in self._rows}
        if running & set(units):
            self._end_batch()
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        free = self.free_bytes()
        for unit in units:
            plan = unit.plan
            needed = plan.needed_bytes if plan is not None else 0
            reason = (
                insufficient_vram(needed, unit.tokens, len(unit.members), free)
                + " (out of memory while running; the plan said it fits)"
            )
            for member, index in zip(unit.members, unit.indices, strict=True):
                unit.job.put(index, skipped(member, reason))
        self._changed = True

    def _fail_running(self, exc: BaseException, job: Job | None) -> None:
        """Hand an unexpected error to every caller whose requests were running or starting."""
        jobs = {r.unit.job: None for r in self._rows if not r.parked}
        if job is not None:
            jobs[job] = None
            job.pending = []
        with contextlib.suppress(Exception):
            self._end_batch()
        self._batch, self._rows, self._tokens = None, [], None
        with self._wake:
            for failed in jobs:
                failed.fail(exc)
                if failed in self._jobs:
                    self._jobs.remove(failed)
