"""An in-process scripted backend for tests: answers by rule, with latency and faults, no model.

    ScriptedBackend("key", answer=lambda request: "42", latency_s=0.01, fault=every(5, "error"))

From the command line (`--model scripted/NAME`, `-M key=value`):
- `answer=TEXT`: the same answer to every request;
- `pattern=REGEX`: the answer is the first group (or the whole match) of the REGEX's last match in
  the prompt, so a suite whose prompt states the answer gets it right ("The key is (\\w+)");
- `latency_s=S`: each answer takes this long;
- `fail_every=N`, `fail_status=error|timeout|length|context_overflow`: every Nth request fails;
- `retries=N`, `backoff_s=S`: the retry policy applied around it (`models.retry`; default 0);
- `grouped=true`: a document's requests come as one group, answered together after one
  `latency_s` (as a backend sharing their prefill would: the hf engine, `n` on a server);
- `context_length=N`, `prompt_mode=chat|completion`, `tokenizer=qwen2.5|NAME|PATH`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend, ModelInfo, OnResult, RetryPolicy
from longscope.models.registry import option
from longscope.text.tokenizers import Tokenizer, load_tokenizer
from longscope.types import STATUSES, Generation, PromptMode, Request, Status

Rule = Callable[[Request], str]
Fault = Callable[[Request, int], "Failure | None"]


@dataclass(frozen=True)
class Failure:
    """A fault a script injects: the status the request ends in, and the error text."""

    status: Status = "error"
    error: str = "HTTP 503: scripted fault"


def every(n: int, status: Status = "error", error: str = "") -> Fault:
    """Return a fault that fails every `n`th request (counting from 1) with `status`."""

    def fault(_: Request, number: int) -> Failure | None:
        if n > 0 and number % n == 0:
            return Failure(status, error or f"HTTP 503: scripted fault on request {number}")
        return None

    return fault


def from_pattern(pattern: str) -> Rule:
    """Return a rule answering with the first group (or whole match) of `pattern`'s last match."""
    compiled = re.compile(pattern)

    def rule(request: Request) -> str:
        matches = list(compiled.finditer(request.text))
        if not matches:
            return ""
        last = matches[-1]
        return last.group(1) if compiled.groups else last.group(0)

    return rule


