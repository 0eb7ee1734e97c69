"""LongBench Pro's input budget to the token: prompt + output budget == the model's window.

The official harness truncates the prompt's middle to `max_len - max_new_tokens` tokens; one token
more overflows the window, one fewer drops text the model could have read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.longbench_pro.suite import SEPARATOR, LongBenchProSuite
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import GenerationConfig

DATA = Path(__file__).parents[2] / "fixtures" / "longbench_pro_mini.json"


def _built(mode: str, context_length: int | None, **options) -> dict:
    suite = LongBenchProSuite.from_params(
        {"data": str(DATA), "modes": [mode], "truncate_with": "model", **options}
    )
    ctx = BuildContext(QwenTokenizer(), "chat", GenerationConfig(), context_length=context_length)
    return {s.id: s for s in suite.build(ctx)}


@pytest.mark.parametrize(("mode", "budget"), [("nonthinking", 1024), ("thinking", 8192)])
def test_truncated_prompt_plus_budget_fills_the_window_exactly(mode: str, budget: int) -> None:
    window = budget + 200
    samples = _built(mode, window)
    truncated = [s for s in samples.values() if s.meta["truncated"]]
    assert len(truncated) == len(samples) == 50, "every fixture prompt is 220-277 tokens long"
    for sample in truncated:
        # Thinking mode: the official 8K output budget is thinking (7K) plus answer (1K).
        assert sample.max_tokens + (sample.thinking_budget or 0) == budget
        assert sample.max_tokens == 1024
        assert sample.prompt_tokens == window - budget == 200
    # a prompt that already fits is left whole, its question intact
    whole = _built(mode, 10**6)
    assert not any(s.meta["truncated"] for s in whole.values())


def test_max_input_tokens_is_the_prompt_limit_to_the_token() -> None:
    samples = _built("nonthinking", None, max_input_tokens=150)
    sample = samples["mini-T1.1-en#nonthinking"]
    assert sample.meta["truncated"] and sample.prompt_tokens == 150
    prompt = sample.context + SEPARATOR + sample.question
    # re-encoding the decoded head+tail may merge a token at the seam, never add more than one
    assert abs(len(QwenTokenizer().encode(prompt)) - 150) <= 1


@pytest.mark.parametrize(
    ("context_length", "budget"),
    [(256 * 1024, 32768), (256 * 1024 - 1, 8192), (None, 8192)],
)
def test_thinking_budget_switches_exactly_at_256k(context_length, budget) -> None:
    suite = LongBenchProSuite.from_params(
        {"data": str(DATA), "modes": ["thinking"], "filters": {"language": ["en"]}}
    )
    ctx = BuildContext(QwenTokenizer(), "chat", GenerationConfig(), context_length=context_length)
    assert {(s.max_tokens, s.thinking_budget) for s in suite.build(ctx)} == {(1024, budget - 1024)}


def test_a_thinking_budget_override_keeps_the_answer_budget_and_moves_the_limit() -> None:
    suite = LongBenchProSuite.from_params(
        {"data": str(DATA), "modes": ["thinking"], "truncate_with": "model"}
    )
    ctx = BuildContext(
        QwenTokenizer(), "chat", GenerationConfig(), context_length=1300,
        thinking_budget_override=76,
    )  # fmt: skip
    for sample in suite.build(ctx):
        assert (sample.max_tokens, sample.thinking_budget) == (1024, 76)
        if sample.meta["truncated"]:
            assert sample.prompt_tokens == 1300 - 1024 - 76


def test_max_tokens_alone_keeps_one_budget_for_thinking_and_answer() -> None:
    suite = LongBenchProSuite.from_params({"data": str(DATA), "modes": ["thinking"]})
    ctx = BuildContext(QwenTokenizer(), "chat", GenerationConfig(), max_tokens_override=100)
    assert {(s.max_tokens, s.thinking_budget) for s in suite.build(ctx)} == {(100, None)}


def test_max_tokens_override_replaces_the_budget_and_the_limit() -> None:
    suite = LongBenchProSuite.from_params({"data": str(DATA), "truncate_with": "model"})
    ctx = BuildContext(
        QwenTokenizer(), "chat", GenerationConfig(), context_length=300, max_tokens_override=100
    )
    for sample in suite.build(ctx):
        assert sample.max_tokens == 100
        if sample.meta["truncated"]:
            assert sample.prompt_tokens == 200
