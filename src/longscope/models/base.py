"""The backend contract: one base class declaring every capability a backend may have, with its
default, and a forwarding base for the wrappers around a backend.

A backend gives `name`, `max_concurrency`, `info()`, `tokenizer()` and `generate(request)`; every
other member has a default here that a backend overrides when it does better (as Inspect AI's
`ModelAPI`). The harness reads these members and never asks a backend "do you have X?" by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from longscope.errors import UsageError
from longscope.params import Param
from longscope.text.tokenizers import Tokenizer
from longscope.types import Generation, PromptMode, Request

__all__ = [
    "RETRIED",
    "VISIBLE_ANSWER_RULE",
    "Backend",
    "EndpointFlow",
    "Forwarding",
    "LimitKind",
    "ModelInfo",
    "OnResult",
    "RetryPolicy",
    "UsageError",
    "available_host_bytes",
    "split_reasoning",
]

LimitKind = Literal["context", "host_memory", "device_memory"]
OnResult = Callable[[int, Generation], None]
"""`on_result(index, generation)`: one member of a group answered (index into the group)."""


CHAT_PROBE = "Read the text and answer."
"""The user message a backend templates to count its `ModelInfo.chat_overhead` (its templated
tokens minus its own)."""


@dataclass(frozen=True)
class ModelInfo:
    """What the harness must know about a model to build prompts that fit it."""

    model_id: str
    """Stable identity of the model (file hash or server-reported name), part of a run's identity."""
    context_length: int | None
    """Tokens the backend can hold (prompt + output), or None when nothing tells us."""
    context_source: str
    """Where `context_length` came from: `user`, `server`, `n_ctx`, or `unknown`."""
    prompt_mode: PromptMode
    tokenizer: str
    chat_overhead: int | None = None
    """Tokens the chat template adds around one user message, when the backend can count them."""
    limit: LimitKind = "context"
    """What bounds `context_length`: the model's context (stated, served or trained), or the
    memory of the host or device it runs on (a sample past it is skipped as
    `insufficient_memory`, not `insufficient_context`)."""
    details: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class EndpointFlow:
    """How a run reaches a model spread over endpoints: requests in flight, the client timeout,
    a cap on prompt tokens in flight, and stated prefill/decode rates (tokens/s per endpoint)."""

    concurrency: int | None = None
    request_timeout_s: float | None = None
    token_cap: int | None = None
    prefill_tps: float | None = None
    decode_tps: float | None = None


RETRIED = frozenset({"error", "timeout"})
"""Outcomes that may differ when asked again; `length`, `context_overflow` and `ok` are final."""


@dataclass(frozen=True)
class RetryPolicy:
    """When to try a request again and how long to wait (models/retry.py applies it)."""

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


