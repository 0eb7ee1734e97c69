"""The router's decisions: pass, map-reduce and truncate, each recorded with the generation.

The model behind it is a scripted OpenAI-compatible server, so that the prompts the router sends
can be checked exactly; the embedded model runs behind the router in tests/router/test_e2e.py.
"""

import asyncio
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.router import describe_routes, load_profile, with_router
from longscope.router.backend import NOT_HERE, REDUCE_INTRO
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import GenerationConfig, Request, Sample

from ..models.fault_server import FaultServer, text_completion_body

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)


def _request(sentences: int) -> Request:
    context = " ".join(itertools.islice(filler_sentences("en", 1), sentences))
    sample = Sample("s1", "t", "English", context, "What is the code word?", ("x",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    return Request(
        "s1",
        0,
        "completion",
        prompt=prompt,
        config=GenerationConfig(max_tokens=16),
        parts=TEMPLATE.parts(sample, "completion"),
    )


def _route(request: Request, answers: list[str], **options):
    with FaultServer() as server:
        server.script.extend(("ok", text_completion_body(a)) for a in answers)
        inner = OpenAIBackend("m", base_url=server.url, prompt_mode="completion")
        routed = with_router(inner, None, **options)

        async def go():
            try:
                return await routed.generate(request)
            finally:
                await routed.aclose()

        generation = asyncio.run(go())
    return generation, [r["body"]["prompt"] for r in server.requests]


def test_a_prompt_that_fits_passes_through(qwen_tokenizer) -> None:
    request = _request(20)
    generation, prompts = _route(request, [" blue"], length=4096)
    assert generation.text == " blue" and prompts == [request.prompt]
    assert generation.route["decision"] == "pass"


def test_map_reduce_asks_each_part_and_skips_reduce_when_one_part_answers(qwen_tokenizer) -> None:
    request = _request(150)
    total = len(qwen_tokenizer.encode(request.prompt))
    budget = 1024
    answers = [f" {NOT_HERE}"] * 10 + [" violet"]
    answers[1] = " violet"
    generation, prompts = _route(request, answers[: total // 500 + 5], length=budget)
    plan = generation.route
    assert plan["decision"] == "map-reduce" and plan["prompt_tokens"] > budget
    count = len(plan["chunks"])
    assert len(prompts) == count >= 2 and plan["calls"] == count
    parts = request.parts
    rebuilt = ""
    for index, prompt in enumerate(prompts, start=1):
        assert len(qwen_tokenizer.encode(prompt)) <= budget - 16
        assert prompt.startswith(parts.head) and prompt.endswith(parts.tail)
        assert f"part {index} of {count}" in prompt
        rebuilt += prompt[len(parts.head) : prompt.index("\n\n(This was part")]
    assert rebuilt == parts.context
    assert generation.text == " violet" and plan["reduce"] == "skipped: only part 2 answered"


def test_map_reduce_combines_several_answers_in_one_more_call(qwen_tokenizer) -> None:
    request = _request(150)
    generation, prompts = _route(
        request, [" violet", " indigo"] + [f" {NOT_HERE}"] * 10 + [" violet, then indigo"],
        length=1024,
    )  # fmt: skip
    plan = generation.route
    count = len(plan["chunks"])
    assert len(prompts) == count + 1 and plan["calls"] == count + 1
    reduce_prompt = prompts[-1]
    assert REDUCE_INTRO + "Part 1: violet\nPart 2: indigo" in reduce_prompt
    assert reduce_prompt.endswith(request.parts.tail)
    assert plan["reduce"] == "one call over 2 partial answers"


def test_a_reduce_answer_that_echoes_the_list_is_cut(qwen_tokenizer) -> None:
    request = _request(150)
    echoed = " 10\nPart 1: 10\nPart 2: 72\nPart 3: 10"
    dry, _ = _route(request, [" 10"] * 20, length=1024)
    count = len(dry.route["chunks"])
    answers = [" 10", " 72"] + [" 10"] * (count - 2) + [echoed]
    generation, _ = _route(request, answers, length=1024)
    assert generation.text == " 10"
    assert generation.route["reduce"].endswith("the answer's echo of the partial answers was cut")


def test_truncate_keeps_both_ends_within_the_budget(qwen_tokenizer) -> None:
    request = _request(150)
    generation, prompts = _route(request, [" violet"], length=600, strategy="truncate")
    (prompt,) = prompts
    assert generation.route["decision"] == "truncate"
    assert len(qwen_tokenizer.encode(prompt)) <= 600 - 16
    context = request.parts.context
    assert prompt.startswith(request.parts.head + context[:100])
    assert prompt.endswith(context[-100:] + request.parts.tail)


def test_profile_gives_the_budget_and_bad_profiles_are_one_line(tmp_path: Path) -> None:
    profile = {
        "profile_version": 1,
        "model": "m",
        "claimed_context": 32768,
        "effective_context": None,
        "measured": [{"suite": "longctx", "effective_length": None, "relative_effective_length": 4096}],
        "date": "2026-11-26",
    }  # fmt: skip
    path = tmp_path / "p.json"
    path.write_text(json.dumps(profile))
    loaded = load_profile(str(path))
    assert loaded.absolute is None and loaded.relative == 4096
    assert (
        with_router(
            OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"), str(path), basis="relative"
        ).length
        == 4096
    )
    with pytest.raises(UsageError, match="no absolute effective length"):
        with_router(OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"), str(path))
    path.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        load_profile(str(path))
    path.write_text(json.dumps({"measured": []}))
    with pytest.raises(UsageError, match="field 'model'"):
        load_profile(str(path))
    with pytest.raises(UsageError, match="unknown router strategy 'split'"):
        with_router(
            OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"),
            None,
            length=4096,
            strategy="split",
        )


def test_a_budget_the_question_alone_fills_is_refused_in_one_line_not_a_crash(
    qwen_tokenizer,
) -> None:
    request = _request(150)
    request = replace(request, config=GenerationConfig(max_tokens=240))
    with pytest.raises(UsageError, match=r"too small for this prompt: .* give --router-length \d+"):
        _route(request, [" violet"], length=256)


def test_routes_are_described_in_one_line() -> None:
    routes = {
        ("a", 0): {"decision": "pass", "budget": 3896},
        ("b", 0): {"decision": "map-reduce", "budget": 3896, "calls": 5},
    }
    assert describe_routes(routes) == (
        "router (prompt budget 3896 tokens): map-reduce 1, pass 1; 6 model calls for 2 requests"
    )