class ScriptedBackend(Backend):
    """Answers requests by rule, in process; records every request it was sent (`requests`)."""

    DESCRIPTION = "answers by rule in process, no model (tests, demos, fault drills)"
    OPTIONS = (
        option("answer", "str", None, "the same answer to every request"),
        option("pattern", "str", None, "answer with the REGEX's last match in the prompt (its "
               "first group, else the whole match)"),
        option("latency_s", "float", 0.0, "seconds each answer takes", low=0),
        option("fail_every", "int", 0, "every Nth request fails (0: none)", low=0),
        option("fail_status", "choice", "error", "the status of a failed request",
               choices=STATUSES),
        option("context_length", "tokens", 32768, "tokens the model holds", low=1),
        option("prompt_mode", "choice", "chat", "chat or completion",
               choices=("chat", "completion")),
        option("tokenizer", "str", "qwen2.5", "tokenizer to count prompts with"),
        option("max_concurrency", "int", 8, "requests in flight at once", low=1),
        option("retries", "int", 0, "retries of a failed request (the shared policy)", low=0),
        option("backoff_s", "float", 0.01, "first retry pause, doubling", low=0),
        option("grouped", "bool", False, "answer a document's requests together, as one group "
               "(one latency_s for the group), as a backend sharing their prefill would"),
    )  # fmt: skip

    def __init__(
        self,
        name: str = "scripted",
        *,
        answer: str | Rule = "",
        latency_s: float = 0.0,
        fault: Fault | None = None,
        context_length: int | None = 32768,
        prompt_mode: PromptMode = "chat",
        tokenizer: Tokenizer | str = "qwen2.5",
        max_concurrency: int = 8,
        retry_policy: RetryPolicy | None = None,
        grouped: bool = False,
    ) -> None:
        self.name = f"scripted/{name}"
        self.shares_prefill = grouped
        self.group_results_as_they_come = not grouped
        self.groups: list[int] = []
        """The size of every group answered together (`grouped`), in the order they came."""
        self.retry_policy = retry_policy or RetryPolicy(max_retries=0)
        self.max_concurrency = max_concurrency
        self._answer = answer if callable(answer) else (lambda _r, text=answer: text)
        self._latency_s = latency_s
        self._fault = fault
        self._context_length = context_length
        self._prompt_mode = prompt_mode
        self._tokenizer_spec = tokenizer
        self._tokenizer: Tokenizer | None = None if isinstance(tokenizer, str) else tokenizer
        self.requests: list[Request] = []
        self.closed = False

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any], **transport: Any) -> ScriptedBackend:
        """Build from `scripted/NAME` and complete typed `-M` options (`OPTIONS`)."""
        if options["answer"] is not None and options["pattern"] is not None:
            raise UsageError(
                "give the scripted backend -M answer=TEXT or -M pattern=REGEX, not both"
            )
        answer: str | Rule = options["answer"] or ""
        if options["pattern"] is not None:
            try:
                answer = from_pattern(options["pattern"])
            except re.error as exc:
                raise UsageError(f"bad -M pattern: {exc}") from exc
        fail_every = options["fail_every"]
        return cls(
            name,
            answer=answer,
            latency_s=options["latency_s"],
            fault=every(fail_every, options["fail_status"]) if fail_every else None,
            context_length=options["context_length"],
            prompt_mode=options["prompt_mode"],
            tokenizer=options["tokenizer"],
            max_concurrency=options["max_concurrency"],
            retry_policy=RetryPolicy(
                max_retries=options["retries"], backoff_base_s=options["backoff_s"]
            ),
            grouped=options["grouped"],
        )

    async def info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.name,
            context_length=self._context_length,
            context_source="user" if self._context_length is not None else "unknown",
            prompt_mode=self._prompt_mode,
            tokenizer=self.tokenizer().name,
            details={"scripted": True},
        )

    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            try:
                self._tokenizer = load_tokenizer(str(self._tokenizer_spec))
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        return self._tokenizer

    async def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        number = len(self.requests)
        started = time.perf_counter()
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        return self._answered(request, number, started)

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        """Return the group's generations; `grouped`: all together, after one `latency_s`."""
        if not self.shares_prefill:
            return await super().generate_group(requests, on_result)
        self.groups.append(len(requests))
        first = len(self.requests) + 1
        self.requests.extend(requests)
        started = time.perf_counter()
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        return [self._answered(r, first + i, started) for i, r in enumerate(requests)]

    def _answered(self, request: Request, number: int, started: float) -> Generation:
        failure = self._fault(request, number) if self._fault is not None else None
        if failure is not None:
            return Generation(
                text="",
                status=failure.status,
                latency_s=time.perf_counter() - started,
                error=failure.error,
            )
        text = self._answer(request)
        tokens = self.tokenizer().encode(text) if text else []
        status: Status = "ok"
        if len(tokens) > request.config.max_tokens:
            text = self.tokenizer().decode(tokens[: request.config.max_tokens])
            status = "length"
        return Generation(
            text=text,
            status=status,
            prompt_tokens=request.prompt_tokens,
            completion_tokens=min(len(tokens), request.config.max_tokens),
            latency_s=time.perf_counter() - started,
        )

    async def aclose(self) -> None:
        self.closed = True


def answers(*pairs: tuple[str, str], default: str = "") -> Rule:
    """Return a rule answering with the text paired to the first regex found in the prompt."""
    compiled: Sequence[tuple[re.Pattern[str], str]] = [(re.compile(p), a) for p, a in pairs]

    def rule(request: Request) -> str:
        for pattern, text in compiled:
            if pattern.search(request.text):
                return text
        return default

    return rule


__all__ = ["Failure", "ScriptedBackend", "answers", "every", "from_pattern"]