class Backend:
    """Turns requests into generations. Knows nothing about suites, stores or reports.

    Required: `name`, `max_concurrency`, `info()`, `tokenizer()`, `generate(request)`. Every other
    member below is a declared capability with its default.
    """

    name: str
    max_concurrency: int
    """Requests (or groups) the runner hands over at once."""

    # -- read by the registry (longscope.models.registry.BACKENDS), on the class -----------------

    OPTIONS: ClassVar[tuple[Param, ...]] = ()
    """Its `-M` options, each once, typed, with its default (`longscope list PROVIDER`)."""
    DESCRIPTION: ClassVar[str] = ""
    """One line for `longscope list` (default: the first line of the class's docstring)."""
    ENDPOINT: ClassVar[bool] = False
    """True when it talks to a server: `from_options` then takes the transport options
    (`base_url`, `concurrency`, `request_timeout_s`) as keywords."""
    SPREADS: ClassVar[bool] = False
    """True when one model may be spread over several endpoints with token-aware flow control
    (`over_endpoints`)."""

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any], **transport: Any) -> Backend:
        """Return the backend of `PROVIDER/name` from complete typed `-M` options (every declared
        option, defaults applied by the registry) and, for an `ENDPOINT`, the transport options.
        Default: the constructor, by option name."""
        return cls(name, **options, **transport)  # type: ignore[call-arg]

    @classmethod
    def over_endpoints(
        cls, name: str, options: dict[str, Any], urls: Sequence[str], flow: EndpointFlow
    ) -> Backend:
        """Return one backend over several endpoints (`SPREADS`); default: refused in one line."""
        raise UsageError(f"{cls.__name__} cannot spread over several endpoints")

    # -- required --------------------------------------------------------------------------------

    async def info(self) -> ModelInfo:
        """Return the model's description (context length, prompt mode, tokenizer, identity)."""
        raise NotImplementedError(f"{type(self).__name__} must define info()")

    def tokenizer(self) -> Tokenizer:
        """Return the tokenizer prompts are counted with."""
        raise NotImplementedError(f"{type(self).__name__} must define tokenizer()")

    async def generate(self, request: Request) -> Generation:
        """Return the generation for one request (failures are a status, never an exception)."""
        raise NotImplementedError(f"{type(self).__name__} must define generate(request)")

    # -- an endpoint's identity ------------------------------------------------------------------

    base_url: str | None = None
    """The server it talks to (an `ENDPOINT` backend); None in-process. Shown as its label."""

    def requested_model(self) -> str | None:
        """Return the model name it asks its server for (an `ENDPOINT` backend), else None."""
        return None

    # -- grouped generation ----------------------------------------------------------------------

    shares_prefill: bool = False
    """True when `generate_group` prefills the members' shared prompt prefix once (one GPU cache,
    `n` choices on a server): the runner then hands a document's requests over together. False:
    the runner sends groups of one."""

    group_results_as_they_come: bool = True
    """Whether `generate_group` hands each member to `on_result` as it answers (the runner stores
    whatever was not handed over when the call returns)."""

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        """Return one generation per request, in order. Default: `generate` each, concurrently,
        each handed to `on_result` as it answers."""
        if len(requests) == 1:
            # A group of one (every request of a backend that shares no prefill): no extra task.
            generation = await self.generate(requests[0])
            if on_result is not None:
                on_result(0, generation)
            return [generation]

        async def one(index: int, request: Request) -> Generation:
            generation = await self.generate(request)
            if on_result is not None:
                on_result(index, generation)
            return generation

        return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))

    # -- retries and deadlines -------------------------------------------------------------------

    retry_policy: RetryPolicy = RetryPolicy()
    """The policy applied around this backend (`models.retry.with_retries`), or, for a backend
    that retries by itself, the pauses of its own loop."""
    retries_itself: bool = False
    """True when the backend retries inside its transport (HTTP statuses, Retry-After): no
    `Retrying` wrapper goes around it."""
    retries_done: int = 0
    """Retries so far (shown by the progress bar)."""
    bounds_own_deadline: bool = False
    """True when the backend queues requests itself and times each from when it starts it: the
    runner then sets no deadline of its own (models/endpoints.py, the hf engine)."""

    def calls_for(self, request: Request) -> int:
        """Return about how many model calls `request` takes (the runner's deadline scales by it)."""
        return 1

    # -- figures ---------------------------------------------------------------------------------

    endpoints: Sequence[Backend] = ()
    """The endpoints of a several-endpoint backend (empty for one)."""

    def stats(self) -> list[dict[str, Any]]:
        """Return per-endpoint figures of this invocation (empty for one endpoint)."""
        return []

    def count_tokens(self, text: str) -> int:
        """Return the tokens `text` takes in this backend's tokenizer."""
        return len(self.tokenizer().encode(text)) if text else 0

    async def aclose(self) -> None:
        """Release what the backend holds (connections, a loaded model). Default: nothing."""


