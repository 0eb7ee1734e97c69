"""The orchestrator API: `fit` decides without a model, `route` sends through the same decision;
the runnable example in docs/router-api.md runs here with the embedded model."""

import asyncio
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.router import fit
from longscope.router.decide import MAP_NOTE
from longscope.router.retrieve import GAP
from longscope.text.filler import filler_sentences
from longscope.types import GenerationConfig, Message, PromptParts, Request

ROOT = Path(__file__).resolve().parents[2]


def _document(count: int, needle: str = "") -> str:
    import itertools

    sentences = list(itertools.islice(filler_sentences("en", 9), count))
    if needle:
        sentences.insert(count // 2, needle)
    return " ".join(sentences)


def test_a_task_that_fits_passes_as_it_is(qwen_tokenizer) -> None:
    messages = [Message("system", "Be brief."), Message("user", "What is 2 + 2?")]
    decision = fit(messages, 4096, qwen_tokenizer, max_tokens=64)
    assert decision.action == "pass" and decision.parts == (tuple(messages),)
    assert decision.budget == 4096 - 64 and decision.prompt_tokens < 40
    assert not decision.combine_answers


def test_a_long_task_naming_a_key_is_retrieved_in_its_own_message(qwen_tokenizer) -> None:
    document = _document(900, "The locker code for amber-falcon is 8812.")
    messages = [
        {"role": "system", "content": "Answer from the document."},
        {"role": "user", "content": document},
        {"role": "user", "content": "What is the locker code for amber-falcon?"},
    ]
    decision = fit(messages, 2048, qwen_tokenizer, max_tokens=32)
    assert decision.prompt_tokens > 4 * 2048 and decision.action == "retrieve"
    ((system, sent, question),) = decision.parts
    assert system.content == "Answer from the document." and question.content.endswith(
        "amber-falcon?"
    )
    assert "8812" in sent.content and GAP in sent.content
    (tokens,) = decision.part_tokens
    assert tokens <= decision.budget
    assert "amber" in decision.plan["combination"]["named"]
    assert "retrieve" in decision.reason and str(decision.prompt_tokens) in decision.reason


def test_an_aggregation_task_is_split_and_its_answers_need_combining(qwen_tokenizer) -> None:
    document = _document(900)
    prompt = f"Document:\n{document}\n\nQuestion: How many sentences mention rain?"
    decision = fit([Message("user", prompt)], 2048, qwen_tokenizer, max_tokens=32, context=document)
    assert decision.action == "split" and decision.combine_answers
    assert len(decision.parts) == len(decision.part_tokens) >= 4
    assert all(t <= decision.budget for t in decision.part_tokens)
    assert all(p[0].content.startswith("Document:\n") for p in decision.parts)
    assert all(p[0].content.endswith("How many sentences mention rain?") for p in decision.parts)


def test_truncate_when_asked_and_refuse_when_the_question_fills_the_budget(qwen_tokenizer) -> None:
    document = _document(900)
    long_question = "Why? " * 400
    cut = fit([Message("user", document + long_question)], 4096, qwen_tokenizer,
              strategy="truncate", context=document)  # fmt: skip
    assert cut.action == "truncate" and cut.part_tokens[0] <= cut.budget
    refused = fit([Message("user", document + long_question)], 700, qwen_tokenizer,
                  max_tokens=64, context=document)  # fmt: skip
    assert refused.action == "refuse" and refused.parts == () and "budget" in refused.reason


def test_profiles_and_bad_input_are_one_line(qwen_tokenizer, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"model": "m", "measured": [
        {"suite": "x", "effective_length": None, "relative_effective_length": 3072}]}))  # fmt: skip
    decision = fit(
        [Message("user", "hi")], str(path), qwen_tokenizer, basis="relative", max_tokens=72
    )
    assert decision.budget == 3000
    with pytest.raises(UsageError, match="no absolute effective length"):
        fit([Message("user", "hi")], str(path), qwen_tokenizer)
    with pytest.raises(UsageError, match="lacks 'content'"):
        fit([{"role": "user"}], 4096, qwen_tokenizer)
    with pytest.raises(UsageError, match="in none of the messages"):
        fit([Message("user", "hi")], 4096, qwen_tokenizer, context="absent")


