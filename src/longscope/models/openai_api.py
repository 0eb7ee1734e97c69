"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, hosted APIs)."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import openai

from longscope.errors import UsageError
from longscope.models.base import (
    Backend,
    EndpointFlow,
    ModelInfo,
    OnResult,
    RetryPolicy,
    split_reasoning,
)
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.flow import DeadlinePolicy
from longscope.models.overflow import is_overflow
from longscope.models.registry import option
from longscope.models.thinking import (
    THINKING_OPTION,
    ThinkingFormat,
    answer_after_close,
    continuation,
    opened_by,
    read_first,
    thinking_format,
)
from longscope.models.transport import (
    BodyTooLarge,
    CrossOriginRedirect,
    async_client,
    body_limit,
    bounded,
    refused,
)
from longscope.text.safe_text import visible
from longscope.text.tokenizers import DEFAULT_TOKENIZER, Tokenizer, load_tokenizer
from longscope.types import (
    BudgetUse,
    Generation,
    Message,
    PromptMode,
    Request,
    sanitized_note,
    storable_text,
)
from longscope.urls import base_url_or_env, endpoint_url, shown

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
THINKING_VIA = ("continue", "vllm", "sglang")
OPENAI_OPTIONS = (
    option("context_length", "tokens", None, "tokens the model holds; unset: the server's "
           "max_model_len where it reports one", low=1),
    option("prompt_mode", "choice", "chat", "chat (/v1/chat/completions) or completion "
           "(/v1/completions)", choices=("chat", "completion")),
    option("tokenizer", "str", DEFAULT_TOKENIZER, "tokenizer to count prompts with: a name or "
           "a tokenizer.json path"),
    option("api_key_env", "str", DEFAULT_API_KEY_ENV, "environment variable holding the API key"),
    option("model_id", "str", None, "the model's Hub id for exports (e.g. "
           "Qwen/Qwen2.5-7B-Instruct) when the server serves it under another name"),
    THINKING_OPTION,
    option("thinking_budget_via", "choice", "continue", "how --thinking-budget reaches the "
           "server: continue (ask for the thinking budget, then a continuation request with the "
           "forced close; any server), vllm (its `thinking_token_budget`; vLLM started with "
           "--reasoning-config), sglang (`custom_params.thinking_budget`; SGLang started with "
           "--enable-strict-thinking)", choices=THINKING_VIA),
    option("thinking_opened", "bool", False, "chat mode: the server's chat template opens the "
           "think block itself (the answer starts inside it)"),
    option("chat_template", "str", None, "chat mode with --thinking-budget: the server's Jinja "
           "chat template (a file); a template that drops or reformats past reasoning (DeepSeek-R1, "
           "gpt-oss) gets the forced continuation on /v1/completions, rendered with it"),
)  # fmt: skip
_CONNECT_TIMEOUT_S = 10.0
_CONNECTIONS_PER_CLIENT = 8
_REASON_CHARS = 200
"""How much of an unusable body or an error message is kept as the recorded reason."""


class UnusableAnswer(Exception):
    """A 200 answer the harness cannot use (not JSON, an error object, no choices, no text)."""


def unlisted_model_warning(model: str, served: Sequence[str], base_url: str) -> list[str]:
    """Return the warning for a model name the server's `/v1/models` does not list ([] when it
    lists it, or lists nothing). vLLM and SGLang refuse such a request (404); llama.cpp's server
    answers with whatever it serves. The commonest mistake with vLLM is a name other than the one
    it was started with (`vllm serve NAME` or its --served-model-name)."""
    if not served or model in served:
        return []
    listed = ", ".join(visible(name) for name in served[:5]) + (" ..." if len(served) > 5 else "")
    use = f"openai/{visible(served[0])}" if len(served) == 1 else "openai/NAME with a listed NAME"
    return [
        f"the server at {shown(base_url)} lists {listed}, not {visible(model)}: a server that "
        f"checks the name (vLLM, SGLang) refuses every request; pass --model {use}"
    ]


