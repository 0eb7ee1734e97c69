"""The masked attention's guard against torch's memory-efficient SDPA kernel on CUDA, which is
silently wrong where keys broadcast across query heads number 1 more than a multiple of 32
(pytorch/pytorch#191937; transformers' SDPA `generate` for Gemma 3 270M on an H200 left its eager
one on exactly those prompt lengths): one masked-out key more, which no query reads."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longscope.models.hf.kernels import BAD_KV_MODULUS, pad_past_bad_kv_length  # noqa: E402


def _gemma_like(kv_len: int, q_len: int, window: int = 16) -> tuple[Any, Any, Any, Any]:
    """Four query heads over one KV head (Gemma 3 270M's shape, smaller), the keys broadcast
    with stride 0 as transformers' `repeat_kv` leaves them, and a sliding-window causal mask."""
    gen = torch.Generator().manual_seed(kv_len)
    query = torch.randn(1, 4, q_len, 8, generator=gen, dtype=torch.float64)
    key = torch.randn(1, 1, kv_len, 8, generator=gen, dtype=torch.float64)
    value = torch.randn(1, 1, kv_len, 8, generator=gen, dtype=torch.float64)
    rows = torch.arange(kv_len - q_len, kv_len)[:, None]
    cols = torch.arange(kv_len)[None, :]
    mask = ((cols <= rows) & (cols > rows - window))[None, None]
    return query, key, value, mask


def _attend(query: Any, key: Any, value: Any, mask: Any) -> Any:
    groups = query.shape[1] // key.shape[1]
    key = key.expand(-1, groups, -1, -1)  # stride 0 across the query heads
    value = value.expand(-1, groups, -1, -1)
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)


@pytest.mark.parametrize("kv_len", [33, 65, 7489, 16257])
def test_a_key_length_one_past_a_multiple_of_32_gets_one_masked_key_more(kv_len: int) -> None:
    _, key, value, mask = _gemma_like(kv_len, q_len=5)
    assert kv_len % BAD_KV_MODULUS == 1 and BAD_KV_MODULUS == 32
    padded_key, padded_value, padded_mask = pad_past_bad_kv_length(key, value, mask)
    assert padded_key.shape[-2] == padded_value.shape[-2] == padded_mask.shape[-1] == kv_len + 1
    assert torch.equal(padded_key[..., :kv_len, :], key)
    assert not padded_key[..., kv_len, :].any() and not padded_value[..., kv_len, :].any()
    assert torch.equal(padded_mask[..., :kv_len], mask)
    assert not padded_mask[..., kv_len].any()  # no query reads the added key


@pytest.mark.parametrize("kv_len", [32, 34, 63, 64, 7488, 7490])
def test_other_key_lengths_pass_through_untouched(kv_len: int) -> None:
    _, key, value, mask = _gemma_like(kv_len, q_len=5)
    got = pad_past_bad_kv_length(key, value, mask)
    assert got[0] is key and got[1] is value and got[2] is mask


@pytest.mark.parametrize("q_len", [1, 7, 33])
def test_the_attention_output_is_unchanged_by_the_added_key(q_len: int) -> None:
    query, key, value, mask = _gemma_like(97, q_len)
    before = _attend(query, key, value, mask)
    after = _attend(query, *pad_past_bad_kv_length(key, value, mask))
    assert after.shape == before.shape
    assert (after - before).abs().max().item() < 1e-12


def test_an_additive_mask_gets_the_lowest_value_and_a_longer_mask_is_cut_to_the_keys() -> None:
    query, key, value, mask = _gemma_like(65, q_len=3)
    additive = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, float("-inf"))
    longer = torch.cat([additive, torch.zeros(1, 1, 3, 7, dtype=torch.float64)], dim=-1)
    padded_key, padded_value, padded_mask = pad_past_bad_kv_length(key, value, longer)
    assert padded_mask.shape[-1] == 66  # the 7 extra columns (0: readable) are gone
    assert padded_mask[..., 65].eq(torch.finfo(torch.float64).min).all()
    before = _attend(query, key, value, additive)
    after = _attend(query, padded_key, padded_value, padded_mask)
    assert (after - before).abs().max().item() < 1e-12
