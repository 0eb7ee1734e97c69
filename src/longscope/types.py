"""The shared vocabulary: what flows between suites, the runner, backends, the store and reports.

Every type here is a frozen dataclass so that a value seen by one stage cannot be changed behind the
back of another. Long strings (contexts) live in `Sample.context` once; requests and stored rows refer
to them by hash instead of copying them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["ok", "length", "context_overflow", "skipped", "timeout", "error"]
"""Outcome of one generation. Scorers see only `ok` and `length`; reports count the rest per cell."""

STATUSES: tuple[Status, ...] = ("ok", "length", "context_overflow", "skipped", "timeout", "error")
SCORABLE: frozenset[Status] = frozenset({"ok", "length"})
# A resumed run redoes these: they say nothing about the model, only about the moment it ran.
RETRYABLE: frozenset[Status] = frozenset({"skipped", "timeout", "error"})

PromptMode = Literal["chat", "completion"]
"""Chat models take messages through their own template; base models take a plain prompt that ends
in an answer prefix (as RULER prompts base models)."""


@dataclass(frozen=True)
class Sample:
    """One benchmark item: the context to read, the question, and what counts as right."""

    id: str
    task: str
    language: str
    context: str
    question: str
    gold: tuple[str, ...]
    length: int = 0
    """Target length in tokens (the tier or bucket this sample belongs to)."""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    max_tokens: int | None = None
    """This sample's output budget, when it differs from the suite's (`GenerationConfig`)."""
    prompt_tokens: int = 0
    """The prompt's length as the suite counted it in the model's tokenizer (0: not counted)."""
    thinking_budget: int | None = None
    """This sample's thinking budget, when the suite gives one (`GenerationConfig`)."""

    def output_budget(self, default: int) -> int:
        """Return the output budget of this sample's requests (`max_tokens`, else `default`)."""
        return self.max_tokens if self.max_tokens is not None else default

    def counted_prompt(self) -> int:
        """Return the prompt's counted length (`prompt_tokens`), 0 when the suite did not count."""
        return self.prompt_tokens

    def public(self) -> dict[str, Any]:
        """Return everything but the context, as stored beside the generations."""
        data = asdict(self)
        del data["context"]
        data["gold"] = list(self.gold)
        return data


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerationConfig:
    """Settings that change what a model writes; part of a run's identity."""

    max_tokens: int = 200
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()
    thinking_budget: int | None = field(default=None, repr=False)
    """Tokens the model may think before its thinking is closed for it (None: one budget,
    `max_tokens`, for thinking and answer together). Out of `repr` so that the identity of runs
    without one stays what it was; `run_identity` adds it when set."""

    def output_ceiling(self) -> int:
        """Return the most tokens one request may write: thinking budget plus answer budget."""
        return self.max_tokens + (self.thinking_budget or 0)


@dataclass(frozen=True)
class BudgetUse:
    """What a thinking budget did to one generation (stored beside it; models/thinking.py)."""

    thinking_budget: int
    thinking_tokens: int
    """Tokens the model spent thinking (markers included), at most `thinking_budget`."""
    forced: bool
    """The thinking was closed by longscope at its budget, not by the model."""
    answer_tokens: int
    answer_cut: bool
    """The answer reached its budget (`max_tokens`) before the model ended it."""


@dataclass(frozen=True)
class PromptParts:
    """A rendered prompt cut around its context: `head + context + tail` is the text sent.

    Lets a backend wrapper (the router) re-render the same prompt around part of the context
    without knowing the suite that made it.
    """

    head: str
    context: str
    tail: str


@dataclass(frozen=True)
class Request:
    """What a backend is asked: either a plain prompt (completion mode) or chat messages."""

    sample_id: str
    repeat: int
    mode: PromptMode
    prompt: str = ""
    messages: tuple[Message, ...] = ()
    config: GenerationConfig = GenerationConfig()
    prompt_tokens: int = 0
    """Prompt length counted by the harness (0 if unknown); compared with what the server reports."""
    timeout_s: float | None = None
    parts: PromptParts | None = field(default=None, repr=False)
    """The prompt (or the single user message) cut around its context, when the suite has one."""

    @property
    def text(self) -> str:
        """Return the prompt text, whatever the mode (for counting and display)."""
        if self.mode == "completion":
            return self.prompt
        return "\n".join(m.content for m in self.messages)


@dataclass(frozen=True)
class Generation:
    """What came back for one request, successful or not."""

    text: str
    status: Status
    reasoning: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str = ""
    """Why a non-ok status happened (e.g. `insufficient_context: needs 65536 tokens, holds 32768`)."""
    route: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """What a router decided for this request (pass, truncate, map-reduce and its chunk plan)."""
    budget: BudgetUse | None = field(default=None, hash=False, compare=False)
    """What the thinking budget did, when the request had one."""


@dataclass(frozen=True)
class Score:
    """A graded answer: value out of max, with the evidence a person can check."""

    value: float
    max: float
    evidence: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def fraction(self) -> float:
        return self.value / self.max if self.max else 0.0


@dataclass(frozen=True)
class JudgeTask:
    """What a suite asks an LLM judge about one answer (the judge never sees the context)."""

    kind: str
    """The suite's name for the verdict's format (e.g. `qa`, `summary`); given back to parse it."""
    prompt: str
    opening: str = ""
    """Text a completion-mode judge (a base model) is handed to continue, ending at `}`."""


@dataclass(frozen=True)
class Judgement:
    """A stored verdict on one answer: the judged score in [0, 1], or None when the judge failed."""

    value: float | None
    judge: str
    error: str = ""


@dataclass(frozen=True)
class ScoredRow:
    """One stored generation with its sample (without context) and score, as analyses see it."""

    sample: dict[str, Any]
    repeat: int
    generation: Generation
    score: Score | None
    answered: float | None = None
    """When the answer was stored (Unix time), where read from a store: what a summary dates a
    run by, so that reporting it again another day gives the same bytes."""


def stable_hash(obj: Any, length: int = 16) -> str:
    """Return a short sha256 hex digest of a JSON-serialisable object with sorted keys."""
    data = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    # `surrogatepass`: a lone surrogate (valid JSON, "\ud800") hashes instead of raising; every
    # other string hashes exactly as before.
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:length]


_UNENCODABLE = re.compile("[\ud800-\udfff]")
SANITIZED = "sanitized:"
"""How the stored `error` of a usable answer starts when its text had to be cleaned."""


def storable_text(text: str) -> tuple[str, int]:
    """Return `text` with every code point UTF-8 cannot encode replaced by U+FFFD, and how many.

    Python strings may hold lone UTF-16 surrogates (JSON's `"\\ud800"`, which servers emit for a
    broken byte-fallback token); SQLite, files and terminals cannot take them. They are the only
    code points UTF-8 refuses, so everything else (NUL, bidi marks, private use) is kept as is.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _UNENCODABLE.subn("\ufffd", text)
    return text, 0


def sanitized_note(count: int) -> str:
    """Return the note a cleaned answer carries in its `error` (scored, flagged in its evidence)."""
    return (
        f"{SANITIZED} {count} code point(s) that UTF-8 cannot encode (lone surrogates) "
        "replaced with U+FFFD"
    )
