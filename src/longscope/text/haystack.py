"""Contexts of an exact token length with sentences inserted at chosen depths.

The filler pool is tokenized once, sentence by sentence, and a haystack is assembled from running
sums of those counts; the finished context is tokenized once more to record its true length (and
trimmed if the boundaries merged tokens). Nothing re-tokenizes a growing haystack in a loop.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

from longscope.files import default_cache_dir
from longscope.text.filler import SEPARATOR, filler_sentences
from longscope.text.tokenizers import Tokenizer
from longscope.types import stable_hash

FILLER_VERSION = 1
_PROBE = "Calibration 2.4 GHz, 8,400 t; 校准证书 — audit."


@dataclass(frozen=True)
class Insert:
    """A sentence to place at `depth` (0.0 = start of the context, 1.0 = end)."""

    text: str
    depth: float


@dataclass(frozen=True)
class PlacedInsert:
    text: str
    depth: float
    token_offset: int
    """Tokens of context before the inserted sentence."""
    actual_depth: float


@dataclass(frozen=True)
class Haystack:
    text: str
    tokens: int
    """Length of `text` in the tokenizer it was built with, counted on the finished text."""
    inserts: tuple[PlacedInsert, ...]


class FillerPool:
    """Filler sentences of one language and seed with their token counts in one tokenizer.

    Counts are cached on disk per (tokenizer vocabulary, language, seed), so the pool is tokenized
    once per machine. When the pool is first counted, the whole pool is also tokenized in one piece:
    if that equals the sum of its sentences (`additive`), a haystack's length is the exact sum of its
    parts and needs no second tokenization.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        language: str = "en",
        seed: int = 0,
        cache_dir: Path | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.language = language
        self.separator = SEPARATOR[language]
        self._stream = filler_sentences(language, seed)
        self.sentences: list[str] = []
        self.cumulative: list[int] = [0]
        """cumulative[i] = tokens of the first i sentences, each with its leading separator."""
        self.additive = False
        fingerprint = stable_hash(tokenizer.encode(_PROBE))
        key = stable_hash([FILLER_VERSION, tokenizer.name, fingerprint, language, seed])
        self._cache = (cache_dir or default_cache_dir()) / f"pool-{key}.json"
        self._cached_counts: list[int] = []
        if self._cache.is_file():
            try:
                data = json.loads(self._cache.read_text())
                self._cached_counts = [int(n) for n in data["counts"]]
                self.additive = bool(data["additive"])
            except (ValueError, KeyError, TypeError):
                self._cached_counts = []

    def count_sentence(self, sentence: str) -> int:
        return len(self.tokenizer.encode(self.separator + sentence))

    def ensure(self, tokens: int) -> None:
        """Grow the pool until it holds at least `tokens` tokens."""
        grew = False
        while self.cumulative[-1] < tokens:
            for sentence in itertools.islice(self._stream, 256):
                index = len(self.sentences)
                self.sentences.append(sentence)
                if index < len(self._cached_counts):
                    count = self._cached_counts[index]
                else:
                    count = self.count_sentence(sentence)
                    grew = True
                self.cumulative.append(self.cumulative[-1] + count)
        if grew:
            whole = self.count("".join(self.separator + s for s in self.sentences))
            self.additive = whole == self.cumulative[-1]
            self._save()

    def _save(self) -> None:
        counts = [b - a for a, b in itertools.pairwise(self.cumulative)]
        self._cached_counts = counts
        from longscope.errors import UsageError
        from longscope.files import write_atomic

        with contextlib.suppress(UsageError):  # a read-only cache only costs time
            write_atomic(self._cache, json.dumps({"counts": counts, "additive": self.additive}))

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text))


def build_haystack(pool: FillerPool, target_tokens: int, inserts: list[Insert]) -> Haystack:
    """Return a context of at most `target_tokens` tokens with each insert at its depth.

    Inserts go at the sentence boundary nearest their depth, measured in tokens of the whole context
    (filler and inserts together), in the order of their depths.
    """
    ordered = sorted(inserts, key=lambda ins: ins.depth)
    insert_tokens = [pool.count_sentence(ins.text) for ins in ordered]
    filler_budget = target_tokens - sum(insert_tokens)
    if filler_budget < 0:
        raise ValueError(f"inserts alone need {sum(insert_tokens)} tokens, over {target_tokens}")
    pool.ensure(filler_budget + 64)
    text, placed, tokens = _assemble(pool, filler_budget, ordered, insert_tokens, target_tokens)
    # Sentence boundaries may merge into fewer or more tokens than the parts: trim if over.
    while tokens > target_tokens:
        filler_budget -= tokens - target_tokens
        text, placed, tokens = _assemble(pool, filler_budget, ordered, insert_tokens, target_tokens)
    return Haystack(text=text, tokens=tokens, inserts=tuple(placed))


def _assemble(
    pool: FillerPool,
    filler_budget: int,
    ordered: list[Insert],
    insert_tokens: list[int],
    target_tokens: int,
) -> tuple[str, list[PlacedInsert], int]:
    n_filler = bisect_left(pool.cumulative, filler_budget + 1) - 1
    cumulative = pool.cumulative
    parts: list[str] = []
    placed: list[PlacedInsert] = []
    used = 0
    inserted_tokens = 0
    for ins, ins_tokens in zip(ordered, insert_tokens, strict=True):
        # Filler tokens wanted before this insert, so that it sits at `depth` of the full context.
        want = ins.depth * target_tokens - inserted_tokens
        boundary = min(max(bisect_left(cumulative, want), used), n_filler)
        if boundary > 0 and abs(cumulative[boundary - 1] - want) <= abs(
            cumulative[boundary] - want
        ):
            boundary = max(boundary - 1, used)
        parts.extend(pool.sentences[used:boundary])
        used = boundary
        offset = cumulative[used] + inserted_tokens
        placed.append(PlacedInsert(ins.text, ins.depth, offset, 0.0))
        parts.append(ins.text)
        inserted_tokens += ins_tokens
    parts.extend(pool.sentences[used:n_filler])
    text = "".join(pool.separator + part for part in parts)
    tokens = cumulative[n_filler] + inserted_tokens if pool.additive else pool.count(text)
    total = max(tokens, 1)
    placed = [
        PlacedInsert(p.text, p.depth, p.token_offset, round(p.token_offset / total, 4))
        for p in placed
    ]
    return text, placed, tokens
