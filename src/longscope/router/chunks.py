"""Cutting a context into pieces that each fit a token budget, at sentence boundaries."""

from __future__ import annotations

import re

from longscope.text.tokenizers import Tokenizer

# Zero-width: a cut after sentence ends and line breaks keeps every character in some piece. A
# Latin stop ends a sentence only before white space: "Section 4.1" and "v2.3" stay whole (a cut
# there once sent half a fact to the model); CJK stops need none.
_BOUNDARY = re.compile(r"(?<=[。！？\n])|(?<=[.!?…])(?=\s)")


def sentences(text: str) -> list[str]:
    """Split `text` after sentence ends and newlines; joining the pieces gives `text` back."""
    return [piece for piece in _BOUNDARY.split(text) if piece]


def chunk_context(text: str, budget: int, tokenizer: Tokenizer) -> list[str]:
    """Return consecutive pieces of `text`, each at most `budget` tokens, cut between sentences.

    A sentence longer than the budget is cut by characters. Joining the pieces gives `text` back.
    """
    if budget < 1:
        raise ValueError(f"a chunk budget of {budget} tokens holds nothing")
    units: list[tuple[str, int]] = []
    for sentence in sentences(text):
        units.extend(_fitting(sentence, budget, tokenizer))
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for unit, tokens in units:
        if current and used + tokens > budget:
            chunks.extend(_exact(current, budget, tokenizer))
            current, used = [], 0
        current.append(unit)
        used += tokens
    if current:
        chunks.extend(_exact(current, budget, tokenizer))
    return chunks


def _fitting(sentence: str, budget: int, tokenizer: Tokenizer) -> list[tuple[str, int]]:
    tokens = len(tokenizer.encode(sentence))
    if tokens <= budget or len(sentence) < 2:
        return [(sentence, tokens)]
    middle = len(sentence) // 2
    return _fitting(sentence[:middle], budget, tokenizer) + _fitting(
        sentence[middle:], budget, tokenizer
    )


def _exact(units: list[str], budget: int, tokenizer: Tokenizer) -> list[str]:
    """Join units into pieces whose own token count fits (sums of parts can differ by a token)."""
    text = "".join(units)
    if len(units) == 1 or len(tokenizer.encode(text)) <= budget:
        return [text]
    return [*_exact(units[:-1], budget, tokenizer), units[-1]]
