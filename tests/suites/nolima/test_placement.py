"""NoLiMa needle placement (book_haystack.py) at depths 0, 50 and 100%, and what lengths count."""

from __future__ import annotations

import pytest

from longscope.suites.nolima.prompts import depth_grid, place_needle, tokenize_book
from longscope.text.tokenizers import QwenTokenizer

from .rows import CharTokenizer, WordTokenizer, book

NEEDLE = "Long ago, Orla painted a mural beside the Glass Harbour."
WIDTH = 20  # every line of the test book: 19 characters and its newline


def placed(depth: float, length: int = 200, lines: int = 60):
    tokenizer = CharTokenizer()
    text = book(lines=lines, width=WIDTH)
    return text, place_needle(tokenize_book(text, tokenizer), NEEDLE, depth, length, tokenizer)


def first_newline_at_or_after(text: str, position: float) -> int:
    """The authors' rule, worked out on characters: the first newline at or past `position`."""
    return next(i for i, c in enumerate(text) if c == "\n" and i >= position)


def test_newline_tokens_are_the_needle_positions() -> None:
    tokenizer = CharTokenizer()
    text = book(lines=3, width=WIDTH)
    assert tokenize_book(text, tokenizer).line_ends == (0, 19, 39, 59)


def test_depth_0_puts_the_needle_first_and_drops_the_books_first_token() -> None:
    # Position 0 is always a candidate; the text before it (one token) is cut at its last
    # newline, of which it has none: so the haystack starts with a space and the needle.
    text, placement = placed(0.0)
    assert placement.text == " " + NEEDLE + "\n" + text[1:200]
    assert (placement.start, placement.line_end, placement.token_depth) == (0, 0, 0)


def test_depth_50_joins_the_needle_to_the_line_ending_past_the_middle() -> None:
    text, placement = placed(0.5)
    line_end = first_newline_at_or_after(text, 0.5 * (200 + 1))  # 100.5 -> 119
    assert line_end == 119
    start = line_end - round(200 * 0.5)  # 19: the needle's line end sits 100 tokens in
    expected = text[start:line_end] + " " + NEEDLE + "\n" + text[line_end + 1 : start + 200]
    assert placement.text == expected
    assert (placement.start, placement.line_end, placement.token_depth) == (19, 119, 100)


def test_depth_100_ends_the_haystack_with_the_needle() -> None:
    text, placement = placed(1.0)
    line_end = first_newline_at_or_after(text, 1.0 * (200 + 1))  # 201 -> 219
    start = line_end - 200
    assert placement.text == text[start:line_end] + " " + NEEDLE + "\n"
    assert placement.text.endswith(NEEDLE + "\n")


@pytest.mark.parametrize("length", [250, 500, 1000])
def test_length_counts_book_tokens_only(length: int) -> None:
    # The window is `length` book tokens; the newline token the needle follows is dropped (and
    # " " + needle + "\n" added), so `length - 1` book tokens remain, except at depth 100%, where
    # the cut text runs through the line end just past the window: `length` book tokens. The
    # needle, template and question always come on top.
    tokenizer = CharTokenizer()
    text = book(lines=200, width=WIDTH)
    tokens = tokenize_book(text, tokenizer)
    for depth in depth_grid():
        placement = place_needle(tokens, NEEDLE, depth, length, tokenizer)
        book_chars = len(placement.text) - len(" " + NEEDLE + "\n")
        assert book_chars == (length if depth == 1.0 else length - 1), depth
        assert placement.text.count(NEEDLE) == 1


def test_the_needle_follows_the_words_of_a_token_that_ends_a_line() -> None:
    # With real tokenizers a newline often shares a token with the word before it (`end.\n`):
    # the cut keeps the word, drops the newline, and the needle joins that line.
    tokenizer = WordTokenizer()
    text = "".join(f"line {i} ends here.\n" for i in range(40))
    tokens = tokenize_book(text, tokenizer)
    placement = place_needle(tokens, NEEDLE, 0.5, 40, tokenizer)
    assert " here. " + NEEDLE + "\nline " in placement.text


def test_a_book_too_short_for_the_length_is_refused() -> None:
    tokenizer = CharTokenizer()
    tokens = tokenize_book(book(lines=5, width=WIDTH), tokenizer)
    with pytest.raises(ValueError, match=r"too short for 200 tokens with the needle at depth 0\.5"):
        place_needle(tokens, NEEDLE, 0.5, 200, tokenizer)
    with pytest.raises(ValueError, match="too short"):
        place_needle(tokens, NEEDLE, 0.0, 200, tokenizer)


@pytest.mark.parametrize(
    ("length", "line_end", "token_depth"),
    [
        # 0.5 * 238 = 119 is a newline, but the authors divide by length + 1: 119.5, so the
        # needle goes after the next line end (139), not after 119.
        (238, 139, 119),
        # round(0.5 * 201) = round(100.5): numpy rounds half to even, 100, not 101.
        (201, 119, 100),
    ],
)
def test_depth_uses_length_plus_one_and_rounds_half_to_even(
    length: int, line_end: int, token_depth: int
) -> None:
    text, placement = placed(0.5, length=length)
    assert (placement.line_end, placement.token_depth) == (line_end, token_depth)
    start = line_end - token_depth
    assert placement.text == (
        text[start:line_end] + " " + NEEDLE + "\n" + text[line_end + 1 : start + length]
    )


def test_depth_0_drops_a_whole_first_token_without_a_newline() -> None:
    # The first token here is the word `line ` (no newline): the cut at its last newline
    # (none, so position 0) leaves nothing before the needle.
    tokenizer = WordTokenizer()
    text = "".join(f"line {i} ends here.\n" for i in range(40))
    placement = place_needle(tokenize_book(text, tokenizer), NEEDLE, 0.0, 40, tokenizer)
    assert placement.text.startswith(" " + NEEDLE + "\n0 ends here.\nline 1 ")


def test_with_a_real_bpe_tokenizer_a_blank_line_token_keeps_its_first_newline() -> None:
    # Qwen's BPE writes `.\n\n` as one token: the cut at its LAST newline keeps `.\n`, so in a
    # book of paragraphs the needle starts a line of its own, after a space.
    tokenizer = QwenTokenizer()
    text = "".join(f"Paragraph {i} tells of rain on the hills.\n\n" for i in range(80))
    tokens = tokenize_book(text, tokenizer)
    assert ".\n\n" in {tokenizer.decode([t]) for t in tokens.ids}
    for depth in (0.25, 0.5, 0.75):
        placement = place_needle(tokens, NEEDLE, depth, 300, tokenizer)
        assert "hills.\n " + NEEDLE + "\nParagraph " in placement.text
        assert tokenizer.decode([tokens.ids[placement.line_end]]) == ".\n\n"
        # The needle's line end is the first newline token at or past depth * (300 + 1).
        candidates = [p for p in tokens.line_ends if p >= depth * 301]
        assert placement.line_end == candidates[0]
        assert placement.start == placement.line_end - round(300 * depth)
