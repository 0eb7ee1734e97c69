"""Retrieval: passages cover the context, the passage that names the question's key is kept, the
prompt sent fits the budget with its gaps marked, and the plan says what was kept and dropped."""

import itertools

import pytest

from longscope.router.decide import decide
from longscope.router.retrieve import (
    GAP,
    bm25_scores,
    e5_scores,
    select,
    split_passages,
)
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import Sample

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)
NEEDLE = " The special magic number for quiet-harbor is 7403921."
QUESTION = "What is the special magic number for quiet-harbor mentioned in the provided text?"


def _haystack(sentences: int, at: float) -> str:
    filler = list(itertools.islice(filler_sentences("en", 3), sentences))
    filler.insert(int(at * sentences), NEEDLE)
    return " ".join(filler)


def _prompt(context: str):
    sample = Sample("s1", "t", "English", context, QUESTION, ("7403921",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    return prompt, TEMPLATE.parts(sample, "completion")


def test_passages_cover_the_context_and_each_fits(qwen_tokenizer) -> None:
    context = _haystack(200, 0.5)
    passages = split_passages(context, 64, qwen_tokenizer)
    assert "".join(context[p.start : p.end] for p in passages) == context
    assert all(p.tokens <= 64 for p in passages) and len(passages) > 10
    assert [p.index for p in passages] == list(range(len(passages)))


@pytest.mark.parametrize("score", [bm25_scores, e5_scores], ids=["bm25", "e5"])
def test_the_needles_passage_scores_highest(qwen_tokenizer, score) -> None:
    context = _haystack(120, 0.4)
    passages = split_passages(context, 64, qwen_tokenizer)
    texts = [context[p.start : p.end] for p in passages]
    scores = score(QUESTION, texts)
    best = max(range(len(texts)), key=lambda i: scores[i])
    assert "7403921" in texts[best]


def test_selection_keeps_order_fits_the_room_and_marks_gaps(qwen_tokenizer) -> None:
    context = _haystack(200, 0.5)
    passages = split_passages(context, 64, qwen_tokenizer)
    scores = [float(i % 7) for i in range(len(passages))]
    room = 600
    chosen = select(context, passages, scores, room, qwen_tokenizer, must=(3,))
    assert len(qwen_tokenizer.encode(chosen.text)) == chosen.tokens <= room
    assert 3 in chosen.kept and list(chosen.kept) == sorted(chosen.kept)
    pieces = [p for p in chosen.text.split(GAP) if p]
    assert pieces and all(piece in context for piece in pieces)
    # Gaps sit exactly where passages were left out: count the runs of kept passages.
    runs = sum(1 for a, b in itertools.pairwise((-1, *chosen.kept)) if b != a + 1)
    assert len(pieces) == runs


def test_retrieve_keeps_a_needle_that_truncation_cuts(qwen_tokenizer) -> None:
    prompt, parts = _prompt(_haystack(600, 0.5))
    tokens = len(qwen_tokenizer.encode(prompt))
    budget = 1024
    assert tokens > 4 * budget
    cut = decide(prompt, parts, tokens, budget, qwen_tokenizer, strategy="truncate")
    assert "7403921" not in cut.texts[0]
    route = decide(prompt, parts, tokens, budget, qwen_tokenizer, strategy="retrieve")
    assert route.action == "retrieve" and not route.reduce
    (sent,) = route.texts
    assert "7403921" in sent and GAP in sent
    assert sent.startswith(parts.head) and sent.endswith(parts.tail)
    assert len(qwen_tokenizer.encode(sent)) <= budget
    plan = route.plan["retrieval"]
    assert plan["scorer"] == "bm25" and len(plan["scores"]) == plan["passages"]
    kept_tokens = sum(k["tokens"] for k in plan["kept"])
    assert kept_tokens + plan["dropped"]["tokens"] == sum(
        len(qwen_tokenizer.encode(parts.context[a:b]))
        for a, b in (
            (p.start, p.end)
            for p in split_passages(parts.context, plan["passage_tokens"], qwen_tokenizer)
        )
    )
    assert len(plan["kept"]) + plan["dropped"]["passages"] == plan["passages"]
    top = max(plan["kept"], key=lambda k: k["score"])
    assert "7403921" in parts.context[top["chars"][0] : top["chars"][1]]
    assert top["score"] > plan["dropped"]["best_score"]


def test_a_prompt_within_the_budget_passes_untouched(qwen_tokenizer) -> None:
    prompt, parts = _prompt(_haystack(20, 0.5))
    tokens = len(qwen_tokenizer.encode(prompt))
    route = decide(prompt, parts, tokens, tokens, qwen_tokenizer, strategy="retrieve")
    assert route.action == "pass" and route.texts == (prompt,)
