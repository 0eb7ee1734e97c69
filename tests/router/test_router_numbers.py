"""The router's numbers: the relative budget from the most cautious suite, and every call's tokens."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from longscope.models.openai_api import OpenAIBackend
from longscope.router import load_profile, with_router
from longscope.router.backend import NOT_HERE
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import GenerationConfig, Request, Sample

from ..models.fault_server import FaultServer, text_completion_body

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)


def test_the_relative_basis_takes_the_shortest_suites_length(tmp_path: Path) -> None:
    profile = {
        "profile_version": 1,
        "model": "m",
        "claimed_context": 32768,
        "effective_context": 16384,
        "measured": [
            {"suite": "longctx", "effective_length": 16384, "relative_effective_length": 16384},
            {"suite": "ruler", "effective_length": 8192, "relative_effective_length": 6144},
            {"suite": "hundred", "effective_length": None, "relative_effective_length": 12288},
        ],
        "date": "2026-11-27",
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    assert load_profile(str(path)).relative == 6144
    # A URL nothing listens on: the budget is decided before anything is sent.
    routed = with_router(
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"), str(path), basis="relative"
    )
    assert routed.length == 6144


def test_map_reduce_reports_the_tokens_of_every_call(qwen_tokenizer) -> None:
    context = " ".join(itertools.islice(filler_sentences("en", 1), 150))
    sample = Sample("s1", "t", "English", context, "What is the code word?", ("x",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    request = Request(
        "s1",
        0,
        "completion",
        prompt=prompt,
        config=GenerationConfig(max_tokens=16),
        parts=TEMPLATE.parts(sample, "completion"),
    )
    answers = [" violet", " indigo"] + [f" {NOT_HERE}"] * 10 + [" violet, then indigo"]
    with FaultServer() as server:
        # Each call reports its own counts: 1000 + i prompt tokens, 3 output tokens.
        server.script.extend(
            ("ok", text_completion_body(a, prompt_tokens=1000 + i)) for i, a in enumerate(answers)
        )
        routed = with_router(
            OpenAIBackend("m", base_url=server.url, prompt_mode="completion"), None, length=1024
        )

        async def go():
            try:
                return await routed.generate(request)
            finally:
                await routed.aclose()

        generation = asyncio.run(go())
        calls = len(server.requests)
    assert generation.route["decision"] == "map-reduce" and generation.route["calls"] == calls
    assert calls >= 3
    assert generation.prompt_tokens == sum(1000 + i for i in range(calls))
    assert generation.completion_tokens == 3 * calls
