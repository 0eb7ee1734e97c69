"""What the router does with one prompt, decided without calling any model (pure).

`decide` returns the prompt texts to send and the plan to store; the backend wrapper
(router/backend.py) sends them, and `longscope.router.fit` hands them to an orchestrating agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from longscope.router.chunks import chunk_context
from longscope.router.combine import combine
from longscope.router.retrieve import (
    GAP,
    PASSAGE_TOKENS,
    Passage,
    ScorerName,
    Selection,
    join_passages,
    scorer,
    select,
    split_passages,
)
from longscope.text.tokenizers import Tokenizer
from longscope.text.truncate import middle_truncate
from longscope.types import PromptParts

Strategy = Literal["map-reduce", "truncate", "retrieve", "auto"]
STRATEGIES: tuple[Strategy, ...] = ("map-reduce", "truncate", "retrieve", "auto")
Action = Literal[
    "pass", "truncate", "retrieve", "map-reduce", "retrieve-then-map-reduce", "refused"
]
NOT_HERE = "not in this part"
MAP_NOTE = (
    "\n\n(This was part {index} of {count} of the document. If this part does not contain the "
    f"answer, answer: {NOT_HERE}.)"
)
# Tokens kept free for merges at the seams between head, context and tail.
_SEAM = 8
_MIN_CHUNK = 64


@dataclass(frozen=True)
class Route:
    """The prompt texts to send (one, or one per part for a map step) and the plan to store."""

    action: Action
    texts: tuple[str, ...]
    plan: dict[str, Any] = field(hash=False, compare=False)

    @property
    def reduce(self) -> bool:
        """Whether the answers to `texts` must be combined by one more call."""
        return self.action in ("map-reduce", "retrieve-then-map-reduce")


def decide(
    text: str,
    parts: PromptParts | None,
    tokens: int,
    budget: int,
    tokenizer: Tokenizer,
    *,
    strategy: Strategy = "auto",
    scorer_name: ScorerName = "bm25",
    asked: str = "",
) -> Route:
    """Decide how a prompt of `tokens` tokens (its text cut into `parts`) fits `budget` tokens.

    The question that passages are scored against is the frame (`parts.head + parts.tail`) and
    `asked`, text sent beside the prompt (an agent's other messages)."""
    plan: dict[str, Any] = {"prompt_tokens": tokens, "budget": budget}
    if tokens <= budget:
        return Route("pass", (text,), {"decision": "pass", **plan})
    if parts is None or not parts.context:
        plan["note"] = "no separable context: sent whole"
        return Route("pass", (text,), {"decision": "pass", **plan})
    frame = len(tokenizer.encode(parts.head + parts.tail)) + _SEAM
    note = len(tokenizer.encode(MAP_NOTE.format(index=999, count=999)))
    room = budget - frame
    if room - note < _MIN_CHUNK:
        # The template and question alone nearly fill the budget: nothing useful fits beside.
        plan["decision"] = "refused"
        plan["error"] = f"router: the prompt's frame takes {frame} of a {budget}-token budget"
        # The smallest prompt budget that holds the frame, the part note and some context.
        plan["needs"] = frame + note + _MIN_CHUNK
        return Route("refused", (), plan)
    if strategy == "truncate":
        kept, kept_tokens, _ = middle_truncate(parts.context, room, tokenizer)
        plan.update(decision="truncate", context_tokens_kept=kept_tokens)
        return Route("truncate", (parts.head + kept + parts.tail,), plan)
    if strategy == "map-reduce":
        return _split(parts, parts.context, room - note, "map-reduce", plan, tokenizer)
    size = max(16, min(PASSAGE_TOKENS, room // 4))
    passages = split_passages(parts.context, size, tokenizer)
    texts = [parts.context[p.start : p.end] for p in passages]
    question = parts.head + parts.tail + asked
    must: tuple[int, ...] = ()
    if strategy == "auto":
        gap = len(tokenizer.encode(GAP))
        chosen = combine(question, texts, [p.tokens for p in passages], room, gap)
        plan["combination"] = {
            "choice": chosen.choice,
            "reason": chosen.reason,
            "named": list(chosen.named[:20]),
            "passages_holding_named": len(chosen.holding),
            "passages": len(passages),
        }
        if chosen.choice == "map-reduce":
            return _split(parts, parts.context, room - note, "map-reduce", plan, tokenizer)
        if chosen.choice == "retrieve-then-map-reduce":
            subset = join_passages(parts.context, passages, chosen.holding)
            return _split(parts, subset, room - note, chosen.choice, plan, tokenizer)
        must = chosen.holding
    scores = scorer(scorer_name)(question, texts)
    selection = select(parts.context, passages, scores, room, tokenizer, must=must)
    plan.update(
        decision="retrieve",
        retrieval=_retrieval_plan(scorer_name, size, parts.context, passages, selection),
    )
    return Route("retrieve", (parts.head + selection.text + parts.tail,), plan)


def _split(
    parts: PromptParts,
    context: str,
    room: int,
    action: Action,
    plan: dict[str, Any],
    tokenizer: Tokenizer,
) -> Route:
    """One prompt per chunk of `context` that fits `room`, each told which part it is."""
    chunks = chunk_context(context, room, tokenizer)
    texts = tuple(
        parts.head + chunk + MAP_NOTE.format(index=i, count=len(chunks)) + parts.tail
        for i, chunk in enumerate(chunks, start=1)
    )
    plan.update(
        decision=action,
        chunks=[
            {"part": i, "context_tokens": len(tokenizer.encode(chunk))}
            for i, chunk in enumerate(chunks, start=1)
        ],
    )
    return Route(action, texts, plan)


def _retrieval_plan(
    name: str, size: int, context: str, passages: list[Passage], selection: Selection
) -> dict[str, Any]:
    """What retrieval kept (spans, tokens, scores, a preview) and what it dropped, for the store."""
    kept = set(selection.kept)
    dropped = [i for i in range(len(passages)) if i not in kept]
    best_dropped = max((selection.scores[i] for i in dropped), default=None)
    return {
        "scorer": name,
        "passage_tokens": size,
        "passages": len(passages),
        "context_tokens_kept": selection.tokens,
        "kept": [
            {
                "passage": i,
                "chars": [passages[i].start, passages[i].end],
                "tokens": passages[i].tokens,
                "score": round(selection.scores[i], 4),
                "text": context[passages[i].start : passages[i].end][:160],
            }
            for i in selection.kept
        ],
        "dropped": {
            "passages": len(dropped),
            "tokens": sum(passages[i].tokens for i in dropped),
            "best_score": None if best_dropped is None else round(best_dropped, 4),
        },
        # Every passage's score, in order: where the answer's passage ranked can be read back.
        "scores": [round(s, 4) for s in selection.scores],
    }
