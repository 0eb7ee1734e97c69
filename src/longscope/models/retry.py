"""One retry policy for every backend: exponential backoff with full jitter, within the request's
own deadline.

`RetryPolicy` says when to try again and how long to wait; `with_retries(backend)` applies it
around any backend that does not retry by itself (llama.cpp, hf, the scripted backend, a plug-in
backend). A backend that retries inside its transport (the OpenAI client: HTTP statuses,
Retry-After) says so with a `retries_done` counter and keeps its own loop, with this policy's pauses.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from longscope.types import Generation, Request

RETRIED = frozenset({"error", "timeout"})
"""Outcomes that may differ when asked again; `length`, `context_overflow` and `ok` are final."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Return the pause before retry number `attempt` (0-based): a server's Retry-After
        (bounded), else a uniform draw up to min(cap, base x 2^attempt)."""
        if retry_after is not None:
            return min(retry_after, 4 * self.backoff_cap_s)
        return random.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**attempt))

    def retry(self, generation: Generation, attempt: int) -> bool:
        """Return True when a generation's outcome is worth another attempt."""
        return generation.status in RETRIED and attempt < self.max_retries


class Retrying:
    """A backend with the retry policy around its `generate`; everything else passed through."""

    def __init__(self, backend: Any, policy: RetryPolicy = RetryPolicy()) -> None:
        self._backend = backend
        self.policy = policy
        self.retries_done = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def generate(self, request: Request) -> Generation:
        started = time.perf_counter()
        attempt = 0
        while True:
            generation = await self._backend.generate(request)
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


def _noted(generation: Generation, retries: int) -> Generation:
    if not retries or generation.status not in RETRIED:
        return generation
    from dataclasses import replace

    return replace(generation, error=f"gave up after {retries + 1} attempts: {generation.error}")


def with_retries(backend: Any, policy: RetryPolicy = RetryPolicy()) -> Any:
    """Return `backend` with the retry policy around it, unless it retries by itself."""
    if hasattr(backend, "retries_done"):
        return backend
    return Retrying(backend, policy)


__all__ = ["RETRIED", "RetryPolicy", "Retrying", "with_retries"]
