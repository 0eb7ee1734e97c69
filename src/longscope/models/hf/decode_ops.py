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

import os
import threading
from typing import Any

import torch
import triton
import triton.language as tl

from longscope.models.hf import split_tuning
from longscope.models.hf.gemv import (
    Parts,
    launch_options,
    operand,
    operand_args,
    pdl_enter,
    silu_product,
)
from longscope.models.hf.split_tuning import _split_configs, load_class, tuned_kernel
from longscope.models.hf.triton_builds import build_at_once

SPLIT_TARGET = 2048
"""Programs the attention's first stage aims at (about 16 per multiprocessor of an H200). Was
1,024: batched rows of different lengths left programs idle (an H200, same process, issue 46:
8 rows 5.000 -> 4.941 ms a step, 64 rows 8.196 -> 8.046 ms; one row after 128K 6.419 -> 6.416
ms; after 32K and less one row is held by `MIN_SPLIT`, not by this)."""
MIN_SPLIT = 256
"""Keys a program reads at least: fewer and the merge costs more than the split saves."""
MERGE_DIMS = 32
"""Head dims one merge program weighs at least (a head's dims are cut over programs)."""
MERGE_PROGRAMS = 2048
"""... and wider past this many programs, where the merge kernel runs (an H200, issue 46, 28 in
a graph: 64 rows of 8 splits unfused 9.35 us at 32 dims, 7.38 at 128; 1 row of 128: 2.0, 5.83)."""
FUSED_MERGE_SPLITS = 16
"""Up to this many splits a row's KV head, the last of their programs to finish (an arrival
counter) merges them: no merge launch (64 rows after 4K on an H200: 297 -> 269 launches, -0.2% a
step). More, and one program's serial merge would outlast the merge kernel's many."""
BLOCK_N = 128
"""Split sizes are whole multiples of this many keys (the inner step is tuned, at most this)."""
BALANCED_SPLITS = True
"""Each row cuts its own keys into the splits, not the capacity (a row at a quarter of it kept a
quarter of its programs busy). An H200, batched 8K answers, same process, issue 46: 64 rows
7.873 -> 7.767 ms a step (captures aside), 32 rows 6.223 -> 6.199."""
NORM_WARPS = 16
"""Warps of the residual add + RMSNorm's one program per row (an H200, issue 46, 28 in a graph,
3,584 wide: 8 rows of 4 slices 3.06 us at 4 warps, 2.06 at 16; 64 rows of 2 2.24 and 1.75)."""


_SPLIT_LOCK = threading.Lock()
"""Triton's autotuner keeps a launch's arguments on itself while it runs, tuning included: engines
on several devices launching the split stage at once would see each other's (issue 46 review)."""


