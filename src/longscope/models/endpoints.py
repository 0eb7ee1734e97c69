"""Several OpenAI-compatible endpoints serving one model, as one backend.

Routing and flow control are `models/flow.py`'s policy: prefix affinity (a document's requests on the
endpoint whose prefix cache holds it), least outstanding prompt tokens otherwise, a cap on prompt
tokens in flight per endpoint, longest prefill first, benching with backoff. A request whose
endpoint fails is sent again elsewhere; when every endpoint is down the request ends as `error` with
the reason (stored, and sent again by a resumed run). Queueing happens here, not in the runner, so
`max_concurrency` is large and each request's deadline starts when it is sent, not when it queues.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from longscope.models.base import Backend, ModelInfo, UsageError
from longscope.models.flow import (
    DeadlinePolicy,
    Dispatcher,
    EndpointState,
    Ticket,
    default_token_cap,
    split_cap,
)
from longscope.models.groups import prefix_key
from longscope.text.safe_text import visible
from longscope.text.tokenizers import Tokenizer
from longscope.types import Generation, Request
from longscope.urls import endpoint_url

QUEUE_DEPTH = 1 << 16
"""What the runner may hand over at once: every request, so that this backend orders them."""


def endpoint_failed(generation: Generation) -> bool:
    """Return whether a generation failed because of its endpoint (worth sending elsewhere).

    Timeouts and retries given up on are the endpoint's; an HTTP 4xx, a context overflow or an
    answer are the request's own and would come back the same from any endpoint.
    """
    if generation.status == "timeout":
        return True
    return generation.status == "error" and generation.error.startswith(
        ("gave up after", "connection error", "task limit")
    )


class MultiEndpointBackend(Backend):
    """One model behind several endpoints (one `OpenAIBackend` each), with token-aware flow control."""

    bounds_own_deadline = True
    """Each request's deadline starts when it is sent to an endpoint (see `DeadlinePolicy`)."""
    retries_itself = True
    """Each endpoint retries; a failed request is sent again elsewhere."""

    def __init__(
        self,
        endpoints: Sequence[Backend],
        *,
        labels: Sequence[str] | None = None,
        token_cap: int | None = None,
        deadlines: DeadlinePolicy | None = None,
        max_attempts: int | None = None,
        bench_after: int = 3,
        bench_base_s: float = 2.0,
        bench_cap_s: float = 60.0,
        down_after: int = 5,
    ) -> None:
        if not endpoints:
            raise UsageError("no endpoint given: pass --base-url at least once")
        self.endpoints: list[Backend] = list(endpoints)
        self.labels = list(labels or [e.base_url or e.name for e in endpoints])
        self.name = self.endpoints[0].name
        self.max_concurrency = QUEUE_DEPTH
        self.token_cap = token_cap
        self.deadlines = deadlines or DeadlinePolicy()
        self.max_attempts = max_attempts or len(self.endpoints) + 2
        self._policy = dict(
            bench_after=bench_after,
            bench_base_s=bench_base_s,
            bench_cap_s=bench_cap_s,
            down_after=down_after,
        )
        self.dispatcher: Dispatcher | None = None
        self._futures: dict[int, asyncio.Future[int | None]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._pump_soon = False
        self._info: ModelInfo | None = None
        self._info_lock = asyncio.Lock()
        self.served: dict[tuple[str, int], list[str]] = {}
        """(sample, repeat) -> the endpoints it was sent to, in order (the last one answered)."""

    @property  # type: ignore[override]
    def retries_done(self) -> int:
        """Return the retries so far: within endpoints and across them."""
        own = sum(e.retries_done for e in self.endpoints)
        moved = sum(e.failures for e in self.dispatcher.endpoints) if self.dispatcher else 0
        return own + moved

    async def info(self) -> ModelInfo:
        """Return the model's description; every reachable endpoint must serve the same model."""
        # Concurrent first calls (requests sent before anyone asked) must build one dispatcher.
        async with self._info_lock:
            return await self._load_info()

    async def _load_info(self) -> ModelInfo:
        if self._info is not None:
            return self._info
        answers = await asyncio.gather(*(e.info() for e in self.endpoints), return_exceptions=True)
        reachable = [(i, a) for i, a in enumerate(answers) if isinstance(a, ModelInfo)]
        if not reachable:
            first = answers[0]
            raise first if isinstance(first, BaseException) else UsageError("no endpoint answered")
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, UsageError):
                raise answer
        ids = {a.model_id for _, a in reachable}
        if len(ids) > 1:
            raise UsageError(
                f"the endpoints serve different models ({', '.join(sorted(ids))}): "
                "every --base-url must serve the same model"
            )
        check_same_model(
            self.endpoints[0].requested_model(),
            {self.labels[i]: a.details.get("served_models") for i, a in reachable},
        )
        lengths = [a.context_length for _, a in reachable if a.context_length]
        base = reachable[0][1]
        caps = (
            split_cap(self.token_cap, len(self.endpoints))
            if self.token_cap
            else default_token_cap(
                [a.context_length if isinstance(a, ModelInfo) else None for a in answers]
            )
        )
        states = [
            EndpointState(
                name=label,
                token_cap=cap,
                max_requests=max(1, endpoint.max_concurrency),
            )
            for label, cap, endpoint in zip(self.labels, caps, self.endpoints, strict=True)
        ]
        for i, answer in enumerate(answers):
            if isinstance(answer, UsageError):
                states[i].down, states[i].last_error = True, str(answer)
        self.dispatcher = Dispatcher(states, **self._policy)  # type: ignore[arg-type]
        self._info = replace(
            base,
            context_length=min(lengths) if lengths else base.context_length,
            details={
                **base.details,
                "endpoints": self.labels,
                "unreachable": [
                    states[i].name
                    for i, a in enumerate(answers)
                    if a is not None and not isinstance(a, ModelInfo)
                ],
                "token_cap": sum(caps),
            },
        )
        return self._info

    def tokenizer(self) -> Tokenizer:
        return self.endpoints[0].tokenizer()

    def stats(self) -> list[dict[str, Any]]:
        """Return per-endpoint counts, tokens, latency and health for this invocation."""
        return [e.stats() for e in self.dispatcher.endpoints] if self.dispatcher else []

    async def generate(self, request: Request) -> Generation:
        """Return the generation for `request` from the best endpoint, sending it elsewhere on failure."""
        if self.dispatcher is None:
            await self.info()
        assert self.dispatcher is not None
        key = prefix_key(request)
        cost = request.prompt_tokens or max(1, len(request.text) // 4)
        tried: list[str] = []
        started = time.perf_counter()
        last: Generation | None = None
        timeouts = 0
        while len(tried) < self.max_attempts:
            ticket = self.dispatcher.submit(key, cost)
            index = await self._acquire(ticket)
            if index is None:
                break
            endpoint = self.endpoints[index]
            limit = self.deadlines.deadline_s(
                cost, request.config.output_ceiling(), request.timeout_s
            )
            sent = time.perf_counter()
            try:
                generation = await endpoint.generate(replace(request, timeout_s=limit))
            except BaseException:
                self.dispatcher.finish(ticket, index, time.perf_counter(), failed=False)
                self._pump()
                raise
            latency = time.perf_counter() - sent
            failed = endpoint_failed(generation)
            self.dispatcher.finish(
                ticket,
                index,
                time.perf_counter(),
                failed=failed,
                prompt_tokens=generation.prompt_tokens,
                completion_tokens=generation.completion_tokens,
                latency_s=latency,
                error=generation.error,
            )
            self._pump()
            tried.append(self.labels[index])
            self.served[(request.sample_id, request.repeat)] = list(tried)
            if not failed:
                if generation.status in ("ok", "length"):
                    self.deadlines.observe(generation.prompt_tokens, latency)
                return replace(generation, latency_s=round(latency, 6))
            last = generation
            timeouts += generation.status == "timeout"
            if timeouts >= 2:
                break  # timed out twice: the prompt, not an endpoint, is slow; stop spending
        down = self.dispatcher.all_down()
        why = last.error if last is not None else "no endpoint left"
        if down:
            why += "; every endpoint is down"
        return Generation(
            text="",
            status=last.status if last is not None else "error",
            latency_s=time.perf_counter() - started,
            error=f"failed after {len(tried)} attempt(s) on endpoint(s) "
            f"{', '.join(dict.fromkeys(tried)) or 'none'}: {why}",
        )

    async def _acquire(self, ticket: Ticket) -> int | None:
        """Wait until the policy grants `ticket`; return its endpoint, or None if all are down."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int | None] = loop.create_future()
        self._futures[ticket.seq] = future
        if not self._pump_soon:
            # Once the requests handed over in this turn of the loop are all queued: the longest
            # of them starts first, not the first to arrive.
            self._pump_soon = True
            loop.call_soon(self._soon)
        try:
            return await future
        except asyncio.CancelledError:
            self._futures.pop(ticket.seq, None)
            assert self.dispatcher is not None
            if future.done() and not future.cancelled() and future.result() is not None:
                self.dispatcher.finish(ticket, future.result(), time.perf_counter(), failed=False)
            else:
                self.dispatcher.withdraw(ticket)
            self._pump()
            raise

    def _pump(self) -> None:
        """Start whatever the policy allows now; fail everything if no endpoint is left."""
        dispatcher = self.dispatcher
        assert dispatcher is not None
        now = time.perf_counter()
        for ticket, index in dispatcher.grants(now):
            future = self._futures.pop(ticket.seq, None)
            if future is None or future.done():
                dispatcher.finish(ticket, index, now, failed=False)
                continue
            future.set_result(index)
        if dispatcher.all_down():
            for ticket in dispatcher.drain():
                future = self._futures.pop(ticket.seq, None)
                if future is not None and not future.done():
                    future.set_result(None)
            return
        back = dispatcher.next_return(now)
        if dispatcher.waiting and back is not None and self._timer is None:
            # Nothing in flight may finish to wake the queue: wake it when an endpoint returns.
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(back - now + 0.001, self._wake)

    def _soon(self) -> None:
        self._pump_soon = False
        self._pump()

    def _wake(self) -> None:
        self._timer = None
        self._pump()

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for endpoint in self.endpoints:
            await endpoint.aclose()


def describe_endpoints(stats: list[dict[str, Any]]) -> str:
    """Return one line per endpoint: requests, failures, tokens, mean latency, health."""
    lines = []
    for e in stats:
        latency = "-" if e["mean_latency_s"] is None else f"{e['mean_latency_s']:.2f}s"
        health = "down" if e["down"] else (f"benched {e['benched']}x" if e["benched"] else "ok")
        if "busy_share" in e:  # a device (models/hf/devices.py): how much of the run it worked
            health += f", busy {e['busy_share']:.0%} (idle {e['idle_tail_s']:.1f}s at the end)"
        lines.append(
            f"{e['endpoint']}: {e['requests']} requests ({e['failures']} failed), "
            f"{e['prompt_tokens']:,} prompt + {e['completion_tokens']:,} output tokens, "
            f"mean {latency}, most in flight {e['max_tokens_in_flight']:,}/{e['token_cap']:,} "
            f"tokens, {health}"
        )
    return "\n".join(lines)


def read_url_file(text: str) -> list[str]:
    """Return the URLs in a file of endpoints: one per line, `#` comments and blanks ignored."""
    urls = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            urls.append(endpoint_url(line[:2000], "endpoint in the URL file"))
    return urls


def check_same_model(requested: str | None, listings: dict[str, Any]) -> None:
    """Raise UsageError unless every endpoint serves the requested model.

    An endpoint serves it when its `/v1/models` lists it; a server that lists one model and
    ignores the request's `model` field (llama.cpp's) serves whatever it lists, so endpoints that
    list one model each must all list the same one, and none may sit beside an endpoint that
    lists the requested name. `listings` maps each endpoint (as shown) to the ids it lists.
    """
    if requested is None:
        return
    single: dict[str, str] = {}
    naming: list[str] = []
    for label, served in listings.items():
        ids = [str(x) for x in served or ()]
        if requested in ids:
            naming.append(label)
        elif len(ids) == 1:
            single[label] = ids[0]
        else:
            listed = ", ".join(visible(x) for x in ids[:5]) or "no model"
            raise UsageError(
                f"endpoint {visible(label)} does not serve {visible(requested)} (its /v1/models "
                f"lists {listed}): every --base-url must serve the model named in --model"
            )
    if single and (naming or len(set(single.values())) > 1):
        others = ", ".join(f"{visible(lab)} serves {visible(mod)}" for lab, mod in single.items())
        also = f"; {len(naming)} endpoint(s) list {visible(requested)}" if naming else ""
        raise UsageError(
            f"the endpoints serve different models ({others}{also}): every --base-url must serve "
            "the same model; stop the others or leave them out"
        )
