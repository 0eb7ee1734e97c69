"""The router wrapper's numbers and decisions, fast: the budget it holds a prompt to (exactly at it
passes, one token over is split), what it sends, and the calls, tokens and time it reports.

The model behind it is the scripted backend (no model; the real qwen2.5 tokenizer counts), which
keeps every request it is sent; `Billed` makes each call report its own prompt's tokens and a fixed
time, as a server does, so that the totals of a map-reduce can be checked to the token.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.scripted import Failure, ScriptedBackend, every
from longscope.router import describe_routes, load_profile, with_router
from longscope.router.backend import REDUCE_INTRO, RoutedBackend, describe_plan
from longscope.router.decide import MAP_NOTE, NOT_HERE
from longscope.text.filler import filler_sentences
from longscope.types import Generation, GenerationConfig, Message, PromptParts, Request

HEAD = "Read the document.\n\nDocument:\n"
TAIL = "\n\nQuestion: What is the code word?\nAnswer:"
CALL_S = 0.1111


class Billed(ScriptedBackend):
    """The scripted model, each call billed as a server bills it: its prompt's tokens, 0.1111 s."""

    async def generate(self, request: Request) -> Generation:
        generation = await super().generate(request)
        if generation.status not in ("ok", "length"):
            return replace(generation, latency_s=CALL_S)
        tokens = len(self.tokenizer().encode(request.text))
        return replace(generation, prompt_tokens=tokens, latency_s=CALL_S)


def _context(sentences: int) -> str:
    return " ".join(itertools.islice(filler_sentences("en", 1), sentences))


def _request(
    sentences: int = 150, *, mode: str = "completion", max_tokens: int = 16, **config
) -> Request:
    context = _context(sentences)
    prompt = HEAD + context + TAIL
    parts = PromptParts(HEAD, context, TAIL)
    settings = GenerationConfig(max_tokens=max_tokens, **config)
    if mode == "completion":
        return Request("s1", 0, "completion", prompt=prompt, config=settings, parts=parts)
    messages = (Message("user", prompt),)
    return Request("s1", 0, "chat", messages=messages, config=settings, parts=parts)


def _part(request: Request) -> int:
    """Which part of the document a map prompt carries (0: not a map prompt)."""
    for index in range(1, 100):
        if f"(This was part {index} of " in request.text:
            return index
    return 0


def _scripted(answer, tokenizer, **options) -> Billed:  # type: ignore[no-untyped-def]
    options.setdefault("prompt_mode", "completion")
    return Billed("m", answer=answer, tokenizer=tokenizer, **options)


def _generate(routed: RoutedBackend, request: Request) -> Generation:
    return asyncio.run(routed.generate(request))


# -- the budget --------------------------------------------------------------------------------


def test_the_budget_is_the_length_within_the_model_less_thinking_and_answer(qwen_tokenizer) -> None:
    request = _request(max_tokens=16, thinking_budget=100)
    roomy = with_router(_scripted("x", qwen_tokenizer, context_length=8192), None, length=4096)
    assert asyncio.run(roomy.budget_for(request)) == 4096 - 116
    small = with_router(_scripted("x", qwen_tokenizer, context_length=3000), None, length=4096)
    assert asyncio.run(small.budget_for(request)) == 3000 - 116
    unknown = with_router(_scripted("x", qwen_tokenizer, context_length=None), None, length=4096)
    assert asyncio.run(unknown.budget_for(request)) == 4096 - 116


def test_a_prompt_exactly_at_the_budget_passes_and_one_token_over_is_split(qwen_tokenizer) -> None:
    request = _request(150)
    tokens = len(qwen_tokenizer.encode(request.prompt))
    length = tokens + 16  # the budget is exactly the prompt's tokens
    inner = _scripted(" violet", qwen_tokenizer)
    routed = with_router(inner, None, length=length)
    generation = _generate(routed, request)
    assert inner.requests == [request]  # the same request, untouched
    assert generation.text == " violet" and generation.status == "ok"
    assert generation.route == {"decision": "pass", "prompt_tokens": tokens, "budget": tokens}
    over = with_router(_scripted(" violet", qwen_tokenizer), None, length=length - 1)
    generation = _generate(over, request)
    assert generation.route["decision"] == "map-reduce"
    assert generation.route["prompt_tokens"] == tokens and generation.route["budget"] == tokens - 1


