"""The router on the real embedded model, at its budget: what it sends and what it records.

The backend behind the router is llama.cpp's gemma3-270m, unchanged; `Recording` only keeps the
requests it is sent (it makes up no answer). The model's words vary by machine, so the tests check
the router's promises, which do not: every prompt it sends fits the budget, the chunks cover the
whole document, a prompt exactly at the budget passes whole and one token more is split, and the
plan it stores agrees with the calls it made.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

import pytest

from longscope.models.base import Forwarding
from longscope.router import with_router
from longscope.router.backend import MAP_NOTE, NOT_HERE, REDUCE_INTRO
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import SCORABLE, Generation, GenerationConfig, Request, Sample

pytestmark = pytest.mark.model

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)
LENGTH = 600
MAX_TOKENS = 8
BUDGET = LENGTH - MAX_TOKENS


class Recording(Forwarding):
    """The real backend, passing every request through and keeping a copy."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.requests: list[Request] = []

    async def aclose(self) -> None:
        return None  # the model is shared by the module's tests

    async def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        return await self.inner.generate(request)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    from longscope.models.registry import create_backend

    backend = create_backend("llamacpp/gemma3-270m", {"n_ctx": 2048})
    yield backend
    asyncio.run(backend.aclose())


def _request(sentences: list[str], prompt_tokens: int = 0) -> Request:
    sample = Sample("s1", "t", "en", " ".join(sentences), "What is the code word?", ("x",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    return Request(
        "s1",
        0,
        "completion",
        prompt=prompt,
        prompt_tokens=prompt_tokens,
        config=GenerationConfig(max_tokens=MAX_TOKENS, temperature=0.0),
        parts=TEMPLATE.parts(sample, "completion"),
    )


def _route(model, request: Request, **options) -> tuple[Generation, list[Request]]:  # type: ignore[no-untyped-def]
    recording = Recording(model)
    routed = with_router(recording, None, length=LENGTH, **options)
    generation = asyncio.run(routed.generate(request))
    return generation, recording.requests


def test_a_prompt_at_the_budget_passes_whole_and_one_token_more_is_split(model) -> None:  # type: ignore[no-untyped-def]
    sentences = list(itertools.islice(filler_sentences("en", 3), 25))
    at = _request(sentences, prompt_tokens=BUDGET)
    generation, sent = _route(model, at)
    assert generation.route["decision"] == "pass" and generation.route["budget"] == BUDGET
    assert [r.prompt for r in sent] == [at.prompt]
    over = replace(at, prompt_tokens=BUDGET + 1)
    generation, sent = _route(model, over)
    # split: the model never sees the whole prompt, each part carries the "part i of n" note
    assert generation.route["decision"] == "map-reduce" and sent
    assert all(r.prompt != at.prompt and "(This was part 1 of" in sent[0].prompt for r in sent)


def test_map_reduce_prompts_fit_cover_the_document_and_match_the_plan(model) -> None:  # type: ignore[no-untyped-def]
    sentences = list(itertools.islice(filler_sentences("en", 5), 45))
    request = _request(sentences)
    tokenizer = model.tokenizer()
    assert len(tokenizer.encode(request.prompt)) > BUDGET
    generation, sent = _route(model, request)
    plan = generation.route
    chunks = plan["chunks"]
    maps = sent[: len(chunks)]
    assert plan["decision"] == "map-reduce" and len(chunks) >= 2
    for index, (req, chunk) in enumerate(zip(maps, chunks, strict=True), start=1):
        assert len(tokenizer.encode(req.prompt)) <= BUDGET
        assert req.prompt.startswith("Read the document.\n\nDocument:\n")
        assert MAP_NOTE.format(index=index, count=len(chunks)) in req.prompt
        assert req.prompt.endswith("Question: What is the code word?\nAnswer:")
        assert chunk["status"] in SCORABLE
    # every sentence of the document reaches the model in some part
    seen = " ".join(r.prompt for r in maps)
    assert all(s in seen for s in sentences)
    answered = [
        c["part"] for c in chunks if c["answer"].strip() and NOT_HERE not in c["answer"].lower()
    ]
    reduces = sent[len(chunks) :]
    if len(answered) == 1:
        assert plan["reduce"] == f"skipped: only part {answered[0]} answered" and not reduces
    else:
        assert len(reduces) == 1 and REDUCE_INTRO in reduces[0].prompt
        assert len(tokenizer.encode(reduces[0].prompt)) <= LENGTH
    assert plan["calls"] == len(sent)


def test_truncate_sends_one_prompt_within_the_budget_with_both_ends(model) -> None:  # type: ignore[no-untyped-def]
    sentences = list(itertools.islice(filler_sentences("en", 7), 45))
    request = _request(sentences)
    generation, sent = _route(model, request, strategy="truncate")
    assert generation.route["decision"] == "truncate" and len(sent) == 1
    prompt = sent[0].prompt
    assert len(model.tokenizer().encode(prompt)) <= BUDGET
    assert prompt.startswith("Read the document.\n\nDocument:\n" + sentences[0][:20])
    assert prompt.endswith(sentences[-1] + "\n\nQuestion: What is the code word?\nAnswer:")
    assert generation.route["context_tokens_kept"] < len(model.tokenizer().encode(request.prompt))
