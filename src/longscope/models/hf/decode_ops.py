"""Triton kernels for the graph decode step on CUDA: attention over each row's written keys,
rotary embedding with the cache write, the residual add with RMSNorm, and the SiLU-gated product
over a merged gate/up projection.

Why (a profile of one decode step after 32K on an H200, BENCHMARKS.md, issue 46): the step was
some 38 kernels a layer, most of them tiny elementwise ones, at ~2 us each inside a CUDA graph;
and attention read the whole fixed cache, written or not. These kernels make a layer 10 calls
(merged QKV and gate/up matmuls included; 352 kernels a 7B step against 1,087) and attention
reads only the keys each row has written (its slot + 1), split over many blocks and merged by
log-sum-exp (flash-decoding, as
SGLang's `decode_attention.py` and vLLM's split-KV kernels do). Rotary and RMSNorm round as
transformers does in 16 bits; attention accumulates in float32 (as flash attention does).
Imported only where CUDA (or Triton's interpreter, in tests) and Triton are.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import torch
import triton
import triton.language as tl

SPLIT_TARGET = 1024
"""Programs the attention's first stage aims at (about eight per multiprocessor of an H200)."""
MIN_SPLIT = 256
"""Keys a program reads at least: fewer and the merge costs more than the split saves."""
MERGE_DIMS = 32
"""Head dims one merge program weighs (a head's dims are cut over programs)."""
BLOCK_N = 128
"""Split sizes are whole multiples of this many keys (the inner step is tuned, at most this)."""


def _split_configs() -> list[Any]:
    # Measured per card on first use (before a graph is captured): keys per inner step and warps.
    return [
        triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages)
        for block, warps, stages in ((64, 4, 2), (128, 4, 2), (64, 4, 3), (128, 8, 3), (32, 2, 3))
    ]


