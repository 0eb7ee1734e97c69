"""The hf engine's bookkeeping: requests as members of a job, units admitted together, rows of the
running batch, and how a member's tokens become its generation (EOS, stop strings, deadline)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from longscope.models.base import split_reasoning
from longscope.models.thinking import TokenBudget
from longscope.types import Generation, Request


@dataclass
class Member:
    """One request's decoding state inside a batch."""

    request: Request
    ids: list[int]
    generated: list[int] = field(default_factory=list)
    status: str = ""
    deadline: float | None = None
    stop_at: int = -1
    budget: TokenBudget | None = None
    """A thinking budget (models/thinking.py); `request.config.max_tokens` is then its ceiling."""
    opened: str = ""
    """The thinking marker the prompt ends in, when its template opened a think block."""


class Job:
    """The requests of one `generate_group` call; answered when each has a generation."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self.results: list[Generation | None] = [None] * len(members)
        self.pending = list(range(len(members)))
        """Members not yet admitted to the device."""
        self.future: concurrent.futures.Future[list[Generation]] = concurrent.futures.Future()

    def put(self, index: int, generation: Generation) -> None:
        self.results[index] = generation
        if all(r is not None for r in self.results):
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                self.future.set_result([r for r in self.results if r is not None])

    def fail(self, exc: BaseException) -> None:
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self.future.set_exception(exc)


@dataclass(eq=False)
class Unit:
    """Members of one job admitted together: one prefill of their shared prefix."""

    job: Job
    indices: list[int]
    chunk: int
    plan: Any
    prefix: int
    """Tokens the members share and prefill once (`shared_prefix`, as planned)."""
    started: float = 0.0

    @property
    def members(self) -> list[Member]:
        return [self.job.members[i] for i in self.indices]

    @property
    def tokens(self) -> int:
        return max(len(m.ids) + m.request.config.max_tokens for m in self.members)

    @property
    def longest(self) -> int:
        return max(m.request.config.max_tokens for m in self.members)

    def start(self) -> float:
        """Start the members' clocks (their deadlines count from admission, not from queueing)."""
        self.started = time.perf_counter()
        for member in self.members:
            timeout = member.request.timeout_s
            member.deadline = self.started + timeout if timeout else None
        return self.started


@dataclass(eq=False)
class Row:
    """One member decoding in the running batch."""

    unit: Unit
    member: Member
    index: int
    sampler: Any
    length: int
    """The unit's padded prompt length: the row's first decode slot."""
    parked: bool = False
    """Its unit is answered; the row stays in the batch, unread, until the next rebuild."""

    @property
    def max_tokens(self) -> int:
        return self.member.request.config.max_tokens


class Answers:
    """Turns a member's tokens into its answer: EOS and stop strings end it, the deadline cuts it."""

    def __init__(self, tokenizer: Any, eos: frozenset[int]) -> None:
        self.tokenizer = tokenizer
        self.eos = eos

    def accept(self, member: Member, token: int, now: float) -> None:
        """Record `token` as the member's next, setting its status where it ends there."""
        config = member.request.config
        budget = member.budget
        if token in self.eos:
            if budget is not None and budget.thinking:
                budget.force(member.generated)  # ended inside its thinking: closed for it
                return
            member.status = "ok"
            return
        member.generated.append(token)
        if budget is not None and budget.accepted(member.generated):
            member.status = "length"
            return
        if config.stop and (budget is None or not budget.thinking):
            longest = max(len(s) for s in config.stop)
            tail = self.tokenizer.decode(
                member.generated[-(longest + 8) :], skip_special_tokens=True
            )
            if any(s in tail for s in config.stop):
                member.status = "ok"
                member.stop_at = 1
                return
        if len(member.generated) >= config.max_tokens:
            member.status = "length"
        elif member.deadline is not None and now > member.deadline:
            member.status = "timeout"

    def finish(self, member: Member, latency: float) -> Generation:
        """Return the member's generation (text cut at a stop string, reasoning split off)."""
        budget = member.budget
        if budget is not None:
            text, reasoning = budget.split(member.generated)
        else:
            text = self.tokenizer.decode(member.generated, skip_special_tokens=True)
        if member.stop_at >= 0:
            cuts = [text.find(s) for s in member.request.config.stop if s in text]
            text = text[: min(cuts)] if cuts else text
        if budget is None:
            # A thought the template opened and the model never closed is no answer.
            answer, reasoning = split_reasoning(member.opened + text)
        else:
            answer = text.strip()
        error = ""
        if member.status == "timeout":
            error = f"exceeded {member.request.timeout_s:.0f}s"
        forced = len(budget.forced_ids) if budget is not None and budget.forced else 0
        return Generation(
            text=answer,
            reasoning=reasoning,
            status=member.status,  # type: ignore[arg-type]
            prompt_tokens=len(member.ids),
            completion_tokens=len(member.generated) - forced,
            latency_s=latency,
            error=error,
            budget=None
            if budget is None
            else budget.use(member.generated, member.status == "length"),
        )


def force_next(tokens: Any, members: list[Member]) -> None:
    """Put each member's next forced token (a thinking budget's close) in place of the token
    sampled for it in `tokens` (the next step's input, one row per member)."""
    if tokens is None:
        return
    for row, member in enumerate(members):
        if member.budget is not None and member.budget.pending and not member.status:
            tokens[row] = member.budget.next_forced()


def skipped(member: Member, reason: str) -> Generation:
    """Return a member's generation that was never run, with the reason."""
    return Generation(text="", status="skipped", prompt_tokens=len(member.ids), error=reason)


def shared_prefix(members: list[Member]) -> int:
    """Return the tokens a batch prefills once: the members' common prefix, leaving each member
    at least its last token to prefill as a batch (its logits start the decode)."""
    return min(common_prefix([m.ids for m in members]), min(len(m.ids) for m in members) - 1)


def common_prefix(sequences: list[list[int]]) -> int:
    """Return the length of the longest common prefix of token id lists."""
    first = sequences[0]
    length = len(first)
    for other in sequences[1:]:
        limit = min(length, len(other))
        same = 0
        while same < limit and first[same] == other[same]:
            same += 1
        length = same
    return length


def drain(steps: Generator[None, None, Any]) -> Any:
    """Run a generator of steps to its end; return what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
