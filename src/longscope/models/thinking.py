"""Thinking budgets: how a reasoning model's thinking is bounded and, past its budget, closed.

A request with `GenerationConfig.thinking_budget = N` may think for at most N tokens and then answer
within `max_tokens`. A model that reaches N without closing its thinking is forced to close it, as
s1's budget forcing does (Muennighoff et al. 2025, "s1: Simple test-time scaling"): the model's own
end-of-thinking marker plus a short final-answer cue is appended to what it wrote, and it goes on
from there (in process: from the cache, so the prompt is not read twice; over HTTP: a continuation
request that the server's prefix cache serves).

A model that does not open a thinking block at all (a non-reasoning model, or a prompt that asks
for the reasoning in the answer) answers within the whole output budget, thinking budget plus
answer budget, as it would without a thinking budget: the thinking budget is the part of the
output a model may spend thinking, never a cut of what a model that does not think may write.

What each backend does is the same; this module holds the parts that do not depend on the engine:
the markers and cues per model family (`THINKING_FORMATS`), the state of a generation seen as text
(`ThinkingTracker`), and what is stored per generation (`BudgetUse`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from longscope.errors import UsageError
from longscope.models.base import split_reasoning
from longscope.models.registry import option
from longscope.types import BudgetUse

__all__ = [
    "DEFAULT_FORMAT",
    "THINKING_FORMATS",
    "THINKING_OPTION",
    "BudgetUse",
    "Continuation",
    "ThinkingFormat",
    "ThinkingTracker",
    "answer_after_close",
    "continuation",
    "render_chat",
    "thinking_format",
]


@dataclass(frozen=True)
class ThinkingFormat:
    """How one model family marks its thinking, and what closes it when the budget runs out."""

    name: str
    open: str
    """The marker that opens thinking (the model writes it, or its chat template does)."""
    close: str
    """The marker that ends thinking; the answer follows it."""
    forced: str
    """Appended to the thinking when the budget is reached: `close` plus a final-answer cue."""
    source: str
    """Where `forced` comes from (so a reader can check it)."""
    after_open: str = "\n"
    """What the model writes after `open` (rebuilding thinking a server's parser set apart)."""
    before_close: str = "\n"
    """What the model writes before `close`."""
    after_close: str = "\n\n"
    """What the model writes between `close` and its answer (harmony: the final channel)."""


THINKING_FORMATS: dict[str, ThinkingFormat] = {
    f.name: f
    for f in (
        ThinkingFormat(
            "think",
            "<think>",
            "</think>",
            "\n</think>\n\nFinal Answer: ",
            "s1 budget forcing: the end-of-thinking delimiter, then 'Final Answer:' "
            "(DeepSeek-R1, QwQ, s1 and other <think> models)",
        ),
        ThinkingFormat(
            "qwen3",
            "<think>",
            "</think>",
            "\n\nConsidering the limited time by the user, I have to give the solution based on "
            "the thinking directly now.\n</think>\n\n",
            "the stop-thinking text of the Qwen3 technical report (its 'thinking budget'), "
            "which writes `</think>.` with a full stop after the marker",
        ),
        ThinkingFormat(
            "gpt-oss",
            "<|channel|>analysis<|message|>",
            "<|end|>",
            "<|end|><|start|>assistant<|channel|>final<|message|>",
            "OpenAI harmony format: the analysis channel ends, the final channel begins",
            after_open="",
            before_close="",
            after_close="<|start|>assistant<|channel|>final<|message|>",
        ),
    )
}
DEFAULT_FORMAT = "think"

THINKING_OPTION = option(
    "thinking_format",
    "choice",
    DEFAULT_FORMAT,
    "how the model marks its thinking, and what closes it at --thinking-budget "
    "(models/thinking.py lists each family's cue)",
    choices=tuple(THINKING_FORMATS),
)
"""The `-M thinking_format=` option every backend that forces a budget takes."""


def thinking_format(name: str | None) -> ThinkingFormat:
    """Return the family named `name` (None: the default `<think>` family)."""
    try:
        return THINKING_FORMATS[name or DEFAULT_FORMAT]
    except KeyError:
        raise UsageError(
            f"unknown thinking_format {name!r}: use one of {', '.join(THINKING_FORMATS)}"
        ) from None


State = Literal["undecided", "thinking", "closed", "answer"]


class ThinkingTracker:
    """Follows a generation's text and says whether it is still thinking.

    `opened`: the prompt itself opened the thinking (a chat template that ends in `<think>`).
    Otherwise the model may open it with its first words, or not think at all (`answer`).
    """

    def __init__(self, fmt: ThinkingFormat, *, opened: bool) -> None:
        self.fmt = fmt
        self.text = ""
        self.state: State = "thinking" if opened else "undecided"
        self._close_at = -1

    def feed(self, piece: str) -> State:
        """Add the text of the next token(s); return the state after it."""
        start = max(0, len(self.text) - len(self.fmt.close))
        self.text += piece
        if self.state == "undecided":
            lead = self.text.lstrip()
            if lead.startswith(self.fmt.open):
                self.state = "thinking"
                start = len(self.text) - len(lead) + len(self.fmt.open)
            elif not self.fmt.open.startswith(lead):
                self.state = "answer"
        if self.state == "thinking":
            found = self.text.find(self.fmt.close, start)
            if found != -1:
                self.state = "closed"
                self._close_at = found
        return self.state

    @property
    def after_close(self) -> str:
        """Return the text the model wrote after its own close marker (in the same tokens)."""
        if self._close_at < 0:
            return ""
        return self.text[self._close_at + len(self.fmt.close) :]


def opened_by(prompt_text: str, fmt: ThinkingFormat) -> bool:
    """Return True when a rendered prompt ends inside an open thinking block."""
    return prompt_text.rstrip().endswith(fmt.open)


def reasoning_of(thought: str, fmt: ThinkingFormat) -> str:
    """Return the thinking text without its markers (what is stored as reasoning)."""
    text = thought.lstrip()
    if text.startswith(fmt.open):
        text = text[len(fmt.open) :]
    end = text.find(fmt.close)
    if end != -1:
        text = text[:end]
    return text.strip()


def answer_after_close(text: str, fmt: ThinkingFormat) -> tuple[str, str]:
    """Return (answer, reasoning) of text written after the thinking was closed (by the model or
    forced): a block the model opens again is thinking, never answer, closed or not."""
    # A close marker before anything else closes a block already closed: the raw text of a server
    # whose parser set apart an empty block (reasoning "") is rebuilt with one (openai_api).
    lead = text.lstrip()
    if lead.startswith(fmt.close):
        text = lead[len(fmt.close) :]
    answer, reasoning = split_reasoning(text, "", fmt.open, fmt.close, answering=True)
    return answer.strip(), reasoning


@dataclass(frozen=True)
class FirstAnswer:
    """What a first answer, asked with the thinking budget as its `max_tokens`, says.

    Over HTTP the thinking is bounded by asking for `thinking_budget` tokens first; when they run
    out before the model closes its thinking, a continuation request goes on from `prefix` plus
    the family's forced text (`forced`), else from `prefix` with the answer's budget left.
    """

    thinking: bool
    """The model was still thinking when the tokens ran out (it must be forced)."""
    prefix: str
    """What the assistant wrote so far, as the continuation request gives it back."""
    reasoning: str
    answer: str
    """The answer written so far (after the model's own close, or without any thinking)."""


def read_first(
    raw: str, server_reasoning: str, fmt: ThinkingFormat, *, opened: bool
) -> FirstAnswer:
    """Return what a first answer says: `raw` is the text as sent (markers kept), or the
    `content` of a server whose reasoning parser moved the thinking to `server_reasoning`."""
    if server_reasoning:
        # The parser took the markers away: the thinking is rebuilt around what it kept. An
        # empty content means the tokens ran out before the model closed its thinking.
        thought = ("" if opened else fmt.open + fmt.after_open) + server_reasoning
        if not raw.strip():
            return FirstAnswer(True, thought, server_reasoning.strip(), "")
        prefix = f"{thought}{fmt.before_close}{fmt.close}{fmt.after_close}{raw}"
        return FirstAnswer(False, prefix, server_reasoning.strip(), raw.strip())
    tracker = ThinkingTracker(fmt, opened=opened)
    state = tracker.feed(raw)
    if state == "answer":
        return FirstAnswer(False, raw, "", raw.strip())
    if state == "closed":
        return FirstAnswer(False, raw, reasoning_of(raw, fmt), tracker.after_close.strip())
    return FirstAnswer(True, raw, reasoning_of(raw, fmt), "")


class TokenBudget:
    """A thinking budget inside a token-by-token decode loop (the hf engine's).

    The loop appends each token it accepts to the request's `generated` and calls `accepted`;
    when the thinking reaches `budget` without closing, the family's forced text is queued
    (`pending`) and the loop feeds it in place of the next sampled tokens, one per step, so the
    cache goes on from what the model wrote (no second prefill). The answer follows within
    `answer_budget`.
    """

    def __init__(
        self,
        fmt: ThinkingFormat,
        budget: int,
        answer_budget: int,
        forced_ids: list[int],
        decode: Callable[[list[int]], str],
        *,
        opened: bool,
    ) -> None:
        self.fmt, self.budget, self.answer_budget = fmt, budget, answer_budget
        self.forced_ids, self.decode = list(forced_ids), decode
        self.tracker = ThinkingTracker(fmt, opened=opened)
        self.thinking_tokens = 0
        self.forced = False
        self.pending: list[int] = []
        self.answer_start: int | None = None
        """Where the answer begins in the generated tokens (after the close or the forced text)."""

    @property
    def thinking(self) -> bool:
        """True while the model may still be thinking (no answer begun or forced)."""
        return self.answer_start is None

    def accepted(self, generated: list[int]) -> bool:
        """Take the token just appended to `generated`; return True when the answer's budget is
        spent (the request ends with status `length`)."""
        if self.answer_start is not None:
            return len(generated) - self.answer_start >= self.answer_budget
        state = self.tracker.feed(self.decode(generated[-1:]))
        if state == "answer":  # the model does not think: all it wrote is answer
            self.answer_start = 0
            self.answer_budget += self.budget  # ... within the whole output budget
            return len(generated) >= self.answer_budget
        self.thinking_tokens += 1
        if state == "closed":
            self.answer_start = len(generated)
        elif self.thinking_tokens >= self.budget:
            self.force(generated)
        return False

    def force(self, generated: list[int]) -> None:
        """Queue the forced close: the answer starts after it."""
        self.forced = True
        self.pending = list(self.forced_ids)
        self.answer_start = len(generated) + len(self.forced_ids)

    def next_forced(self) -> int | None:
        """Return the next token to feed in place of the sampled one, or None."""
        return self.pending.pop(0) if self.pending else None

    def use(self, generated: list[int], cut: bool) -> BudgetUse:
        """Return what the budget did, once the request has ended."""
        start = len(generated) if self.answer_start is None else self.answer_start
        return BudgetUse(
            thinking_budget=self.budget,
            thinking_tokens=self.thinking_tokens,
            forced=self.forced,
            answer_tokens=max(0, len(generated) - start),
            answer_cut=cut,
        )

    def split(self, generated: list[int]) -> tuple[str, str]:
        """Return (answer, reasoning) of the generated tokens (the forced text in neither)."""
        if self.answer_start is None:
            return "", reasoning_of(self.decode(generated), self.fmt)
        thought = generated[: self.answer_start - (len(self.forced_ids) if self.forced else 0)]
        answer, again = answer_after_close(self.decode(generated[self.answer_start :]), self.fmt)
        reasoning = reasoning_of(self.decode(thought), self.fmt)
        return answer, "\n".join(x for x in (reasoning, again) if x)


@dataclass(frozen=True)
class Continuation:
    """How a chat continuation (the assistant's text so far, then more) reaches the server."""

    mode: Literal["chat", "completion"]
    """`chat`: a final assistant message to continue (the template keeps its text whole);
    `completion`: the prompt below, rendered here, to `/v1/completions`."""
    prompt: str = ""
    """`completion`: the conversation rendered with its generation prompt, then the text so far."""
    reason: str = ""
    """`completion`: why the chat continuation would not carry the text (what the template does)."""


def render_chat(
    template: str, messages: list[dict[str, str]], *, add_generation_prompt: bool
) -> str:
    """Return `messages` rendered by a chat template as a server renders it (Hugging Face's
    sandboxed Jinja environment: trim_blocks, lstrip_blocks, `raise_exception`, `strftime_now`,
    `tojson`). `bos_token` is empty: a completion endpoint adds the model's own when it tokenizes."""
    import datetime
    import json

    from jinja2 import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = lambda value, indent=None: json.dumps(
        value, ensure_ascii=False, indent=indent
    )
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token="", eos_token=""
    )