def test_the_requests_own_count_decides_before_the_tokenizer(qwen_tokenizer) -> None:
    # A suite's count (what is sent, template included) is trusted over a recount of the text.
    request = replace(_request(20), prompt_tokens=5000)
    inner = _scripted(" violet", qwen_tokenizer)
    generation = _generate(with_router(inner, None, length=4096), request)
    assert generation.route["prompt_tokens"] == 5000
    assert generation.route["decision"] == "map-reduce"
    counted = len(qwen_tokenizer.encode(request.prompt))
    generation = _generate(with_router(inner, None, length=4096), replace(request, prompt_tokens=0))
    assert generation.route == {"decision": "pass", "prompt_tokens": counted, "budget": 4080}


def test_calls_for_counts_the_parts_and_the_combining_call(qwen_tokenizer) -> None:
    inner = _scripted("x", qwen_tokenizer)
    routed = with_router(inner, None, length=1016)  # prompt budget 1000 with 16 to answer
    at = replace(_request(20), prompt_tokens=1000)
    assert routed.calls_for(at) == 1
    # The parts, at most one combining call fewer than the parts (rounds of pairs), one spare.
    assert routed.calls_for(replace(at, prompt_tokens=1001)) == 2 + 1 + 2
    assert routed.calls_for(replace(at, prompt_tokens=3000)) == 3 + 2 + 2
    assert routed.calls_for(replace(at, prompt_tokens=3001)) == 4 + 3 + 2
    thinking = replace(at, config=GenerationConfig(max_tokens=16, thinking_budget=500))
    assert routed.calls_for(thinking) == 2 + 1 + 2  # 1000 tokens against a budget of 500
    # Without a count, about 3 characters a token.
    uncounted = replace(at, prompt="x" * 3000, prompt_tokens=0)
    assert routed.calls_for(uncounted) == 1
    assert routed.calls_for(replace(uncounted, prompt="x" * 3002)) == 1  # 1000 whole tokens
    assert routed.calls_for(replace(uncounted, prompt="x" * 3003)) == 5
    for strategy in ("truncate", "retrieve"):
        one = with_router(inner, None, length=1016, strategy=strategy)
        assert one.calls_for(replace(at, prompt_tokens=9000)) == 1
    tiny = with_router(inner, None, length=256)
    assert tiny.calls_for(replace(at, config=GenerationConfig(max_tokens=300))) == 2 * 1000 + 1


# -- construction ------------------------------------------------------------------------------


def _profile(tmp_path: Path, absolute: int | None, relatives: list[int | None]) -> str:
    data = {
        "profile_version": 1,
        "model": "gemma",
        "claimed_context": 32768,
        "effective_context": absolute,
        "measured": [
            {"suite": f"s{i}", "effective_length": absolute, "relative_effective_length": r}
            for i, r in enumerate(relatives)
        ],
        "date": "2026-11-27",
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_the_length_comes_from_the_basis_asked_or_the_length_given(
    qwen_tokenizer, tmp_path
) -> None:
    path = _profile(tmp_path, 8192, [6144, 12288])
    inner = _scripted("x", qwen_tokenizer)
    absolute = with_router(inner, path)
    assert absolute.length == 8192 and absolute.basis == "absolute"
    assert absolute.strategy == "map-reduce" and absolute.scorer == "bm25"
    assert absolute.name == "scripted/m+router" and absolute.inner is inner
    assert absolute.profile == load_profile(path)
    assert with_router(inner, path, basis="relative").length == 6144
    assert with_router(inner, path, length=2048).length == 2048
    assert with_router(inner, None, length=300, scorer="e5").scorer == "e5"


def test_the_wrapper_defaults_to_map_reduce_on_the_absolute_basis_scored_by_bm25(
    qwen_tokenizer,
) -> None:
    routed = RoutedBackend(_scripted("x", qwen_tokenizer), None, length=4096)
    assert (routed.strategy, routed.basis, routed.scorer) == ("map-reduce", "absolute", "bm25")
    assert routed.profile is None and routed.length == 4096


def test_bad_settings_are_one_line_naming_what_to_do(qwen_tokenizer, tmp_path) -> None:
    inner = _scripted("x", qwen_tokenizer)
    with pytest.raises(UsageError) as caught:
        with_router(inner, None, length=4096, scorer="tfidf")  # type: ignore[arg-type]
    assert str(caught.value) == "unknown router scorer 'tfidf': use bm25, e5"
    with pytest.raises(UsageError) as caught:
        with_router(inner, None, length=4096, strategy="split")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "unknown router strategy 'split': use map-reduce, truncate, retrieve, auto"
    )
    with pytest.raises(UsageError) as caught:
        with_router(inner, None, length=4096, basis="Relative")  # type: ignore[arg-type]
    assert str(caught.value) == "bad router basis 'Relative': use absolute or relative"
    with pytest.raises(UsageError) as caught:
        with_router(inner, None)
    assert str(caught.value) == (
        "no profile given: no absolute effective length (every tested length scored below the "
        "threshold): pass --router-length N or --router-basis relative"
    )
    path = _profile(tmp_path, None, [None, 4096])
    with pytest.raises(UsageError) as caught:
        with_router(inner, path)
    assert str(caught.value).startswith(f"profile {path}: no absolute effective length (")
    with pytest.raises(UsageError) as caught:
        with_router(inner, None, length=255)
    assert str(caught.value) == "a router budget of 255 tokens is too small to hold a prompt"
    assert with_router(inner, None, length=256).length == 256


