"""The memory plans to the byte, at the boundaries where a request is sent or skipped.

What a user relies on is the decision (fits, how many sequences, how many tokens, which chunk,
what context llama.cpp allocates) and the reason stored with a skip. Each decision turns on exact
byte counts, so the phases are checked exactly, each in a case where it is the peak, and each
search at the free memory where one more sequence, token or quantum no longer fits.
"""

from __future__ import annotations

import pytest

from longscope.models.memory_plan import (
    GIB,
    ModelShape,
    choose_chunk,
    decode_capacity,
    dtype_bytes,
    gguf_kv_bytes_per_token,
    host_context,
    max_sequences,
    max_tokens,
    plan_join,
    plan_memory,
    prefill_activation_bytes,
)
from tests.models.test_memory_plan import QWEN25_7B

SHAPE = ModelShape.from_config(QWEN25_7B)
KV = 57344  # bytes of KV cache per token: 28 layers x 4 KV heads x 128 x 2 x 2 bytes
LAYERS = 28
LOGITS = 152064 * 4 * 2  # float32 logits of one position, and their softmax
MIB_256 = 256 << 20
# A small shape whose sizes differ from each other, so that a swapped factor shows.
SMALL = ModelShape(
    num_layers=3,
    num_heads=5,
    num_kv_heads=1,
    head_dim=6,
    hidden_size=35,
    intermediate_size=11,
    vocab_size=13,
)


def _act(chunk: int, context: int, sequences: int) -> int:
    return prefill_activation_bytes(SHAPE, chunk, context, sequences)


def test_dtype_and_shape_from_a_config_without_optional_fields() -> None:
    with pytest.raises(ValueError) as caught:
        dtype_bytes("int8")
    assert str(caught.value) == "unknown dtype 'int8': use bfloat16, float16 or float32"
    assert dtype_bytes("FP16") == 2 and dtype_bytes("torch.float32") == 4
    bare = {"hidden_size": 30, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 7}
    shape = ModelShape.from_config(bare, "float32")
    assert shape.num_kv_heads == 4  # no `num_key_value_heads`: one per attention head
    assert shape.head_dim == 7  # hidden // heads
    assert shape.intermediate_size == 120  # 4 x hidden
    assert shape.dtype_bytes == 4
    assert ModelShape.from_config(bare).dtype_bytes == 2  # bfloat16 by default


def test_decode_capacity_is_the_tokens_up_to_one_block_then_whole_blocks() -> None:
    assert [decode_capacity(t) for t in (0, 1, 2, 1023, 1024, 1025, 2048, 2049)] == [
        1,
        1,
        2,
        1023,
        1024,
        2048,
        2048,
        3072,
    ]


def test_prefill_activation_of_a_chunk_to_the_byte() -> None:
    # per token: (3 x hidden 35 + 2 x 5 heads x 6 + 2 x 1 KV head x 6) x 2 bytes + 3 x 11 x 2 = 420
    # 3 tokens x 2 sequences x 420 + repeated keys and values 2 x 2 x 10 x 30 x 2
    # + float32 logits and softmax of one position per sequence 2 x 13 x 4 x 2
    assert prefill_activation_bytes(SMALL, 3, 10, 2) == 6 * 420 + 2400 + 208 == 5128
    assert prefill_activation_bytes(SMALL, 3, 0, 1) == 3 * 420 + 104


def test_prefill_of_the_whole_batch_is_the_peak_of_a_long_prompt() -> None:
    # 3 sequences of a 32K prompt: each prefills 8192 // 3 = 2730 tokens at a time
    plan = plan_memory(SHAPE, 32768, 3, 100 * GIB)
    peak = KV * 32768 * 3 + _act(2730, 32768, 3)
    assert plan.kv_bytes == KV * 32768 * 3
    assert plan.activation_bytes == peak - plan.kv_bytes
    assert plan.margin_bytes == peak // 20 and peak % 20  # 5% of the peak, not rounded up
    # a short prompt prefills whole: one chunk of 1000 tokens attending to its own 1000
    short = plan_memory(SHAPE, 1000, 1, 100 * GIB)
    assert short.kv_bytes + short.activation_bytes == KV * 1000 + _act(1000, 1000, 1)
    assert short.margin_bytes == MIB_256  # 256 MiB at least
    # one-token chunks
    tiny = plan_memory(SHAPE, 1000, 1, 100 * GIB, chunk=1)
    assert tiny.kv_bytes + tiny.activation_bytes == KV * 1000 + _act(1, 1000, 1)


def test_a_one_token_prompt_attends_to_nothing_before_it() -> None:
    plan = plan_memory(SHAPE, 1, 2, GIB)
    assert plan.kv_bytes + plan.activation_bytes == KV * 2 + _act(1, 0, 2)
    assert plan.margin_bytes == MIB_256
    # a rest of two tokens after a shared prefix attends to the whole prompt
    rest = plan_memory(SHAPE, 40000, 3, 100 * GIB, prefix=39000, suffix=2)
    assert rest.kv_bytes + rest.activation_bytes == KV * 39002 * 3 + _act(2, 39002, 3)


