"""A prompt's tokens from its pieces' counts: equal to the whole prompt's count, or not used.

`PieceCounter` is what lets fill=ruler size a 128K prompt without tokenizing it at every search
step: its sum must equal the tokenizer's count of the joined text for every separator and either
side the tokenizer merges the separator with, each piece must be tokenized once per process, and
one-off pieces (random needles) must not be kept.
"""

from __future__ import annotations

import pytest

from longscope.suites.ruler import generate
from longscope.suites.ruler.counting import PieceCounter
from longscope.text.tokenizers import QwenTokenizer

PIECES = {
    "\n": [
        "The grass is green. The sky is blue.",
        "VAR QWERT = 12345",
        "One of the special magic numbers for able-band is: 1234567.",
        "VAR ASDFG = VAR QWERT ",
        "The grass is green.",
    ],
    " ": ["1. apple", "2. blue", "3. carrot", "4. xqzvbt", "...", "5. end."],
    "\n\n": ["Document 1:\nTitle A\nText.", "Document 2:\nTitle B\nMore text.", "Document 3:\nC"],
}
HEAD, TAIL = "Memorize the text below.\n", "\nQuestion: What is it? Answer:"


class Reversed:
    """Qwen2.5's tokens of the reversed text: the separator merges on the other side."""

    name, exact = "qwen-reversed", True

    def __init__(self, qwen: QwenTokenizer) -> None:
        self._qwen = qwen

    def encode(self, text: str) -> list[int]:
        return self._qwen.encode(text[::-1])


class EndMarked:
    """Qwen2.5's tokens plus an end-of-text token: counts never add up."""

    name, exact = "end-marked", True

    def __init__(self, qwen: QwenTokenizer) -> None:
        self._qwen = qwen

    def encode(self, text: str) -> list[int]:
        return [*self._qwen.encode(text), 151643]


class Counting:
    """Records the texts it was asked to tokenize (each piece should be asked once)."""

    def __init__(self, inner) -> None:
        self.inner, self.asked = inner, []
        self.name, self.exact = inner.name, True

    def encode(self, text: str) -> list[int]:
        self.asked.append(text)
        return self.inner.encode(text)


def _tokenizer(kind: str, qwen: QwenTokenizer):
    return {"qwen": qwen, "reversed": Reversed(qwen), "end": EndMarked(qwen)}[kind]


MODES = {
    ("qwen", "\n"): "trail",
    ("qwen", " "): "lead",
    ("qwen", "\n\n"): "trail",
    ("reversed", "\n"): "lead",
    ("reversed", " "): "trail",
    ("reversed", "\n\n"): "lead",
    ("end", "\n"): None,
    ("end", " "): None,
    ("end", "\n\n"): None,
}


@pytest.mark.parametrize("kind,sep", sorted(MODES, key=str))
def test_probe_finds_the_side_the_separator_merges_on(qwen_tokenizer, kind, sep) -> None:
    tokenizer = _tokenizer(kind, qwen_tokenizer)
    counter = PieceCounter(tokenizer, sep, PIECES[sep])
    assert counter.mode == MODES[(kind, sep)]
    # The suite's own probes give the same mode.
    assert generate.Counter(tokenizer, False).piece_counter(sep).mode == MODES[(kind, sep)]


@pytest.mark.parametrize("kind", ["qwen", "reversed"])
@pytest.mark.parametrize("sep", ["\n", " ", "\n\n"])
def test_total_from_the_pieces_is_the_whole_prompts_count(qwen_tokenizer, kind, sep) -> None:
    tokenizer = _tokenizer(kind, qwen_tokenizer)
    counter = PieceCounter(tokenizer, sep, PIECES[sep])
    pieces = PIECES[sep]
    for n in (1, 2, 3, len(pieces)):
        some = pieces[:n]
        whole = len(tokenizer.encode(HEAD + sep.join(some) + TAIL))
        mids = sum(counter.mid(p) for p in some)
        assert counter.mids_sum(some) == mids, n
        assert counter.total(HEAD, some, mids, TAIL) == whole, n
    # The first and last pieces counted with the text around the context.
    side = sep if counter.mode == "trail" else ""
    assert counter.first(HEAD, pieces[0]) == len(tokenizer.encode(HEAD + pieces[0] + side))
    lead = sep if counter.mode == "lead" else ""
    assert counter.last(pieces[-1], TAIL) == len(tokenizer.encode(lead + pieces[-1] + TAIL))
    mid = sep + pieces[1] if counter.mode == "lead" else pieces[1] + sep
    assert counter.mid(pieces[1]) == len(tokenizer.encode(mid))


def test_without_a_mode_each_piece_counts_with_its_separator(qwen_tokenizer) -> None:
    tokenizer = EndMarked(qwen_tokenizer)
    counter = PieceCounter(tokenizer, " ", PIECES[" "])
    assert counter.mode is None
    some = PIECES[" "][:3]
    assert counter.mids_sum(some) == sum(len(tokenizer.encode(" " + p)) for p in some)
    # One piece: the text around it counted whole.
    assert counter.total(HEAD, some[:1], 0, TAIL) == len(tokenizer.encode(HEAD + some[0] + TAIL))


def test_each_piece_is_tokenized_once_and_one_offs_are_not_kept(qwen_tokenizer) -> None:
    tokenizer = Counting(qwen_tokenizer)
    counter = PieceCounter(tokenizer, " ", PIECES[" "])
    tokenizer.asked.clear()
    apple, twelve = len(qwen_tokenizer.encode(" apple")), len(qwen_tokenizer.encode(" 12."))
    assert counter.mid("apple") == counter.mid("apple") == apple
    assert counter.mid_text(" 12.") == counter.mid_text(" 12.") == twelve
    assert tokenizer.asked == [" apple", " 12."]
    assert counter.memo == {"apple": apple} and counter.text_memo == {" 12.": twelve}
    # Where the counts add up, a haystack's pieces are tokenized as one text, not one by one.
    tokenizer.asked.clear()
    assert counter.mids_sum(PIECES[" "]) == sum(counter.mid(p) for p in PIECES[" "])
    assert tokenizer.asked[0] == "".join(" " + p for p in PIECES[" "])
    trail = PieceCounter(tokenizer, "\n", PIECES["\n"])
    assert trail.mode == "trail"
    tokenizer.asked.clear()
    trail.mids_sum(PIECES["\n"][:3])
    assert tokenizer.asked == ["".join(p + "\n" for p in PIECES["\n"][:3])]
    counter.memo = {"apple": apple}
    # Random needles and the first and last pieces are counted but not kept.
    once = ["1. x-ray", "2. yak", "3. zebra"]
    counter.total(HEAD, once, counter.mids_sum(once), TAIL)
    counter.mid("4. quail", False)
    assert counter.memo == {"apple": apple}
    none = PieceCounter(EndMarked(qwen_tokenizer), " ", PIECES[" "])
    none.mids_sum(once)
    assert none.memo == {}


def test_piece_counters_are_shared_per_tokenizer_and_separator(qwen_tokenizer) -> None:
    reversed_ = Reversed(qwen_tokenizer)
    a, b = generate.Counter(qwen_tokenizer, False), generate.Counter(qwen_tokenizer, True)
    assert a.piece_counter(" ") is b.piece_counter(" ")
    assert a.piece_counter(" ") is not a.piece_counter("\n")
    other = generate.Counter(reversed_, False).piece_counter(" ")
    assert other is not a.piece_counter(" ") and other.tokenizer is reversed_
    assert (a.piece_counter(" ").sep, a.piece_counter("\n\n").sep) == (" ", "\n\n")