class OpenAIBackend(Backend):
    """Chat or completion requests to an OpenAI-compatible endpoint through the official async SDK."""

    DESCRIPTION = (
        "any OpenAI-compatible server: vLLM, SGLang, llama.cpp server, Ollama, hosted APIs"
    )
    OPTIONS = OPENAI_OPTIONS
    ENDPOINT = True
    SPREADS = True

    @classmethod
    def over_endpoints(
        cls, name: str, options: dict[str, Any], urls: Sequence[str], flow: EndpointFlow
    ) -> Backend:
        """Return one model over several endpoints with token-aware flow control."""
        return create_multi_backend(
            name,
            options,
            list(urls) or [base_url_or_env(None)],
            concurrency=flow.concurrency,
            request_timeout_s=flow.request_timeout_s,
            token_cap=flow.token_cap,
            prefill_tps=flow.prefill_tps,
            decode_tps=flow.decode_tps,
        )

    """Takes the transport options (`--base-url`, `--concurrency`, `--request-timeout`)."""
    shares_prefill = True
    """A group's repeats go as one request with `n` choices, after its first member."""
    retries_itself = True
    """HTTP statuses and Retry-After are retried here, inside the request's deadline."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        prompt_mode: PromptMode = "chat",
        context_length: int | None = None,
        tokenizer: str = DEFAULT_TOKENIZER,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        concurrency: int = 8,
        max_retries: int = 5,
        request_timeout_s: float = 600.0,
        backoff_base_s: float = 1.0,
        backoff_cap_s: float = 30.0,
        thinking: str | None = None,
        thinking_via: str = "continue",
        thinking_opened: bool = False,
        chat_template: str | None = None,
        model_id: str | None = None,
    ) -> None:
        self.name = f"openai/{model}"
        self.stated_model_id = model_id
        self.model = model
        # Only a host the user named (`--base-url`, or a non-empty OPENAI_BASE_URL): never a default.
        self.base_url = base_url_or_env(base_url)
        self.prompt_mode = prompt_mode
        self.stated_context_length = context_length
        self.tokenizer_spec = tokenizer
        self.max_concurrency = concurrency
        self.max_retries = max_retries
        self.request_timeout_s = request_timeout_s
        # The shared policy's pauses (full jitter, Retry-After bounded); which failures are worth
        # another attempt is decided here, from HTTP statuses the policy cannot see.
        self.retry_policy = RetryPolicy(max_retries, backoff_base_s, backoff_cap_s)
        self.retries_done = 0
        # The key is read here and kept only inside the client: never stored, logged or reported.
        api_key = os.environ.get(api_key_env) or "EMPTY"
        for line in auth_notes(self.base_url, api_key_env, api_key != "EMPTY"):
            say_once(line)
        # httpx's connection pool scans every connection it holds for each request it places, so
        # its cost grows with the requests in flight; a few clients of ~8 connections each keep
        # that scan short (at 64 in flight it was a third of the client's CPU).
        timeout = httpx.Timeout(request_timeout_s, connect=_CONNECT_TIMEOUT_S)
        # Under the SDK: bodies read up to a bound, redirects followed within the origin only.
        self._clients = [
            openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=api_key,
                max_retries=0,
                timeout=timeout,
                http_client=async_client(request_timeout_s, _CONNECT_TIMEOUT_S),
            )
            for _ in range(max(1, -(-concurrency // _CONNECTIONS_PER_CLIENT)))
        ]
        self._client = self._clients[0]
        self._next_client = 0
        self._tokenizer: Tokenizer | None = None
        self._info: ModelInfo | None = None
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self.supports_n: bool | None = None
        """Whether the server answers `n` choices per request (None until a group asked)."""
        self.thinking: ThinkingFormat = thinking_format(thinking)
        self.thinking_via = thinking_via
        self.thinking_opened = thinking_opened
        self.chat_template = chat_template
        """The server's chat template (its text), for continuations it cannot carry in chat."""

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any], **transport: Any) -> OpenAIBackend:
        """Build from typed `-M` options (what changes outputs) and transport kwargs (URL,
        concurrency)."""
        mode = options.get("prompt_mode", "chat")
        ctx = options.get("context_length")
        transport = {k: v for k, v in transport.items() if v is not None}
        return cls(
            name,
            prompt_mode=mode,
            context_length=ctx,
            tokenizer=str(options.get("tokenizer", DEFAULT_TOKENIZER)),
            api_key_env=str(options.get("api_key_env", DEFAULT_API_KEY_ENV)),
            thinking=options.get("thinking_format"),
            thinking_via=str(options.get("thinking_budget_via", "continue")),
            thinking_opened=bool(options.get("thinking_opened", False)),
            chat_template=_template_text(options.get("chat_template")),
            model_id=options.get("model_id"),
            **transport,
        )

    async def info(self) -> ModelInfo:
        """Ask the server what it serves; the context length comes from the user, then the server."""
        if self._info is not None:
            return self._info
        try:
            listing = await self._client.models.list()
        except (BodyTooLarge, CrossOriginRedirect) as exc:
            raise UsageError(f"server at {shown(self.base_url)}: {exc}") from None
        except openai.APIConnectionError as exc:
            if (why := refused(exc)) is not None:
                raise UsageError(f"server at {shown(self.base_url)}: {why}") from None
            raise UsageError(
                f"cannot reach server at {shown(self.base_url)}: start it or fix --base-url"
            ) from exc
        except openai.APIStatusError as exc:
            raise UsageError(
                f"server at {shown(self.base_url)} answered /models with HTTP {exc.status_code}: "
                "check --base-url and the API key variable"
            ) from exc
        served = {m.id: (m.model_extra or {}) for m in listing.data}
        owners = {m.id: getattr(m, "owned_by", None) for m in listing.data}
        server_len = served.get(self.model, {}).get("max_model_len")
        if self.stated_context_length:
            length, source = self.stated_context_length, "user"
        elif isinstance(server_len, int):
            length, source = server_len, "server"
        else:
            length, source = None, "unknown"
        self._info = ModelInfo(
            model_id=f"openai:{self.model}",
            context_length=length,
            context_source=source,
            prompt_mode=self.prompt_mode,
            tokenizer=self.tokenizer_spec,
            details={
                "served_models": sorted(served),
                "server_max_model_len": server_len,
                # The server's engine says who it is only through `owned_by` (vllm, sglang...).
                "owned_by": owners.get(self.model),
                "batching": "the server's own (continuous batching on vLLM and SGLang); "
                "not reported over the API",
                "prefix_cache": "the server's own; not reported over the API",
                "warnings": unlisted_model_warning(self.model, sorted(served), self.base_url),
                # A label for exports (`-M model_id=`): never part of the run's identity.
                **({"model_id": self.stated_model_id} if self.stated_model_id else {}),
            },
        )
        return self._info

    def requested_model(self) -> str:
        """Return the model name sent in each request's `model` field."""
        return self.model

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            try:
                self._tokenizer = load_tokenizer(self.tokenizer_spec)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        return self._tokenizer

    async def generate(self, request: Request) -> Generation:
        """Return the generation for `request`, retrying transient failures within its deadline.

        The deadline model: each HTTP attempt is bounded by `request_timeout_s` (the CLI's
        `--request-timeout`); the whole request, retries and backoff included, is bounded by
        `request.timeout_s` (the suite's limit, e.g. LongCtx's 120 s + 2 s per 1K tokens). A hung or
        trickling connection therefore costs at most one request timeout per attempt, and the
        request ends as `timeout` once the suite's limit leaves no room for another attempt.

        5xx, 429 (honouring Retry-After), dropped connections, timeouts and 200 answers the harness
        cannot use (not JSON, an error object, no choices, no message) are retried with exponential
        backoff and full jitter; after the last attempt they become an `error` or `timeout`
        generation with the reason, never an exception.

        With a thinking budget (`models/thinking.py`) the thinking is bounded as
        `thinking_budget_via` says: by the server's own parameter, or by a first request of
        `thinking_budget` tokens and a continuation request that closes the thinking.
        """
        if request.config.thinking_budget is not None and self.thinking_via == "continue":
            return await self._think_then_answer(request)
        generation = (await self._generate(request, 1))[0]
        if request.config.thinking_budget is not None:
            return self._server_budgeted(request, generation)
        return generation

    async def _think_then_answer(self, request: Request) -> Generation:
        """Return the generation of `request` with its thinking bounded by two requests: the
        first asks for `thinking_budget` tokens; when they run out, the second continues what
        the model wrote (the server's prefix cache holds the prompt) after the family's forced
        close, or continues its answer, within `max_tokens`."""
        config = request.config
        budget, answer_budget = config.thinking_budget or 0, config.max_tokens
        started = time.perf_counter()
        first = (await self._generate(_with(request, budget), 1, raw=True))[0]
        opened = (
            opened_by(request.prompt, self.thinking)
            if request.mode == "completion"
            else self.thinking_opened
        )
        if first.status != "length":
            # Done within the thinking budget (or failed): the answer is what the model wrote.
            if first.status != "ok":
                return first
            # A template that opened the thinking leaves the marker out of the text (a parser
            # that set the thinking apart took it away with the rest).
            fmt, lead = self.thinking, self.thinking.open * (opened and not first.reasoning)
            text, reasoning = split_reasoning(
                lead + first.text, first.reasoning, fmt.open, fmt.close
            )
            answer_tokens = self._count(text)
            thought = max(0, (first.completion_tokens or self._count(first.text)) - answer_tokens)
            use = BudgetUse(budget, thought, False, answer_tokens, False)
            return replace(first, text=text, reasoning=reasoning, budget=use)
        read = read_first(first.text, first.reasoning, self.thinking, opened=opened)
        spent = first.completion_tokens or self._count(first.text + first.reasoning)
        if read.thinking:
            prefix, left, thought, written = (
                read.prefix + self.thinking.forced,
                answer_budget,
                spent,
                0,
            )
        else:
            if read.reasoning:  # closed its thinking: the answer has begun within the budget
                written, whole = self._count(read.answer), answer_budget
            else:  # does not think: answers within the whole output budget (thinking.py)
                written, whole = spent, answer_budget + budget
            prefix, left, thought = read.prefix, whole - written, max(0, spent - written)
        text, status, answer_tokens, error = "", "length", written, ""
        if left > 0:
            continued = _continued(request, prefix, left, self.chat_template, self.thinking)
            second = (await self._generate(continued, 1, raw=True))[0]
            if second.status not in ("ok", "length"):
                return replace(second, latency_s=time.perf_counter() - started)
            text, status, error = second.text, second.status, second.error
            answer_tokens += second.completion_tokens or self._count(second.text)
            if read.thinking and not text.strip():
                # A forced close answered by nothing: a template that dropped the thinking (or
                # closed the turn) is the likely cause; never scored as an empty answer.
                return replace(
                    second,
                    status="error",
                    latency_s=time.perf_counter() - started,
                    error="the continuation after the forced close answered nothing: the "
                    "server's chat template may drop or reformat the assistant's text; give it "
                    "as -M chat_template=FILE (or use -M prompt_mode=completion)",
                )
        # What follows the close (forced or the model's own) is the answer, except a thinking
        # block the model opens again: that is thinking, closed or not.
        answer, again = answer_after_close(text if read.thinking else read.answer + text,
                                           self.thinking)  # fmt: skip
        return Generation(
            text=answer,
            reasoning="\n".join(x for x in (read.reasoning, again) if x),
            status=status,  # type: ignore[arg-type]
            prompt_tokens=first.prompt_tokens,
            completion_tokens=thought + answer_tokens,
            latency_s=time.perf_counter() - started,
            error=error or first.error,
            budget=BudgetUse(budget, thought, read.thinking, answer_tokens, status == "length"),
        )

    def _server_budgeted(self, request: Request, generation: Generation) -> Generation:
        """Return `generation`, answered under the server's own thinking budget, with what the
        budget did as far as the answer tells (the thinking counted in our tokenizer)."""
        if generation.status not in ("ok", "length"):
            return generation
        budget = request.config.thinking_budget or 0
        thought = self._count(generation.reasoning)
        answer = max(0, generation.completion_tokens - thought) or self._count(generation.text)
        # The server closes thinking at its budget: one that used all of it was closed for it.
        forced = thought >= budget - max(2, budget // 100)
        use = BudgetUse(budget, thought, forced, answer, generation.status == "length")
        return replace(generation, budget=use)

    def _count(self, text: str) -> int:
        return len(self.tokenizer().encode(text)) if text else 0

    async def generate_group(
        self,
        requests: Sequence[Request],
        on_result: OnResult | None = None,
    ) -> list[Generation]:
        """Return the generations of requests that share a prompt prefix (a document's repeats
        and modes; `models/groups.py`), sent so that the server prefills the document once.

        Requests with the same prompt and settings (repeats) go as one request with `n` choices,
        which vLLM and SGLang answer from one prefill; the first such request goes alone and the
        others after it, when the server's prefix cache holds the document. A server that ignores
        `n` (llama.cpp's answers one choice) or refuses it is asked one request per repeat from
        then on. With `n` the repeats share the first request's seed: the server draws the n
        samples from it (different answers when sampling, the same when greedy).

        `on_result(index, generation)` is called for each member as its answer arrives, so that
        the runner stores it then, not when the whole group is done (a kill loses less).
        """
        same: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            same.setdefault(_prompt_key(request), []).append(index)
        subsets = list(same.values())
        out: list[Generation | None] = [None] * len(requests)

        async def send(indices: list[int]) -> None:
            def arrived(local: int, generation: Generation) -> None:
                out[indices[local]] = generation
                if on_result is not None:
                    on_result(indices[local], generation)

            await self._generate_repeats([requests[i] for i in indices], arrived)

        await send(subsets[0])
        await asyncio.gather(*(send(indices) for indices in subsets[1:]))
        return [g for g in out if g is not None]

    async def _generate_repeats(
        self, requests: list[Request], arrived: Callable[[int, Generation], None]
    ) -> None:
        """Hand `arrived` one generation per request of one prompt: one request with `n` when it
        holds, else one request each, each handed over when it comes."""

        async def one(index: int, request: Request) -> None:
            arrived(index, await self.generate(request))

        # A thinking budget takes a request (or two) per repeat: never `n`.
        budgeted = requests[0].config.thinking_budget is not None
        if len(requests) == 1 or self.supports_n is False or budgeted:
            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
            return
        made = await self._generate(requests[0], len(requests))
        if len(made) == len(requests):
            if any(g.status in ("ok", "length") for g in made):
                self.supports_n = True
            for index, generation in enumerate(made):
                arrived(index, generation)
            return
        # Fewer choices than asked (the server ignores `n`) or `n` refused: one request each.
        self.supports_n = False
        kept = [g for g in made if g.status in ("ok", "length")][: len(requests)]
        for index, generation in enumerate(kept):
            arrived(index, generation)
        await asyncio.gather(*(one(len(kept) + i, r) for i, r in enumerate(requests[len(kept) :])))

    async def _generate(self, request: Request, n: int, raw: bool = False) -> list[Generation]:
        """Return `request`'s choices (`n` asked; fewer when the server gives fewer), or one
        failed generation per choice asked, after retries within the request's deadline."""
        # A group's requests come from one runner slot: `concurrency` bounds them here, before
        # the request's clock starts, so waiting for a slot never eats into its deadline.
        async with self._slots:
            return await self._generate_now(request, n, raw)

    async def _generate_now(self, request: Request, n: int, raw: bool = False) -> list[Generation]:
        started = time.perf_counter()
        deadline = started + request.timeout_s if request.timeout_s else None
        attempts, last_status, last_error = 0, "error", ""
        out_of_time = False

        def failed(status: str, error: str) -> list[Generation]:
            latency = time.perf_counter() - started
            # A refused `n` is answered by one request per repeat, never recorded as a failure.
            count = 1 if n > 1 and status == "error" and error.startswith("HTTP 4") else n
            return [
                Generation(text="", status=status, latency_s=latency, error=error)  # type: ignore[arg-type]
            ] * count

        while attempts <= self.max_retries:
            budget = self.request_timeout_s
            if deadline is not None:
                budget = min(budget, deadline - time.perf_counter())
                if budget <= 0:
                    out_of_time = True
                    break
            attempts += 1
            delay: float | None = None
            try:
                # httpx bounds each read, not the whole answer: a trickling server never trips
                # its read timeout, so the attempt as a whole is bounded here.
                async with asyncio.timeout(budget):
                    generations = await self._call(request, budget, n, raw)
            except (TimeoutError, openai.APITimeoutError):
                last_status, last_error = "timeout", f"no answer within {budget:.1f}s"
            except openai.BadRequestError as exc:
                message = _error_message(exc)
                status = "context_overflow" if is_overflow(400, exc.body, message) else "error"
                return failed(status, f"HTTP 400: {message}")
            except (BodyTooLarge, CrossOriginRedirect) as exc:
                # The same request would meet the same bound or redirect: no other attempt.
                return failed("error", _refusal(exc, request, n))
            except openai.APIConnectionError as exc:
                if (why := refused(exc)) is not None:
                    return failed("error", _refusal(why, request, n))
                last_status, last_error = "error", f"connection error: {_snippet(str(exc))}"
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    message = _error_message(exc)
                    overflow = is_overflow(exc.status_code, exc.body, message)
                    status = "context_overflow" if overflow else "error"
                    return failed(status, f"HTTP {exc.status_code}: {message}")
                last_status = "error"
                last_error = f"HTTP {exc.status_code}: {_error_message(exc)}"
                delay = _retry_after(exc.response)
            except UnusableAnswer as exc:
                last_status, last_error = "error", f"unusable answer: {exc}"
            else:
                latency = time.perf_counter() - started
                exact = self.tokenizer().exact
                return [_check_truncation(g, request, exact, latency) for g in generations]
            if attempts > self.max_retries:
                break
            pause = self.retry_policy.delay(attempts - 1, delay)
            if deadline is not None and time.perf_counter() + pause >= deadline:
                out_of_time = True
                break
            self.retries_done += 1
            await asyncio.sleep(pause)
        if out_of_time:
            return failed(
                "timeout",
                f"task limit of {request.timeout_s:g}s reached after {attempts} attempt(s); "
                f"last: {last_error or 'none'}",
            )
        return failed(last_status, f"gave up after {attempts} attempts: {last_error}")

    async def _call(
        self, request: Request, timeout_s: float, n: int = 1, raw: bool = False
    ) -> list[Generation]:
        config = request.config
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.output_ceiling(),
            "temperature": config.temperature,
            "top_p": config.top_p,
            "seed": config.seed,
        }
        if config.stop:
            payload["stop"] = list(config.stop)
        if n > 1:
            payload["n"] = n
        if request.mode == "completion":
            path, payload["prompt"] = "/completions", request.prompt
        else:
            path = "/chat/completions"
            payload["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
            if request.messages and request.messages[-1].role == "assistant":
                # A continuation (thinking budget): vLLM's and SGLang's way to go on from the
                # assistant's text instead of opening a new turn after it.
                payload["continue_final_message"] = True
                payload["add_generation_prompt"] = False
        if config.thinking_budget is not None and self.thinking_via == "vllm":
            payload["thinking_token_budget"] = config.thinking_budget
        elif config.thinking_budget is not None and self.thinking_via == "sglang":
            payload["custom_params"] = {"thinking_budget": config.thinking_budget}
        # The SDK's generic `post` (its documented way to send any body) with the body as bytes:
        # the client still brings auth, headers and HTTP errors as exceptions, but neither walks
        # the typed parameters nor builds response models, the two largest costs per request.
        # The answer is parsed here, where a malformed 200 body can become a recorded reason.
        self._next_client = (self._next_client + 1) % len(self._clients)
        with bounded(body_limit(payload["max_tokens"], n)):
            body = await self._clients[self._next_client].post(
                path,
                cast_to=bytes,
                body=payload,
                options={
                    "timeout": httpx.Timeout(timeout_s, connect=min(timeout_s, _CONNECT_TIMEOUT_S))
                },
            )
        # A completion prompt that ends inside a think block: the text goes on inside it. Raw
        # text (a thinking budget reads it) also needs a chat template's opening, to rebuild an
        # empty block a parser set apart as it was written.
        opened = (
            opened_by(request.prompt, self.thinking)
            if request.mode == "completion"
            else raw and self.thinking_opened
        )
        fmt = self.thinking
        return parse_choices(
            body, request.mode, raw=raw, opened=fmt.open * opened, markers=(fmt.open, fmt.close)
        )

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()


def auth_notes(base_url: str, api_key_env: str, has_key: bool) -> list[str]:
    """Return what to tell the user about the authorization the server will get, when it is not
    what they asked for: a key variable named but unset (no key is sent: `Bearer EMPTY`), or a
    URL holding a user name and password (httpx sends HTTP Basic auth with them, in place of the
    key). The password is never shown."""
    notes = []
    parts = urlsplit(base_url)
    user = parts.username
    if user is not None:
        held = "a user name and password" if parts.password is not None else "a user name"
        notes.append(
            f"warning: {shown(base_url)} holds {held}: the server gets HTTP "
            f"Basic auth as user {visible(unquote(user))!r}, not a Bearer key"
            + (f" (${api_key_env} is not sent)" if has_key else "")
        )
    elif not has_key and api_key_env != DEFAULT_API_KEY_ENV:
        state = "is empty" if os.environ.get(api_key_env) == "" else "is not set"
        notes.append(
            f"warning: -M api_key_env={visible(api_key_env)}: that variable {state}, so no API "
            "key is sent (`Authorization: Bearer EMPTY`); set it, or leave api_key_env out for a "
            "server without keys"
        )
    return notes


_SAID: set[str] = set()


def say_once(line: str) -> None:
    """Write a warning line to stderr once per process (several endpoints share one)."""
    if line not in _SAID:
        _SAID.add(line)
        sys.stderr.write(line + "\n")


def _with(request: Request, max_tokens: int) -> Request:
    """Return `request` asking for `max_tokens` and no thinking budget of its own."""
    return replace(request, config=replace(request.config, max_tokens=max_tokens,
                                           thinking_budget=None))  # fmt: skip


def _continued(
    request: Request,
    prefix: str,
    max_tokens: int,
    template: str | None = None,
    fmt: ThinkingFormat | None = None,
) -> Request:
    """Return the request that goes on from `prefix`, the assistant's text so far: the prompt
    plus it (completion mode), it as a final assistant message to continue (chat mode), or, when
    the server's chat `template` cannot continue a turn, the conversation rendered with it plus
    `prefix` as a completion prompt (models/thinking.py's `continuation`)."""
    asked = _with(request, max_tokens)
    if request.mode == "completion":
        return replace(asked, prompt=request.prompt + prefix, prompt_tokens=0)
    if template is not None and fmt is not None:
        chat = [{"role": m.role, "content": m.content} for m in request.messages]
        plan = continuation(template, chat, prefix, fmt)
        if plan.mode == "completion":
            return replace(asked, mode="completion", prompt=plan.prompt, messages=(),
                           prompt_tokens=0)  # fmt: skip
    messages = (*request.messages, Message("assistant", prefix))
    return replace(asked, messages=messages, prompt_tokens=0)


def _template_text(path: str | None) -> str | None:
    """Return the chat template file's text, or raise UsageError (one line) when unreadable."""
    if path is None:
        return None
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"-M chat_template={path}: cannot read it as a UTF-8 Jinja template "
            f"({exc.__class__.__name__}); give the path of a template file"
        ) from None