@pytest.mark.model
def test_the_documented_agent_example_runs(monkeypatch, capsys) -> None:
    text = (ROOT / "docs" / "router-api.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(code, "docs/router-api.md", "exec"), scope)
    (small, small_generation), (large, large_generation) = scope["results"]
    assert small.action == "pass" and small_generation.route["decision"] == "pass"
    assert small_generation.status in ("ok", "length")
    assert large.action == "retrieve" and large.prompt_tokens > large.budget == 4096 - 16
    plan = large_generation.route
    assert plan["decision"] == "retrieve" and plan["combination"]["choice"] == "retrieve"
    document = scope["document"]
    spans = [kept["chars"] for kept in plan["retrieval"]["kept"]]
    assert any("4417" in document[a:b] for a, b in spans)
    assert large_generation.status in ("ok", "length") and large_generation.prompt_tokens <= 4080
    printed = capsys.readouterr().out
    assert "pass " in printed and "retrieve " in printed


# -- the counts and the decision at the budget ---------------------------------------------


def _counted(tokenizer, *contents: str) -> int:  # type: ignore[no-untyped-def]
    return sum(len(tokenizer.encode(c)) + 4 for c in contents)  # 4: a chat template's margin


def test_exactly_at_the_budget_passes_and_one_token_over_does_not(qwen_tokenizer) -> None:
    from longscope.router.fit import Decision

    document = _document(40)
    messages = [Message("system", "Be brief."), Message("user", document)]
    tokens = _counted(qwen_tokenizer, "Be brief.", document)
    at = fit(messages, tokens + 10, qwen_tokenizer, max_tokens=10, strategy="truncate")
    assert at == Decision(
        action="pass",
        prompt_tokens=tokens,
        budget=tokens,
        parts=(tuple(messages),),
        part_tokens=(tokens,),  # counted as prompt_tokens is: the budget exactly
        reason=f"{tokens} prompt tokens against a budget of {tokens}; pass",
        plan={},
    )
    assert at.plan == {"decision": "pass", "prompt_tokens": tokens, "budget": tokens}
    over = fit(messages, tokens + 9, qwen_tokenizer, max_tokens=10, strategy="truncate")
    assert over.action == "truncate" and over.budget == tokens - 1
    assert over.plan["prompt_tokens"] == tokens and over.plan["budget"] == tokens - 1
    ((system, user),) = over.parts
    assert system == messages[0] and user.role == "user" and user.content != document
    others = _counted(qwen_tokenizer, "Be brief.") + 4
    assert over.part_tokens == (len(qwen_tokenizer.encode(user.content)) + others,)
    assert over.part_tokens[0] <= over.budget
    assert over.reason == f"{tokens} prompt tokens against a budget of {tokens - 1}; truncate"
    assert not over.combine_answers


def test_the_context_is_the_longest_message_or_the_piece_given(qwen_tokenizer) -> None:
    document = _document(300)
    question = "Question: How many sentences mention rain? " + "Answer briefly. " * 5
    messages = [
        {"role": "system", "content": "You read documents."},
        {"role": "user", "content": question},
        {"role": "user", "content": "Document:\n" + document + "\nEnd."},
    ]
    split = fit(messages, 1024, qwen_tokenizer, max_tokens=24, strategy="map-reduce")
    assert split.action == "split" and split.combine_answers
    count = len(split.parts)
    rebuilt = ""
    for index, (part, tokens) in enumerate(zip(split.parts, split.part_tokens, strict=True), 1):
        system, asked, sent = part
        assert system.content == "You read documents." and asked.content == question
        note = MAP_NOTE.format(index=index, count=count)
        assert sent.content.endswith(note)
        rebuilt += sent.content[: -len(note)]
        assert tokens == _counted(qwen_tokenizer, *(m.content for m in part)) <= 1000
    assert rebuilt == messages[2]["content"]
    assert split.prompt_tokens == _counted(qwen_tokenizer, *(m["content"] for m in messages))
    # The piece given: only it is cut, the rest of its message stays in every part.
    piece = document[100:-100]
    cut = fit(messages, 1024, qwen_tokenizer, max_tokens=24, strategy="map-reduce", context=piece)
    for part in cut.parts:
        assert part[2].content.startswith("Document:\n" + document[:100])
        assert part[2].content.endswith(document[-100:] + "\nEnd.")


def test_a_key_named_in_another_message_is_what_is_retrieved(qwen_tokenizer) -> None:
    document = _document(900, "The locker code for amber-falcon is 8812.")
    messages = [Message("user", document), Message("user", "Which locker code has amber-falcon?")]
    decision = fit(messages, 2048, qwen_tokenizer, max_tokens=32, strategy="retrieve")
    assert decision.action == "retrieve" and "8812" in decision.parts[0][0].content
    assert decision.reason.endswith("; retrieve")


def test_a_refusal_says_why_and_maps_to_refuse(qwen_tokenizer) -> None:
    document = _document(300)
    question = "Why? " * 400
    refused = fit([Message("user", document + question)], 700, qwen_tokenizer, max_tokens=64,
                  context=document, strategy="map-reduce")  # fmt: skip
    assert refused.action == "refuse" and refused.parts == () and refused.part_tokens == ()
    assert refused.reason.startswith(f"{refused.prompt_tokens} prompt tokens against a budget of ")
    assert refused.reason.endswith(f"; {refused.plan['error']}")
    assert "router: the prompt's frame takes" in refused.reason


def test_profiles_in_every_form_and_their_bad_cases(qwen_tokenizer, tmp_path: Path) -> None:
    from longscope.router import load_profile

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"model": "m", "effective_context": 4096, "measured": [
        {"suite": "x", "effective_length": 4096, "relative_effective_length": None}]}))  # fmt: skip
    hi = [Message("user", "hi")]
    assert fit(hi, path, qwen_tokenizer, max_tokens=96).budget == 4000
    assert fit(hi, str(path), qwen_tokenizer, max_tokens=96).budget == 4000
    assert fit(hi, load_profile(path), qwen_tokenizer).budget == 4096 - 256
    with pytest.raises(UsageError) as caught:
        fit(hi, path, qwen_tokenizer, basis="relative")
    assert str(caught.value) == (
        f"profile {path}: no relative effective length: pass a token budget instead"
    )
    with pytest.raises(UsageError) as caught:
        fit([], 4096, qwen_tokenizer)
    assert str(caught.value) == "fit: no messages given"
    with pytest.raises(UsageError) as caught:
        fit([{"content": "hi"}], 4096, qwen_tokenizer)
    assert str(caught.value) == "fit: a message lacks 'role': give role and content"
    with pytest.raises(UsageError) as caught:
        fit(hi, 4096, qwen_tokenizer, context="absent")
    assert str(caught.value) == (
        "fit: the context given is in none of the messages: pass a piece of one"
    )


