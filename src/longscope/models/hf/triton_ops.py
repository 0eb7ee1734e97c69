"""Triton kernels for the hf backend's prefill on CUDA: rotary embedding and the SiLU-gated
product, each in one pass.

Measured on an H200 (BENCHMARKS.md, 7B shape, 32K prompt): transformers' rotary embedding runs
as five elementwise kernels per tensor over transposed (strided) views and the MLP's
`silu(gate) * up` as two; together with the residual adds they took 14% of a prefill's kernel
time while its matmuls ran at 93% of the peak. These kernels round as transformers does in
16-bit (each product rounded to the input dtype, then their sum), so outputs are bit-identical.
Imported only where CUDA and Triton are.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl


# `seq` not specialized: Triton builds a kernel per class of each integer argument (1, a multiple
# of 16, other), and a run's chunks are of all three (RULER through the CLI built three); no load
# is vectorized along the sequence, so one build serves them all alike.
@triton.jit(do_not_specialize=["seq"])
def _rope_kernel(
    x_ptr,
    cos_ptr,
    sin_ptr,
    out_ptr,
    seq,
    heads,
    stride_xb,
    stride_xh,
    stride_xs,
    stride_cb,
    stride_cs,
    HALF: tl.constexpr,
    BLOCK: tl.constexpr,
):
    block = tl.program_id(0).to(tl.int64)
    head, batch = tl.program_id(1).to(tl.int64), tl.program_id(2).to(tl.int64)
    rows = block * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, HALF)
    mask = rows[:, None] < seq
    src = x_ptr + batch * stride_xb + head * stride_xh + rows[:, None] * stride_xs + cols[None, :]
    angle = batch * stride_cb + rows[:, None] * stride_cs + cols[None, :]
    first = tl.load(src, mask=mask)
    second = tl.load(src + HALF, mask=mask)
    cos_a = tl.load(cos_ptr + angle, mask=mask)
    cos_b = tl.load(cos_ptr + angle + HALF, mask=mask)
    sin_a = tl.load(sin_ptr + angle, mask=mask)
    sin_b = tl.load(sin_ptr + angle + HALF, mask=mask)
    dtype = first.dtype
    # x * cos + rotate_half(x) * sin, rotate_half(x) = (-second, first); each product rounded.
    low = (first.to(tl.float32) * cos_a.to(tl.float32)).to(dtype).to(tl.float32)
    low += (-second.to(tl.float32) * sin_a.to(tl.float32)).to(dtype).to(tl.float32)
    high = (second.to(tl.float32) * cos_b.to(tl.float32)).to(dtype).to(tl.float32)
    high += (first.to(tl.float32) * sin_b.to(tl.float32)).to(dtype).to(tl.float32)
    dst = out_ptr + ((batch * heads + head) * seq + rows[:, None]) * (2 * HALF) + cols[None, :]
    tl.store(dst, low.to(dtype), mask=mask)
    tl.store(dst + HALF, high.to(dtype), mask=mask)


@triton.jit
def _silu_mul_kernel(gate_ptr, up_ptr, out_ptr, count, BLOCK: tl.constexpr):
    # 64-bit: a 128K-token chunk's MLP holds 2.5 billion elements.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < count
    gate = tl.load(gate_ptr + offsets, mask=mask)
    up = tl.load(up_ptr + offsets, mask=mask)
    dtype = gate.dtype
    wide = gate.to(tl.float32)
    activated = (wide / (1.0 + tl.exp(-wide))).to(dtype)
    out = (activated.to(tl.float32) * up.to(tl.float32)).to(dtype)
    tl.store(out_ptr + offsets, out, mask=mask)


def rope_fits(x: Any, cos: Any, sin: Any) -> bool:
    """Return whether `_rope_kernel` takes x (batch, heads, seq, dim) with cos and sin (batch or
    1, seq, dim) laid out alike."""
    dim = x.shape[-1]
    half = dim // 2
    return (
        x.is_cuda
        and x.dim() == 4
        and cos.dim() == 3
        and x.stride(-1) == 1
        and cos.stride(-1) == 1
        and cos.shape[-1] == dim
        and cos.shape[1] == x.shape[2]
        and cos.shape[0] in (1, x.shape[0])
        and dim % 2 == 0
        and half & (half - 1) == 0
        and half >= 16
        and x.dtype == cos.dtype == sin.dtype
        and sin.shape == cos.shape
        and sin.stride() == cos.stride()
    )


def rope(x: Any, cos: Any, sin: Any) -> Any:
    """Return x rotated (contiguous, batch x heads x seq x dim), as transformers'
    `x * cos + rotate_half(x) * sin` with cos and sin unsqueezed at dim 1."""
    batch, heads, seq, dim = x.shape
    out = torch.empty((batch, heads, seq, dim), dtype=x.dtype, device=x.device)
    cos_b = cos.stride(0) if cos.shape[0] > 1 else 0
    block = 64
    grid = (triton.cdiv(seq, block), heads, batch)
    _rope_kernel[grid](
        x, cos, sin, out, seq, heads, x.stride(0), x.stride(1), x.stride(2), cos_b, cos.stride(1),
        HALF=dim // 2, BLOCK=block, enable_fp_fusion=False,
    )  # fmt: skip
    return out


def silu_mul(gate: Any, up: Any) -> Any:
    """Return `silu(gate) * up` in one pass, rounded as the two torch kernels round."""
    gate, up = gate.contiguous(), up.contiguous()
    out = torch.empty_like(gate)
    count = gate.numel()
    block = 2048
    _silu_mul_kernel[(triton.cdiv(count, block),)](
        gate, up, out, count, BLOCK=block, enable_fp_fusion=False
    )
    return out