def _refusal(exc: BodyTooLarge | CrossOriginRedirect, request: Request, n: int) -> str:
    """Return the recorded reason of a body past its bound or a redirect not followed."""
    if isinstance(exc, CrossOriginRedirect):
        return str(exc)
    choices = f" x {n} choices" if n > 1 else ""
    return f"{exc} (bound set by max_tokens {request.config.output_ceiling()}{choices})"


def _check_truncation(
    generation: Generation, request: Request, exact: bool, latency: float
) -> Generation:
    """Mark a generation whose server saw fewer prompt tokens than were sent (silent truncation)."""
    sent, seen = request.prompt_tokens, generation.prompt_tokens
    # The model's own tokenizer may differ by a few tokens where the template meets the context;
    # a stand-in tokenizer can miscount by a few percent. Truncation cuts far more than either.
    floor = sent - max(8, sent // 100) if exact else int(sent * 0.8)
    status, error = generation.status, generation.error
    if sent and seen and seen < floor:
        status = "context_overflow"
        error = f"silent truncation: server counted {seen} prompt tokens, harness sent {sent}"
    return Generation(
        text=generation.text,
        reasoning=generation.reasoning,
        status=status,
        prompt_tokens=seen,
        completion_tokens=generation.completion_tokens,
        latency_s=latency,
        error=error,
    )


def _error_message(exc: openai.APIStatusError) -> str:
    """Return the server's error message (at most 200 characters) from an HTTP error answer."""
    body = exc.body
    # The SDK hands over a JSON body's `error` member when it has one: for text-generation-
    # inference's `{"error": "..."}` that is the message itself, a string; a body that is not
    # JSON comes as its text, a string too.
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict) and inner.get("message"):
        return _snippet(str(inner["message"]))
    if isinstance(inner, str) and inner.strip():
        return _snippet(inner)
    try:
        return _snippet(exc.response.text) or f"(empty body, {exc.message})"
    except (AttributeError, UnicodeDecodeError):
        return _snippet(str(exc.message))


