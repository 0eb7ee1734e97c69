"""The decode attention's balanced splits read a least number of keys each, by how many (row, KV
head) pairs a launch has (`decode_ops.min_keys_for`, issue 46 sixteenth pass): a short row's keys
go to its first splits in pieces of that many, its other programs read nothing, and the answer is
the same attention."""

from __future__ import annotations

import textwrap

import pytest

from tests.models.test_hf_gemv import _interpreted


def test_pieces_grow_with_the_pairs_and_one_long_row_keeps_its_splits(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import decode_ops

    assert decode_ops.min_keys_for(1, 4) == 128  # one row after 32K: its 129 splits busy
    assert decode_ops.min_keys_for(7, 4) == 128
    assert decode_ops.min_keys_for(8, 4) == 512  # 32 pairs
    assert decode_ops.min_keys_for(31, 4) == 512
    assert decode_ops.min_keys_for(32, 4) == 1024  # 128 pairs
    assert decode_ops.min_keys_for(64, 4) == 1024
    assert decode_ops.min_keys_for(31, 1) == 128
    monkeypatch.setattr(decode_ops, "BALANCED_MIN_KEYS", 256)
    assert decode_ops.min_keys_for(64, 4) == 256
    attention = decode_ops.DecodeAttention(64, 28, 4, 128, 1024, "float32", "cpu")
    assert attention.min_keys == 256 and attention._launch_key()[4] == 256


PIECES = textwrap.dedent(
    """
    import torch
    from longscope.models.hf import decode_ops

    torch.manual_seed(2)
    batch, heads, kv, dim, capacity = 8, 8, 4, 16, 2048
    lengths = torch.tensor([2000, 1500, 700, 300, 129, 1, 1024, 513])
    keys = torch.randn(batch, kv, capacity, dim)
    values = torch.randn(batch, kv, capacity, dim)
    query = torch.randn(batch, heads, dim)
    valid = torch.rand(batch, capacity) > 0.2
    valid[torch.arange(batch), lengths - 1] = True
    for b in range(batch):  # never written: must not be read
        keys[b, :, int(lengths[b]):] = float("nan")
        values[b, :, int(lengths[b]):] = float("nan")
    want = []
    for b in range(batch):
        n = int(lengths[b])
        k = keys[b, :, :n].double().repeat_interleave(heads // kv, 0)
        v = values[b, :, :n].double().repeat_interleave(heads // kv, 0)
        scores = (query[b].double()[:, None, :] @ k.transpose(1, 2))[:, 0] * 0.3
        scores = scores.masked_fill(~valid[b, :n][None], float("-inf"))
        want.append((scores.softmax(-1)[:, None, :] @ v)[:, 0].reshape(-1))
    want = torch.stack(want)
    busy = {}
    for least in (None, 128):  # the rule (32 pairs: 512 keys), then 128 as before
        decode_ops.BALANCED_MIN_KEYS = least
        attention = decode_ops.DecodeAttention(batch, heads, kv, dim, capacity, torch.float32, "cpu")
        assert attention.splits == 8 and attention.min_keys == (least or 512)
        got = attention(query, keys, values, valid, lengths, 0.3)
        error = float((got.double() - want).abs().max())
        assert error < 1e-5, (least, error)
        busy[least] = (attention.lse[:, 0, :, 0] > float("-inf")).sum(1).tolist()
        assert int(attention.count.abs().sum()) == 0
    assert busy[None] == [4, 3, 2, 1, 1, 1, 2, 2], busy
    assert busy[128] == [8, 6, 6, 3, 2, 1, 8, 5], busy
    print("ok")
    """
)


def test_pieces_of_at_least_512_keys_give_the_same_attention() -> None:
    """Eight rows over four KV heads: pieces of 512 keys (a row of 2,000 keys busy in 4 of its 8
    splits, not 8), equal to float64's attention as the 128-key pieces are; the keys past each
    row's length are NaN, so reading one would show."""
    _interpreted(PIECES)