class Forwarding(Backend):
    """A wrapper around a backend: every declared member is the inner backend's, forwarded one by
    one (no `__getattr__`: a member the contract does not declare is not reached through it).
    Subclasses override what they change."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_concurrency = inner.max_concurrency

    async def info(self) -> ModelInfo:
        return await self.inner.info()

    def tokenizer(self) -> Tokenizer:
        return self.inner.tokenizer()

    async def generate(self, request: Request) -> Generation:
        return await self.inner.generate(request)

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        return await self.inner.generate_group(requests, on_result)

    @property  # type: ignore[override]
    def base_url(self) -> str | None:
        return self.inner.base_url

    def requested_model(self) -> str | None:
        return self.inner.requested_model()

    @property  # type: ignore[override]
    def shares_prefill(self) -> bool:
        return self.inner.shares_prefill

    @property  # type: ignore[override]
    def group_results_as_they_come(self) -> bool:
        return self.inner.group_results_as_they_come

    @property  # type: ignore[override]
    def retry_policy(self) -> RetryPolicy:
        return self.inner.retry_policy

    @property  # type: ignore[override]
    def retries_itself(self) -> bool:
        return self.inner.retries_itself

    @property  # type: ignore[override]
    def retries_done(self) -> int:
        return self.inner.retries_done

    @property  # type: ignore[override]
    def bounds_own_deadline(self) -> bool:
        return self.inner.bounds_own_deadline

    def calls_for(self, request: Request) -> int:
        return self.inner.calls_for(request)

    @property  # type: ignore[override]
    def endpoints(self) -> Sequence[Backend]:
        return self.inner.endpoints

    def stats(self) -> list[dict[str, Any]]:
        return self.inner.stats()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def aclose(self) -> None:
        await self.inner.aclose()


VISIBLE_ANSWER_RULE = (
    "the scored answer is the text outside every thinking block: inline <think>...</think> "
    "blocks (one the model re-opens and never closes runs to the end) and the server's "
    "reasoning_content / reasoning field are set apart the same way; when any thinking was set "
    "apart, the whitespace around the answer is removed"
)
"""The one rule that makes a model's visible answer out of what a backend received, so that an
answer scores the same whether its thinking came inline or through a server's reasoning parser."""


def split_reasoning(
    text: str,
    reasoning: str = "",
    open_marker: str = "<think>",
    close_marker: str = "</think>",
    *,
    answering: bool = False,
    set_apart: bool = False,
) -> tuple[str, str]:
    """Return (answer, reasoning) under `VISIBLE_ANSWER_RULE`: every thinking block moves out of
    the answer into the reasoning, after the `reasoning` a server's parser set apart.

    Text before a close marker with no opening one was thinking the template opened, unless
    `answering` (the text goes on after a close already seen: a continuation's answer). A block
    that is opened and never closed means the model did not reach (or left) its answer: the rest
    of the text is reasoning (scoring a half-finished thought as an answer would be wrong).
    `set_apart`: a server's parser set a thinking block apart, even an empty one (its reasoning
    field is present, maybe "").
    """
    first_open, first_close = text.find(open_marker), text.find(close_marker)
    if first_open == -1 and (first_close == -1 or answering):
        # No marker: the content is the answer; a parser that set thinking apart leaves the
        # separator after its close marker in the content, which the inline path strips.
        if reasoning or set_apart:
            return text.strip(), reasoning.strip()
        return text, reasoning
    inside = not answering and first_close != -1 and (first_open == -1 or first_close < first_open)
    answer: list[str] = []
    thought = [reasoning.strip()]
    at = 0
    while True:
        marker = close_marker if inside else open_marker
        found = text.find(marker, at)
        piece = text[at:] if found == -1 else text[at:found]
        (thought if inside else answer).append(piece.strip())
        if found == -1:
            break
        at, inside = found + len(marker), not inside
    return "\n".join(p for p in answer if p), "\n".join(p for p in thought if p)


def available_host_bytes() -> int:
    """Return the host memory a new allocation can have: MemAvailable (free plus reclaimable
    cache) where Linux reports it, else the free pages."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
