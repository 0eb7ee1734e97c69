"""The hf backend never decodes past the context it declares (CPU, tiny random model)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from longscope.types import GenerationConfig, Request


def test_a_request_past_the_declared_context_is_refused_and_the_rest_answered() -> None:
    """Prompt + answer budget over `context_length`: `context_overflow` naming the numbers, never
    sent (vLLM refuses it so; before, the engine decoded past the context and said nothing); a
    request that fits, in the same group, is answered as alone."""
    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    model = tiny_qwen2(vocab_size=len(tok), max_positions=4096)
    prompt = "The quick brown fox jumps over the lazy dog. " * 8
    held = len(tok.encode(prompt, add_special_tokens=False)) + 10
    backend = HFBackend("tiny", model=model, tokenizer=tok, context_length=held)

    def request(index: int, max_tokens: int) -> Request:
        config = GenerationConfig(max_tokens=max_tokens)
        return Request("s", index, "completion", prompt=prompt, config=config)

    fits, over = request(0, 10), request(1, 11)
    both = asyncio.run(backend.generate_group([over, fits]))
    alone = asyncio.run(backend.generate_group([fits]))[0]
    assert both[0].status == "context_overflow" and both[0].completion_tokens == 0
    assert both[0].error == (
        f"context_overflow: {held - 10} prompt + 11 answer tokens exceed the context of {held} tokens"
    )
    assert both[1].status in ("ok", "length") and (both[1].text, both[1].status) == (
        alone.text,
        alone.status,
    )
    # Unset, the declared context is the model's trained one: the same request fits there.
    trained = HFBackend("tiny", model=model, tokenizer=tok)
    assert asyncio.run(trained.generate_group([over]))[0].status in ("ok", "length")
