"""Thinking budgets: the tracker's reading of a generation, and budget forcing in process on the
embedded instruct model (SmolLM2 135M) with a chat template that opens a think block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from longscope.models.llamacpp import LlamaCppBackend
from longscope.models.registry import create_backend
from longscope.models.thinking import (
    THINKING_FORMATS,
    ThinkingTracker,
    opened_by,
    reasoning_of,
    thinking_format,
)
from longscope.types import GenerationConfig, Message, Request

TEMPLATE = Path(__file__).parent.parent / "fixtures" / "think_chatml.jinja"
THINK = THINKING_FORMATS["think"]


@pytest.mark.parametrize(
    ("opened", "pieces", "state", "after"),
    [
        (True, ["I wonder", " more"], "thinking", ""),
        (True, ["a </th", "ink>", "B"], "closed", "B"),
        (False, [" <th", "ink>x"], "thinking", ""),
        (False, ["<think>x</think>", "y"], "closed", "y"),
        (False, [" <th"], "undecided", ""),
        (False, ["The answer"], "answer", ""),
        # The opening marker itself never counts as its close.
        (False, ["<think></think>z"], "closed", "z"),
    ],
)
def test_tracker_follows_the_text(opened: bool, pieces: list[str], state: str, after: str) -> None:
    tracker = ThinkingTracker(THINK, opened=opened)
    for piece in pieces:
        tracker.feed(piece)
    assert tracker.state == state
    assert tracker.after_close == after


def test_markers_and_reasoning() -> None:
    assert opened_by("<|im_start|>assistant\n<think>\n", THINK)
    assert not opened_by("<|im_start|>assistant\n", THINK)
    assert reasoning_of(" <think> step one </think> answer", THINK) == "step one"
    assert THINKING_FORMATS["qwen3"].forced.rstrip().endswith("</think>")
    for fmt in THINKING_FORMATS.values():
        assert fmt.close in fmt.forced and fmt.source


def test_unknown_family_is_named() -> None:
    from longscope.errors import UsageError

    with pytest.raises(UsageError, match="unknown thinking_format 'nope'"):
        thinking_format("nope")


# --- in process, the embedded instruct model --------------------------------------------------


@pytest.fixture(scope="module")
def thinker() -> LlamaCppBackend:
    return create_backend(
        "llamacpp/smollm2-135m", {"context_length": 2048, "chat_template": str(TEMPLATE)}
    )


class EvalCounter:
    """Counts the tokens llama.cpp evaluates (the real engine's `eval`, wrapped, not replaced)."""

    def __init__(self, llama: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tokens = 0
        real = llama.eval

        def counted(tokens: Any) -> None:
            self.tokens += len(tokens)
            real(tokens)

        monkeypatch.setattr(llama, "eval", counted)


QUESTION = (
    "Read the list and answer. " + " ".join(f"item {i} is {i * 7 % 13};" for i in range(60))
) + " What is item 5?"


def _chat(text: str, **config: Any) -> Request:
    return Request(
        "s",
        0,
        "chat",
        messages=(Message("user", text),),
        config=GenerationConfig(**{"max_tokens": 16, "temperature": 0.0, **config}),
    )


@pytest.mark.model
async def test_thinking_past_its_budget_is_closed_and_answered_from_the_cache(
    thinker: LlamaCppBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await thinker.info()
    counter = EvalCounter(thinker._llama, monkeypatch)
    gen = await thinker.generate(_chat(QUESTION, thinking_budget=6))
    use = gen.budget
    assert use is not None and use.forced and use.thinking_tokens == 6
    assert use.thinking_budget == 6 and 0 < use.answer_tokens <= 16
    assert gen.status in ("ok", "length") and gen.status == ("length" if use.answer_cut else "ok")
    # The cue is longscope's, not the model's: stored as neither answer nor reasoning.
    assert gen.reasoning and not gen.text.startswith("Final Answer")
    assert "Final Answer" not in gen.reasoning
    assert gen.completion_tokens == use.thinking_tokens + use.answer_tokens
    # One prefill: the prompt is evaluated once, then only thinking, the cue and the answer.
    cue = len(thinker._llama.tokenize(THINK.forced.encode(), add_bos=False, special=True))
    assert gen.prompt_tokens > 400
    assert counter.tokens <= gen.prompt_tokens + use.thinking_tokens + cue + use.answer_tokens


@pytest.mark.model
async def test_a_model_that_closes_its_thinking_is_not_forced(thinker: LlamaCppBackend) -> None:
    prompt = "<think>a</think>b\n" * 6 + "<think>"
    request = Request(
        "s", 0, "completion", prompt=prompt,
        config=GenerationConfig(max_tokens=2, temperature=0.0, thinking_budget=32),
    )  # fmt: skip
    gen = await thinker.generate(request)
    use = gen.budget
    assert use is not None and not use.forced and 0 < use.thinking_tokens < 32
    assert gen.reasoning == "a" and gen.text.startswith("b")


@pytest.mark.model
async def test_the_answer_budget_holds_after_thinking(thinker: LlamaCppBackend) -> None:
    story = "Write a long story about a cat who travels the world, with many chapters."
    gen = await thinker.generate(_chat(story, thinking_budget=4, max_tokens=3))
    assert gen.budget is not None and gen.budget.answer_tokens == 3
    assert gen.status == "length" and gen.budget.answer_cut


@pytest.mark.model
async def test_prompt_thinking_and_answer_past_the_context_overflow(
    thinker: LlamaCppBackend,
) -> None:
    gen = await thinker.generate(_chat(QUESTION, thinking_budget=1600, max_tokens=16))
    assert gen.status == "context_overflow" and "thinking" in gen.error


@pytest.mark.model
async def test_without_a_thinking_budget_nothing_changes(thinker: LlamaCppBackend) -> None:
    gen = await thinker.generate(_chat("What is 2+2?", max_tokens=8))
    assert gen.budget is None


@pytest.mark.model
async def test_a_model_that_does_not_think_answers_within_the_whole_output_budget() -> None:
    plain = create_backend("llamacpp/smollm2-135m", {"context_length": 1024})
    story = "Write a long story about a cat who travels the world, with many chapters."
    gen = await plain.generate(_chat(story, thinking_budget=4, max_tokens=3))
    await plain.aclose()
    use = gen.budget
    assert use is not None and not use.forced and use.thinking_tokens == 0
    assert use.answer_tokens == 7 and gen.status == "length" and not gen.reasoning


@pytest.mark.model
async def test_without_a_budget_an_unclosed_thinking_the_template_opened_is_no_answer(
    thinker: LlamaCppBackend,
) -> None:
    gen = await thinker.generate(_chat(QUESTION, max_tokens=6))
    # One budget for both, spent thinking: the answer is empty (scored 0), the thought kept.
    assert gen.status == "length" and gen.text == "" and gen.reasoning and gen.budget is None


def test_token_budget_keeps_thinking_reopened_after_the_forced_close_out_of_the_answer() -> None:
    from longscope.models.thinking import TokenBudget

    # One character per token: the decode loop's bookkeeping, without a model.
    def decode(ids: list[int]) -> str:
        return "".join(map(chr, ids))

    forced = [ord(c) for c in THINK.forced]
    budget = TokenBudget(THINK, 3, 40, forced, decode, opened=True)
    generated: list[int] = []
    for char in "abc":
        generated.append(ord(char))
        budget.accepted(generated)
    assert budget.forced
    generated += [budget.next_forced() or 0 for _ in forced]
    generated += [ord(c) for c in "42 <think>no wait"]
    assert budget.split(generated) == ("42", "abc\nno wait")