# `splits` and `load_class` change with every batch and length: specialized by value class (1,
# multiples of 16, the rest), each configuration could be built up to nine times on a card's
# first run (issue 46, an H200's fresh machine: RULER through the CLI spent 9.5 s in captures and
# 15.2 s in decode specialized, 1.1 s and 7.6 s not). Neither shapes an aligned address.
@triton.jit(do_not_specialize=["splits", "load_class"])
def _attention_split_body(
    q_ptr, k_ptr, v_ptr, valid_ptr, len_ptr, part_ptr, lse_ptr, count_ptr, out_ptr,
    scale, split_size, splits, load_class,
    stride_qb, stride_kb, stride_kh, stride_vb, stride_vh, stride_mb, stride_ob,
    GROUPS: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr,
    IEEE: tl.constexpr, PDL: tl.constexpr, MERGE: tl.constexpr, BALANCED: tl.constexpr,
):  # fmt: skip
    pdl_enter(PDL)
    batch = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    split = tl.program_id(2)
    heads = tl.num_programs(1)
    length = tl.load(len_ptr + batch)
    if BALANCED:  # the row's own keys over its splits, in whole BLOCK_N steps
        split_size = tl.cdiv(tl.cdiv(length, splits), 128) * 128
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
    if MERGE:
        # Every thread's stores before the arrival; its acq_rel makes them visible to the last
        # program, whose loads bypass L1 (.cg).
        tl.debug_barrier()
        arrived = tl.atomic_add(count_ptr + batch * heads + head, 1, sem="acq_rel", scope="gpu")
        if arrived == splits - 1:
            rows = (batch * heads + head) * splits * GROUP_PAD + groups
            lses, parts = lse_ptr + rows, part_ptr + rows[:, None] * DIM + dims[None, :]
            top = tl.full([GROUP_PAD], float("-inf"), tl.float32)
            for index in range(0, splits):
                each = tl.load(
                    lses + index * GROUP_PAD, mask=real, other=float("-inf"), cache_modifier=".cg"
                )
                top = tl.maximum(top, each)
            shift = tl.where(top == float("-inf"), 0.0, top)
            weight_sum = tl.zeros([GROUP_PAD], tl.float32)
            merged = tl.zeros([GROUP_PAD, DIM], tl.float32)
            for index in range(0, splits):
                each = tl.load(
                    lses + index * GROUP_PAD, mask=real, other=float("-inf"), cache_modifier=".cg"
                )
                weight = tl.exp(each - shift)
                part = tl.load(
                    parts + index * GROUP_PAD * DIM, mask=real[:, None], cache_modifier=".cg"
                )
                weight_sum += weight
                merged += part * weight[:, None]
            merged = merged / tl.where(weight_sum == 0.0, 1.0, weight_sum)[:, None]
            dst = (
                out_ptr
                + batch * stride_ob
                + (head * GROUPS + groups)[:, None] * DIM
                + dims[None, :]
            )
            tl.store(dst, merged.to(out_ptr.dtype.element_ty), mask=real[:, None])
            tl.atomic_xchg(count_ptr + batch * heads + head, 0)  # for the next launch


_attention_split_kernel = tuned_kernel(_attention_split_body)