def _snippet(text: str) -> str:
    """Return the first 200 characters of `text` on one line (kept as data, displayed as text)."""
    return storable_text(" ".join(text[: _REASON_CHARS * 2].split())[:_REASON_CHARS])[0]


def _body_snippet(body: bytes) -> str:
    return _snippet(body[: _REASON_CHARS * 8].decode("utf-8", "replace")) or "(empty body)"


def _count(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def parse_choices(
    body: bytes,
    mode: PromptMode,
    *,
    raw: bool = False,
    opened: str = "",
    markers: tuple[str, str] = ("<think>", "</think>"),
) -> list[Generation]:
    """Return one generation per choice in a 200 answer body; raise UnusableAnswer saying why
    there is none.

    Missing or malformed `usage` is not an error: the token counts are recorded as 0 (unknown) and
    the silent-truncation check, which needs the server's prompt count, is skipped for that answer.
    A `null` message content is an empty answer (a reasoning model cut off before answering), but a
    message without a `content` key and without reasoning is unusable. With several choices the
    prompt was read once (its count goes to each) and the output count is the answer's total
    shared out evenly (servers report one total).
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise UnusableAnswer(f"body is not JSON: {_body_snippet(body)}") from None
    if not isinstance(data, dict):
        raise UnusableAnswer(f"body is not a JSON object: {_body_snippet(body)}")
    if data.get("error"):
        raise UnusableAnswer(f"server answered 200 with an error: {_body_snippet(body)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UnusableAnswer(f"no choices in the answer: {_body_snippet(body)}")
    usage = data.get("usage")
    prompt, output = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    # Choices in their `index` order; a choice the harness cannot use makes the answer unusable.
    ordered = sorted(
        (c for c in choices if isinstance(c, dict)),
        key=lambda c: c.get("index") if isinstance(c.get("index"), int) else 0,
    )
    share = output // len(ordered)
    return [_choice(choice, mode, body, prompt, share, raw, opened, markers) for choice in ordered]


def _choice(
    choice: dict[str, Any],
    mode: PromptMode,
    body: bytes,
    prompt: int,
    output: int,
    raw: bool,
    opened: str,
    markers: tuple[str, str],
) -> Generation:
    if mode == "completion":
        text, reasoning, set_apart = choice.get("text"), "", False
        if not isinstance(text, str):
            raise UnusableAnswer(f"no text in the answer's choice: {_body_snippet(body)}")
    else:
        message = choice.get("message")
        if not isinstance(message, dict):
            raise UnusableAnswer(f"no message in the answer's choice: {_body_snippet(body)}")
        fields = [message.get(k) for k in ("reasoning_content", "reasoning")]
        # A parser that found an empty think block still says so with "" (vLLM does).
        set_apart = any(isinstance(f, str) for f in fields)
        reasoning = next((f for f in fields if isinstance(f, str) and f), "")
        text = message.get("content")
        if ("content" not in message and not reasoning) or not isinstance(text, str | None):
            raise UnusableAnswer(f"no content in the answer's message: {_body_snippet(body)}")
        text = text or ""
    # JSON's "\ud800" decodes to a lone surrogate that no file or database can hold: cleaned
    # here, where the text enters, and the answer flagged (it is still scored, as text).
    (text, bad_text), (reasoning, bad_reasoning) = storable_text(text), storable_text(reasoning)
    if raw and set_apart and not reasoning:
        # A parser set apart an empty think block ("" as its reasoning): the raw text gets the
        # block back as the model wrote it, so that a thinking budget reads a closed thought and
        # an answer, not an open thought (or an answer with the parser's separator in front).
        text = ("" if opened else markers[0]) + markers[1] + text
    if not raw:  # `raw`: the text as written, markers kept (a thinking budget reads them)
        # `opened`: the prompt opened the thinking; a thought never closed is no answer.
        text, reasoning = split_reasoning(opened + text, reasoning, set_apart=set_apart)
    replaced = bad_text + bad_reasoning
    return Generation(
        text=text,
        reasoning=reasoning,
        status="length" if choice.get("finish_reason") == "length" else "ok",
        prompt_tokens=prompt,
        completion_tokens=output,
        error=sanitized_note(replaced) if replaced else "",
    )


def _prompt_key(request: Request) -> str:
    """Return a key equal for requests that differ only by seed (a sample's repeats)."""
    config = request.config
    return json.dumps(
        [
            request.mode,
            request.prompt,
            [(m.role, m.content) for m in request.messages],
            config.max_tokens,
            config.temperature,
            config.top_p,
            list(config.stop or ()),
        ]
    )


def _retry_after(response: httpx.Response | None) -> float | None:
    """Return the seconds a server's Retry-After asks for: delay-seconds or an HTTP date (RFC
    9110 allows both), never below 0; None when there is none or it is neither."""
    if response is None:
        return None
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; `-0000` reads as naive
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def create_multi_backend(
    name: str,
    options: dict[str, Any],
    base_urls: Sequence[str],
    *,
    concurrency: int | None = None,
    request_timeout_s: float | None = None,
    token_cap: int | None = None,
    prefill_tps: float | None = None,
    decode_tps: float | None = None,
    **policy: Any,
) -> MultiEndpointBackend:
    """Return one backend over `base_urls` (same model, same `-M` options on each).

    `policy` holds `MultiEndpointBackend`'s benching options (bench_after, bench_base_s, ...).
    """
    from longscope.models.registry import typed_options

    options = typed_options("openai", options)
    urls = [endpoint_url(u) for u in base_urls]
    twice = [u for i, u in enumerate(urls) if u in urls[:i]]
    if twice:
        raise UsageError(
            f"the same endpoint is given twice ({shown(twice[0])}, however written): "
            "give each endpoint once"
        )
    endpoints = [
        OpenAIBackend.from_options(
            name,
            options,
            base_url=url,
            concurrency=concurrency,
            request_timeout_s=request_timeout_s,
            # One retry on the endpoint itself; after that the request moves to another one.
            max_retries=1,
            backoff_base_s=0.5,
        )
        for url in urls
    ]
    return MultiEndpointBackend(
        endpoints,
        labels=[shown(u) for u in urls],
        token_cap=token_cap,
        deadlines=DeadlinePolicy(prefill_tps=prefill_tps, decode_tps=decode_tps),
        **policy,
    )