def _tuned(kernel: Any) -> Any:
    """Autotune on a GPU; Triton's CPU interpreter (tests) runs the first configuration."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return kernel
    return triton.autotune(configs=_split_configs(), key=["DIM", "GROUP_PAD"])(kernel)


@triton.jit
def _attention_split_body(
    q_ptr, k_ptr, v_ptr, valid_ptr, len_ptr, part_ptr, lse_ptr,
    scale, split_size, splits,
    stride_qb, stride_kb, stride_kh, stride_vb, stride_vh, stride_mb,
    GROUPS: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr,
    IEEE: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    split = tl.program_id(2)
    heads = tl.num_programs(1)
    length = tl.load(len_ptr + batch)
    start = split * split_size
    end = tl.minimum(start + split_size, length)
    groups = tl.arange(0, GROUP_PAD)
    dims = tl.arange(0, DIM)
    real = groups < GROUPS
    q_rows = q_ptr + batch * stride_qb + (head * GROUPS + groups)[:, None] * DIM + dims[None, :]
    query = tl.load(q_rows, mask=real[:, None], other=0.0)
    best = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    total = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, DIM], tl.float32)
    keys = k_ptr + batch * stride_kb + head * stride_kh
    values = v_ptr + batch * stride_vb + head * stride_vh
    for first in range(start, end, BLOCK):
        cols = first + tl.arange(0, BLOCK)
        inside = cols < end
        ok = tl.load(valid_ptr + batch * stride_mb + cols, mask=inside, other=0) != 0
        key = tl.load(keys + cols[:, None] * DIM + dims[None, :], mask=inside[:, None], other=0.0)
        if IEEE:
            scores = tl.dot(query, tl.trans(key), input_precision="ieee")
        else:
            scores = tl.dot(query, tl.trans(key))
        scores = tl.where(ok[None, :], scores * scale, float("-inf"))
        new_best = tl.maximum(best, tl.max(scores, 1))
        shift = tl.where(new_best == float("-inf"), 0.0, new_best)
        probs = tl.exp(scores - shift[:, None])
        keep = tl.exp(best - shift)
        total = total * keep + tl.sum(probs, 1)
        value = tl.load(
            values + cols[:, None] * DIM + dims[None, :], mask=inside[:, None], other=0.0
        )
        if IEEE:
            acc = acc * keep[:, None] + tl.dot(probs, value.to(tl.float32), input_precision="ieee")
        else:
            acc = acc * keep[:, None] + tl.dot(probs.to(value.dtype), value)
        best = new_best
    empty = total == 0.0
    lse = tl.where(empty, float("-inf"), best + tl.log(tl.where(empty, 1.0, total)))
    out = acc / tl.where(empty, 1.0, total)[:, None]
    slot = (batch * heads + head) * splits + split
    tl.store(lse_ptr + slot * GROUP_PAD + groups, lse, mask=real)
    tl.store(
        part_ptr + (slot * GROUP_PAD + groups)[:, None] * DIM + dims[None, :], out,
        mask=real[:, None],
    )  # fmt: skip


_attention_split_kernel = _tuned(_attention_split_body)


@triton.jit
def _attention_merge_kernel(
    part_ptr, lse_ptr, out_ptr, stride_ob, splits,
    GROUPS: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, SPLITS_PAD: tl.constexpr,
    CHUNK: tl.constexpr, DBLOCK: tl.constexpr,
):  # fmt: skip
    # One program per query head and DBLOCK of its dims: every split's log-sum-exp at once,
    # then the partial outputs weighted by them, CHUNK splits at a time. Cutting the head's
    # dims over programs (was one program per head) puts 4x the programs on the card and
    # shortens each one's chain of dependent loads: the merge was latency-bound (0.33 ms of a
    # 5.2 ms step after 32K on an H200 for 1.9 MB of partials).
    batch = tl.program_id(0).to(tl.int64)
    qhead = tl.program_id(1)
    heads = tl.num_programs(1)
    kv = qhead // GROUPS
    group = qhead % GROUPS
    kv_heads = heads // GROUPS
    base = (batch * kv_heads + kv) * splits
    every = tl.arange(0, SPLITS_PAD)
    lse = tl.load(
        lse_ptr + (base + every) * GROUP_PAD + group, mask=every < splits, other=float("-inf")
    )
    best = tl.max(lse, 0)
    shift = tl.where(best == float("-inf"), 0.0, best)
    total = tl.sum(tl.exp(lse - shift), 0)
    dims = tl.program_id(2) * DBLOCK + tl.arange(0, DBLOCK)
    acc = tl.zeros([DBLOCK], tl.float32)
    for first in range(0, splits, CHUNK):
        some = first + tl.arange(0, CHUNK)
        inside = some < splits
        weight = tl.exp(
            tl.load(
                lse_ptr + (base + some) * GROUP_PAD + group, mask=inside, other=float("-inf")
            ) - shift
        )  # fmt: skip
        rows = part_ptr + ((base + some) * GROUP_PAD + group)[:, None] * DIM + dims[None, :]
        part = tl.load(rows, mask=inside[:, None], other=0.0)
        acc += tl.sum(part * weight[:, None], 0)
    out = acc / tl.where(total == 0.0, 1.0, total)
    tl.store(out_ptr + batch * stride_ob + qhead * DIM + dims, out.to(out_ptr.dtype.element_ty))


@triton.jit
def _rope_store_kernel(
    qkv_ptr, cos_ptr, sin_ptr, q_out_ptr, k_ptr, v_ptr, slot_ptr,
    stride_xb, stride_cb, stride_kb, stride_kh, stride_vb, stride_vh,
    HEADS: tl.constexpr, KV_HEADS: tl.constexpr, HALF: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    cols = tl.arange(0, HALF)
    row = qkv_ptr + batch * stride_xb
    if head < HEADS + KV_HEADS:
        src = row + head * (2 * HALF) + cols
        first = tl.load(src).to(tl.float32)
        second = tl.load(src + HALF).to(tl.float32)
        dtype = q_out_ptr.dtype.element_ty
        angle = cos_ptr + batch * stride_cb + cols
        cos_a = tl.load(angle).to(tl.float32)
        cos_b = tl.load(angle + HALF).to(tl.float32)
        sin_a = tl.load(sin_ptr + batch * stride_cb + cols).to(tl.float32)
        sin_b = tl.load(sin_ptr + batch * stride_cb + cols + HALF).to(tl.float32)
        # x * cos + rotate_half(x) * sin, each product rounded as transformers' 16-bit ops are.
        low = (first * cos_a).to(dtype).to(tl.float32) + (-second * sin_a).to(dtype).to(tl.float32)
        high = (second * cos_b).to(dtype).to(tl.float32) + (first * sin_b).to(dtype).to(tl.float32)
        if head < HEADS:
            dst = q_out_ptr + (batch * HEADS + head) * (2 * HALF) + cols
        else:
            slot = tl.load(slot_ptr + batch)
            dst = k_ptr + batch * stride_kb + (head - HEADS) * stride_kh + slot * (2 * HALF) + cols
        tl.store(dst, low.to(dtype))
        tl.store(dst + HALF, high.to(dtype))
    else:
        kv = head - HEADS - KV_HEADS
        slot = tl.load(slot_ptr + batch)
        src = row + (HEADS + KV_HEADS + kv) * (2 * HALF) + cols
        dst = v_ptr + batch * stride_vb + kv * stride_vh + slot * (2 * HALF) + cols
        tl.store(dst, tl.load(src))
        tl.store(dst + HALF, tl.load(src + HALF))


@triton.jit
def _add_rms_norm_kernel(
    residual_ptr, x_ptr, weight_ptr, out_ptr, width, eps,
    ADD: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    residual = tl.load(residual_ptr + row * width + cols, mask=mask, other=0.0)
    dtype = residual.dtype
    if ADD:
        x = tl.load(x_ptr + row * width + cols, mask=mask, other=0.0)
        residual = (residual.to(tl.float32) + x.to(tl.float32)).to(dtype)
        tl.store(residual_ptr + row * width + cols, residual, mask=mask)
    wide = residual.to(tl.float32)
    variance = tl.sum(wide * wide, 0) / width
    normed = (wide * (1.0 / tl.sqrt(variance + eps))).to(dtype)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    out = (weight.to(tl.float32) * normed.to(tl.float32)).to(dtype)
    tl.store(out_ptr + row * width + cols, out, mask=mask)


@triton.jit
def _silu_mul_packed_kernel(x_ptr, out_ptr, width, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < width
    gate = tl.load(x_ptr + row * 2 * width + cols, mask=mask, other=0.0)
    up = tl.load(x_ptr + row * 2 * width + width + cols, mask=mask, other=0.0)
    dtype = gate.dtype
    wide = gate.to(tl.float32)
    activated = (wide / (1.0 + tl.exp(-wide))).to(dtype)
    tl.store(
        out_ptr + row * width + cols,
        (activated.to(tl.float32) * up.to(tl.float32)).to(dtype),
        mask=mask,
    )


def _gemm_configs() -> list[Any]:
    # Output columns a program makes, the K step, warps, pipeline depth: tried per shape on
    # first use (before a graph is captured). Few, since each is compiled per row padding.
    return [
        triton.Config({"BLOCK_N": n, "BLOCK_K": k}, num_warps=warps, num_stages=stages)
        for n, k, warps, stages in ((16, 256, 4, 4), (32, 256, 4, 4), (16, 512, 4, 3), (64, 128, 4, 4))
    ]  # fmt: skip


def _quick_bench(fn: Any, quantiles: Any) -> Any:
    # Triton's default (25 ms warm-up, 100 ms timed per config) costs seconds per shape.
    return triton.testing.do_bench(fn, warmup=5, rep=15, quantiles=quantiles)


@triton.jit
def _skinny_gemm_body(
    x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_om,
    HAS_BIAS: tl.constexpr, M_PAD: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # out (M, N) = x (M, K) @ w (N, K).T (+ bias) for a few rows: each program streams
    # BLOCK_N whole weight rows once, so the weights are read once at any M <= M_PAD.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, M_PAD)
    steps = tl.arange(0, BLOCK_K)
    in_cols = cols < N
    in_rows = rows < M
    weights = w_ptr + cols[:, None].to(tl.int64) * stride_wn
    if M_PAD == 1:
        # One row: products on the CUDA cores, summed once at the end (a 16-row matrix
        # instruction would do 16x the arithmetic for nothing).
        wide = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for first in range(0, K, BLOCK_K):
            ks = first + steps
            in_k = ks < K
            x1 = tl.load(x_ptr + ks, mask=in_k, other=0.0).to(tl.float32)
            w = tl.load(weights + ks[None, :], mask=in_cols[:, None] & in_k[None, :], other=0.0)
            wide += w.to(tl.float32) * x1[None, :]
        acc = tl.sum(wide, 1)[None, :]
    else:
        acc = tl.zeros([M_PAD, BLOCK_N], dtype=tl.float32)
        for first in range(0, K, BLOCK_K):
            ks = first + steps
            in_k = ks < K
            x = tl.load(
                x_ptr + rows[:, None] * stride_xm + ks[None, :],
                mask=in_rows[:, None] & in_k[None, :], other=0.0,
            )  # fmt: skip
            w = tl.load(weights + ks[None, :], mask=in_cols[:, None] & in_k[None, :], other=0.0)
            acc = tl.dot(x, tl.trans(w), acc)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=in_cols, other=0.0).to(tl.float32)[None, :]
    tl.store(
        out_ptr + rows[:, None] * stride_om + cols[None, :], acc.to(out_ptr.dtype.element_ty),
        mask=in_rows[:, None] & in_cols[None, :],
    )  # fmt: skip


def _gemm_tuned(kernel: Any) -> Any:
    if os.environ.get("TRITON_INTERPRET") == "1":
        return kernel
    options = inspect.signature(triton.autotune).parameters
    extra: dict[str, Any] = {"do_bench": _quick_bench} if "do_bench" in options else {}
    if "cache_results" in options:
        extra["cache_results"] = True  # on disk with the compiled kernels: tuned once a card
    return triton.autotune(configs=_gemm_configs(), key=["M_PAD", "N", "K", "HAS_BIAS"], **extra)(
        kernel
    )


_skinny_gemm_kernel = _gemm_tuned(_skinny_gemm_body)

GEMM_ROWS = 64
"""Rows (batch) up to which `linear` considers the skinny GEMM."""
_GEMM_CHOICE: dict[tuple[Any, ...], bool] = {}
"""(padded rows, N, K, bias, dtype, device) -> whether the skinny GEMM ran faster there."""


def _rows_pad(rows: int) -> int:
    # One row alone (no matrix instruction), else the matrix instruction's 16 rows or more.
    return 1 if rows == 1 else max(16, triton.next_power_of_2(rows))


def skinny_gemm(x: Any, weight: Any, bias: Any | None) -> Any:
    """Return `x @ weight.T + bias` (x (M, K) contiguous, M <= `GEMM_ROWS`) by the Triton
    skinny GEMM, accumulated in float32 and rounded once (as cuBLAS does)."""
    rows, width = x.shape
    n = weight.shape[0]
    out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    pad = _rows_pad(rows)
    extra = {"BLOCK_N": 16, "BLOCK_K": 64} if os.environ.get("TRITON_INTERPRET") == "1" else {}
    _skinny_gemm_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]),)](
        x, weight, bias if bias is not None else weight, out, rows, n, width,
        x.stride(0), weight.stride(0), out.stride(0),
        HAS_BIAS=bias is not None, M_PAD=pad, **extra,
    )  # fmt: skip
    return out


def _gemm_wins(x: Any, weight: Any, bias: Any | None) -> bool:
    # Both ways on this shape, timed by device events after a warm-up (which autotunes the
    # Triton one); the skinny GEMM only where its answer agrees and it is faster.
    linear_ = torch.nn.functional.linear
    want = linear_(x, weight, bias)
    got = skinny_gemm(x, weight, bias)
    error = ((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30)).item()
    if not error < 1e-2:
        return False
    times = []
    for run in (lambda: linear_(x, weight, bias), lambda: skinny_gemm(x, weight, bias)):
        for _ in range(3):
            run()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times[1] < 0.98 * times[0]


def linear(x: Any, weight: Any, bias: Any | None = None) -> Any:
    """Return `torch.nn.functional.linear(x, weight, bias)` for the decode step: by the skinny
    GEMM where, for this shape (16-bit, at most `GEMM_ROWS` rows), it measured faster than
    torch's on this card (measured once, never while a graph is being captured)."""
    rows = x.shape[0]
    if (
        x.dim() != 2
        or rows > GEMM_ROWS
        or x.dtype not in (torch.bfloat16, torch.float16)
        or weight.dtype != x.dtype
        or x.device.type != "cuda"
        or not x.is_contiguous()
        or weight.stride(1) != 1
    ):
        return torch.nn.functional.linear(x, weight, bias)
    pad = _rows_pad(rows)
    key = (pad, weight.shape[0], x.shape[1], bias is not None, x.dtype, x.device)
    use = _GEMM_CHOICE.get(key)
    if use is None:
        if torch.cuda.is_current_stream_capturing():
            return torch.nn.functional.linear(x, weight, bias)
        use = _GEMM_CHOICE[key] = _gemm_wins(x, weight, bias)
    if use:
        return skinny_gemm(x, weight, bias)
    return torch.nn.functional.linear(x, weight, bias)