def test_info_names_the_router_and_keeps_the_inner_models_facts(qwen_tokenizer, tmp_path) -> None:
    path = _profile(tmp_path, 8192, [6144])
    inner = _scripted("x", qwen_tokenizer, context_length=32768)
    info = asyncio.run(with_router(inner, path, strategy="retrieve", scorer="e5").info())
    assert info.model_id == "scripted/m+router:retrieve:8192"
    assert info.context_length is None and info.context_source == "router"
    assert info.prompt_mode == "completion" and info.tokenizer == qwen_tokenizer.name
    assert info.details == {
        "scripted": True,
        "router": {
            "strategy": "retrieve",
            "budget": 8192,
            "basis": "absolute",
            "scorer": "e5",
            "profile": {"path": path, "date": "2026-11-27"},
        },
        "inner_context_length": 32768,
    }
    auto = asyncio.run(with_router(inner, None, length=4096, strategy="auto").info())
    assert auto.details["router"] == {
        "strategy": "auto", "budget": 4096, "basis": "absolute", "scorer": "bm25"
    }  # fmt: skip
    split = asyncio.run(with_router(inner, None, length=4096, basis="relative").info())
    assert split.details["router"] == {
        "strategy": "map-reduce",
        "budget": 4096,
        "basis": "relative",
    }
    assert split.model_id == "scripted/m+router:map-reduce:4096"


# -- what is sent ------------------------------------------------------------------------------


def test_a_budget_too_small_for_the_frame_is_refused_before_sending(qwen_tokenizer) -> None:
    inner = _scripted(" violet", qwen_tokenizer)
    request = _request(150, max_tokens=240)
    with pytest.raises(UsageError) as caught:
        _generate(with_router(inner, None, length=256), request)
    assert inner.requests == []
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the router's budget of 256 tokens is too small for this prompt: ")
    assert "of a 16-token budget left beside 240 answer tokens" in message
    # The length it names holds the frame: the same request passes through it.
    need = int(message.split("--router-length ")[1].split()[0])
    routed = with_router(inner, None, length=need)
    generation = _generate(routed, request)
    assert generation.status == "ok" and generation.route["decision"] == "map-reduce"
    with pytest.raises(UsageError):
        _generate(with_router(inner, None, length=need - 1), request)


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_truncate_sends_one_prompt_in_the_requests_own_mode(qwen_tokenizer, mode) -> None:
    request = _request(150, mode=mode)
    # As a suite sends it: counted (the router trusts the count; the inner backend must not).
    request = replace(request, prompt_tokens=len(qwen_tokenizer.encode(request.text)))
    inner = _scripted(" violet", qwen_tokenizer, prompt_mode=mode)
    generation = _generate(with_router(inner, None, length=600, strategy="truncate"), request)
    (sent,) = inner.requests
    assert generation.text == " violet" and generation.route["decision"] == "truncate"
    assert sent.mode == mode and sent.parts is None and sent.config == request.config
    # The whole prompt's count would be wrong for the cut one: the inner backend counts it again.
    assert sent.prompt_tokens == 0 and generation.prompt_tokens == len(
        qwen_tokenizer.encode(sent.text)
    )
    if mode == "chat":
        assert sent.messages == (Message("user", sent.text),) and sent.prompt == ""
    else:
        assert sent.messages == ()
    assert sent.text.startswith(HEAD + request.parts.context[:50])
    assert sent.text.endswith(request.parts.context[-50:] + TAIL)
    assert len(qwen_tokenizer.encode(sent.text)) <= 600 - 16


