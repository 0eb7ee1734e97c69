"""The backend protocol: one async `generate` and a description of the model behind it."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from longscope.errors import UsageError
from longscope.text.tokenizers import Tokenizer
from longscope.types import Generation, PromptMode, Request

__all__ = [
    "Backend",
    "LimitKind",
    "ModelInfo",
    "UsageError",
    "available_host_bytes",
    "split_reasoning",
]

LimitKind = Literal["context", "host_memory", "device_memory"]


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


@runtime_checkable
class Backend(Protocol):
    """Turns requests into generations. Knows nothing about suites, stores or reports."""

    name: str
    max_concurrency: int

    async def info(self) -> ModelInfo: ...

    def tokenizer(self) -> Tokenizer: ...

    async def generate(self, request: Request) -> Generation: ...

    async def aclose(self) -> None: ...


def split_reasoning(text: str, reasoning: str = "") -> tuple[str, str]:
    """Return (answer, reasoning): `<think>...</think>` moves out of the answer.

    An unclosed think block means the model never reached its answer: the answer is empty and the
    whole block is reasoning (scoring the half-finished thought as an answer would be wrong).
    """
    start = text.find("<think>")
    end = text.find("</think>")
    if end != -1 and (start == -1 or start < end):
        inner_start = start + len("<think>") if start != -1 else 0
        thought = text[inner_start:end].strip()
        answer = (text[:start] if start != -1 else "") + text[end + len("</think>") :]
        return answer.strip(), "\n".join(x for x in (reasoning, thought) if x)
    if start != -1:
        thought = text[start + len("<think>") :].strip()
        return "", "\n".join(x for x in (reasoning, thought) if x)
    return text, reasoning


def available_host_bytes() -> int:
    """Return the host memory a new allocation can have: MemAvailable (free plus reclaimable
    cache) where Linux reports it, else the free pages."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
