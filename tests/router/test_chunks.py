"""Chunks rebuild the context exactly and each fits its budget, in English and Chinese."""

import itertools

import pytest

from longscope.router.chunks import chunk_context, sentences
from longscope.text.filler import SEPARATOR, filler_sentences


def _filler(language: str, count: int) -> str:
    sep = SEPARATOR[language]
    return sep.join(itertools.islice(filler_sentences(language, 3), count))


@pytest.mark.parametrize(("language", "budget"), [("en", 300), ("zh", 250), ("en", 40)])
def test_chunks_rebuild_the_context_and_fit(qwen_tokenizer, language, budget) -> None:
    text = _filler(language, 120) + "\n\nA closing paragraph. It ends here."
    chunks = chunk_context(text, budget, qwen_tokenizer)
    assert "".join(chunks) == text
    assert len(chunks) > 1
    assert all(len(qwen_tokenizer.encode(c)) <= budget for c in chunks)


def test_a_sentence_longer_than_the_budget_is_cut(qwen_tokenizer) -> None:
    text = "word " * 500  # no sentence end at all
    chunks = chunk_context(text, 64, qwen_tokenizer)
    assert "".join(chunks) == text
    assert all(len(qwen_tokenizer.encode(c)) <= 64 for c in chunks)


def test_sentences_keep_every_character() -> None:
    text = "One. Two! Three?\nFour。五！六"
    assert "".join(sentences(text)) == text
    assert sentences(text) == ["One.", " Two!", " Three?", "\n", "Four。", "五！", "六"]


def test_no_budget_is_an_error(qwen_tokenizer) -> None:
    with pytest.raises(ValueError, match="holds nothing"):
        chunk_context("text", 0, qwen_tokenizer)
