"""The memory plan (pure Python, runs in CI without torch) and the hf backend's skip decisions."""

from __future__ import annotations

import pytest

from longscope.models.hf import HFBackend, Member
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


def _members(count: int, prompt_tokens: int, max_new: int = 64) -> list[Member]:
    config = GenerationConfig(max_tokens=max_new)
    request = Request("s", 0, "completion", prompt="", config=config)
    return [Member(request, list(range(prompt_tokens))) for _ in range(count)]


def _backend(free_gib: float) -> HFBackend:
    backend = HFBackend("planned", vram_gib=free_gib)
    backend.engine.shape = ModelShape.from_config(QWEN25_7B)
    return backend


def test_backend_runs_a_group_whole_when_it_fits() -> None:
    backend = _backend(120)
    batch, reason = backend.engine.next_batch(_members(6, 131000), list(range(6)))
    assert (batch, reason) == ([0, 1, 2, 3, 4, 5], "")


def test_backend_splits_a_group_the_device_cannot_hold_at_once() -> None:
    backend = _backend(30)  # 7 GiB of KV per 128K sequence: three fit, six do not
    batch, reason = backend.engine.next_batch(_members(6, 131000), list(range(6)))
    assert batch == [0, 1, 2] and reason == ""


def test_backend_skips_what_not_even_one_sequence_fits() -> None:
    backend = _backend(4)
    batch, reason = backend.engine.next_batch(_members(6, 131000), list(range(6)))
    assert batch == []
    # The least it needs, with the smallest chunk (1024): 7.0 GiB of KV, 1.75 GiB of keys
    # repeated for a chunk's attention, the chunk's MLP, the 5% margin.
    assert reason.startswith("insufficient_vram: needs 9.3 GiB")
    assert reason.endswith("GiB for 131064 tokens x 1 sequences, 4.0 GiB free")
    fixed = HFBackend("planned", vram_gib=4, prefill_chunk=8192)
    fixed.engine.shape = backend.engine.shape
    _, reason = fixed.engine.next_batch(_members(6, 131000), list(range(6)))
    assert reason.startswith("insufficient_vram: needs 10.4 GiB")


def test_auto_chunk_is_the_largest_multiple_of_1024_that_fits() -> None:
    from longscope.models.memory_plan import PREFILL_CHUNK_MAX, choose_chunk

    shape = ModelShape.from_config(QWEN25_7B)
    chunk, plan = choose_chunk(shape, 131072, 1, 100 * GIB, prefix=131071, suffix=1)
    assert chunk == PREFILL_CHUNK_MAX and plan.fits
    assert plan == plan_memory(shape, 131072, 1, 100 * GIB, chunk=chunk, prefix=131071, suffix=1)
    # Just under what the largest chunk needs: the next smaller multiple of 1024 that fits.
    tight = plan.needed_bytes - 1
    chunk, plan = choose_chunk(shape, 131072, 1, tight, prefix=131071, suffix=1)
    assert chunk % 1024 == 0 and chunk < PREFILL_CHUNK_MAX and plan.fits
    bigger = plan_memory(shape, 131072, 1, tight, chunk=chunk + 1024, prefix=131071, suffix=1)
    assert not bigger.fits
    # The backend plans with the chunk it prefills with.
    largest = plan_memory(shape, 131072, 1, 0, chunk=PREFILL_CHUNK_MAX, prefix=131007, suffix=1)
    backend = _backend((largest.needed_bytes - 1) / GIB)
    batch, _ = backend.engine.next_batch(_members(1, 131008), [0])
    assert batch == [0] and backend.engine.last_chunk % 1024 == 0
    assert backend.engine.last_chunk < PREFILL_CHUNK_MAX
    free = backend.free_bytes()
    assert backend.engine.last_plan == plan_memory(
        shape, 131072, 1, free, chunk=backend.engine.last_chunk, prefix=131007, suffix=1
    )


def test_chunk_bounds_split_a_long_rest_into_whole_quanta_and_a_short_tail() -> None:
    from longscope.models.hf import chunk_bounds

    assert chunk_bounds(32768, 16384) == [(0, 16384), (16384, 32768)]
    assert chunk_bounds(32767, 16384) == [(0, 16384), (16384, 32767 - 1023), (32767 - 1023, 32767)]
    assert chunk_bounds(5000, 16384) == [(0, 5000)]  # no cached prefix: one call
    assert chunk_bounds(16384 + 700, 16384) == [(0, 16384), (16384, 17084)]
    assert chunk_bounds(200, 64) == [(0, 64), (64, 128), (128, 192), (192, 200)]
    assert chunk_bounds(0, 1024) == []


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


