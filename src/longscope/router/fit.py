"""The router for orchestrating agents: check a task against a model's profile before sending it.

`fit` is pure: it counts the messages, compares them with the budget (the profile's effective
length less the answer's tokens) and returns what to send: the messages as they are (`pass`), with
their context cut (`truncate`, `retrieve`), or one message list per part whose answers need
combining (`split`). `route` sends a request through the same decision with any backend.
docs/router-api.md has a runnable example.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from pathlib import Path
from typing import Any, Literal

from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.router.backend import RoutedBackend
from longscope.router.decide import Strategy, decide
from longscope.router.profile import Basis, RouterProfile, load_profile
from longscope.router.retrieve import DEFAULT_SCORER, ScorerName
from longscope.text.tokenizers import Tokenizer
from longscope.types import Generation, Message, PromptParts, Request

Action = Literal["pass", "truncate", "retrieve", "split", "refuse"]
# Tokens a chat template adds per message (role markers, separators): a margin, not a count.
MESSAGE_OVERHEAD = 4


@dataclass(frozen=True)
class Decision:
    """What to send instead of the task's messages, and the counts behind the choice."""

    action: Action
    prompt_tokens: int
    """The task's messages as counted (content tokens plus a margin per message)."""
    budget: int
    """Tokens a prompt may have: the effective length less the answer's `max_tokens`."""
    parts: tuple[tuple[Message, ...], ...]
    """The message lists to send: one (pass, truncate, retrieve), or one per part (split)."""
    part_tokens: tuple[int, ...]
    """Each part's messages, counted as `prompt_tokens` is (at most `budget`)."""
    reason: str
    plan: dict[str, Any] = field(hash=False, compare=False)
    """The router's full plan (passages kept and dropped, chunks, the combination's choice)."""

    @property
    def combine_answers(self) -> bool:
        """Whether the parts' answers must be combined by one more call (split)."""
        return self.action == "split"


def fit(
    messages: Sequence[Message | Mapping[str, str]],
    profile: RouterProfile | str | Path | int,
    tokenizer: Tokenizer,
    *,
    max_tokens: int = 256,
    strategy: Strategy = "auto",
    basis: Basis = "absolute",
    context: str | None = None,
    scorer: ScorerName = DEFAULT_SCORER,
) -> Decision:
    """Return how `messages` fit the effective length in `profile` (a profile, its file, or tokens).

    The context is `context` (a piece of one message) or else the longest message's content; the
    rest of that message and the other messages are the frame that every part keeps.
    """
    typed = tuple(_message(m) for m in messages)
    if not typed:
        raise UsageError("fit: no messages given")
    budget = _length(profile, basis) - max_tokens
    counts = [len(tokenizer.encode(m.content)) + MESSAGE_OVERHEAD for m in typed]
    tokens = sum(counts)
    where = _context_message(typed, context)
    content = typed[where].content
    piece = context if context is not None else content
    head, _, tail = content.partition(piece)
    others = sum(c for i, c in enumerate(counts) if i != where) + MESSAGE_OVERHEAD
    parts = PromptParts(head, piece, tail)
    route = decide(
        content, parts, tokens - others, budget - others, tokenizer,
        strategy=strategy, scorer_name=scorer,
        asked="\n".join(m.content for i, m in enumerate(typed) if i != where),
    )  # fmt: skip
    route.plan.update(prompt_tokens=tokens, budget=budget)
    action: Action = {
        "pass": "pass",
        "truncate": "truncate",
        "retrieve": "retrieve",
        "map-reduce": "split",
        "retrieve-then-map-reduce": "split",
        "refused": "refuse",
    }[route.action]
    sent = tuple(
        tuple(replace_content(m, text) if i == where else m for i, m in enumerate(typed))
        for text in route.texts
    )
    # `others` already holds the context message's own margin: counted as `prompt_tokens` is.
    sizes = tuple(len(tokenizer.encode(text)) + others for text in route.texts)
    return Decision(action, tokens, budget, sent, sizes, _reason(route.plan), route.plan)


async def route(
    backend: Backend,
    request: Request,
    profile: RouterProfile | str | Path | int,
    *,
    strategy: Strategy = "auto",
    basis: Basis = "absolute",
    scorer: ScorerName = DEFAULT_SCORER,
    context: str | None = None,
) -> Generation:
    """Send `request` to `backend` through the router; the plan comes back as `Generation.route`.

    A request without `parts` (a completion prompt, or a chat request of one message) is cut
    around `context`, a piece of its text; without it, its whole text is the context.
    """
    loaded = None if isinstance(profile, int) else _profile(profile)
    length = profile if isinstance(profile, int) else None
    routed = RoutedBackend(
        backend, loaded, strategy=strategy, basis=basis, length=length, scorer=scorer
    )
    if request.parts is None:
        request = _with_parts(request, context)
    return await routed.generate(request)


def replace_content(message: Message, content: str) -> Message:
    """The same message with other content."""
    return Message(message.role, content)


def _with_parts(request: Request, context: str | None) -> Request:
    if request.mode == "chat" and len(request.messages) != 1:
        raise UsageError(
            "route: a chat request of several messages needs `parts` (the router sends one "
            "message): join them into one, or use fit() and send its parts yourself"
        )
    text = request.text
    piece = text if context is None else context
    if piece not in text:
        raise UsageError("route: the context given is not in the request's text")
    head, _, tail = text.partition(piece)
    return dataclass_replace(request, parts=PromptParts(head, piece, tail))


def _message(message: Message | Mapping[str, str]) -> Message:
    if isinstance(message, Message):
        return message
    try:
        return Message(str(message["role"]), str(message["content"]))
    except KeyError as exc:
        raise UsageError(f"fit: a message lacks {exc.args[0]!r}: give role and content") from exc


def _context_message(messages: tuple[Message, ...], context: str | None) -> int:
    if context is None:
        return max(range(len(messages)), key=lambda i: len(messages[i].content))
    for i, message in enumerate(messages):
        if context in message.content:
            return i
    raise UsageError("fit: the context given is in none of the messages: pass a piece of one")


def _profile(profile: RouterProfile | str | Path) -> RouterProfile:
    return profile if isinstance(profile, RouterProfile) else load_profile(profile)


def _length(profile: RouterProfile | str | Path | int, basis: Basis) -> int:
    if isinstance(profile, int):
        return profile
    loaded = _profile(profile)
    length = loaded.effective(basis)
    if length is None:
        raise UsageError(
            f"profile {loaded.path}: no {basis} effective length: pass a token budget instead"
        )
    return length


def _reason(plan: dict[str, Any]) -> str:
    """One line saying why: the combination's reason, else the counts."""
    said = f"{plan['prompt_tokens']} prompt tokens against a budget of {plan['budget']}"
    if "combination" in plan:
        return f"{said}; {plan['combination']['choice']}: {plan['combination']['reason']}"
    if "error" in plan:
        return f"{said}; {plan['error']}"
    return f"{said}; {plan['decision']}"