def test_map_reduce_totals_every_calls_tokens_and_time(qwen_tokenizer) -> None:
    request = _request(150)

    def answer(r: Request) -> str:
        part = _part(r)
        return {0: " violet, then indigo", 1: " violet", 2: " indigo"}.get(part, f" {NOT_HERE}")

    inner = _scripted(answer, qwen_tokenizer)
    generation = _generate(with_router(inner, None, length=1024), request)
    plan = generation.route
    count = len(plan["chunks"])
    assert count >= 3 and len(inner.requests) == count + 1 == plan["calls"]
    assert [_part(r) for r in inner.requests] == [*range(1, count + 1), 0]
    assert all(r.prompt_tokens == 0 and r.parts is None for r in inner.requests)
    billed = [len(qwen_tokenizer.encode(r.prompt)) for r in inner.requests]
    assert generation.prompt_tokens == sum(billed)  # every call's prompt, the reduce's included
    answers = [answer(r) for r in inner.requests]
    assert generation.completion_tokens == sum(len(qwen_tokenizer.encode(a)) for a in answers)
    assert generation.latency_s == round(CALL_S * (count + 1), 3)
    assert generation.text == " violet, then indigo" and generation.status == "ok"
    assert [c["status"] for c in plan["chunks"]] == ["ok"] * count
    assert [c["answer"] for c in plan["chunks"]] == answers[:count]
    assert plan["reduce"] == "one call over 2 partial answers"
    reduce = inner.requests[-1].prompt
    assert reduce == HEAD + REDUCE_INTRO + "Part 1: violet\nPart 2: indigo" + TAIL


def test_one_answering_part_is_the_answer_and_every_call_still_counts(qwen_tokenizer) -> None:
    request = _request(150)

    def answer(r: Request) -> str:
        return " the answer is " + "violet " * 120 if _part(r) == 2 else f" {NOT_HERE}."

    inner = _scripted(answer, qwen_tokenizer)
    request = replace(request, config=GenerationConfig(max_tokens=200))
    generation = _generate(with_router(inner, None, length=1208), request)
    plan = generation.route
    count = len(plan["chunks"])
    assert len(inner.requests) == count == plan["calls"] and count >= 3
    assert plan["reduce"] == "skipped: only part 2 answered"
    assert generation.text == answer(inner.requests[1])
    assert plan["chunks"][1]["answer"] == generation.text[:300]
    assert len(plan["chunks"][1]["answer"]) == 300
    assert generation.prompt_tokens == sum(
        len(qwen_tokenizer.encode(r.prompt)) for r in inner.requests
    )
    assert generation.latency_s == round(CALL_S * count, 3)


def test_when_every_part_fails_no_reduce_is_sent_and_the_failure_is_kept(qwen_tokenizer) -> None:
    request = _request(150)

    def fault(r: Request, number: int) -> Failure:
        return Failure("timeout", f"part {_part(r)} took too long")

    inner = _scripted(" violet", qwen_tokenizer, fault=fault)
    generation = _generate(with_router(inner, None, length=1024), request)
    plan = generation.route
    count = len(plan["chunks"])
    assert len(inner.requests) == count == plan["calls"] and count >= 3
    assert plan["reduce"] == "skipped: every part failed"
    # The answer is the last call's failure, the calls and time of all of them.
    assert generation.status == "timeout" and generation.error == f"part {count} took too long"
    assert [c["status"] for c in plan["chunks"]] == ["timeout"] * count
    assert generation.latency_s == round(CALL_S * count, 3)


def test_no_part_answering_lists_every_answered_part_by_its_number(qwen_tokenizer) -> None:
    request = _request(150)
    inner = _scripted(
        lambda r: "42" if _part(r) == 0 else f" {NOT_HERE}.",
        qwen_tokenizer,
        fault=lambda r, n: every(1)(r, n) if n == 2 else None,
    )
    generation = _generate(with_router(inner, None, length=1024), request)
    plan = generation.route
    count = len(plan["chunks"])
    assert plan["chunks"][1]["status"] == "error" and plan["calls"] == count + 1
    listed = [i for i in range(1, count + 1) if i != 2]
    assert (
        inner.requests[-1].prompt
        == HEAD + REDUCE_INTRO + "\n".join(f"Part {i}: {NOT_HERE}." for i in listed) + TAIL
    )
    assert plan["reduce"] == f"one call over {count - 1} partial answers"
    assert generation.text == "42"