def test_unrepeated_chunks_count_repeated_keys_only_for_a_rest_under_1024() -> None:
    from longscope.models.memory_plan import prefill_activation_bytes

    shape = ModelShape.from_config(QWEN25_7B)
    args = (shape, 131072, 1, 200 * GIB)
    kw = {"chunk": 16384, "prefix": 131007, "suffix": 1}
    repeated = plan_memory(*args, **kw)
    split = plan_memory(*args, **kw, unrepeated=True)
    kv = 57344 * 131007
    assert repeated.kv_bytes + repeated.activation_bytes == kv + prefill_activation_bytes(
        shape, 16384, 131007
    )
    # cuDNN chunks: no repeated keys; the flash rest (< 1024 tokens) repeats the whole prefix's.
    assert split.kv_bytes + split.activation_bytes == kv + max(
        prefill_activation_bytes(shape, 16384, 0), prefill_activation_bytes(shape, 1023, 131007)
    )
    # Measured on an H200 (BENCHMARKS.md): 8.99 GiB peak for this prompt alone; 11.06 planned
    # with repeated keys for every chunk, 9.31 without.
    assert (split.kv_bytes + split.activation_bytes) / GIB == pytest.approx(9.31, abs=0.01)


def test_joining_counts_the_merged_cache_beside_the_running_one() -> None:
    from longscope.models.memory_plan import decode_capacity, plan_join

    shape = ModelShape.from_config(QWEN25_7B)
    per_token = shape.kv_bytes_per_token
    tokens, capacity = 32768 + 64, decode_capacity(32768 + 64)
    kw = {"chunk": 16384, "prefix": 32767, "suffix": 1}
    alone = plan_memory(shape, tokens, 6, 200 * GIB, **kw)
    assert plan_join(shape, tokens, 6, 200 * GIB, rows=0, capacity=0, **kw) == alone
    joined = plan_join(shape, tokens, 6, 200 * GIB, rows=6, capacity=capacity, **kw)
    # Its own fixed cache (6 rows) plus the merged one (12 rows), then scores and logits.
    merged = per_token * capacity * 18
    scratch = 12 * shape.num_heads * capacity * 12 + 12 * shape.vocab_size * 8
    assert joined.kv_bytes + joined.activation_bytes == merged + scratch
    assert joined.needed_bytes == merged + scratch + (merged + scratch) // 20
    # 6 running rows of 32K hold 11.3 GiB outside the free memory; 6 more need 34.3 GiB more.
    assert round(joined.needed_bytes / GIB, 1) == 34.3
    assert plan_join(shape, tokens, 6, joined.needed_bytes, rows=6, capacity=capacity, **kw).fits
    short = joined.needed_bytes - 1
    assert not plan_join(shape, tokens, 6, short, rows=6, capacity=capacity, **kw).fits
    # A longer group widens every running row to its capacity.
    wider = plan_join(shape, 65536 + 64, 6, 200 * GIB, rows=6, capacity=capacity, chunk=16384)
    assert wider.kv_bytes + wider.activation_bytes >= per_token * decode_capacity(65600) * 18


def test_joining_pays_while_the_empty_slots_cost_less_than_the_weights() -> None:
    from longscope.models.memory_plan import decode_capacity, join_pays

    shape = ModelShape.from_config(QWEN25_7B)  # 15.2 GB of weights, 57,344 bytes per token
    capacity = decode_capacity(32768 + 64)
    # An 8K document's 6 rows in a 32K batch: 6 x 24,576 empty slots = 8.5 GB < 15.2 GB.
    assert join_pays(shape, rows=6, capacity=capacity, tokens=8192 + 64, sequences=6)
    # Into a 128K batch: 6 x 122,880 = 42 GB of empty slots read every step.
    big = decode_capacity(131072 + 64)
    assert not join_pays(shape, rows=6, capacity=big, tokens=8192 + 64, sequences=6)
    # The boundary: wasted bytes equal to the weights still pay, one slot more does not.
    limit = shape.weight_bytes // shape.kv_bytes_per_token  # 265,216 slots
    assert join_pays(shape, rows=1, capacity=limit + 1024, tokens=1024, sequences=1)
    assert not join_pays(shape, rows=1, capacity=limit + 1025, tokens=1024, sequences=1)
    # A longer group widens the running rows instead: the same rule.
    assert join_pays(shape, rows=6, capacity=capacity, tokens=65536, sequences=6)
    assert not join_pays(shape, rows=12, capacity=capacity, tokens=131072, sequences=6)