def test_the_members_rest_after_a_shared_prefix_is_prefilled_in_its_own_length() -> None:
    # 2 members share a 19900-token prefix; each rest is 100 tokens (20000 - 19900)
    plan = plan_memory(SHAPE, 20000, 2, 100 * GIB, prefix=19900)
    assert plan.kv_bytes + plan.activation_bytes == KV * 20000 * 2 + _act(100, 20000, 2)


def test_a_long_answer_makes_the_growing_decode_the_peak() -> None:
    plan = plan_memory(SHAPE, 131072, 2, 100 * GIB, suffix=1024)
    # the cache grows by concatenation: one layer's old and new copy at a time, plus the logits
    peak = KV * 131072 * 2 + KV * 131072 * 2 // LAYERS + 2 * LOGITS
    assert plan.kv_bytes + plan.activation_bytes == peak
    assert plan.margin_bytes == peak // 20
    # one layer: its old and new copy are the whole cache twice
    one = ModelShape(1, 1, 1, 4, 4, 4, 3)  # 16 bytes of KV cache per token
    plan = plan_memory(one, 2048, 1, GIB, suffix=1)
    assert plan.kv_bytes + plan.activation_bytes == 16 * 2048 * 2 + 3 * 4 * 2


def test_an_unrepeated_prefix_repeats_keys_only_for_its_rest_under_one_quantum() -> None:
    plan = plan_memory(SHAPE, 131072, 1, 100 * GIB, prefix=131000, suffix=1, unrepeated=True)
    whole_chunk = _act(8192, 0, 1)  # chunks of whole quanta attend to grouped heads as they are
    rest = _act(1023, 131000, 1)  # a rest under 1024 tokens repeats the whole prefix's keys
    assert rest > whole_chunk
    assert plan.kv_bytes + plan.activation_bytes == KV * 131000 + rest


def test_the_most_sequences_that_fit_at_exactly_their_need() -> None:
    need = plan_memory(SHAPE, 32768, 3, 0).needed_bytes
    assert max_sequences(SHAPE, 32768, need) == 3
    assert max_sequences(SHAPE, 32768, need - 1) == 2
    assert max_sequences(SHAPE, 1000, MIB_256) == 0  # not even one
    custom = plan_memory(SHAPE, 20000, 3, 0, chunk=4096, prefix=19000).needed_bytes
    assert max_sequences(SHAPE, 20000, custom, chunk=4096, prefix=19000) == 3
    assert max_sequences(SHAPE, 20000, custom - 1, chunk=4096, prefix=19000) == 2
    chunked = plan_memory(SHAPE, 32768, 3, 0, chunk=4096).needed_bytes
    assert max_sequences(SHAPE, 32768, chunked, chunk=4096) == 3
    two = plan_memory(SHAPE, 1000, 2, 0).needed_bytes  # the default prefix is none
    assert max_sequences(SHAPE, 1000, two - 1) == 1
    # a ceiling: never more than 4096 sequences, however much memory there is
    assert max_sequences(SMALL, 1, 1 << 50) == 4096


def test_the_most_tokens_that_fit_at_exactly_their_need() -> None:
    need = plan_memory(SHAPE, 50000, 1, 0).needed_bytes
    assert max_tokens(SHAPE, need) == 50000
    assert max_tokens(SHAPE, need - 1) == 49999
    need = plan_memory(SHAPE, 30001, 2, 0, chunk=2048).needed_bytes
    assert max_tokens(SHAPE, need, chunk=2048, sequences=2) == 30001
    assert max_tokens(SHAPE, MIB_256) == 0
    assert max_tokens(SMALL, 1 << 60) == 1 << 24  # the search's ceiling


def test_the_chunk_is_the_largest_quantum_that_fits() -> None:
    # defaults: no prefix, the whole prompt as the rest, capped at 16384
    chunk, plan = choose_chunk(SHAPE, 1000, 1, 100 * GIB)
    assert (chunk, plan) == (16384, plan_memory(SHAPE, 1000, 1, 100 * GIB, chunk=16384))
    # an explicit rest shorter than tokens - prefix (an answer after the prompt)
    chunk, plan = choose_chunk(SHAPE, 20000, 2, 100 * GIB, prefix=10000, suffix=100)
    assert plan == plan_memory(SHAPE, 20000, 2, 100 * GIB, chunk=16384, prefix=10000, suffix=100)
    # unrepeated holds for whole quanta only
    unrepeated = {"prefix": 131000, "suffix": 1, "unrepeated": True}
    chunk, plan = choose_chunk(SHAPE, 131072, 1, 100 * GIB, **unrepeated)
    assert plan == plan_memory(SHAPE, 131072, 1, 100 * GIB, chunk=16384, **unrepeated)
    chunk, plan = choose_chunk(SHAPE, 131072, 1, 100 * GIB, cap=3000, **unrepeated)
    assert chunk == 3000
    assert plan == plan_memory(
        SHAPE, 131072, 1, 100 * GIB, chunk=3000, prefix=131000, suffix=1, unrepeated=False
    )
    # a cap one past a quantum steps down to that quantum when it does not fit
    free = plan_memory(SHAPE, 32768, 1, 0, chunk=2048).needed_bytes
    assert not plan_memory(SHAPE, 32768, 1, free, chunk=2049).fits
    chunk, plan = choose_chunk(SHAPE, 32768, 1, free, cap=2049)
    assert chunk == 2048 and plan.fits
    assert choose_chunk(SHAPE, 1000, 1, 100 * GIB, cap=1)[0] == 1  # never above the cap


