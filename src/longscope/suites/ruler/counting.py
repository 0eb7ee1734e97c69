"""Exact prompt lengths from token counts of the prompt's pieces, never from a growing haystack.

A RULER context is pieces joined by one separator (`\\n`, a space, a blank line). Each piece's count
is taken with the separator on the side where the tokenizer never merges across it (`lead`: before
the piece, `trail`: after), found by probing; the first and last pieces are counted together with
the text around the context. A prompt's length is then a sum, checked once per task and length
against the tokenizer on the whole prompt (the suite counts every prompt whole where it is not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from longscope.suites.ruler.tasks import MODEL_TEMPLATES
from longscope.text.tokenizers import SpecialTokenizer, Tokenizer

Mode = Literal["lead", "trail"]


class SpecialTokens:
    """`tokenizer` counting as RULER's hf path does (`AutoTokenizer.tokenize`): special-token
    strings in the text are one token each, not their characters spelled out."""

    def __init__(self, tokenizer: SpecialTokenizer) -> None:
        self.inner = tokenizer
        self.name = tokenizer.name
        self.exact = tokenizer.exact

    def encode(self, text: str) -> list[int]:
        return self.inner.encode_special(text)

    def decode(self, ids: list[int]) -> str:
        return self.inner.decode(ids)


_READERS: dict[int, tuple[Tokenizer, SpecialTokens]] = {}
"""One reader per tokenizer (the tokenizer held so that its id stays its own): the piece counters
shared per tokenizer stay shared."""


def ruler_counting(tokenizer: Tokenizer, model_template: str) -> Tokenizer:
    """Return `tokenizer` as RULER counts a prompt wrapped in `model_template`.

    RULER's hf path reads a model template's special-token strings (Phi-3's `<|user|>`, Llama 3's
    `<|eot_id|>`, command-r's, chatglm's, Jamba's, Nemotron's) as one token each, as a completion
    endpoint does; `encode` spells them out. Where the tokenizer reads any of the template's text
    as special tokens, every prompt of the cell is counted that way; elsewhere (the base template,
    chat mode, a vocabulary without those tokens) the counts are `encode`'s, the same either way.
    """
    if not isinstance(tokenizer, SpecialTokenizer):
        return tokenizer
    frame = "".join(MODEL_TEMPLATES[model_template].split("{task_template}"))
    if not frame or tokenizer.encode_special(frame) == tokenizer.encode(frame):
        return tokenizer
    held = _READERS.get(id(tokenizer))
    if held is None or held[0] is not tokenizer:
        if len(_READERS) > 8:
            _READERS.clear()
        held = _READERS[id(tokenizer)] = (tokenizer, SpecialTokens(tokenizer))
    return held[1]


class PieceCounter:
    """Counts of pieces joined by `sep` in one tokenizer, with a memo of the pieces seen."""

    def __init__(self, tokenizer: Tokenizer, sep: str, probe: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.sep = sep
        self.memo: dict[str, int] = {}
        self.text_memo: dict[str, int] = {}
        self.helpers: dict[tuple[str, str], Any] = {}
        """Per-tokenizer tables built on this counter (needle part counts)."""
        self.mode: Mode | None = self._probe(list(probe))

    def count(self, text: str) -> int:
        """Return the tokens of `text` counted whole."""
        return len(self.tokenizer.encode(text))

    def _probe(self, units: list[str]) -> Mode | None:
        whole = self.count(self.sep.join(units))
        sep = self.sep
        lead = self.count(units[0]) + sum(self.count(sep + u) for u in units[1:])
        if lead == whole:
            return "lead"
        trail = sum(self.count(u + sep) for u in units[:-1]) + self.count(units[-1])
        return "trail" if trail == whole else None

    def mid(self, piece: str, keep: bool = True) -> int:
        """Return the tokens `piece` adds between two others, its separator included."""
        n = self.memo.get(piece)
        if n is None:
            n = self.count(self.sep + piece if self.mode != "trail" else piece + self.sep)
            if keep:  # one-off pieces (random needles) are not kept
                self.memo[piece] = n
        return n

    def mids_sum(self, pieces: Sequence[str]) -> int:
        """Return the sum of `mid` over `pieces`: one tokenization of them all when counts add."""
        if self.mode == "lead":
            return self.count("".join(self.sep + p for p in pieces))
        if self.mode == "trail":
            return self.count("".join(p + self.sep for p in pieces))
        return sum(self.mid(p, False) for p in pieces)

    def mid_text(self, text: str) -> int:
        """Return the tokens of `text` counted whole, kept in the memo (repeated parts)."""
        n = self.text_memo.get(text)
        if n is None:
            n = self.text_memo[text] = self.count(text)
        return n

    def first(self, head: str, piece: str) -> int:
        """Return the tokens of the text before the context with the first piece."""
        return self.count(head + piece + (self.sep if self.mode == "trail" else ""))

    def last(self, piece: str, tail: str) -> int:
        """Return the tokens of the last piece with the text after the context."""
        return self.count((self.sep if self.mode != "trail" else "") + piece + tail)

    def total(self, head: str, pieces: Sequence[str], mids_sum: int, tail: str) -> int:
        """Return the prompt's tokens from the sum of all pieces' `mid` counts (`mids_sum`)."""
        if len(pieces) < 2:
            return self.count(head + self.sep.join(pieces) + tail)
        inner = mids_sum - self.mid(pieces[0], False) - self.mid(pieces[-1], False)
        return self.first(head, pieces[0]) + inner + self.last(pieces[-1], tail)
