"""The engine's masked attention on CUDA at Gemma 3 270M's shape (4 query heads over one KV head,
head size 256, a 512-token sliding window) against a float64 reference, at whole-prompt calls of
1 past a multiple of 32 tokens, where torch's memory-efficient SDPA kernel is silently wrong for
keys broadcast across heads with stride 0 (pytorch/pytorch#191937; the query's length decides it:
BENCHMARKS.md, issue 46's fifteenth pass), and beside them. On an H200 the 6 whole-prompt cases at 545,
7,489 and 8,065 failed with the keys padded (eff1e86; 545 in float32 off by 2.91) and the 8 then
written passed with them copied out (b578189); all 12, the chunk-shaped pairs and the forced
kernel among them, passed on 9eaab12 (sixteenth pass, call L1)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.gpu.conftest import device

pytestmark = pytest.mark.gpu


def _reference(query, key, value, mask, scale):  # type: ignore[no-untyped-def]
    groups = query.shape[1] // key.shape[1]
    key = key.double().repeat_interleave(groups, 1)
    value = value.double().repeat_interleave(groups, 1)
    scores = (query.double() @ key.transpose(-1, -2)) * scale
    scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(-1) @ value).transpose(1, 2)


@pytest.mark.parametrize("dtype_name,tolerance", [("float32", 1e-4), ("bfloat16", 3e-2)])
@pytest.mark.parametrize(
    "q_len,kv_len",
    # whole prompts in one call, as transformers' `generate` prefills them, then queries 1 past a
    # multiple of 32 over one key more, as a chunk of a longer prompt meets them
    [(545, 545), (546, 546), (7489, 7489), (8065, 8065), (545, 546), (7489, 7490)],
)
def test_masked_attention_matches_float64_at_gemma3s_shape(
    q_len: int, kv_len: int, dtype_name: str, tolerance: float
) -> None:
    import contextlib

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from longscope.models.hf.kernels import attention

    where = device()
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator(device=where).manual_seed(kv_len)

    def draw(heads: int, length: int):  # type: ignore[no-untyped-def]
        return torch.randn(1, heads, length, 256, device=where, generator=gen).to(dtype)

    query, key, value = draw(4, q_len), draw(1, kv_len), draw(1, kv_len)
    rows = torch.arange(kv_len - q_len, kv_len, device=where)[:, None]
    cols = torch.arange(kv_len, device=where)[None, :]
    mask = ((cols <= rows) & (cols > rows - 512))[None, None]
    module = SimpleNamespace(num_key_value_groups=4, is_causal=True, training=False)
    scale = 256**-0.5
    # the kernel torch gets wrong, kept even if torch's choice for these inputs changes
    forced = (
        sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION) if query.is_cuda else contextlib.nullcontext()
    )
    with torch.no_grad(), forced:
        got, _ = attention(module, query, key, value, mask, scaling=scale)
    with torch.no_grad():
        want = _reference(query, key, value, mask, scale)
    assert got.shape == want.shape == (1, q_len, 4, 256)
    error = (got.double() - want).abs().max().item()
    assert error < tolerance, f"{q_len} x {kv_len} keys in {dtype_name}: off by {error}"
