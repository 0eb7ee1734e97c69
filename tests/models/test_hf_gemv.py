"""The decode step's split-K GEMV (`models/hf/gemv.py`) on the CPU, by Triton's interpreter: its
float32 slices summed by each kernel that reads them (rotary + cache write, residual add +
RMSNorm, SiLU product) give bit for bit what the same kernel gives on the rounded projection, and
the projection is a matmul's answer. float16: the interpreter multiplies bfloat16 as raw bits in
matrix products. On the card: tests/gpu/test_decode_ops_gpu.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHECK = textwrap.dedent(
    """
    import torch
    from longscope.models.hf import decode_ops, gemv

    torch.manual_seed(0)
    dt = torch.float16
    heads, kv, dim, k = 4, 2, 32, 192
    for rows in (1, 5):
        for splits, bias in ((3, True), (2, False)):
            plan = gemv.Plan(16, 64, 4, 2, splits)
            n = (heads + 2 * kv) * dim
            x = torch.randn(rows, k).to(dt)
            w = (torch.randn(n, k) / k**0.5).to(dt)
            b = torch.randn(n).to(dt) if bias else None
            parts = gemv.run(x, w, b, plan)
            assert parts.splits == splits and parts.shape == (rows, n), (parts.splits, parts.shape)
            want = torch.nn.functional.linear(x.double(), w.double(), None if b is None else b.double())
            error = float((parts.rounded().double() - want).norm() / want.norm())
            assert error < 1e-3, (rows, splits, error)
            angle = torch.rand(rows, dim // 2) * 100
            angle = torch.cat([angle, angle], -1)
            cos, sin = angle.cos().to(dt), angle.sin().to(dt)
            outs = []
            for qkv in (parts, parts.rounded()):
                keys = torch.zeros(rows, kv, 8, dim, dtype=dt)
                values = torch.zeros_like(keys)
                slot = torch.tensor([i % 8 for i in range(rows)])
                query = decode_ops.rope_store(qkv, cos, sin, keys, values, slot, heads, kv)
                outs.append((query, keys, values))
            assert all(torch.equal(a, c) for a, c in zip(*outs)), "rope_store"
            wide = 64
            p2 = gemv.run(x, (torch.randn(wide, k) / k**0.5).to(dt), b[:wide] if bias else None, plan)
            res1 = torch.randn(rows, wide).to(dt)
            res2 = res1.clone()
            weight = torch.rand(wide).to(dt)
            got = decode_ops.add_rms_norm(res1, p2, weight, 1e-6)
            assert torch.equal(got, decode_ops.add_rms_norm(res2, p2.rounded(), weight, 1e-6))
            assert torch.equal(res1, res2), "residual"
            p3 = gemv.run(x, (torch.randn(2 * 96, k) / k**0.5).to(dt), None, plan)
            assert torch.equal(
                decode_ops.silu_mul_packed(p3), decode_ops.silu_mul_packed(p3.rounded())
            ), "silu"
    # uneven N and K: the masked one-row and batched paths, every output written
    for rows in (1, 3):
        x = torch.randn(rows, 200).to(dt)
        w = (torch.randn(100, 200) / 200**0.5).to(dt)
        part = torch.full((2, rows, 100), float("nan"))
        got = gemv.run(x, w, None, gemv.Plan(16, 64, 4, 2, 2), part=part).rounded().double()
        want = torch.nn.functional.linear(x.double(), w.double())
        assert float((got - want).norm() / want.norm()) < 1e-3, rows
    print("ok")
    """
)

GATED_CHECK = textwrap.dedent(
    """
    import torch
    from longscope.models.hf import decode_ops, gemv

    torch.manual_seed(3)
    dt = torch.float16
    k, features = 192, 40  # 40 features: the last of 16-feature tiles half empty
    # row paddings 1 and 16 only: the interpreter's matrix product (numpy's) rounds a row's float32
    # sums by its place in the tile, so 32 and 64 are checked bit for bit on the card
    for rows in (1, 5):
        for bias in (True, False):
            for plan in (gemv.Plan(32, 64, 4, 2, 1), gemv.Plan(16, 64, 4, 2, 1)):
                x = torch.randn(rows, k).to(dt)
                w = (torch.randn(2 * features, k) / k**0.5).to(dt)
                b = torch.randn(2 * features).to(dt) if bias else None
                got = gemv.run_gated(x, w, b, plan)
                two = decode_ops.silu_mul_packed(gemv.run(x, w, b, plan))
                assert got.shape == (rows, features) and torch.equal(got, two), (rows, plan)
                both = torch.nn.functional.linear(x.double(), w.double(), b.double() if bias else None)
                gate, up = both[:, :features], both[:, features:]
                want = torch.nn.functional.silu(gate) * up
                assert float((got.double() - want).norm() / want.norm()) < 2e-3, (rows, plan)
    print("ok")
    """
)


def _interpreted(script: str) -> None:
    """Run `script` under Triton's CPU interpreter in a process of its own; it prints "ok"."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.slow  # ~8 s of Triton's interpreter; the card's tests check the same, bit for bit
def test_consumers_sum_the_gemv_slices_as_the_rounded_projection() -> None:
    _interpreted(CHECK)


def test_plans_are_made_per_row_padding_with_slices_no_thinner_than_a_step() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import gemv

    assert [gemv.rows_pad(r) for r in (1, 2, 16, 17, 32, 33, 64)] == [1, 16, 16, 32, 32, 64, 64]
    one = gemv._candidates(1, 18944)
    assert {p.splits for p in one} == {1, 2, 4, 8}
    assert all(18944 // p.splits >= p.block_k for p in one)
    # 3584 in 8 slices of whole 128-512 steps is 7 slices: no plan claims 8
    assert {p.splits for p in gemv._candidates(1, 3584)} == {1, 2, 4}
    for plan in gemv._candidates(16, 3584) + one:
        width = 18944 if plan in one else 3584
        assert -(-width // gemv._k_split(width, plan)) == plan.splits, plan
    # 512 columns of K: a 512-wide step takes no split, a 128-wide one up to 4
    assert {p.splits for p in gemv._candidates(1, 512) if p.block_k == 512} == {1}
    assert {p.splits for p in gemv._candidates(16, 512) if p.block_k == 128} == {1, 2, 4}
    assert gemv._k_split(18944, gemv.Plan(16, 256, 4, 3, 8)) % 256 == 0


def test_attention_splits_fill_the_card_and_tune_per_launch_class() -> None:
    """The split stage aims at 2,048 programs with at least 256 keys each; its tuning class
    tells a warm-up's few programs from a long row's many (tuned on the first, a 32K row read
    at half the rate on an H200)."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import decode_ops

    assert decode_ops.splits_for(1, 4, 33024) == 129  # held by the 256-key minimum
    assert decode_ops.splits_for(1, 4, 131328) == 512  # 2,048 programs over 4 KV heads
    assert decode_ops.splits_for(64, 4, 9216) == 8
    assert decode_ops.splits_for(1024, 4, 9216) == 1
    warm_up = decode_ops.load_class(1 * 4 * 5, 256)
    long_row = decode_ops.load_class(1 * 4 * 129, 256)
    assert (warm_up, long_row) == (0, 3)
    assert decode_ops.load_class(1056, 257) == 7
    assert decode_ops.load_class(1055, 1025) == 5


MERGE_CHECK = textwrap.dedent(
    """
    import torch
    from longscope.models.hf import decode_ops

    torch.manual_seed(1)
    decode_ops.BALANCED_SPLITS = True  # splits cut from each row's own keys
    batch, heads, kv, dim, capacity = 3, 6, 2, 32, 4096
    attention = decode_ops.DecodeAttention(batch, heads, kv, dim, capacity, torch.float32, "cpu")
    assert attention.splits == 16 and attention.fuses() and not attention.fuses(False)
    keys = torch.randn(batch, kv, capacity, dim)
    values = torch.randn(batch, kv, capacity, dim)
    query = torch.randn(batch, heads, dim)
    valid = torch.rand(batch, capacity) > 0.2
    lengths = torch.tensor([4000, 1000, 1])  # 1,000 in 16 splits: 128 keys each, not 256

    def busy():  # splits holding keys (a finite log-sum-exp), per row
        return (attention.lse[:, 0, :, 0] > float("-inf")).sum(1).tolist()

    valid[2, 0] = True
    fused = attention(query, keys, values, valid, lengths, 0.3)
    assert busy() == [16, 8, 1], busy()
    assert torch.equal(attention.count, torch.zeros_like(attention.count)), attention.count
    again = attention(query, keys, values, valid, lengths, 0.3)
    apart = attention(query, keys, values, valid, lengths, 0.3, fused=False)
    assert torch.equal(fused, again)
    decode_ops.BALANCED_SPLITS = False  # splits cut from the capacity, as before
    by_capacity = attention(query, keys, values, valid, lengths, 0.3)
    assert busy() == [16, 4, 1], busy()
    want = []
    for b in range(batch):
        n = int(lengths[b])
        k = keys[b, :, :n].double().repeat_interleave(heads // kv, 0)
        v = values[b, :, :n].double().repeat_interleave(heads // kv, 0)
        scores = (query[b].double()[:, None, :] @ k.transpose(1, 2))[:, 0] * 0.3
        scores = scores.masked_fill(~valid[b, :n][None], float("-inf"))
        want.append((scores.softmax(-1)[:, None, :] @ v)[:, 0].reshape(-1))
    want = torch.stack(want)
    for got in (fused, apart, by_capacity):
        assert float((got.double() - want).abs().max()) < 1e-5, float((got.double() - want).abs().max())
    wide = decode_ops.DecodeAttention(1, heads, kv, dim, 8192, torch.float32, "cpu")
    assert wide.splits == 32 and not wide.fuses()
    print("ok")
    """
)


@pytest.mark.slow  # Triton's interpreter
def test_split_stage_merges_its_own_splits_as_the_merge_kernel() -> None:
    """With few splits a row's KV head, the split stage's last program merges them (an arrival
    counter, put back to zero for the next call): the same attention as the merge kernel's and
    float64's, again on a second call; with many splits the merge kernel does it. Rows of 4,000,
    1,000 and 1 keys cut into 16 splits by their own length (1,000 keys busy 8 splits) or by the
    capacity (4 splits of 256)."""
    _interpreted(MERGE_CHECK)


def test_plans_are_charged_for_their_output_read_back() -> None:
    """A plan's float32 slices are read again by the next kernel, at the rate torch's matmul read
    the weight: at 64 rows QKV's four slices are 14% of its weight's bytes, so a plan 5% faster
    alone loses to torch's 16-bit output; at 8 rows they are 1.8% and it wins."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import gemv

    weight = torch.empty(4608, 3584, dtype=torch.bfloat16)
    rate = 0.01257
    torch_ms = gemv.charged(rate, rate, weight, 64 * 4608 * 2)
    plan_ms = gemv.charged(0.01194, rate, weight, 64 * 4608 * 4 * 4)
    assert torch_ms == pytest.approx(rate * (1 + 589824 / 33030144), rel=1e-9)
    assert plan_ms == pytest.approx(0.01194 + rate * 4718592 / 33030144, rel=1e-9)
    assert plan_ms > torch_ms
    # one rate for every plan: a slower plan pays no more for the same bytes
    assert gemv.charged(0.02, rate, weight, 1000) - 0.02 == pytest.approx(
        gemv.charged(0.01, rate, weight, 1000) - 0.01
    )
    assert gemv.charged(0.0098, 0.0126, weight, 8 * 4608 * 16) < gemv.charged(
        0.0126, 0.0126, weight, 8 * 4608 * 2
    )


@pytest.mark.slow  # Triton's interpreter
def test_the_gated_gemv_gives_the_two_kernels_silu_product_bit_for_bit() -> None:
    """`gemv.run_gated` (gate/up projection and SiLU product in one kernel, a tile's gate rows
    then the same features' up rows) equals the one-slice projection then `silu_mul_packed`, bit
    for bit, with and without a bias, one row and several, a half-empty last tile."""
    _interpreted(GATED_CHECK)


def test_a_padding_is_tuned_only_once_it_has_decoded_tune_after_steps(monkeypatch) -> None:
    """`prepare` tunes nothing for a row padding until `stepped` has counted `TUNE_AFTER_STEPS`
    of its steps on that device; `stepped` says so on exactly that step (the decoder captures its
    graph again then); each padding and device counts apart, and a batch the GEMV does not take
    (`fits`: here over 64 rows) counts nothing."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from types import SimpleNamespace

    from longscope.models.hf import gemv

    tuned: list[int] = []
    monkeypatch.setattr(gemv, "_STEPS", {})
    monkeypatch.setattr(gemv, "TUNE_AFTER_STEPS", 3)
    monkeypatch.setattr(gemv, "fits", lambda rows, weight: rows <= 64)
    monkeypatch.setattr(gemv, "tune", lambda rows, weights: tuned.append(rows))
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)  # no card here
    weight = torch.zeros(4, 4)
    here, other = weight.device, SimpleNamespace(device="cuda:7")

    def prepare(rows: int) -> None:
        gemv.prepare(rows, [[(weight, None)]])

    marks = []
    for _ in range(4):
        prepare(5)
        marks.append(gemv.stepped(9, weight))  # 9 rows pad as 5 do (16)
    assert marks == [False, False, True, False]
    assert tuned == [5]  # prepared at each step; tuned on the one after the third step
    assert gemv.due(16, here) and not gemv.due(1, here) and not gemv.due(16, other.device)
    assert [gemv.stepped(1, other) for _ in range(3)] == [False, False, True]
    prepare(1)
    assert tuned == [5]  # one row on this device has taken no step yet
    assert [gemv.stepped(100, weight) for _ in range(5)] == [False] * 5
    assert not gemv.due(100, here)  # 100 rows (padded as 64) counted nothing
    gated: list[int] = []
    monkeypatch.setattr(gemv, "tune_gated", lambda rows, weights, silu: gated.append(rows))
    gemv.prepare(16, [], gated=[(weight, None)], silu=abs)  # a gate/up projection alone
    assert gated == [16] and tuned == [5]