# -- route: the same decision, sent ---------------------------------------------------------


def _chat(content: str) -> Request:
    return Request("s1", 0, "chat", messages=(Message("user", content),),
                   config=GenerationConfig(max_tokens=16))  # fmt: skip


def test_route_cuts_around_the_context_given_and_sends_each_part(qwen_tokenizer) -> None:
    from longscope.models.scripted import ScriptedBackend
    from longscope.router import route

    document = _document(300)
    request = _chat("Document:\n" + document + "\n\nHow many sentences are there?")
    inner = ScriptedBackend("m", answer="3", tokenizer=qwen_tokenizer)
    generation = asyncio.run(route(inner, request, 1024, strategy="map-reduce", context=document))
    plan = generation.route
    assert plan["decision"] == "map-reduce" and plan["budget"] == 1024 - 16
    count = len(plan["chunks"])
    assert len(inner.requests) == count + 1 and plan["calls"] == count + 1
    for sent in inner.requests[:count]:
        (message,) = sent.messages
        assert message.content.startswith("Document:\n")
        assert message.content.endswith("\n\nHow many sentences are there?")
    # Without a context, the whole text is the context: nothing of the question is kept apart.
    whole = ScriptedBackend("m", answer="3", tokenizer=qwen_tokenizer)
    generation = asyncio.run(route(whole, request, 1024, strategy="truncate"))
    (sent,) = whole.requests
    assert generation.route["decision"] == "truncate"
    content = sent.messages[0].content
    assert content.startswith("Document:\n" + document[:40])
    assert content.endswith(document[-40:] + "\n\nHow many sentences are there?")
    assert len(qwen_tokenizer.encode(content)) <= 1024 - 16


