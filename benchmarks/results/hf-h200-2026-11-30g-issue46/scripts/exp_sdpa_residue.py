"""Issue 46, 2026-11-30g: which lengths and layouts make torch's memory-efficient SDPA wrong on CUDA
(pytorch/pytorch#191937), and which workaround mends it. Gemma 3 270M's shape: 4 query heads over
one KV head, head size 256, a 512-token sliding causal window. Each row: the max error against a
float64 reference for one (q_len, kv_len, dtype, variant). Prints JSON lines.

    python3 exp_sdpa_residue.py 545x545,546x546 [variant,variant]
"""

from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def reference(q, k, v, mask, scale):
    g = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(g, 1)
    v = v.double().repeat_interleave(g, 1)
    s = (q.double() @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    return s.softmax(-1) @ v


def window_mask(q_len, kv_len, dev):
    rows = torch.arange(kv_len - q_len, kv_len, device=dev)[:, None]
    cols = torch.arange(kv_len, device=dev)[None, :]
    return ((cols <= rows) & (cols > rows - 512))[None, None]


def variants(q, k, v, mask, scale):
    kx, vx = k.expand(-1, 4, -1, -1), v.expand(-1, 4, -1, -1)  # stride 0, as repeat_kv leaves it
    kc, vc = kx.contiguous(), vx.contiguous()
    eff = [SDPBackend.EFFICIENT_ATTENTION]

    def run(backends, *args, **kw):
        with sdpa_kernel(backends):
            return F.scaled_dot_product_attention(*args, scale=scale, **kw)

    def pad_kv():
        m = F.pad(mask, (0, 1), value=False)
        return run(eff, q, F.pad(kx, (0, 0, 0, 1)), F.pad(vx, (0, 0, 0, 1)), attn_mask=m)

    def pad_q():
        # one more query row (a copy of the last, reading the same keys), dropped after
        m = torch.cat([mask, mask[..., -1:, :]], dim=-2)
        out = run(eff, torch.cat([q, q[..., -1:, :]], dim=-2), kx, vx, attn_mask=m)
        return out[..., :-1, :]

    def pad_both():
        m = torch.cat([mask, mask[..., -1:, :]], dim=-2)
        m = F.pad(m, (0, 1), value=False)
        out = run(
            eff,
            torch.cat([q, q[..., -1:, :]], dim=-2),
            F.pad(kx, (0, 0, 0, 1)),
            F.pad(vx, (0, 0, 0, 1)),
            attn_mask=m,
        )
        return out[..., :-1, :]

    yield "efficient_stride0", lambda: run(eff, q, kx, vx, attn_mask=mask)
    yield "efficient_contiguous", lambda: run(eff, q, kc, vc, attn_mask=mask)
    yield (
        "efficient_stride0_mask_heads",
        lambda: run(eff, q, kx, vx, attn_mask=mask.expand(-1, 4, -1, -1).contiguous()),
    )
    yield (
        "efficient_stride0_additive",
        lambda: run(
            eff,
            q,
            kx,
            vx,
            attn_mask=torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(
                ~mask, torch.finfo(q.dtype).min
            ),
        ),
    )
    yield "efficient_pad_kv", pad_kv
    yield "efficient_pad_q", pad_q
    yield "efficient_pad_both", pad_both
    yield (
        "efficient_gqa",
        lambda: run([*eff, SDPBackend.MATH], q, k, v, attn_mask=mask, enable_gqa=True),
    )
    yield "engine", lambda: engine_attention(q, k, v, mask, scale)
    yield "math_stride0", lambda: run([SDPBackend.MATH], q, kx, vx, attn_mask=mask)
    yield "cudnn_stride0", lambda: run([SDPBackend.CUDNN_ATTENTION], q, kx, vx, attn_mask=mask)
    yield (
        "default_stride0",
        lambda: F.scaled_dot_product_attention(q, kx, vx, attn_mask=mask, scale=scale),
    )


def engine_attention(q, k, v, mask, scale):
    from types import SimpleNamespace

    from longscope.models.hf.kernels import attention

    module = SimpleNamespace(num_key_value_groups=4, is_causal=True, training=False)
    out, _ = attention(module, q, k, v, mask, scaling=scale)
    return out.transpose(1, 2)


def main() -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    pairs = [tuple(int(x) for x in p.split("x")) for p in sys.argv[1].split(",")]
    # one variant per process: a kernel's illegal memory access poisons the CUDA context after it
    only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else set()
    card = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    for dtype in (torch.float32, torch.bfloat16):
        for q_len, kv_len in pairs:
            g = torch.Generator(device=dev).manual_seed(q_len * 100003 + kv_len)
            q, k, v = (
                torch.randn(1, h, n, 256, device=dev, generator=g).to(dtype)
                for h, n in ((4, q_len), (1, kv_len), (1, kv_len))
            )
            mask = window_mask(q_len, kv_len, dev)
            scale = 256**-0.5
            want = reference(q, k, v, mask, scale)
            row = {
                "card": card,
                "dtype": str(dtype).removeprefix("torch."),
                "q": q_len,
                "kv": kv_len,
            }
            for name, fn in variants(q, k, v, mask, scale):
                if only and name not in only:
                    continue
                try:
                    with torch.no_grad():
                        got = fn()
                    row[name] = round((got.double() - want).abs().max().item(), 5)
                except RuntimeError as exc:
                    row[name] = "error: " + str(exc).splitlines()[0][:60]
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
