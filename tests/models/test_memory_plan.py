"""The memory plan (pure Python, runs in CI without torch) and the hf backend's skip decisions."""

from __future__ import annotations

import pytest

from longscope.models.hf import HFBackend, _Member
from longscope.models.memory_plan import (
    GIB,
    ModelShape,
    dtype_bytes,
    max_sequences,
    max_tokens,
    plan_memory,
)
from longscope.types import GenerationConfig, Request

QWEN25_7B = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
}
# transformers counts 7,615,616,512 parameters; the plan leaves out biases and norms (0.004%).
QWEN25_7B_PARAMS = 7_615_616_512


def test_kv_bytes_per_token_is_layers_x_kv_heads_x_head_dim_x_2_x_dtype() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    assert shape.head_dim == 128
    assert shape.kv_bytes_per_token == 28 * 4 * 128 * 2 * 2 == 57344
    assert ModelShape.from_config(QWEN25_7B, "float32").kv_bytes_per_token == 2 * 57344


def test_weights_estimated_from_the_config() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    assert shape.weight_bytes / 2 == pytest.approx(QWEN25_7B_PARAMS, rel=1e-4)
    tied = ModelShape.from_config({**QWEN25_7B, "tie_word_embeddings": True})
    assert shape.weight_bytes - tied.weight_bytes == 152064 * 3584 * 2


def test_nested_text_config_and_explicit_head_dim() -> None:
    shape = ModelShape.from_config({"text_config": {**QWEN25_7B, "head_dim": 256}})
    assert shape.head_dim == 256


def test_plan_for_a_document_x6_at_128k() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    # Six repeats of one 128K prompt: identical prompts share all but the last token.
    plan = plan_memory(shape, 131072, 6, 120 * GIB, prefix=131007, suffix=1)
    assert plan.kv_bytes == 57344 * 131072 * 6  # 42.0 GiB
    assert plan.weight_bytes == 0  # already resident
    # Decode is the peak: the graph decode's fixed cache (131072 is whole blocks) filled while one
    # layer of the prompt's cache is left, its float32 attention scores, and the logits.
    scores = 6 * 28 * 131072 * 4 * 3
    assert plan.activation_bytes == 57344 * 131008 * 6 // 28 + scores + 6 * 152064 * 8
    assert (plan.kv_bytes + plan.activation_bytes) / GIB == pytest.approx(43.75, abs=0.01)
    assert plan.fits and plan.reason == ""
    cold = plan_memory(shape, 131072, 6, 120 * GIB, prefix=131007, suffix=1, weights_resident=False)
    assert cold.needed_bytes - plan.needed_bytes == shape.weight_bytes


def test_reason_names_need_tokens_sequences_and_free_memory() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    plan = plan_memory(shape, 131072, 6, 20 * GIB)
    assert not plan.fits
    needed = plan.needed_bytes / GIB
    assert plan.reason == (
        f"insufficient_vram: needs {needed:.1f} GiB for 131072 tokens x 6 sequences, 20.0 GiB free"
    )


def test_activation_peak_grows_with_the_chunk_not_the_prompt_alone() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    small = plan_memory(shape, 131072, 1, 1000 * GIB, chunk=2048)
    large = plan_memory(shape, 131072, 1, 1000 * GIB, chunk=32768)
    assert small.activation_bytes < large.activation_bytes
    assert small.kv_bytes == large.kv_bytes


def test_most_sequences_and_tokens_that_fit() -> None:
    shape = ModelShape.from_config(QWEN25_7B)
    free = 60 * GIB
    count = max_sequences(shape, 131072, free)
    assert plan_memory(shape, 131072, count, free).fits
    assert not plan_memory(shape, 131072, count + 1, free).fits
    assert count == 6  # 7.0 GiB of KV each, plus growth, logits and margin
    tokens = max_tokens(shape, free, sequences=1)
    assert plan_memory(shape, tokens, 1, free).fits
    assert not plan_memory(shape, tokens + 1, 1, free).fits
    assert 800_000 < tokens < 900_000


def test_dtype_names() -> None:
    assert dtype_bytes("torch.bfloat16") == 2
    assert dtype_bytes("float32") == 4
    with pytest.raises(ValueError):
        dtype_bytes("int4")


def _members(count: int, prompt_tokens: int, max_new: int = 64) -> list[_Member]:
    config = GenerationConfig(max_tokens=max_new)
    request = Request("s", 0, "completion", prompt="", config=config)
    return [_Member(request, list(range(prompt_tokens))) for _ in range(count)]


def _backend(free_gib: float) -> HFBackend:
    backend = HFBackend("planned", vram_gib=free_gib)
    backend.shape = ModelShape.from_config(QWEN25_7B)
    return backend


def test_backend_runs_a_group_whole_when_it_fits() -> None:
    backend = _backend(120)
    batch, reason = backend._next_batch(_members(6, 131000), list(range(6)))
    assert (batch, reason) == ([0, 1, 2, 3, 4, 5], "")


def test_backend_splits_a_group_the_device_cannot_hold_at_once() -> None:
    backend = _backend(30)  # 7 GiB of KV per 128K sequence: three fit, six do not
    batch, reason = backend._next_batch(_members(6, 131000), list(range(6)))
    assert batch == [0, 1, 2] and reason == ""


def test_backend_skips_what_not_even_one_sequence_fits() -> None:
    backend = _backend(4)
    batch, reason = backend._next_batch(_members(6, 131000), list(range(6)))
    assert batch == []
    # 7.0 GiB of KV, 1.75 GiB of keys repeated for a chunk's attention, the chunk's MLP.
    assert reason.startswith("insufficient_vram: needs 10.4 GiB")
    assert reason.endswith("GiB for 131064 tokens x 1 sequences, 4.0 GiB free")


def test_graph_decode_capacity_is_whole_blocks_and_the_plan_holds_it() -> None:
    from longscope.models.memory_plan import DECODE_BLOCK, decode_capacity

    assert decode_capacity(300) == 300
    assert decode_capacity(DECODE_BLOCK) == DECODE_BLOCK
    assert decode_capacity(32768 + 64) == 33 * DECODE_BLOCK
    shape = ModelShape.from_config(QWEN25_7B)
    tokens = 32768 + 64
    plan = plan_memory(shape, tokens, 6, 200 * GIB, prefix=32767, suffix=1)
    fixed_cache = shape.kv_bytes_per_token * decode_capacity(tokens) * 6
    assert plan.kv_bytes + plan.activation_bytes >= fixed_cache