def test_a_group_joins_a_running_batch_whole_or_waits() -> None:
    from longscope.models.memory_plan import decode_capacity

    backend = _backend(60)
    capacity = decode_capacity(32768 + 64)
    group = _members(6, 32768)
    assert backend.engine.next_batch(group, list(range(6)), (6, capacity)) == (list(range(6)), "")
    # Rows for only part of it: it waits (a split would prefill its prefix twice).
    assert backend.engine.next_batch(group, list(range(6)), (28, capacity)) == (
        [],
        "the running batch has no rows free",
    )
    # Memory for 6 more rows beside the running ones but not 12: waits, never splits.
    crowded = _backend(30)
    batch, reason = crowded.engine.next_batch(group, list(range(6)), (6, capacity))
    assert batch == [] and reason.startswith("insufficient_vram: needs 34.3 GiB")
    # Alone, the same memory runs the group whole.
    assert crowded.engine.next_batch(group, list(range(6)), (0, 0)) == (list(range(6)), "")
    # An 8K document does not join a 128K batch: it waits for the batch to finish.
    roomy = _backend(200)
    far = roomy.engine.next_batch(_members(6, 8192), list(range(6)), (6, decode_capacity(131136)))
    assert far == ([], "joining reads more than it saves")


GEMMA3_270M_METADATA = {
    "general.architecture": "gemma3",
    "gemma3.block_count": "18",
    "gemma3.attention.head_count": "4",
    "gemma3.attention.head_count_kv": "1",
    "gemma3.attention.key_length": "256",
    "gemma3.attention.value_length": "256",
    "gemma3.embedding_length": "640",
    "gemma3.context_length": "32768",
}


def test_gguf_kv_bytes_per_token_from_the_metadata() -> None:
    from longscope.models.memory_plan import gguf_kv_bytes_per_token

    assert gguf_kv_bytes_per_token(GEMMA3_270M_METADATA) == 18 * 1 * (256 + 256) * 2
    # Without key/value lengths: embedding width over heads (Llama 3 8B: 4096 / 32 = 128).
    llama = {
        "general.architecture": "llama",
        "llama.block_count": "32",
        "llama.attention.head_count": "32",
        "llama.attention.head_count_kv": "8",
        "llama.embedding_length": "4096",
    }
    assert gguf_kv_bytes_per_token(llama) == 32 * 8 * 256 * 2 == 131072
    assert gguf_kv_bytes_per_token({"general.architecture": "x"}) == 0


def test_host_context_is_lowered_to_whole_quanta_that_fit() -> None:
    from longscope.models.memory_plan import host_context

    kw = {"weight_bytes": 8 * GIB, "kv_per_token": 131072, "scratch_per_token": 1024}
    per_token = 131072 + 1024

    def needed(tokens: int) -> int:
        body = 8 * GIB + tokens * per_token
        return body + max(256 << 20, body // 20)

    # Exactly enough for 32K: kept whole, no reason.
    assert host_context(**kw, free_bytes=needed(32768), tokens=32768) == (32768, "")
    # One byte short: the most whole 256s that fit.
    fits, reason = host_context(**kw, free_bytes=needed(32768) - 1, tokens=32768)
    assert fits == 32768 - 256
    assert reason == "host memory: needs 12.6 GiB for 32768 tokens, 12.6 GiB free"
    free = 10 * GIB
    fits, _ = host_context(**kw, free_bytes=free, tokens=131072)
    assert fits % 256 == 0 and needed(fits) <= free < needed(fits + 256)
    # (8 GiB + n x 132,096) x 1.05 <= 10 GiB: n <= 12,386, whole 256s: 12,288.
    assert fits == 12288
    # Not even the weights: nothing fits.
    assert host_context(**kw, free_bytes=8 * GIB, tokens=4096)[0] == 0
