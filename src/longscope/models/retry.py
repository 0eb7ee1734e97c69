"""One retry policy for every backend: exponential backoff with full jitter, within the request's
own deadline.

`RetryPolicy` (declared in models/base.py) says when to try again and how long to wait;
`with_retries(backend)` applies it around any backend that does not retry by itself (llama.cpp,
hf, the scripted backend, a plug-in backend), for single requests and groups alike. A backend
that retries inside its transport (the OpenAI client: HTTP statuses, Retry-After) says so with
`retries_itself` and keeps its own loop, with this policy's pauses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace

from longscope.models.base import RETRIED, Backend, Forwarding, OnResult, RetryPolicy
from longscope.types import Generation, Request


class Retrying(Forwarding):
    """A backend with the retry policy around its `generate` and `generate_group`; every other
    declared member is the inner backend's."""

    retries_itself = True  # type: ignore[assignment]
    retries_done = 0  # type: ignore[assignment]

    def __init__(self, backend: Backend, policy: RetryPolicy | None = None) -> None:
        super().__init__(backend)
        self.policy = policy or backend.retry_policy
        self.retries_done = 0

    @property  # type: ignore[override]
    def retry_policy(self) -> RetryPolicy:
        return self.policy

    async def generate(self, request: Request) -> Generation:
        started = time.perf_counter()
        attempt = 0
        while True:
            generation = await self.inner.generate(request)
            if not self.policy.retry(generation, attempt):
                return _noted(generation, attempt)
            pause = self.policy.delay(attempt)
            if request.timeout_s is not None:
                left = request.timeout_s - (time.perf_counter() - started)
                if pause >= left:
                    return _noted(generation, attempt)
            await asyncio.sleep(pause)
            attempt += 1
            self.retries_done += 1

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        """Return one generation per request: the members whose outcome is worth another attempt
        are asked again together (still one group: one shared prefill), within the shortest
        deadline among them. A member is handed to `on_result` once its outcome is final."""
        started = time.perf_counter()
        out: list[Generation | None] = [None] * len(requests)
        pending = list(range(len(requests)))
        attempt = 0

        def final(index: int, generation: Generation) -> None:
            out[index] = _noted(generation, attempt)
            if on_result is not None:
                on_result(index, out[index])  # type: ignore[arg-type]

        while pending:
            asked = list(pending)

            def arrived(
                local: int, generation: Generation, asked: list[int] = asked, attempt: int = attempt
            ) -> None:
                # A final outcome is stored as it comes; one to retry waits for the next round.
                if not self.policy.retry(generation, attempt):
                    final(asked[local], generation)

            generations = await self.inner.generate_group([requests[i] for i in asked], arrived)
            pending = []
            for local, generation in enumerate(generations):
                index = asked[local]
                if out[index] is not None:
                    continue
                if self.policy.retry(generation, attempt):
                    out[index] = generation
                    pending.append(index)
                else:
                    final(index, generation)
            if not pending:
                break
            pause = self.policy.delay(attempt)
            limits = [requests[i].timeout_s for i in pending if requests[i].timeout_s is not None]
            if limits and pause >= min(limits) - (time.perf_counter() - started):
                for index in pending:
                    final(index, out[index])  # type: ignore[arg-type]
                break
            await asyncio.sleep(pause)
            attempt += 1
            self.retries_done += len(pending)
            for index in pending:
                out[index] = None
        return [g for g in out if g is not None]


def _noted(generation: Generation, retries: int) -> Generation:
    if not retries or generation.status not in RETRIED:
        return generation
    return replace(generation, error=f"gave up after {retries + 1} attempts: {generation.error}")


def with_retries(backend: Backend, policy: RetryPolicy | None = None) -> Backend:
    """Return `backend` with the retry policy around it (its own `retry_policy` unless `policy`
    is given), unless it retries by itself."""
    if backend.retries_itself:
        return backend
    return Retrying(backend, policy or backend.retry_policy)


__all__ = ["RETRIED", "RetryPolicy", "Retrying", "with_retries"]
