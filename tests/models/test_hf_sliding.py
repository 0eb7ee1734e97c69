"""Sliding-window layers in the hf engine (CPU, a tiny random-weight Gemma 3): a prompt longer
than the window must be read as transformers reads it, one chunk or several."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from longscope.types import GenerationConfig, Request

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PROMPT = "The quick brown fox jumps over the lazy dog. The secret number is 4821. " * 6
WINDOW = 16


def tiny_gemma3(vocab_size: int, attn: str) -> Any:
    """A 4-layer Gemma 3 text model: three sliding-window layers of 16 tokens, one full."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=WINDOW,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        max_position_embeddings=4096,
        attn_implementation=attn,
    )
    model = Gemma3ForCausalLM(config).eval()
    return model


@pytest.fixture(scope="module")
def tok() -> Any:
    from tests.gpu.tiny import tiny_tokenizer

    return tiny_tokenizer()


def _reference(tok: Any, ids: list[int], new: int) -> list[int]:
    """transformers' own greedy continuation (its eager attention applies the window)."""
    model = tiny_gemma3(len(tok), "eager")
    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]), max_new_tokens=new, do_sample=False, min_new_tokens=new
        )
    return out[0, len(ids) :].tolist()


@pytest.mark.parametrize("chunk", [4096, 32], ids=["one-chunk", "chunks-of-32"])
def test_the_engine_prefill_applies_the_window(tok: Any, chunk: int) -> None:
    """The logits the first answer token is drawn from: the engine's prefill (our attention,
    chunked or not) against transformers' eager attention, which applies the window itself."""
    import transformers

    from longscope.models.hf import HFBackend

    ids = torch.tensor(tok.encode(PROMPT, add_special_tokens=True))
    with torch.no_grad():
        expected = tiny_gemma3(len(tok), "eager")(input_ids=ids[None]).logits[0, -1]
        model = tiny_gemma3(len(tok), "sdpa")
        backend = HFBackend("tiny-gemma3", model=model, tokenizer=tok, prompt_mode="completion")
        cache = transformers.DynamicCache(config=model.config)
        with backend.prefill_context():
            got = backend.prefill_ids(ids, cache, chunk).logits[0, -1]
    # Full attention in the sliding layers moved these logits by 0.26 (their range: 0.55).
    assert (got - expected).abs().max().item() < 1e-4


@pytest.mark.parametrize("chunk", [None, 32], ids=["one-chunk", "chunks-of-32"])
def test_a_prompt_longer_than_the_window_reads_as_transformers_reads_it(
    tok: Any, chunk: int | None
) -> None:
    from longscope.models.hf import HFBackend

    backend = HFBackend(
        "tiny-gemma3",
        model=tiny_gemma3(len(tok), "sdpa"),
        tokenizer=tok,
        prompt_mode="completion",
        prefill_chunk=chunk,
        device="cpu",
    )
    config = GenerationConfig(max_tokens=12, temperature=0.0)
    request = Request("s", 0, "completion", prompt=PROMPT, config=config)
    ids = backend.encode_request(request)
    assert len(ids) > 4 * WINDOW  # the window matters: most keys are outside it
    expected = tok.decode(_reference(tok, ids, 12), skip_special_tokens=True)
    generation = asyncio.run(backend.generate(request))
    asyncio.run(backend.aclose())
    assert generation.text == expected