def gemm_choices() -> dict[str, bool]:
    """Return the shapes `linear` has measured and whether the skinny GEMM won each."""
    return {f"{k[0]}x{k[1]}x{k[2]}{'+b' if k[3] else ''}": v for k, v in _GEMM_CHOICE.items()}


def attention_fits(head_dim: int, groups: int, dtype: Any) -> bool:
    """Return whether `attention` takes this shape: a power-of-two head of 16 or more, 16-bit
    or float32 values, and a group of query heads per KV head (any size up to 64)."""
    return (
        head_dim >= 16
        and head_dim & (head_dim - 1) == 0
        and head_dim <= 256
        and 1 <= groups <= 64
        and dtype in (torch.bfloat16, torch.float16, torch.float32)
    )


def splits_for(batch: int, kv_heads: int, capacity: int) -> int:
    """Return how many splits the attention's first stage cuts each row's keys into: enough
    programs to fill the card (`SPLIT_TARGET`), each reading at least `MIN_SPLIT` keys."""
    want = max(1, -(-SPLIT_TARGET // max(1, batch * kv_heads)))
    most = max(1, capacity // MIN_SPLIT)
    return min(want, most)


class DecodeAttention:
    """Attention of one query per row over a fixed cache (batch, kv_heads, capacity, dim),
    reading each row's keys up to its length; its scratch buffers are allocated once, so the
    call can be captured in a CUDA graph and replayed."""

    def __init__(
        self,
        batch: int,
        heads: int,
        kv_heads: int,
        dim: int,
        capacity: int,
        dtype: Any,
        device: Any,
    ) -> None:
        self.heads, self.kv_heads, self.dim = heads, kv_heads, dim
        self.groups = heads // kv_heads
        self.group_pad = max(16, triton.next_power_of_2(self.groups))
        self.splits = splits_for(batch, kv_heads, capacity)
        per = -(-capacity // self.splits)
        self.split_size = -(-per // BLOCK_N) * BLOCK_N
        shape = (batch, kv_heads, self.splits, self.group_pad)
        self.part = torch.empty((*shape, dim), dtype=torch.float32, device=device)
        self.lse = torch.empty(shape, dtype=torch.float32, device=device)
        self.ieee = dtype == torch.float32

    def __call__(
        self, query: Any, keys: Any, values: Any, valid: Any, lengths: Any, scale: float
    ) -> Any:
        """Return (batch, heads * dim) for `query` (batch, heads, dim), contiguous."""
        batch = query.shape[0]
        out = torch.empty((batch, self.heads * self.dim), dtype=query.dtype, device=query.device)
        grid = (batch, self.kv_heads, self.splits)
        extra = {"BLOCK": BLOCK_N} if os.environ.get("TRITON_INTERPRET") == "1" else {}
        _attention_split_kernel[grid](
            query, keys, values, valid.view(torch.uint8), lengths, self.part, self.lse,
            float(scale), self.split_size, self.splits,
            query.stride(0), keys.stride(0), keys.stride(1), values.stride(0), values.stride(1),
            valid.stride(0),
            GROUPS=self.groups, GROUP_PAD=self.group_pad, DIM=self.dim, IEEE=self.ieee, **extra,
        )  # fmt: skip
        pad = triton.next_power_of_2(self.splits)
        dblock = min(self.dim, MERGE_DIMS)
        _attention_merge_kernel[(batch, self.heads, self.dim // dblock)](
            self.part, self.lse, out, out.stride(0), self.splits,
            GROUPS=self.groups, GROUP_PAD=self.group_pad, DIM=self.dim,
            SPLITS_PAD=pad, CHUNK=min(pad, 4096 // dblock), DBLOCK=dblock,
        )  # fmt: skip
        return out


def rope_store(
    qkv: Any, cos: Any, sin: Any, keys: Any, values: Any, slot: Any, heads: int, kv_heads: int
) -> Any:
    """Rotate the query and key heads of `qkv` (batch, (heads + 2 kv_heads) * dim), write the
    key and value heads into `keys` and `values` at each row's `slot`; return the rotated query
    (batch, heads, dim)."""
    batch = qkv.shape[0]
    dim = keys.shape[-1]
    query = torch.empty((batch, heads, dim), dtype=qkv.dtype, device=qkv.device)
    _rope_store_kernel[(batch, heads + 2 * kv_heads)](
        qkv, cos, sin, query, keys, values, slot,
        qkv.stride(0), cos.stride(0), keys.stride(0), keys.stride(1), values.stride(0),
        values.stride(1),
        HEADS=heads, KV_HEADS=kv_heads, HALF=dim // 2, enable_fp_fusion=False,
    )  # fmt: skip
    return query


def add_rms_norm(residual: Any, x: Any | None, weight: Any, eps: float) -> Any:
    """Add `x` into `residual` in place (when given) and return RMSNorm(residual) * weight, as
    transformers' Llama RMSNorm computes it (float32 normalisation, rounded, times the weight)."""
    batch, width = residual.shape
    out = torch.empty_like(residual)
    _add_rms_norm_kernel[(batch,)](
        residual, x if x is not None else residual, weight, out, width, float(eps),
        ADD=x is not None, BLOCK=triton.next_power_of_2(width), enable_fp_fusion=False,
    )  # fmt: skip
    return out


def silu_mul_packed(x: Any) -> Any:
    """Return `silu(gate) * up` for `x` = [gate | up] (batch, 2 * width), rounded as torch's two
    kernels round."""
    batch, double = x.shape
    width = double // 2
    out = torch.empty((batch, width), dtype=x.dtype, device=x.device)
    block = 1024
    _silu_mul_packed_kernel[(batch, triton.cdiv(width, block))](
        x, out, width, BLOCK=block, enable_fp_fusion=False
    )
    return out
