"""LongBench Pro in chat mode with a chat template the backend counts (`chat_overhead`): the
message, the template's tokens and the output budget fit the declared context.

The official harness (caskcsg/longcontext LongBench-Pro/modules/model_manager.py) cuts the prompt
to `context_max_length` Qwen tokens and leaves the template to the margin of a round number
(120,000 of a 128K window); longscope's limit is the window less the budget exactly, so the
template's tokens come out of the prompt, and a prompt counted in Qwen's tokens that is longer in
the model's is cut further.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.longbench_pro.suite import SEPARATOR, LongBenchProSuite
from longscope.text.tokenizers import QwenTokenizer
from longscope.text.truncate import middle_truncate
from longscope.types import GenerationConfig

from ..hundred.helpers import CharTokenizer

DATA = Path(__file__).parents[2] / "fixtures" / "longbench_pro_mini.json"
FRAME = 25


def _build(tokenizer, mode, context_length, prompt_mode, overhead, **options):  # type: ignore[no-untyped-def]
    """Return the samples of the fixture in `mode` for a model of `context_length` tokens."""
    suite = LongBenchProSuite.from_params({"data": str(DATA), "modes": [mode], **options})
    ctx = BuildContext(
        tokenizer, prompt_mode, GenerationConfig(), context_length=context_length,
        chat_overhead=overhead,
    )  # fmt: skip
    return suite.build(ctx)


def _message(sample) -> str:  # type: ignore[no-untyped-def]
    """Return the one user message the sample sends."""
    return LongBenchProSuite.template.render(sample, "chat")[1][0].content


def _cut(sample) -> str:  # type: ignore[no-untyped-def]
    """Return the truncated prompt the sample holds (a cut that took the separator has none)."""
    return sample.context + SEPARATOR + sample.question if sample.question else sample.context


@pytest.mark.parametrize(("mode", "budget"), [("nonthinking", 1024), ("thinking", 8192)])
def test_the_templates_tokens_come_out_of_the_truncated_prompt(mode: str, budget: int) -> None:
    tokenizer = QwenTokenizer()
    context = budget + 200
    samples = _build(tokenizer, mode, context, "chat", FRAME, truncate_with="model")
    whole = {s.id: s for s in _build(tokenizer, mode, 10**6, "chat", FRAME)}
    assert len(samples) == 50 and all(s.meta["truncated"] for s in samples)
    for sample in samples:
        sent = len(tokenizer.encode(_message(sample))) + FRAME  # as the model reads it
        # The stored length is what is sent (message and template), and it fits with the budget.
        assert sample.prompt_tokens == sent, sample.id
        assert sent + sample.max_tokens + (sample.thinking_budget or 0) <= context, sample.id
        # The authors' middle cut (model tokenizer: -S truncate_with=model) to the window less
        # budget and template, nothing more.
        assert sent >= context - budget - 1, sample.id
        if "cut_to_fit" not in sample.meta:
            official = middle_truncate(
                _message(whole[sample.id]), context - budget - FRAME, tokenizer
            )
            assert _cut(sample) == official[0], sample.id


def test_a_qwen_counted_prompt_longer_in_the_models_tokens_is_cut_to_fit() -> None:
    chars, qwen = CharTokenizer(), QwenTokenizer()
    context = 1024 + 400  # 375 characters of room: every fixture prompt is 220-277 Qwen tokens
    english = {"filters": {"language": ["en"]}}  # truncate_with=qwen2.5, the official counter
    samples = _build(chars, "nonthinking", context, "chat", FRAME, **english)
    rows = {s.id: s for s in _build(chars, "nonthinking", 10**6, "chat", FRAME, **english)}
    assert len(samples) == 25
    for sample in samples:
        message = _message(sample)
        whole = _message(rows[sample.id])
        # The official rule (Qwen tokens, limit 375) leaves every prompt whole, past the context.
        assert middle_truncate(whole, context - 1024 - FRAME, qwen)[2] is False
        assert len(whole) + FRAME + 1024 > context
        assert sample.meta["truncated"] and sample.meta["cut_to_fit"], sample.id
        assert sample.prompt_tokens == len(message) + FRAME <= context - 1024, sample.id
        assert sample.prompt_tokens >= context - 1024 - 16, sample.id  # cut to fit, not far below
        # Still a middle cut in Qwen's tokens: the document's start and the question's end kept.
        text = _cut(sample)
        assert whole.startswith(text[:40]) and whole.endswith(text[-40:]), sample.id


def test_completion_samples_ignore_a_chat_overhead() -> None:
    tokenizer = QwenTokenizer()
    for options in ({"truncate_with": "model"}, {}):
        plain = _build(tokenizer, "nonthinking", 1024 + 200, "completion", None, **options)
        told = _build(tokenizer, "nonthinking", 1024 + 200, "completion", FRAME, **options)
        assert told == plain


def test_a_chat_template_nobody_counted_keeps_the_official_cut() -> None:
    # A server's template is unknown: the prompt is the official cut to the window less budget.
    tokenizer = QwenTokenizer()
    samples = _build(tokenizer, "nonthinking", 1024 + 200, "chat", None, truncate_with="model")
    assert {s.prompt_tokens for s in samples} == {200}


@pytest.mark.slow
@pytest.mark.model
def test_the_embedded_chat_model_answers_every_cut_prompt_in_full(tmp_path: Path) -> None:
    """gemma3-270m in chat mode (its template: 9 tokens) with 256 tokens of context and 16 to
    answer: the fixture's prompts are 244-259 tokens as sent, so the official cut (240 Qwen tokens)
    leaves two past the window (llama.cpp refused them, context_overflow) and the others' answers
    cut short. Cut to fit, each is answered in full and its counted length is llama.cpp's."""
    from longscope.run.scoring import read_run

    command = [
        sys.executable, "-m", "longscope.cli", "run", "longbench-pro",
        "--model", "llamacpp/gemma3-270m", "-M", "prompt_mode=chat", "-M", "chat_format=gemma",
        "-M", "context_length=256", "-S", f"data={DATA}", "-S", "language=en",
        "-S", "task=T3,T8", "--limit", "4", "--repeats", "1", "--max-tokens", "16",
        "--temperature", "0", "-o", str(tmp_path), "-q",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    run = read_run(tmp_path)
    assert run.header["model_info"]["context_length"] == 256
    assert len(run.rows) == 4
    for row in run.rows:
        generation, sample = row.generation, row.sample
        assert generation.status == "length", sample["id"]  # answered, to its 16 tokens
        assert generation.completion_tokens == 16, sample["id"]
        assert sample["meta"]["cut_to_fit"], sample["id"]
        assert generation.prompt_tokens == sample["prompt_tokens"] <= 256 - 16, sample["id"]
