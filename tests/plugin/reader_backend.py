"""A minimal backend, outside `src/`: everything a backend must give longscope, and nothing more.

It reads the prompt as a person would skim it: the question asks "What is the X?", and the answer
is whatever follows "The X is" in the text. Its `-M` options are declared as `Param`s, so the
registry types and checks them, and `longscope list reader` shows them. It plugs in through the
`longscope.backends` entry-point group (tests/plugin/test_plugin_backend.py) or
`register_backend`, and every command works on it with no change anywhere else.
"""

from __future__ import annotations

import asyncio
import re
import time

from longscope.models.base import Backend, ModelInfo
from longscope.models.registry import option
from longscope.types import Generation, PromptMode, Request


class ByteTokenizer:
    """One token per UTF-8 byte: exact, and needs no vocabulary file."""

    name = "bytes"
    exact = True

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


class ReaderBackend(Backend):
    DESCRIPTION = "Reader: answers 'What is the X?' from 'The X is ...' in the prompt (a plug-in)"
    OPTIONS = (
        option("context_length", "int", 100_000, "tokens (bytes) it holds", low=1),
        option(
            "prompt_mode", "choice", "chat", "chat or completion", choices=("chat", "completion")
        ),
        option("latency_s", "float", 0.0, "seconds each answer takes", low=0),
        option("shout", "bool", False, "answer in capitals (a wrong answer, for tests)"),
    )
    max_concurrency = 4

    def __init__(
        self,
        name: str,
        *,
        context_length: int,
        prompt_mode: PromptMode,
        latency_s: float,
        shout: bool,
    ) -> None:
        # The registry hands every -M option, typed, its default applied: nothing restated here.
        self.name = f"reader/{name}"
        self.context_length = context_length
        self.prompt_mode = prompt_mode
        self.latency_s = latency_s
        self.shout = shout

    async def info(self) -> ModelInfo:
        return ModelInfo(
            model_id=f"reader:{self.name}",
            context_length=self.context_length,
            context_source="user",
            prompt_mode=self.prompt_mode,
            tokenizer="bytes",
        )

    def tokenizer(self) -> ByteTokenizer:
        return ByteTokenizer()

    async def generate(self, request: Request) -> Generation:
        started = time.perf_counter()
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        prompt = request.prompt or "\n".join(m.content for m in request.messages)
        asked = re.findall(r"What is the (\w+)\?", prompt)
        answer = ""
        if asked:
            found = re.search(rf"The {re.escape(asked[-1])} is (\S+?)\.", prompt)
            answer = found.group(1) if found else ""
        text = answer.upper() if self.shout else answer
        tokens = len(ByteTokenizer().encode(prompt))
        return Generation(
            text=text,
            status="ok",
            prompt_tokens=tokens,
            completion_tokens=len(text.encode()),
            latency_s=time.perf_counter() - started,
        )