@triton.jit(do_not_specialize=["splits"])  # one build for every split count
def _attention_merge_kernel(
    part_ptr, lse_ptr, out_ptr, stride_ob, splits,
    GROUPS: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, SPLITS_PAD: tl.constexpr,
    CHUNK: tl.constexpr, DBLOCK: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    # One program per query head and DBLOCK of its dims: every split's log-sum-exp at once,
    # then the partial outputs weighted by them, CHUNK splits at a time. Cutting the head's
    # dims over programs (was one program per head) puts 4x the programs on the card and
    # shortens each one's chain of dependent loads: the merge was latency-bound (0.33 ms of a
    # 5.2 ms step after 32K on an H200 for 1.9 MB of partials).
    pdl_enter(PDL)
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
    qkv_ptr, bias_ptr, split_stride, cos_ptr, sin_ptr, q_out_ptr, k_ptr, v_ptr, slot_ptr,
    stride_xb, stride_cb, stride_kb, stride_kh, stride_vb, stride_vh,
    HEADS: tl.constexpr, KV_HEADS: tl.constexpr, HALF: tl.constexpr, SPLITS: tl.constexpr,
    HAS_BIAS: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    pdl_enter(PDL)
    batch = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    cols = tl.arange(0, HALF)
    every = cols < HALF
    row = batch * stride_xb
    dtype = q_out_ptr.dtype.element_ty
    if head < HEADS + KV_HEADS:
        col = head * (2 * HALF) + cols
        first = operand(qkv_ptr, row + col, col, every, bias_ptr, split_stride, SPLITS, HAS_BIAS)
        second = operand(
            qkv_ptr, row + col + HALF, col + HALF, every, bias_ptr, split_stride, SPLITS, HAS_BIAS
        )  # fmt: skip
        first = first.to(dtype).to(tl.float32)
        second = second.to(dtype).to(tl.float32)
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
        col = (HEADS + KV_HEADS + kv) * (2 * HALF) + cols
        dst = v_ptr + batch * stride_vb + kv * stride_vh + slot * (2 * HALF) + cols
        # (names of their own: Triton types a name alike in both branches)
        value_a = operand(qkv_ptr, row + col, col, every, bias_ptr, split_stride, SPLITS, HAS_BIAS)
        value_b = operand(
            qkv_ptr, row + col + HALF, col + HALF, every, bias_ptr, split_stride, SPLITS, HAS_BIAS
        )  # fmt: skip
        tl.store(dst, value_a.to(dtype))
        tl.store(dst + HALF, value_b.to(dtype))


@triton.jit
def _add_rms_norm_kernel(
    residual_ptr, x_ptr, bias_ptr, split_stride, weight_ptr, out_ptr, width, eps,
    ADD: tl.constexpr, BLOCK: tl.constexpr, SPLITS: tl.constexpr, HAS_BIAS: tl.constexpr,
    PDL: tl.constexpr,
):  # fmt: skip
    pdl_enter(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    residual = tl.load(residual_ptr + row * width + cols, mask=mask, other=0.0)
    dtype = residual.dtype
    if ADD:
        x = operand(x_ptr, row * width + cols, cols, mask, bias_ptr, split_stride, SPLITS, HAS_BIAS)
        x = x.to(dtype)
        residual = (residual.to(tl.float32) + x.to(tl.float32)).to(dtype)
        tl.store(residual_ptr + row * width + cols, residual, mask=mask)
    wide = residual.to(tl.float32)
    variance = tl.sum(wide * wide, 0) / width
    normed = (wide * (1.0 / tl.sqrt(variance + eps))).to(dtype)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    out = (weight.to(tl.float32) * normed.to(tl.float32)).to(dtype)
    tl.store(out_ptr + row * width + cols, out, mask=mask)


@triton.jit
def _silu_mul_packed_kernel(
    x_ptr, bias_ptr, split_stride, out_ptr, width,
    BLOCK: tl.constexpr, SPLITS: tl.constexpr, HAS_BIAS: tl.constexpr, PDL: tl.constexpr,
):  # fmt: skip
    pdl_enter(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < width
    base = row * 2 * width
    dtype = out_ptr.dtype.element_ty
    gate = operand(x_ptr, base + cols, cols, mask, bias_ptr, split_stride, SPLITS, HAS_BIAS)
    up = operand(
        x_ptr, base + width + cols, width + cols, mask, bias_ptr, split_stride, SPLITS, HAS_BIAS
    )  # fmt: skip
    tl.store(out_ptr + row * width + cols, silu_product(gate, up, dtype), mask=mask)


def attention_choices() -> dict[str, str]:
    """Return the split stage's tuned configurations: (dims, group padding, load class) ->
    keys per inner step, warps, stages."""
    cache = getattr(_attention_split_kernel, "cache", {}) or {}
    return {
        "x".join(str(part) for part in key[:3]): f"{config.kwargs.get('BLOCK')}"
        f"/w{config.num_warps}s{config.num_stages}"
        for key, config in cache.items()
    }


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
        self.load_class = load_class(batch * kv_heads * self.splits, self.split_size)
        # arrivals per (row, KV head) for the split stage's own merge; its last program puts
        # the count back to zero, so a captured graph replays with it zero
        self.count = torch.zeros(batch * kv_heads, dtype=torch.int32, device=device)
        self.tuned = False

    def fuses(self, fused: bool = True) -> bool:
        """Return whether a call with `fused` merges in the split stage (few enough splits)."""
        return fused and self.splits <= FUSED_MERGE_SPLITS

    def stepped(self) -> bool:
        """Count a decode step of this launch class; return True on the one that makes it `due`."""
        return split_tuning.stepped(self._launch_key())

    def due(self) -> bool:
        """Return whether this launch class has decoded long enough to be tuned (`split_tuning`)."""
        return split_tuning.due(self._launch_key())

    def _launch_key(self) -> tuple[Any, ...]:
        return (self.dim, self.group_pad, self.load_class, BALANCED_SPLITS, str(self.part.device))

    def tune(
        self,
        keys: Any,
        values: Any,
        valid: Any,
        lengths: Any,
        pdl: bool = False,
        fused: bool = True,
    ) -> None:
        """Run the attention once as the calls will (a zero query; its answer is dropped) so that
        the split stage's configuration for this launch class is chosen before a graph is
        captured; the calls after it run that configuration (before it, `split_tuning.UNTUNED`)."""
        if self.tuned:
            return
        query = torch.zeros(
            (keys.shape[0], self.heads, self.dim), dtype=keys.dtype, device=keys.device
        )
        # every configuration the tuner times, built at once (one by one: 3.9 s, issue 46)
        out = torch.empty_like(query).view(query.shape[0], -1) if self.fuses(fused) else None
        grid, args, options = self._split_call(query, keys, values, valid, lengths, 1.0, pdl, out)
        configs = [{**options, **config.all_kwargs()} for config in _split_configs()]
        build_at_once(_attention_split_body, [(grid, args, each) for each in configs])
        self.tuned = True
        try:
            self(query, keys, values, valid, lengths, 1.0, pdl, fused)
        except Exception:  # the tuner's own failure (out of memory timing): untuned, as before
            self.tuned = False
            raise

    def _split(
        self,
        query: Any,
        keys: Any,
        values: Any,
        valid: Any,
        lengths: Any,
        scale: float,
        pdl: bool,
        out: Any = None,
    ) -> None:
        # `out` given: the split stage merges into it itself
        grid, args, options = self._split_call(query, keys, values, valid, lengths, scale, pdl, out)
        if not (self.tuned or "BLOCK" in options):  # (the interpreter's BLOCK: no autotuner)
            _attention_split_body[grid](*args, **options, **split_tuning.untuned_options())
            return
        with _SPLIT_LOCK:
            _attention_split_kernel[grid](*args, **options)

    def _split_call(
        self, query: Any, keys: Any, values: Any, valid: Any, lengths: Any, scale: float,
        pdl: bool, out: Any,
    ) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:  # fmt: skip
        grid = (query.shape[0], self.kv_heads, self.splits)
        extra = {"BLOCK": BLOCK_N} if os.environ.get("TRITON_INTERPRET") == "1" else {}
        merge = out is not None
        args = (
            query, keys, values, valid.view(torch.uint8), lengths, self.part, self.lse,
            self.count, out if merge else self.part,
            float(scale), self.split_size, self.splits, self.load_class,
            query.stride(0), keys.stride(0), keys.stride(1), values.stride(0), values.stride(1),
            valid.stride(0), out.stride(0) if merge else 0,
        )  # fmt: skip
        options = dict(
            GROUPS=self.groups, GROUP_PAD=self.group_pad, DIM=self.dim, IEEE=self.ieee,
            PDL=pdl, MERGE=merge, BALANCED=BALANCED_SPLITS, **extra, **launch_options(pdl),
        )  # fmt: skip
        return grid, args, options

    def __call__(
        self,
        query: Any,
        keys: Any,
        values: Any,
        valid: Any,
        lengths: Any,
        scale: float,
        pdl: bool = False,
        fused: bool = True,
    ) -> Any:
        """Return (batch, heads * dim) for `query` (batch, heads, dim), contiguous; `pdl`: the
        stages launched programmatically dependent; `fused`: merged by the split stage where
        it has few splits (`fuses`), else by a merge kernel."""
        batch = query.shape[0]
        out = torch.empty((batch, self.heads * self.dim), dtype=query.dtype, device=query.device)
        if self.fuses(fused):
            self._split(query, keys, values, valid, lengths, scale, pdl, out)
        else:
            self._split(query, keys, values, valid, lengths, scale, pdl)
            self.merge(out, pdl)
        return out

    def merge(self, out: Any, pdl: bool = False) -> None:
        """Write the split stage's last partial outputs, weighted by their log-sum-exps, into
        `out` (batch, heads * dim)."""
        batch = out.shape[0]
        pad, chunk, dblock = merge_layout(batch, self.heads, self.dim, self.splits)
        _attention_merge_kernel[(batch, self.heads, self.dim // dblock)](
            self.part, self.lse, out, out.stride(0), self.splits,
            GROUPS=self.groups, GROUP_PAD=self.group_pad, DIM=self.dim,
            SPLITS_PAD=pad, CHUNK=chunk, DBLOCK=dblock, PDL=pdl, **launch_options(pdl),
        )  # fmt: skip


def merge_layout(batch: int, heads: int, dim: int, splits: int) -> tuple[int, int, int]:
    """Return the merge kernel's (splits padded, splits a pass, dims a program) for `batch` rows
    of `heads` heads of `dim` over `splits` splits: its build's constants (`build_ahead`)."""
    pad = triton.next_power_of_2(splits)
    dblock = min(dim, MERGE_DIMS)
    while dblock < dim and batch * heads * (dim // dblock) > MERGE_PROGRAMS:
        dblock *= 2
    return pad, min(pad, 4096 // dblock), dblock


def rope_store(
    qkv: Any,
    cos: Any,
    sin: Any,
    keys: Any,
    values: Any,
    slot: Any,
    heads: int,
    kv_heads: int,
    pdl: bool = False,
) -> Any:
    """Rotate the query and key heads of `qkv` (batch, (heads + 2 kv_heads) * dim; a tensor or
    the GEMV's `Parts`), write the key and value heads into `keys` and `values` at each row's
    `slot`; return the rotated query (batch, heads, dim). `pdl`: launched programmatically
    dependent (`gemv.pdl_supported`), as every op here takes it."""
    batch = qkv.shape[0]
    dim = keys.shape[-1]
    query = torch.empty((batch, heads, dim), dtype=keys.dtype, device=keys.device)
    ptr, bias, split_stride, splits, has_bias = operand_args(qkv)
    stride = qkv.shape[1] if isinstance(qkv, Parts) else qkv.stride(0)
    _rope_store_kernel[(batch, heads + 2 * kv_heads)](
        ptr, bias, split_stride, cos, sin, query, keys, values, slot,
        stride, cos.stride(0), keys.stride(0), keys.stride(1), values.stride(0),
        values.stride(1),
        HEADS=heads, KV_HEADS=kv_heads, HALF=dim // 2, SPLITS=splits, HAS_BIAS=has_bias,
        PDL=pdl, enable_fp_fusion=False, **launch_options(pdl),
    )  # fmt: skip
    return query


def add_rms_norm(residual: Any, x: Any | None, weight: Any, eps: float, pdl: bool = False) -> Any:
    """Add `x` (a tensor or the GEMV's `Parts`, rounded first as a matmul's output is) into
    `residual` in place (when given) and return RMSNorm(residual) * weight, as transformers'
    Llama RMSNorm computes it (float32 normalisation, rounded, times the weight)."""
    batch, width = residual.shape
    out = torch.empty_like(residual)
    ptr, bias, split_stride, splits, has_bias = operand_args(x if x is not None else residual)
    _add_rms_norm_kernel[(batch,)](
        residual, ptr, bias, split_stride, weight, out, width, float(eps),
        ADD=x is not None, BLOCK=triton.next_power_of_2(width), SPLITS=splits, HAS_BIAS=has_bias,
        PDL=pdl, enable_fp_fusion=False, num_warps=NORM_WARPS, **launch_options(pdl),
    )  # fmt: skip
    return out


def silu_mul_packed(x: Any, pdl: bool = False) -> Any:
    """Return `silu(gate) * up` for `x` = [gate | up] (batch, 2 * width; a tensor or the GEMV's
    `Parts`), rounded as torch's two kernels round."""
    batch, double = x.shape
    width = double // 2
    dtype = x.dtype
    out = torch.empty((batch, width), dtype=dtype, device=x.device)
    ptr, bias, split_stride, splits, has_bias = operand_args(x)
    block = 1024
    _silu_mul_packed_kernel[(batch, triton.cdiv(width, block))](
        ptr, bias, split_stride, out, width,
        BLOCK=block, SPLITS=splits, HAS_BIAS=has_bias, PDL=pdl, enable_fp_fusion=False,
        **launch_options(pdl),
    )  # fmt: skip
    return out