def continuation(
    template: str, messages: list[dict[str, str]], prefix: str, fmt: ThinkingFormat
) -> Continuation:
    """Return how to continue `prefix` (what the assistant wrote, the forced close included) after
    `messages` under a chat template.

    A server continues a final assistant message by rendering it and cutting the prompt after its
    text (Hugging Face's `continue_final_message`, vLLM's and SGLang's): that holds only when the
    template writes the text whole. Templates that drop past reasoning (DeepSeek-R1's keeps what
    follows `</think>`), reformat it (Qwen3 strips the newlines around it, which a cut still finds)
    or refuse markers in content (gpt-oss's `raise_exception`) cannot continue the turn: the prompt
    is then rendered here with the generation prompt and the text appended, for the completion
    endpoint. A template that cannot render the conversation at all is one line (UsageError).
    """
    from jinja2 import TemplateError

    whole = [*messages, {"role": "assistant", "content": prefix}]
    try:
        rendered = render_chat(template, whole, add_generation_prompt=False)
        if prefix.strip() and prefix.strip() in rendered:
            return Continuation("chat")
        reason = "the chat template does not write the assistant's text whole"
    except TemplateError as exc:
        reason = f"the chat template refuses it ({' '.join(str(exc).split())[:120]})"
    try:
        prompt = render_chat(template, messages, add_generation_prompt=True)
    except TemplateError as exc:
        raise UsageError(
            f"-M chat_template: the template cannot render the conversation "
            f"({' '.join(str(exc).split())[:120]}): give the template the server uses"
        ) from None
    tail = prefix
    # A generation prompt that opens the thinking itself (DeepSeek-R1's `<think>\n`): the text
    # goes on inside it, without a second opening marker.
    if prompt.rstrip().endswith(fmt.open) and tail.lstrip().startswith(fmt.open):
        tail = tail.lstrip()[len(fmt.open) :].lstrip("\n")
        prompt += "" if prompt.endswith("\n") else "\n"
    return Continuation("completion", prompt + tail, reason)
