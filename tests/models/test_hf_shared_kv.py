"""The masked attention's guard against torch's memory-efficient SDPA kernel on CUDA, which is
silently wrong for keys broadcast across query heads with stride 0 (what transformers' `repeat_kv`
leaves for a model with one KV head) at query lengths 1 past a multiple of 32
(pytorch/pytorch#191937; measured on an H200 in BENCHMARKS.md, issue 46's fifteenth pass): the
one KV head copied out to every query head, contiguous, and a stand-in module saying so."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: E402

from longscope.models.hf import kernels  # noqa: E402
from longscope.models.hf.kernels import with_contiguous_shared_kv  # noqa: E402


def _inputs(kv_heads: int, q_len: int = 33, kv_len: int = 33, window: int = 16) -> tuple[Any, ...]:
    gen = torch.Generator().manual_seed(q_len * 7 + kv_heads)
    query = torch.randn(1, 4, q_len, 8, generator=gen, dtype=torch.float64)
    key = torch.randn(1, kv_heads, kv_len, 8, generator=gen, dtype=torch.float64)
    value = torch.randn(1, kv_heads, kv_len, 8, generator=gen, dtype=torch.float64)
    rows = torch.arange(kv_len - q_len, kv_len)[:, None]
    cols = torch.arange(kv_len)[None, :]
    mask = ((cols <= rows) & (cols > rows - window))[None, None]
    module = SimpleNamespace(num_key_value_groups=4 // kv_heads, is_causal=True, training=False)
    return module, query, key, value, mask


def test_one_kv_head_is_copied_out_to_every_query_head_contiguous() -> None:
    module, _, key, value, _ = _inputs(kv_heads=1)
    stand_in, wide_key, wide_value = with_contiguous_shared_kv(module, key, value)
    assert stand_in.num_key_value_groups == 1
    assert stand_in.is_causal is True and stand_in.training is False
    assert module.num_key_value_groups == 4  # the layer's own module is left alone
    for wide, narrow in ((wide_key, key), (wide_value, value)):
        assert wide.shape == (1, 4, 33, 8)
        assert wide.is_contiguous() and wide.stride(1) == 33 * 8  # no stride-0 head
        assert torch.equal(wide, narrow.expand(-1, 4, -1, -1))


@pytest.mark.parametrize(
    "module",
    [
        SimpleNamespace(num_key_value_groups=1, is_causal=True),  # as many KV heads as queries
        SimpleNamespace(is_causal=True),  # a module that names no groups
    ],
)
def test_no_sharing_leaves_everything_as_it_is(module: Any) -> None:
    _, _, key, value, _ = _inputs(kv_heads=1)
    got = with_contiguous_shared_kv(module, key, value)
    assert got[0] is module and got[1] is key and got[2] is value


def test_several_kv_heads_are_left_to_repeat_kv_which_copies() -> None:
    module, _, key, value, _ = _inputs(kv_heads=2)
    got_module, got_key, got_value = with_contiguous_shared_kv(module, key, value)
    assert got_module is module and got_key is key and got_value is value


@pytest.mark.parametrize("q_len,kv_len", [(33, 33), (545, 545), (32, 545), (545, 546)])
def test_the_attention_is_the_same_as_through_repeat_kv(q_len: int, kv_len: int) -> None:
    module, query, key, value, mask = _inputs(kv_heads=1, q_len=q_len, kv_len=kv_len)
    want, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=0.3)
    stand_in, wide_key, wide_value = with_contiguous_shared_kv(module, key, value)
    got, _ = sdpa_attention_forward(stand_in, query, wide_key, wide_value, mask, scaling=0.3)
    assert got.shape == want.shape == (1, q_len, 4, 8)
    assert (got - want).abs().max().item() < 1e-12


@pytest.mark.parametrize(
    "on_cuda,q_len,copied", [(True, 33, True), (True, 1, False), (False, 33, False)]
)
def test_the_masked_attention_copies_on_cuda_for_more_than_one_query(
    monkeypatch: pytest.MonkeyPatch, on_cuda: bool, q_len: int, copied: bool
) -> None:
    """The wiring, where a CPU cannot run the CUDA path: `attention` hands the copied keys and the
    stand-in module to transformers' SDPA forward on CUDA for q_len > 1, and nothing else."""
    import transformers.integrations.sdpa_attention as sdpa

    module, query, key, value, mask = _inputs(kv_heads=1, q_len=q_len, kv_len=33)
    seen: dict[str, Any] = {}

    def spy(got_module, got_query, got_key, got_value, got_mask, **kwargs):  # type: ignore[no-untyped-def]
        seen.update(module=got_module, key=got_key)
        return "output", None

    monkeypatch.setattr(sdpa, "sdpa_attention_forward", spy)
    shaped = SimpleNamespace(is_cuda=on_cuda, shape=query.shape)  # the device is all it reads
    assert kernels.attention(module, shaped, key, value, mask, scaling=0.3) == ("output", None)
    assert (seen["module"] is not module) is copied
    assert seen["key"].shape[1] == (4 if copied else 1)
