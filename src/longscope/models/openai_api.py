"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, hosted APIs)."""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from typing import Any

import httpx
import openai

from longscope.models.base import ModelInfo, UsageError, split_reasoning
from longscope.text.tokenizers import DEFAULT_TOKENIZER, Tokenizer, load_tokenizer
from longscope.types import Generation, PromptMode, Request

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_OVERFLOW = re.compile(
    r"maximum context length|context[ _]length|context window|too many tokens|prompt is too long"
    r"|input is too long|exceeds? the (model'?s? )?(max|context)",
    re.IGNORECASE,
)
_KNOWN_OPTIONS = ("context_length", "prompt_mode", "tokenizer", "api_key_env")


class OpenAIBackend:
    """Chat or completion requests to an OpenAI-compatible endpoint through the official async SDK."""

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
    ) -> None:
        self.name = f"openai/{model}"
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.prompt_mode = prompt_mode
        self.stated_context_length = context_length
        self.tokenizer_spec = tokenizer
        self.max_concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.retries_done = 0
        # The key is read here and kept only inside the client: never stored, logged or reported.
        api_key = os.environ.get(api_key_env) or "EMPTY"
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,
            timeout=httpx.Timeout(request_timeout_s, connect=10.0),
        )
        self._tokenizer: Tokenizer | None = None
        self._info: ModelInfo | None = None

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any], **transport: Any) -> OpenAIBackend:
        """Build from `-M` options (what changes outputs) and transport kwargs (URL, concurrency)."""
        unknown = sorted(set(options) - set(_KNOWN_OPTIONS))
        if unknown:
            raise UsageError(
                f"unknown openai option(s) {', '.join(unknown)}: known are {', '.join(_KNOWN_OPTIONS)}"
            )
        mode = options.get("prompt_mode", "chat")
        if mode not in ("chat", "completion"):
            raise UsageError(f"bad prompt_mode {mode!r}: use chat or completion")
        ctx = options.get("context_length")
        if ctx is not None and (not isinstance(ctx, int) or ctx <= 0):
            raise UsageError(f"bad context_length {ctx!r}: expected a positive integer")
        transport = {k: v for k, v in transport.items() if v is not None}
        return cls(
            name,
            prompt_mode=mode,
            context_length=ctx,
            tokenizer=str(options.get("tokenizer", DEFAULT_TOKENIZER)),
            api_key_env=str(options.get("api_key_env", DEFAULT_API_KEY_ENV)),
            **transport,
        )

    async def info(self) -> ModelInfo:
        """Ask the server what it serves; the context length comes from the user, then the server."""
        if self._info is not None:
            return self._info
        try:
            listing = await self._client.models.list()
        except openai.APIConnectionError as exc:
            raise UsageError(
                f"cannot reach server at {self.base_url}: start it or fix --base-url"
            ) from exc
        except openai.APIStatusError as exc:
            raise UsageError(
                f"server at {self.base_url} answered /models with HTTP {exc.status_code}: "
                "check --base-url and the API key variable"
            ) from exc
        served = {m.id: (m.model_extra or {}) for m in listing.data}
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
            details={"served_models": sorted(served), "server_max_model_len": server_len},
        )
        return self._info

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            try:
                self._tokenizer = load_tokenizer(self.tokenizer_spec)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        return self._tokenizer

    async def generate(self, request: Request) -> Generation:
        """Send one request, retrying transient failures with exponential backoff and full jitter."""
        started = time.perf_counter()
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                generation = await self._call(request)
            except openai.BadRequestError as exc:
                message = _error_message(exc)
                status = "context_overflow" if _OVERFLOW.search(message) else "error"
                return Generation(text="", status=status, error=f"HTTP 400: {message}"[:2000])
            except openai.APITimeoutError:
                last_error, delay = "timeout", None
                if attempt == self.max_retries:
                    return Generation(
                        text="",
                        status="timeout",
                        latency_s=time.perf_counter() - started,
                        error=f"no answer within {request.timeout_s or 'the client timeout'}s "
                        f"after {attempt + 1} attempt(s)",
                    )
            except openai.APIConnectionError as exc:
                last_error, delay = f"connection error: {exc}", None
            except openai.APIStatusError as exc:
                if exc.status_code != 429 and exc.status_code < 500:
                    message = _error_message(exc)
                    return Generation(
                        text="", status="error", error=f"HTTP {exc.status_code}: {message}"[:2000]
                    )
                last_error = f"HTTP {exc.status_code}: {_error_message(exc)}"
                delay = _retry_after(exc.response)
            else:
                return _check_truncation(
                    generation, request, self.tokenizer().exact, time.perf_counter() - started
                )
            if attempt < self.max_retries:
                self.retries_done += 1
                await asyncio.sleep(self._backoff(attempt, delay))
        return Generation(
            text="",
            status="error",
            latency_s=time.perf_counter() - started,
            error=f"gave up after {self.max_retries + 1} attempts: {last_error}"[:2000],
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, 4 * self.backoff_cap_s)
        return random.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**attempt))

    async def _call(self, request: Request) -> Generation:
        config = request.config
        common: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "seed": config.seed,
        }
        if config.stop:
            common["stop"] = list(config.stop)
        if request.timeout_s:
            common["timeout"] = request.timeout_s
        if request.mode == "completion":
            out = await self._client.completions.create(prompt=request.prompt, **common)
            choice = out.choices[0]
            text, reasoning = choice.text or "", ""
        else:
            messages = [{"role": m.role, "content": m.content} for m in request.messages]
            out = await self._client.chat.completions.create(messages=messages, **common)
            choice = out.choices[0]
            extra = choice.message.model_extra or {}
            text = choice.message.content or ""
            reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
        text, reasoning = split_reasoning(text, reasoning)
        usage = out.usage
        return Generation(
            text=text,
            reasoning=reasoning,
            status="length" if choice.finish_reason == "length" else "ok",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    async def aclose(self) -> None:
        await self._client.close()


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
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(exc.message)


def _retry_after(response: httpx.Response | None) -> float | None:
    if response is None:
        return None
    raw = response.headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None