def test_joining_with_no_running_rows_is_the_plan_alone() -> None:
    for kwargs in (
        {},
        {"prefix": 131000, "suffix": 1},
        {"prefix": 131000, "suffix": 1, "unrepeated": True},
    ):
        tokens, sequences = (131072, 1) if kwargs else (32768, 3)
        assert plan_join(SHAPE, tokens, sequences, 50 * GIB, rows=0, capacity=0, **kwargs) == (
            plan_memory(SHAPE, tokens, sequences, 50 * GIB, **kwargs)
        )
    assert plan_join(SHAPE, 1000, 1, GIB, rows=0, capacity=0) == plan_memory(SHAPE, 1000, 1, GIB)


def test_joining_one_running_row_counts_the_merged_cache() -> None:
    plan = plan_join(SHAPE, 8192, 1, 10 * GIB, rows=1, capacity=131072)
    join = KV * 8192 + KV * 131072 * 2 + 2 * 28 * 131072 * 4 * 3 + 2 * LOGITS
    assert (plan.tokens, plan.sequences, plan.weight_bytes) == (8192, 1, 0)
    assert plan.kv_bytes == KV * 8192
    assert plan.activation_bytes == join - KV * 8192
    assert plan.margin_bytes == join // 20
    assert not plan.fits
    assert plan.reason == (
        f"insufficient_vram: needs {plan.needed_bytes / GIB:.1f} GiB for 8192 tokens x 1 "
        "sequences, 10.0 GiB free"
    )
    # a small join keeps the 256 MiB margin
    assert plan_join(SMALL, 64, 1, GIB, rows=1, capacity=64).margin_bytes == MIB_256


def test_a_join_whose_own_prefill_is_larger_keeps_the_prefill_peak() -> None:
    alone = plan_memory(SMALL, 4096, 1, GIB)
    plan = plan_join(SMALL, 4096, 1, GIB, rows=1, capacity=1)
    join = 72 * 4096 + 72 * 4096 * 2 + 2 * 5 * 4096 * 4 * 3 + 2 * 13 * 4 * 2
    assert alone.kv_bytes + alone.activation_bytes > join
    assert plan.kv_bytes + plan.activation_bytes == alone.kv_bytes + alone.activation_bytes


def test_gguf_kv_bytes_with_default_and_distinct_key_and_value_lengths() -> None:
    base = {
        "general.architecture": "llama",
        "llama.block_count": "4",
        "llama.attention.head_count": "8",
        "llama.embedding_length": "512",
    }
    assert gguf_kv_bytes_per_token(base) == 4 * 8 * (64 + 64) * 2  # KV heads = heads
    mla = {
        **base,
        "llama.attention.head_count_kv": "2",
        "llama.attention.key_length": "192",
        "llama.attention.value_length": "128",
    }
    assert gguf_kv_bytes_per_token(mla) == 4 * 2 * (192 + 128) * 2


def test_host_context_at_exactly_what_memory_holds() -> None:
    per_token = 1 << 19
    weights = GIB // 2  # a body under 5 GiB: the margin is its 256 MiB floor

    def needed(tokens: int) -> int:
        body = weights + tokens * per_token
        return body + max(MIB_256, body // 20)

    assert host_context(
        weight_bytes=weights,
        kv_per_token=per_token - 4096,
        scratch_per_token=4096,
        free_bytes=needed(8192),
        tokens=8192,
    ) == (8192, "")
    fits, reason = host_context(
        weight_bytes=weights,
        kv_per_token=per_token - 4096,
        scratch_per_token=4096,
        free_bytes=needed(4096),
        tokens=8192,
    )
    assert type(fits) is int and fits == 4096  # exactly what fits, a whole quantum
    assert reason == (
        f"host memory: needs {needed(8192) / GIB:.1f} GiB for 8192 tokens, "
        f"{needed(4096) / GIB:.1f} GiB free"
    )
    # large weights: a 5% margin, not rounded up
    weights = 8 * GIB + 7
    assert needed(4096) - (weights + 4096 * per_token) == (weights + 4096 * per_token) // 20
    assert (
        host_context(
            weight_bytes=weights,
            kv_per_token=per_token,
            scratch_per_token=0,
            free_bytes=needed(4096),
            tokens=8192,
        )[0]
        == 4096
    )
    # no KV figures: no plan, whatever the memory
    assert host_context(
        weight_bytes=GIB, kv_per_token=0, scratch_per_token=0, free_bytes=1, tokens=8192
    ) == (8192, "")
    # one byte per token is a plan like any other
    assert (
        host_context(
            weight_bytes=GIB, kv_per_token=1, scratch_per_token=0, free_bytes=GIB, tokens=8192
        )[0]
        == 0
    )
