"""One hf model on several devices of a host (`-M devices=all|0,1,...`): one engine per device,
each in a worker process of its own (`models/hf/workers.py`).

Each device has its own `HFBackend` in its own process (weights loaded once per device, all devices
in parallel; no GIL or torch switch shared between devices) and so its own memory plan. Which
document goes where is `models/flow.py`'s policy, the one several endpoints use: longest prefill
first, prefix affinity (a document's repeats and modes, which travel as one group, stay on one
device), the device with the fewest prompt tokens outstanding otherwise, a cap on what each device
holds queued. The async glue is `MultiEndpointBackend`'s.

What may move to another device, and what may not:
- a request skipped as `insufficient_vram` by a device goes once to the largest device not yet
  tried when that one is larger; a request that fits no device keeps the largest device's numbers;
- a request skipped after an out-of-memory error while running goes to a device not yet tried;
  a device with `OOM_DOWN_AFTER` such groups in a row is taken out;
- a CUDA error, an engine that was closed, or a worker process that ended (killed, crashed) takes
  the device out; the members of its jobs that have no generation yet go to the others, those
  that finished keep theirs (nothing is stored twice).
When every device is out, what is left ends as `error` (stored; a resumed run sends it again).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend, ModelInfo
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.groups import prefix_key
from longscope.models.hf.workers import (
    CLOSE_GRACE_S,
    END_GRACE_S,
    DeviceFailure,
    WorkerDevice,
    is_device_error,
    start_server,
)
from longscope.models.memory_plan import GIB
from longscope.text.tokenizers import Tokenizer
from longscope.types import Generation, Request

OOM_DOWN_AFTER = 2
"""Groups in a row that ran out of memory on a device (the plan said they fit) before it is out."""
_OOM_MARK = "out of memory while running"


def parse_devices(spec: str, cuda_count: int) -> list[str]:
    """Return the torch device of each engine `-M devices=` names.

    `all` is every visible CUDA device; otherwise a comma list of CUDA indices, where `cpu` adds
    one CPU engine (several `cpu` give several engines on the host, as the tests run them).
    """
    text = spec.strip().lower()
    if text == "all":
        if cuda_count < 1:
            raise UsageError(
                "-M devices=all: no CUDA device is visible here; name the devices "
                "(e.g. devices=0,1) or use cpu engines (devices=cpu,cpu)"
            )
        return [f"cuda:{i}" for i in range(cuda_count)]
    names: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "cpu":
            names.append("cpu")
            continue
        # ASCII digits only: str.isdigit() also takes '²' or '٣', which int() then refuses.
        if not (part.isascii() and part.isdigit()):
            raise UsageError(
                f"bad -M devices={spec[:40]!r}: give all, or CUDA device indices such as 0,1 "
                "(cpu for a CPU engine)"
            )
        index = int(part)
        if index >= cuda_count:
            seen = f"0-{cuda_count - 1}" if cuda_count else "none"
            raise UsageError(
                f"-M devices: no CUDA device {index} here (visible: {seen}); "
                "CUDA_VISIBLE_DEVICES renumbers them from 0"
            )
        if f"cuda:{index}" in names:
            raise UsageError(f"-M devices: device {index} is given twice; give each device once")
        names.append(f"cuda:{index}")
    return names


def device_labels(devices: Sequence[str]) -> list[str]:
    """Return a unique label per engine: the device, numbered where one device runs several."""
    labels = []
    for i, device in enumerate(devices):
        labels.append(
            f"{device}#{devices[:i].count(device)}" if devices.count(device) > 1 else device
        )
    return labels


class DeviceSet(MultiEndpointBackend):
    """One hf model with an engine per device, fed by the endpoints' flow-control policy."""

    bounds_own_deadline = True
    """The engines time each member from its admission, as one `HFBackend` does."""

    shares_prefill = True
    """A document's requests go to one engine together, which prefills their context once."""

    def __init__(
        self,
        workers: Sequence[WorkerDevice],
        tokenizer: Callable[[], Tokenizer],
        *,
        token_cap: int | None = None,
        oom_down_after: int = OOM_DOWN_AFTER,
    ) -> None:
        # Failures are judged here (device errors, out of memory), not by the request streaks
        # that bench an endpoint.
        labels = [w.label for w in workers]
        super().__init__(workers, labels=labels, token_cap=token_cap, bench_after=1 << 30)  # type: ignore[arg-type]
        self.devices: list[WorkerDevice] = list(workers)
        self._load_tokenizer = tokenizer
        self._tokenizer: Tokenizer | None = None
        self.oom_down_after = oom_down_after
        self.capacity: list[int] = [0] * len(workers)
        """Each device's free bytes once its weights are loaded (how large it is for a request)."""
        self._oom_streak = [0] * len(workers)
        self._busy = [0.0] * len(workers)
        self._busy_since: list[float | None] = [None] * len(workers)
        self._jobs = [0] * len(workers)
        self._first = [0.0] * len(workers)
        self._last = [0.0] * len(workers)
        self._closing: list[asyncio.Task[None]] = []
        self.moved = 0
        """Groups sent again to another device (a device out, out of memory, too small)."""
        self.taken_out: dict[int, str] = {}
        """Devices taken out, with why (kept: later failures of their queued jobs say less)."""

    @classmethod
    def from_options(
        cls,
        name: str,
        options: dict[str, Any],
        devices: str,
        build: Callable[[str, dict[str, Any]], Backend],
        tokenizer: Callable[[str], Tokenizer],
    ) -> DeviceSet:
        """Return one engine per device `devices` names, each built in its worker process by
        `build` (the backend's own `from_options`) from the same `-M` options; `tokenizer(name)`
        loads the tokenizer alone, here."""
        from longscope.models.hf.kernels import import_torch

        if options.get("device"):
            raise UsageError("-M device and -M devices exclude each other: give one of them")
        start_server()  # the workers' imports overlap this process's own
        torch, _ = import_torch()
        cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
        names = parse_devices(devices, cuda)
        workers = [
            WorkerDevice(
                functools.partial(build, name, {**options, "device": d, "devices": None}),
                label,
                name=f"hf/{name}",
            )
            for d, label in zip(names, device_labels(names), strict=True)
        ]
        return cls(workers, functools.partial(tokenizer, name))

    @property
    def retries_done(self) -> int:
        """Return the groups sent again to another device."""
        return self.moved

    async def _load_info(self) -> ModelInfo:
        info = await super()._load_info()
        assert self.dispatcher is not None
        free = []
        for i, worker in enumerate(self.devices):
            usable = not self.dispatcher.endpoints[i].down and worker.ready
            self.capacity[i] = worker.free_bytes() if usable else 0
            free.append(round(self.capacity[i] / GIB, 2))
        self._info = replace(
            info,
            details={
                **info.details,
                "device": ",".join(self.labels),
                "devices": self.labels,
                "device_free_gib": free,
                "free_gib": max(free),
            },
        )
        return self._info

    def tokenizer(self) -> Tokenizer:
        """Return the model's tokenizer, loaded here in the parent (counting prompts' tokens)."""
        if self._tokenizer is None:
            self._tokenizer = self._load_tokenizer()
        return self._tokenizer

    async def generate(self, request: Request) -> Generation:
        return (await self.generate_group([request]))[0]

    async def generate_group(
        self,
        requests: Sequence[Request],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[Generation]:
        """Return one generation per request: the group runs on one device, and moves (its
        unfinished members only) when that device fails or cannot hold it."""
        if self.dispatcher is None:
            await self.info()
        dispatcher = self.dispatcher
        assert dispatcher is not None
        key = prefix_key(requests[0])
        cost = max(r.prompt_tokens or max(1, len(r.text) // 4) for r in requests)
        results: list[Generation | None] = [None] * len(requests)
        todo = list(range(len(requests)))
        tried: list[str] = []
        why = ""
        while todo:
            ticket = dispatcher.submit(key, cost)
            index = await self._acquire(ticket)
            if index is None:
                why = "every device is out"
                break
            tried.append(self.labels[index])
            for i in todo:
                self.served.setdefault((requests[i].sample_id, requests[i].repeat), []).append(
                    self.labels[index]
                )
            try:
                finished, failure = await self._run_on(index, [requests[i] for i in todo])
            except BaseException:  # cancelled, or the request's own error: the slot is free again
                dispatcher.finish(ticket, index, time.perf_counter(), failed=False)
                self._pump()
                raise
            again = []
            skip: Generation | None = None
            for i, generation in zip(todo, finished, strict=True):
                if generation is None:
                    again.append(i)
                elif self._worth_moving(index, generation, tried):
                    skip = generation
                    again.append(i)
                    why = generation.error
                else:
                    results[i] = generation
                    if on_result is not None:
                        on_result(i, generation)
            done = [g for g in finished if g is not None]
            dispatcher.finish(
                ticket,
                index,
                time.perf_counter(),
                failed=failure is not None or bool(again),
                prompt_tokens=sum(g.prompt_tokens for g in done),
                completion_tokens=sum(g.completion_tokens for g in done),
                latency_s=max((g.latency_s for g in done), default=0.0),
                error=str(failure or why)[:500],
            )
            if failure is not None:
                why = f"{self.labels[index]} failed: {failure}"
                # A failed device's running batch failed with it: nothing to wait for.
                self._take_out(index, why, grace_s=END_GRACE_S)
            elif any(g is not None and _OOM_MARK in g.error for g in finished):
                self._oom_streak[index] += 1
                if self._oom_streak[index] >= self.oom_down_after:
                    self._take_out(index, f"out of memory {self._oom_streak[index]} times in a row")
            else:
                self._oom_streak[index] = 0
            self._pump()
            if again:
                self.moved += 1
                target = self._elsewhere(index, skip, tried) if skip is not None else None
                if target is not None:
                    dispatcher.pin(key, target)  # where it may fit, not the least loaded
            todo = again
        for i in todo:
            where = ", ".join(dict.fromkeys(tried)) or "none"
            results[i] = Generation(
                text="", status="error", error=f"failed on device(s) {where}: {why}"[:2000]
            )
            if on_result is not None:
                on_result(i, results[i])  # type: ignore[arg-type]
        return [g for g in results if g is not None]

    async def _run_on(
        self, index: int, requests: list[Request]
    ) -> tuple[list[Generation | None], BaseException | None]:
        """Run `requests` as one job on device `index`; return what finished (None where nothing
        did) and the device's failure, if it failed."""
        state = self.dispatcher.endpoints[index]  # type: ignore[union-attr]
        if state.down:
            return [None] * len(requests), RuntimeError(state.last_error or "the device is out")
        self._started(index)
        try:
            job = self.devices[index].submit(requests)
        except DeviceFailure as exc:  # its worker is gone
            self._ended(index)
            return [None] * len(requests), exc
        try:
            await asyncio.wrap_future(job.future)
            failure = None
        except Exception as exc:
            if not (state.down or is_device_error(exc)):
                raise  # the request's own error: it would fail the same on any device
            failure = exc
        finally:
            self._ended(index)
        return list(job.results), failure

    def _worth_moving(self, index: int, generation: Generation, tried: list[str]) -> bool:
        """Return whether a skip by device `index` may succeed on another device."""
        if generation.status != "skipped" or not generation.error.startswith("insufficient_vram"):
            return False
        return self._elsewhere(index, generation, tried) is not None

    def _elsewhere(self, index: int, generation: Generation, tried: list[str]) -> int | None:
        """Return the device a skipped group goes to next, or None when none may hold it."""
        dispatcher = self.dispatcher
        assert dispatcher is not None
        now = time.perf_counter()
        untried = [
            i
            for i, state in enumerate(dispatcher.endpoints)
            if state.usable(now) and self.labels[i] not in tried
        ]
        if not untried:
            return None
        largest = max(untried, key=lambda i: (self.capacity[i], -i))
        if _OOM_MARK in generation.error:
            return largest  # the plan said it fits: running it elsewhere may work
        return largest if self.capacity[largest] > self.capacity[index] else None

    def _take_out(self, index: int, reason: str, grace_s: float = CLOSE_GRACE_S) -> None:
        """Give device `index` no more work and close its worker; its queued jobs fail and move
        to the others."""
        state = self.dispatcher.endpoints[index]  # type: ignore[union-attr]
        if state.down:
            return
        state.down, state.last_error = True, reason[:500]
        self.taken_out[index] = state.last_error
        worker = self.devices[index]
        self._closing.append(asyncio.create_task(asyncio.to_thread(worker.close, grace_s)))

    def _started(self, index: int) -> None:
        now = time.perf_counter()
        if self._jobs[index] == 0:
            self._busy_since[index] = now
        if not self._first[index]:
            self._first[index] = now
        self._jobs[index] += 1

    def _ended(self, index: int) -> None:
        now = time.perf_counter()
        self._jobs[index] -= 1
        if self._jobs[index] == 0 and self._busy_since[index] is not None:
            self._busy[index] += now - self._busy_since[index]  # type: ignore[operator]
            self._busy_since[index] = None
        self._last[index] = now

    def stats(self) -> list[dict[str, Any]]:
        """Return per-device counts, tokens and health, with each device's busy share of the
        run (from the first device's first job to the last one's end) and its idle tail."""
        rows = super().stats()
        for index, reason in self.taken_out.items():
            rows[index]["last_error"] = reason
        starts = [t for t in self._first if t]
        if not starts:
            return rows
        begin, end = min(starts), max(self._last)
        span = max(end - begin, 1e-9)
        for i, row in enumerate(rows):
            row["busy_s"] = round(self._busy[i], 3)
            row["busy_share"] = round(self._busy[i] / span, 4)
            row["idle_tail_s"] = round(end - self._last[i], 3) if self._last[i] else round(span, 3)
            row["span_s"] = round(span, 3)
        return rows

    async def aclose(self) -> None:
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        await super().aclose()
