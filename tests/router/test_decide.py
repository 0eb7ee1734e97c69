"""`decide`, the router's pure decision, at its boundaries: a prompt exactly at the budget passes and
one token over does not; the frame plus the part note plus a 64-token chunk is the least budget
that is not refused; each strategy's texts and the plan stored beside the answer."""

from __future__ import annotations

import itertools

import pytest

from longscope.router.chunks import chunk_context
from longscope.router.decide import MAP_NOTE, Route, decide
from longscope.router.retrieve import GAP, split_passages
from longscope.text.filler import filler_sentences
from longscope.types import PromptParts

HEAD = "Read the document.\n\nDocument:\n"
TAIL = "\n\nQuestion: What is the code word?\nAnswer:"
SEAM = 8  # tokens the router keeps free at the seams between head, context and tail


def _parts(sentences: int, seed: int = 1) -> PromptParts:
    context = " ".join(itertools.islice(filler_sentences("en", seed), sentences))
    return PromptParts(HEAD, context, TAIL)


def _frame(tokenizer) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer.encode(HEAD + TAIL)) + SEAM


def _note(tokenizer) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer.encode(MAP_NOTE.format(index=999, count=999)))


def _decide(parts: PromptParts, budget: int, tokenizer, **options) -> Route:  # type: ignore[no-untyped-def]
    text = parts.head + parts.context + parts.tail
    return decide(text, parts, len(tokenizer.encode(text)), budget, tokenizer, **options)


@pytest.mark.parametrize("strategy", ["map-reduce", "truncate", "retrieve", "auto"])
def test_exactly_at_the_budget_passes_and_one_token_over_does_not(qwen_tokenizer, strategy) -> None:
    parts = _parts(60)
    text = parts.head + parts.context + parts.tail
    tokens = len(qwen_tokenizer.encode(text))
    at = decide(text, parts, tokens, tokens, qwen_tokenizer, strategy=strategy)
    assert at.action == "pass" and at.texts == (text,) and not at.reduce
    assert at.plan == {"decision": "pass", "prompt_tokens": tokens, "budget": tokens}
    over = decide(text, parts, tokens, tokens - 1, qwen_tokenizer, strategy=strategy)
    assert over.action != "pass" and over.plan["decision"] == over.action
    assert over.plan["prompt_tokens"] == tokens and over.plan["budget"] == tokens - 1


def test_a_prompt_without_a_context_to_cut_is_sent_whole(qwen_tokenizer) -> None:
    for parts in (None, PromptParts("Question: x", "", "?")):
        route = decide("a long prompt", parts, 5000, 1000, qwen_tokenizer, strategy="truncate")
        assert route.action == "pass" and route.texts == ("a long prompt",)
        assert route.plan == {
            "decision": "pass",
            "prompt_tokens": 5000,
            "budget": 1000,
            "note": "no separable context: sent whole",
        }


def test_the_least_budget_holds_the_frame_the_note_and_64_tokens(qwen_tokenizer) -> None:
    parts = _parts(60)
    least = _frame(qwen_tokenizer) + _note(qwen_tokenizer) + 64
    route = _decide(parts, least, qwen_tokenizer, strategy="map-reduce")
    assert route.action == "map-reduce"
    assert all(c["context_tokens"] <= 64 for c in route.plan["chunks"])
    refused = _decide(parts, least - 1, qwen_tokenizer, strategy="map-reduce")
    assert refused.action == "refused" and refused.texts == () and not refused.reduce
    frame = _frame(qwen_tokenizer)
    assert refused.plan == {
        "prompt_tokens": len(qwen_tokenizer.encode(HEAD + parts.context + TAIL)),
        "budget": least - 1,
        "decision": "refused",
        "error": f"router: the prompt's frame takes {frame} of a {least - 1}-token budget",
        "needs": least,  # the least budget that holds it, named in the refusal
    }


def test_truncate_keeps_both_ends_of_the_context_in_the_room_left(qwen_tokenizer) -> None:
    parts = _parts(150)
    budget = 600
    route = _decide(parts, budget, qwen_tokenizer, strategy="truncate")
    (sent,) = route.texts
    assert route.action == "truncate" and not route.reduce
    assert sent.startswith(HEAD) and sent.endswith(TAIL)
    kept = sent[len(HEAD) : -len(TAIL)]
    room = budget - _frame(qwen_tokenizer)
    assert route.plan["context_tokens_kept"] == room  # middle truncation keeps exactly the room
    assert len(qwen_tokenizer.encode(kept)) <= room + 1  # decoding may merge or split one token
    assert kept[:40] == parts.context[:40] and kept[-40:] == parts.context[-40:]
    assert len(qwen_tokenizer.encode(sent)) <= budget