def test_route_takes_the_length_from_a_profile_and_refuses_what_it_cannot_cut(
    qwen_tokenizer, tmp_path: Path
) -> None:
    from longscope.models.scripted import ScriptedBackend
    from longscope.router import route

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"model": "m", "effective_context": 2048, "measured": [
        {"suite": "x", "effective_length": 2048, "relative_effective_length": 1024}]}))  # fmt: skip
    inner = ScriptedBackend("m", answer="ok", tokenizer=qwen_tokenizer)
    short = _chat("What is 2 + 2?")
    generation = asyncio.run(route(inner, short, str(path)))
    assert generation.route["budget"] == 2048 - 16 and generation.text == "ok"
    generation = asyncio.run(route(inner, short, path, basis="relative", scorer="e5"))
    assert generation.route["budget"] == 1024 - 16
    two = replace(short, messages=(Message("system", "x"), Message("user", "y")))
    with pytest.raises(UsageError) as caught:
        asyncio.run(route(inner, two, 4096))
    assert str(caught.value) == (
        "route: a chat request of several messages needs `parts` (the router sends one message): "
        "join them into one, or use fit() and send its parts yourself"
    )
    with pytest.raises(UsageError) as caught:
        asyncio.run(route(inner, short, 4096, context="absent"))
    assert str(caught.value) == "route: the context given is not in the request's text"
    completion = Request("s1", 0, "completion", prompt="Say hi.", config=GenerationConfig(16))
    generation = asyncio.run(route(inner, completion, 4096, context="hi"))
    assert generation.route["decision"] == "pass" and inner.requests[-1] == replace(
        completion, parts=PromptParts("Say ", "hi", ".")
    )


def test_a_context_that_occurs_twice_is_cut_where_it_first_occurs(qwen_tokenizer) -> None:
    from longscope.models.scripted import ScriptedBackend
    from longscope.router import route

    document = _document(200)
    content = document + "\n|\n" + document
    tokens = _counted(qwen_tokenizer, content)
    budget = tokens - 1000
    cut = fit([Message("user", content)], budget, qwen_tokenizer, max_tokens=0,
              strategy="truncate", context=document)  # fmt: skip
    ((sent,),) = cut.parts
    assert cut.action == "truncate" and sent.content.endswith("\n|\n" + document)
    assert not sent.content.startswith(document + "\n|\n")
    request = _chat(content)
    inner = ScriptedBackend("m", answer="ok", tokenizer=qwen_tokenizer)
    asyncio.run(route(inner, request, budget + 16, strategy="truncate", context=document))
    (sent_request,) = inner.requests
    assert sent_request.messages[0].content.endswith("\n|\n" + document)
    assert not sent_request.messages[0].content.startswith(document + "\n|\n")


def test_the_other_messages_are_the_question_and_the_reason_says_the_choice(
    qwen_tokenizer,
) -> None:
    document = _document(900, "The locker code for amber-falcon is 8812.")
    messages = [
        Message("system", "Answer from the document."),
        Message("user", document),
        Message("user", "What is the locker code for amber-falcon?"),
    ]
    decision = fit(messages, 2048, qwen_tokenizer, max_tokens=32)
    chosen = decision.plan["combination"]
    assert decision.action == "retrieve"
    assert chosen["named"] == ["locker", "code", "amber", "falcon"]
    assert decision.reason == (
        f"{decision.prompt_tokens} prompt tokens against a budget of 2016; retrieve: "
        f"{chosen['reason']}"
    )
    assert chosen["reason"].startswith("names locker, code, amber, falcon, found in ")


def test_named_passages_over_the_budget_are_split(qwen_tokenizer) -> None:
    import itertools

    sentences = list(itertools.islice(filler_sentences("en", 5), 1200))
    for i in range(0, 1200, 240):
        sentences[i] = f"Ledger entry {i} for copperfield-orchard reads {1000 + i}."
    messages = [Message("user", " ".join(sentences)),
                Message("user", "Which entries are there for copperfield-orchard?")]  # fmt: skip
    decision = fit(messages, 700, qwen_tokenizer, max_tokens=100)
    assert decision.plan["decision"] == "retrieve-then-map-reduce"
    assert decision.action == "split" and decision.combine_answers
    assert all(t <= decision.budget for t in decision.part_tokens)


def test_fit_and_route_score_with_the_scorer_asked(qwen_tokenizer) -> None:
    from longscope.models.scripted import ScriptedBackend
    from longscope.router import route

    document = _document(24, "The locker code for amber-falcon is 8812.")
    question = "\n\nWhat is the locker code for amber-falcon?"
    assert len(qwen_tokenizer.encode(document)) > 400
    for scorer in ("bm25", "e5"):
        decision = fit([Message("user", document + question)], 400, qwen_tokenizer,
                       max_tokens=16, strategy="retrieve", context=document, scorer=scorer)  # fmt: skip
        assert decision.plan["retrieval"]["scorer"] == scorer
        inner = ScriptedBackend("m", answer="8812", tokenizer=qwen_tokenizer)
        generation = asyncio.run(route(inner, _chat(document + question), 400,
                                       strategy="retrieve", context=document, scorer=scorer))  # fmt: skip
        assert generation.route["retrieval"]["scorer"] == scorer
        assert "8812" in inner.requests[0].messages[0].content
