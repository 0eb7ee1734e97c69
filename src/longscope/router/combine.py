"""The combination rule: which strategy a prompt that exceeds the budget gets, from its text alone.

The rule, in order (docs/router-api.md states it for users; every choice is stored with its reason):
1. The question names what it looks for: some word of the frame (the prompt less its context) of
   at least 3 characters, not a bare number, occurs in at least one passage of the context but in
   at most 5% of them (at least 2). Then `retrieve`: the passages holding a named word come first,
   the best-scoring others fill the rest of the budget. Named words are taken rarest first (fewest
   passages) while their passages still fit together: a prompt's instructions name common words
   too ("special", "within" in RULER's), and those must not crowd out the one passage that holds
   the key. When not even the rarest word's passages fit, `retrieve-then-map-reduce`: map-reduce
   over the passages holding a named word, only.
2. Otherwise, an aggregation question (counts, frequencies, "all", "every", "list"): `map-reduce`
   over the whole context, since every part may hold a piece of the answer.
3. Otherwise `retrieve` (the best-scoring passages, nothing named).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from longscope.router.retrieve import words

Choice = Literal["retrieve", "map-reduce", "retrieve-then-map-reduce"]
AGGREGATION = re.compile(
    r"\b(how many|how often|count|number of times|most (?:common|frequent)|frequen\w*|"
    r"in total|all|every|list)\b",
    re.IGNORECASE,
)
_NAMED_SHARE = 0.05


@dataclass(frozen=True)
class Combination:
    """The strategy chosen, why, and the passages that hold a word the question names."""

    choice: Choice
    reason: str
    named: tuple[str, ...] = ()
    holding: tuple[int, ...] = field(default=())


def named_words(frame: str, passage_words: Sequence[set[str]]) -> tuple[str, ...]:
    """Words of `frame` that are rare but present in the passages: what the question names."""
    limit = max(2, math.ceil(_NAMED_SHARE * len(passage_words)))
    named = []
    for word in dict.fromkeys(words(frame)):
        if len(word) < 3 or word.isdigit():
            continue
        df = sum(word in p for p in passage_words)
        if 1 <= df <= limit:
            named.append(word)
    return tuple(named)


def combine(frame: str, passage_texts: Sequence[str], passage_tokens: Sequence[int], room: int,
            gap_tokens: int) -> Combination:  # fmt: skip
    """Apply the rule above to a prompt's frame and its context's passages."""
    passage_words = [set(words(t)) for t in passage_texts]
    named = named_words(frame, passage_words)
    if named:
        holders = [{i for i, p in enumerate(passage_words) if word in p} for word in named]

        def need(passages: set[int]) -> int:
            return sum(passage_tokens[i] + gap_tokens for i in passages)

        kept: set[int] = set()
        kept_words: list[str] = []
        # Rarest first; sorted() is stable, so equally rare words keep the frame's order.
        for word, held in sorted(zip(named, holders, strict=True), key=lambda pair: len(pair[1])):
            if need(kept | held) <= room:
                kept |= held
                kept_words.append(word)
        said = ", ".join(named[:8])
        every = set().union(*holders)
        if not kept_words:
            return Combination(
                "retrieve-then-map-reduce",
                f"names {said}; the {len(every)} passages holding them need {need(every)} "
                f"tokens, over the {room} the budget leaves",
                named,
                tuple(sorted(every)),
            )
        if len(kept_words) == len(named):
            reason = f"names {said}, found in {len(kept)} passages"
        else:
            left = [word for word in named if word not in kept_words]
            reason = (
                f"names {said}; keeps the {len(kept)} passages holding "
                f"{', '.join(kept_words[:8])}; those holding {', '.join(left[:8])} do not fit "
                f"as well (all {len(every)} passages need {need(every)} tokens, over the {room} "
                "the budget leaves)"
            )
        return Combination("retrieve", reason, named, tuple(sorted(kept)))
    cue = AGGREGATION.search(frame)
    if cue:
        return Combination("map-reduce", f"names nothing rare; aggregation cue {cue.group(0)!r}")
    return Combination("retrieve", "names nothing rare and asks no aggregation: best passages")