def test_an_echoed_list_is_cut_from_the_combined_answer(qwen_tokenizer) -> None:
    request = _request(150)
    answers = {1: " 10", 2: " 72", 0: " 10\n Part 1: 10\nPart 2: 72"}
    inner = _scripted(lambda r: answers.get(_part(r), f" {NOT_HERE}"), qwen_tokenizer)
    generation = _generate(with_router(inner, None, length=1024), request)
    assert generation.text == " 10"
    assert generation.route["reduce"] == (
        "one call over 2 partial answers; the answer's echo of the partial answers was cut"
    )


def test_a_group_is_routed_member_by_member_in_order(qwen_tokenizer) -> None:
    inner = _scripted(" violet", qwen_tokenizer)
    routed = with_router(inner, None, length=600, strategy="truncate")
    requests = [_request(10), replace(_request(150), sample_id="s2")]
    seen: list[tuple[int, str]] = []
    generations = asyncio.run(
        routed.generate_group(requests, lambda i, g: seen.append((i, g.route["decision"])))
    )
    assert [g.route["decision"] for g in generations] == ["pass", "truncate"]
    assert sorted(seen) == [(0, "pass"), (1, "truncate")]
    assert inner.requests[0] == requests[0] and inner.requests[1].parts is None
    assert inner.requests[1].sample_id == "s2"
    assert routed.shares_prefill is False and routed.bounds_own_deadline is False


# -- what is told ------------------------------------------------------------------------------


def test_routes_and_plans_are_described_line_by_line() -> None:
    assert describe_routes({}) == "router: no request went through it"
    assert describe_plan(None) == "" and describe_plan({}) == ""
    plan = {
        "decision": "retrieve",
        "prompt_tokens": 9000,
        "budget": 4080,
        "combination": {"choice": "retrieve", "reason": "names quiet, found in 1 passages"},
        "retrieval": {
            "scorer": "bm25",
            "passages": 70,
            "context_tokens_kept": 3900,
            "kept": [
                {
                    "passage": i,
                    "score": s,
                    "tokens": 120,
                    "text": f"Passage {i}\n  says   {'x' * 120}",
                }
                for i, s in ((3, 0.5), (9, 4.25), (10, 1.0), (11, 2.0), (12, 3.0), (13, 0.75))
            ],
            "dropped": {"passages": 64, "tokens": 5000, "best_score": 0.4},
        },
    }
    lines = describe_plan(plan).splitlines()
    assert lines[0] == "retrieve: 9000 prompt tokens, budget 4080"
    assert lines[1] == "chosen retrieve: names quiet, found in 1 passages"
    assert lines[2] == (
        "kept 6 of 70 passages (3900 tokens, scored by bm25); dropped 64 (5000 tokens, best score 0.4)"
    )
    # The five best, best first; whitespace folded, 100 characters of each.
    shown = [(9, 4.25), (12, 3.0), (11, 2.0), (10, 1.0), (13, 0.75)]
    assert lines[3:] == [
        f"passage {i} (score {s}, 120 tokens): " + f"Passage {i} says {'x' * 120}"[:100]
        for i, s in shown
    ]
    split = {
        "decision": "map-reduce",
        "prompt_tokens": 2000,
        "budget": 1000,
        "chunks": [
            {"part": 1, "context_tokens": 900, "status": "ok", "answer": " violet \n"},
            {"part": 2, "context_tokens": 850},
        ],
        "reduce": "skipped: only part 1 answered",
    }
    assert describe_plan(split).splitlines() == [
        "map-reduce: 2000 prompt tokens, budget 1000",
        "part 1 (900 tokens, ok): violet",
        "part 2 (850 tokens, -): ",
        "combined: skipped: only part 1 answered; 1 calls",
    ]
    assert describe_plan({**split, "calls": 3}).splitlines()[-1] == (
        "combined: skipped: only part 1 answered; 3 calls"
    )


def test_the_map_prompts_carry_the_part_note_and_the_whole_context(qwen_tokenizer) -> None:
    request = _request(150)
    inner = _scripted(f" {NOT_HERE}", qwen_tokenizer)
    generation = _generate(with_router(inner, None, length=1024), request)
    count = len(generation.route["chunks"])
    maps = inner.requests[:count]
    rebuilt = ""
    for index, sent in enumerate(maps, start=1):
        note = MAP_NOTE.format(index=index, count=count)
        assert sent.prompt.startswith(HEAD) and sent.prompt.endswith(note + TAIL)
        assert len(qwen_tokenizer.encode(sent.prompt)) <= 1024 - 16
        rebuilt += sent.prompt[len(HEAD) : -len(note + TAIL)]
    assert rebuilt == request.parts.context


