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


def test_sentences_fill_a_chunk_up_to_exactly_the_budget(qwen_tokenizer) -> None:
    text = "The cat sat. The dog ran. The cow ate. The pig hid."
    assert [len(qwen_tokenizer.encode(s)) for s in sentences(text)] == [4, 4, 4, 4]
    assert chunk_context(text, 16, qwen_tokenizer) == [text]
    assert chunk_context(text, 8, qwen_tokenizer) == [
        "The cat sat. The dog ran.",
        " The cow ate. The pig hid.",
    ]
    assert chunk_context(text, 15, qwen_tokenizer) == [
        "The cat sat. The dog ran. The cow ate.",
        " The pig hid.",
    ]


def test_a_sentence_of_exactly_the_budget_stays_whole(qwen_tokenizer) -> None:
    text = "word " * 30
    assert len(qwen_tokenizer.encode(text)) == 31
    assert chunk_context(text, 31, qwen_tokenizer) == [text]
    # Over it, cut in halves: two parts, the fewest that can hold 31 tokens in 16.
    halves = chunk_context(text, 16, qwen_tokenizer)
    assert len(halves) == 2 and "".join(halves) == text
    assert all(len(qwen_tokenizer.encode(c)) <= 16 for c in halves)


def test_a_budget_of_one_token_cuts_down_to_characters(qwen_tokenizer) -> None:
    assert len(qwen_tokenizer.encode("xq")) == 2
    assert chunk_context("xq", 1, qwen_tokenizer) == ["x", "q"]


def test_joined_units_over_the_budget_are_parted_from_the_end(qwen_tokenizer) -> None:
    from longscope.router.chunks import _exact

    units = ["The cat sat.", " The dog ran.", " The cow ate."]
    assert _exact(units, 8, qwen_tokenizer) == ["The cat sat. The dog ran.", " The cow ate."]
    assert _exact(units[:2], 7, qwen_tokenizer) == ["The cat sat.", " The dog ran."]
    assert _exact(units, 12, qwen_tokenizer) == ["".join(units)]
    assert _exact(units[:1], 1, qwen_tokenizer) == ["The cat sat."]  # one unit is never cut here


def test_a_latin_stop_ends_a_sentence_only_before_white_space() -> None:
    # A cut inside "4.1" once sent half of a fact to the model (the H200 router run, LCB-008).
    text = (
        "Contract Section 4.1 requires delivery within 30 days. Version 2.3.1 shipped!\nDone…\tok"
    )
    assert sentences(text) == [
        "Contract Section 4.1 requires delivery within 30 days.",
        " Version 2.3.1 shipped!",
        "\n",
        "Done…",
        "\tok",
    ]
    # CJK stops need no space after them; the pieces always join back to the text.
    assert sentences("第一句。第二句！第三句？end") == ["第一句。", "第二句！", "第三句？", "end"]
    assert sentences("a.b.c") == ["a.b.c"] and sentences("End.") == ["End."]