def test_map_reduce_parts_fill_the_room_less_the_note_and_rebuild_the_context(
    qwen_tokenizer,
) -> None:
    parts = _parts(150)
    budget = 700
    route = _decide(parts, budget, qwen_tokenizer, strategy="map-reduce")
    room = budget - _frame(qwen_tokenizer) - _note(qwen_tokenizer)
    chunks = chunk_context(parts.context, room, qwen_tokenizer)
    assert route.action == "map-reduce" and route.reduce and len(chunks) >= 3
    count = len(chunks)
    assert route.texts == tuple(
        HEAD + chunk + MAP_NOTE.format(index=i, count=count) + TAIL
        for i, chunk in enumerate(chunks, start=1)
    )
    assert route.plan["chunks"] == [
        {"part": i, "context_tokens": len(qwen_tokenizer.encode(chunk))}
        for i, chunk in enumerate(chunks, start=1)
    ]
    assert all(len(qwen_tokenizer.encode(t)) <= budget for t in route.texts)


NEEDLE = "The vault code for marigold-lantern is 55102."


def _needle_parts(sentences: int, question: str) -> PromptParts:
    filler = list(itertools.islice(filler_sentences("en", 5), sentences))
    filler.insert(sentences // 2, NEEDLE)
    return PromptParts(HEAD, " ".join(filler), f"\n\nQuestion: {question}\nAnswer:")


@pytest.mark.parametrize(("budget", "size"), [(700, 128), (400, 92)])
def test_retrieve_sizes_passages_from_the_room_and_records_what_it_kept(
    qwen_tokenizer, budget, size
) -> None:
    parts = _needle_parts(300, "What is the vault code for marigold-lantern?")
    route = _decide(parts, budget, qwen_tokenizer, strategy="retrieve")
    frame = len(qwen_tokenizer.encode(parts.head + parts.tail)) + SEAM
    assert size == min(128, (budget - frame) // 4)
    (sent,) = route.texts
    assert route.action == "retrieve" and not route.reduce and "55102" in sent
    assert sent.startswith(parts.head) and sent.endswith(parts.tail)
    assert len(qwen_tokenizer.encode(sent)) <= budget
    plan = route.plan["retrieval"]
    passages = split_passages(parts.context, size, qwen_tokenizer)
    assert plan["scorer"] == "bm25" and plan["passage_tokens"] == size
    assert plan["passages"] == len(passages) == len(plan["scores"])
    selected = sent[len(parts.head) : -len(parts.tail)]
    assert plan["context_tokens_kept"] == len(qwen_tokenizer.encode(selected))
    kept = [k["passage"] for k in plan["kept"]]
    assert kept == sorted(kept) and kept
    for entry in plan["kept"]:
        p = passages[entry["passage"]]
        assert entry["chars"] == [p.start, p.end] and entry["tokens"] == p.tokens
        assert entry["text"] == parts.context[p.start : p.end][:160]
        assert entry["score"] == plan["scores"][p.index]
    dropped = [p for p in passages if p.index not in kept]
    assert plan["dropped"] == {
        "passages": len(dropped),
        "tokens": sum(p.tokens for p in dropped),
        "best_score": max(plan["scores"][p.index] for p in dropped),
    }
    assert plan["scores"] == [round(s, 4) for s in plan["scores"]]
    assert GAP in selected


def test_retrieve_that_keeps_everything_drops_nothing(qwen_tokenizer) -> None:
    parts = PromptParts(HEAD, "Alpha beta. Gamma delta.", TAIL)
    route = decide("x", parts, 5000, 1000, qwen_tokenizer, strategy="retrieve")
    plan = route.plan["retrieval"]
    assert plan["dropped"] == {"passages": 0, "tokens": 0, "best_score": None}
    assert route.texts == (HEAD + parts.context + TAIL,)


def test_the_question_beside_the_prompt_is_scored_too(qwen_tokenizer) -> None:
    parts = _needle_parts(300, "What is asked below?")
    text = parts.head + parts.context + parts.tail
    tokens = len(qwen_tokenizer.encode(text))
    blind = decide(text, parts, tokens, 400, qwen_tokenizer, strategy="retrieve")
    assert "55102" not in blind.texts[0]
    asked = decide(text, parts, tokens, 400, qwen_tokenizer, strategy="retrieve",
                   asked="The vault code for marigold-lantern, please.")  # fmt: skip
    assert "55102" in asked.texts[0]


def test_auto_records_its_choice_and_keeps_the_named_passages_first(qwen_tokenizer) -> None:
    parts = _needle_parts(300, "What is the vault code for marigold-lantern?")
    route = _decide(parts, 500, qwen_tokenizer, strategy="auto")
    chosen = route.plan["combination"]
    passages = split_passages(parts.context, min(128, (500 - _frame_of(parts, qwen_tokenizer)) // 4),
                              qwen_tokenizer)  # fmt: skip
    holding = [p.index for p in passages if NEEDLE in parts.context[p.start : p.end]]
    assert chosen == {
        "choice": "retrieve",
        "reason": f"names vault, code, marigold, lantern, found in {len(holding)} passages",
        "named": ["vault", "code", "marigold", "lantern"],
        "passages_holding_named": len(holding),
        "passages": len(passages),
    }
    assert route.action == "retrieve" and "55102" in route.texts[0]
    assert set(holding) <= {k["passage"] for k in route.plan["retrieval"]["kept"]}


def _frame_of(parts: PromptParts, tokenizer) -> int:  # type: ignore[no-untyped-def]
    return len(tokenizer.encode(parts.head + parts.tail)) + SEAM


def test_auto_maps_over_the_whole_context_for_an_aggregation_question(qwen_tokenizer) -> None:
    parts = _parts(150)
    parts = PromptParts(HEAD, parts.context, "\n\nQuestion: How many sentences are there?\nAnswer:")
    budget = 700
    route = _decide(parts, budget, qwen_tokenizer, strategy="auto")
    room = budget - _frame_of(parts, qwen_tokenizer) - _note(qwen_tokenizer)
    chunks = chunk_context(parts.context, room, qwen_tokenizer)
    assert route.action == "map-reduce" and route.plan["decision"] == "map-reduce"
    assert route.plan["combination"]["choice"] == "map-reduce"
    assert [c["context_tokens"] for c in route.plan["chunks"]] == [
        len(qwen_tokenizer.encode(c)) for c in chunks
    ]


def test_auto_maps_over_the_named_passages_only_when_they_overflow(qwen_tokenizer) -> None:
    sentences = list(itertools.islice(filler_sentences("en", 5), 1200))
    for i in range(0, 1200, 240):
        sentences[i] = f"Ledger entry {i} for copperfield-orchard reads {1000 + i}."
    tail = "\n\nQuestion: Which entries are there for copperfield-orchard?\nAnswer:"
    parts = PromptParts(HEAD, " ".join(sentences), tail)
    budget = 600
    route = _decide(parts, budget, qwen_tokenizer, strategy="auto")
    assert route.action == "retrieve-then-map-reduce" and route.reduce
    assert route.plan["decision"] == "retrieve-then-map-reduce"
    size = min(128, (budget - _frame_of(parts, qwen_tokenizer)) // 4)
    passages = split_passages(parts.context, size, qwen_tokenizer)
    holding = [p for p in passages if "copperfield" in parts.context[p.start : p.end]]
    room = budget - _frame_of(parts, qwen_tokenizer) - _note(qwen_tokenizer)
    from longscope.router.retrieve import join_passages

    subset = join_passages(parts.context, passages, [p.index for p in holding])
    chunks = chunk_context(subset, room, qwen_tokenizer)
    assert route.texts == tuple(
        HEAD + c + MAP_NOTE.format(index=i, count=len(chunks)) + tail
        for i, c in enumerate(chunks, start=1)
    )


def test_auto_keeps_the_named_passage_first_where_bm25_ranks_it_lower(qwen_tokenizer) -> None:
    sentences = list(itertools.islice(filler_sentences("en", 5), 300))
    for i in range(0, 300, 12):
        sentences[i] = "The ledger was checked."
    for i in (60, 100, 150, 200, 250, 280):
        sentences[i] = "The ledger ledger ledger ledger ledger ledger ledger ledger was long."
    sentences[40] = "A zephyr passed."
    tail = "\n\nQuestion: ledger ledger ledger ledger zephyr?\nAnswer:"
    parts = PromptParts(HEAD, " ".join(sentences), tail)
    text = HEAD + parts.context + tail
    tokens = len(qwen_tokenizer.encode(text))
    # BM25 alone prefers the passages full of "ledger" (in 8% of them: not a named word) ...
    best = decide(text, parts, tokens, 300, qwen_tokenizer, strategy="retrieve")
    assert "A zephyr passed." not in best.texts[0]
    # ... the rule (the default strategy) keeps the passage holding the rare word first.
    auto = decide(text, parts, tokens, 300, qwen_tokenizer)
    assert auto.plan["combination"]["named"] == ["zephyr"] and auto.action == "retrieve"
    assert "A zephyr passed." in auto.texts[0]


def test_the_stored_plan_lists_at_most_twenty_named_words(qwen_tokenizer) -> None:
    names = [f"marker{chr(97 + i)}{chr(97 + i)}" for i in range(22)]
    sentences = list(itertools.islice(filler_sentences("en", 5), 600))
    for i, name in enumerate(names):
        sentences[i * 25] = f"The {name} was seen."
    tail = f"\n\nQuestion: where were {' and '.join(names)} seen?\nAnswer:"
    parts = PromptParts(HEAD, " ".join(sentences), tail)
    route = _decide(parts, 4000, qwen_tokenizer)
    chosen = route.plan["combination"]
    assert chosen["named"] == names[:20] and chosen["passages_holding_named"] == 22