def test_retrieve_scores_with_the_scorer_asked(qwen_tokenizer) -> None:
    filler = list(itertools.islice(filler_sentences("en", 2), 24))
    filler.insert(12, "The vault code for marigold-lantern is 55102.")
    context = " ".join(filler)
    tail = "\n\nQuestion: What is the vault code for marigold-lantern?\nAnswer:"
    request = Request("s1", 0, "completion", prompt=HEAD + context + tail,
                      config=GenerationConfig(max_tokens=16),
                      parts=PromptParts(HEAD, context, tail))  # fmt: skip
    # The e5 scorer through the wrapper: tests/router/test_fit.py (`route`, one e5 model load).
    inner = _scripted(" 55102", qwen_tokenizer)
    routed = with_router(inner, None, length=400, strategy="retrieve", scorer="bm25")
    generation = _generate(routed, request)
    (sent,) = inner.requests
    assert generation.route["retrieval"]["scorer"] == "bm25" and "55102" in sent.prompt
    assert len(qwen_tokenizer.encode(sent.prompt)) <= 400 - 16


# -- the combining call within the budget (issue 39.2) -------------------------------------------


def test_many_partial_answers_are_combined_within_the_budget_in_rounds(qwen_tokenizer) -> None:
    request = _request(400, max_tokens=64)

    def answer(r: Request) -> str:
        part = _part(r)
        if part:
            return f" in part {part} the counts were " + " ".join(["seven"] * 50)
        return " combined: seven"  # every combining call

    inner = _scripted(answer, qwen_tokenizer)
    routed = with_router(inner, None, length=700)
    generation = _generate(routed, request)
    plan = generation.route
    budget = asyncio.run(routed.budget_for(request))
    parts = len(plan["chunks"])
    combining = [r for r in inner.requests if _part(r) == 0]
    # One call over every partial answer would not fit: it was combined in rounds instead.
    one_call = (
        HEAD
        + REDUCE_INTRO
        + "\n".join(
            f"Part {i}: {answer(r).strip()}" for i, r in enumerate(inner.requests[:parts], start=1)
        )
        + TAIL
    )
    assert len(qwen_tokenizer.encode(one_call)) > budget
    assert parts >= 8 and len(combining) >= 3 and plan["reduce_rounds"]
    assert all(len(qwen_tokenizer.encode(r.prompt)) <= budget for r in inner.requests)
    assert generation.status == "ok" and generation.text == " combined: seven"
    assert plan["calls"] == len(inner.requests) == parts + len(combining)
    assert plan["reduce"].endswith("partial answers") and "round(s) of combining" in plan["reduce"]


def test_a_refused_combining_call_is_a_failure_never_a_skip(qwen_tokenizer) -> None:
    request = _request(150)

    def fault(r: Request, number: int) -> Failure | None:
        return Failure("context_overflow", "prompt too long") if _part(r) == 0 else None

    inner = _scripted(lambda r: f" part {_part(r)} says violet", qwen_tokenizer, fault=fault)
    generation = _generate(with_router(inner, None, length=1024), request)
    assert generation.status == "error"  # counted as failed (the run exits 3), not skipped
    assert generation.error == (
        "router: the combining call failed (context_overflow: prompt too long)"
    )
    assert generation.route["reduce"].startswith("failed: router: the combining call failed")
    assert generation.route["calls"] == len(inner.requests)


def test_a_partial_answer_too_long_to_combine_fails_without_sending_it(qwen_tokenizer) -> None:
    request = _request(150, max_tokens=3000)
    inner = _scripted(
        lambda r: " " + "violet " * 2000 if _part(r) else " never sent", qwen_tokenizer
    )
    generation = _generate(with_router(inner, None, length=4096), request)
    assert generation.status == "error"
    assert generation.error.startswith("router: partial answer 1 does not fit the ")
    assert all(_part(r) for r in inner.requests)  # no combining call was sent


def test_the_cli_refuses_a_router_length_below_the_frame_in_one_line(tmp_path: Path) -> None:
    from longscope.run.store import RunStore

    from ..cli_helper import longscope

    done = longscope(
        "run", "longctx", "--model", "scripted/m", "--router-length", "300",
        "-o", str(tmp_path), "-q",
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert done.returncode == 2 and errors == lines[-1:], done.stderr  # the plan, then one line
    assert "Traceback" not in done.stderr and "give --router-length 349 or more" in errors[0]
    with RunStore(tmp_path, create=False, readonly=True) as store:
        assert all(store.count_generations(run["run_id"]) == 0 for run in store.runs())
