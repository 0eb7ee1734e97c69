"""Issue 46, prepared 2026-11-30e for the next card: does the 64-row GEMV read the weights faster
when Triton loads its tiles by the Hopper tensor memory accelerator (TMA, host-side descriptors)?

At 64 rows the engine's GEMV reads a 7B's weights at 0.63-0.88 of the measured read rate (call W,
`gemv_sweep`: o_proj 0.68, qkv 0.63, down 0.85, gate_up 0.88, torch's matmul about the same): the
batched step's largest loss. After checking the TMA kernel against float32 matmul at small
shapes, this times, per 7B projection shape at 64 rows (`--rows`; 28 layers' own random weights,
no L2 reuse, `gemv._time`): torch's matmul; the engine's kernel over its `FEW_ROWS` tiles and
`SPLITS`; a TMA kernel over 96 variants (tiles 64-128 x 64-128, 4 or 8 warps, 3 or 4 stages, 1,
2 or 4 slices, with and without `warp_specialize`). One JSON line per shape and rows: the floor
(bytes over the measured read rate) and the best of each, in us.

2026-11-30f (after call BB, which ran the first version, commit 795c495, and printed nothing after
the read rate in 560 s): one line per variant too, warp-specialized variants last, `--shapes`,
a `--budget` in seconds after which no variant starts, `--plain-only` (call BC0: a warp-
specialized variant never returned).

    python3 exp_gemv_tma.py [--rows 64] [--shapes o_proj,qkv,down,gate_up] [--budget 240]
        [--plain-only] [--check-only]

`--check-only` with TRITON_INTERPRET=1 runs the TMA kernel's correctness checks on the CPU
(float16; run so on the VM with Triton 3.8: the three checks pass, errors about 2e-5).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

# the checkout: from benchmarks/results/.../scripts/ or from the carried .gpu/g46/
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "src" / "longscope").is_dir())
sys.path.insert(0, str(ROOT / "src"))
SHAPES = {"o_proj": (3584, 3584), "down": (3584, 18944), "qkv": (4608, 3584),
          "gate_up": (37888, 3584)}  # fmt: skip
# (block_n, block_k, warps, stages, splits, warp_specialize): 96 variants
TMA_VARIANTS = list(
    itertools.product((64, 128), (64, 128), (4, 8), (3, 4), (1, 2, 4), (False, True))
)


@triton.jit
def _gemv_tma(
    w_desc, x_desc, part_ptr, M, N, K, k_split,
    M_PAD: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr,
    WS: tl.constexpr,
):  # fmt: skip
    # part[split, m, n] = sum over this split's K slice of x[m, k] * w[n, k] in float32; the
    # descriptors fill zeros past N, M and K, so no load is masked.
    first_n = tl.program_id(0) * BLOCK_N
    split = tl.program_id(1)
    start = split * k_split
    end = tl.minimum(start + k_split, K)
    acc = tl.zeros([BLOCK_N, M_PAD], dtype=tl.float32)
    if WS:  # only here does `tl.range` get the keyword: a Triton without it still runs the rest
        for k in tl.range(start, end, BLOCK_K, num_stages=STAGES, warp_specialize=True):
            acc = tl.dot(w_desc.load([first_n, k]), tl.trans(x_desc.load([0, k])), acc)
    else:
        for k in tl.range(start, end, BLOCK_K, num_stages=STAGES):
            acc = tl.dot(w_desc.load([first_n, k]), tl.trans(x_desc.load([0, k])), acc)
    rows = tl.arange(0, M_PAD)
    cols = first_n + tl.arange(0, BLOCK_N)
    out = part_ptr + (split * M + rows[None, :]).to(tl.int64) * N + cols[:, None]
    tl.store(out, acc, mask=(cols[:, None] < N) & (rows[None, :] < M))


def tma_launcher(
    x: Any, weights: list[Any], block_n: int, block_k: int, warps: int, stages: int,
    splits: int, ws: bool,
) -> Any:  # fmt: skip
    """Return `launch(weight) -> part` for one variant: the descriptors and the output built
    once, so that a timed launch costs the host what the engine's does (a descriptor built in
    Python per call would make the host, not the card, set the pace)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    rows, width = x.shape
    n = weights[0].shape[0]
    pad = max(16, triton.next_power_of_2(rows))
    per = -(-width // splits)
    k_split = -(-per // block_k) * block_k  # whole K steps: a slice never reads its neighbour's
    slices = -(-width // k_split)
    part = torch.empty((slices, rows, n), dtype=torch.float32, device=x.device)
    x_desc = TensorDescriptor.from_tensor(x, [pad, block_k])
    w_descs = {id(w): TensorDescriptor.from_tensor(w, [block_n, block_k]) for w in weights}
    grid = (triton.cdiv(n, block_n), slices)
    options = dict(
        M_PAD=pad, BLOCK_N=block_n, BLOCK_K=block_k, STAGES=stages, WS=ws, num_warps=warps,
        num_stages=stages,
    )  # fmt: skip

    def launch(weight: Any) -> Any:
        _gemv_tma[grid](w_descs[id(weight)], x_desc, part, rows, n, width, k_split, **options)
        return part

    return launch


def check(device: str) -> None:
    """The TMA kernel against float32 matmul at small shapes: rows below the padding, N not a
    multiple of the tile, K not a multiple of the slices. On the CPU in float16: Triton's
    interpreter reads a descriptor's bfloat16 tiles as garbage (numpy has no bfloat16)."""
    gen = torch.Generator(device=device).manual_seed(0)
    dtype = torch.float16 if device == "cpu" else torch.bfloat16
    for rows, n, width, block_n, block_k, splits in (
        (3, 200, 512, 64, 64, 1), (64, 256, 384, 64, 128, 2), (8, 96, 320, 64, 64, 4),
    ):  # fmt: skip
        x = torch.randn(rows, width, device=device, generator=gen).to(dtype)
        w = torch.randn(n, width, device=device, generator=gen).to(dtype)
        got = tma_launcher(x, [w], block_n, block_k, 4, 2, splits, False)(w).sum(0)
        want = x.float() @ w.float().T
        err = (got - want).abs().max().item()
        print(json.dumps({"kind": "check", "rows": rows, "n": n, "k": width, "splits": splits,
                          "max_abs_err": err}), flush=True)  # fmt: skip
        assert err < 1e-2 * width**0.5, err


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="64")
    parser.add_argument("--check-only", action="store_true")
    parser.add_argument("--shapes", default="o_proj,qkv,down,gate_up")
    parser.add_argument("--budget", type=float, default=240.0, help="seconds; then stop")
    parser.add_argument(
        "--plain-only", action="store_true", help="no warp specialization (BC0: one never returned)"
    )
    args = parser.parse_args()
    device = "cpu" if args.check_only else "cuda"
    if not args.check_only:
        print(json.dumps({"kind": "card", "card": torch.cuda.get_device_name()}), flush=True)
    check(device)
    if args.check_only:
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_hf import read_rates
    from longscope.models.hf import gemv

    # TMA descriptors built on the host need no allocator; the engine's launches are not
    # programmatically dependent here (`pdl` off on both sides).
    reading, best_read = read_rates()
    print(json.dumps({"kind": "read", "median_gbps": reading, "best_gbps": best_read}), flush=True)
    gen = torch.Generator(device="cuda").manual_seed(5)
    began = time.perf_counter()
    # 2026-11-30e's run printed nothing for 9 minutes after the read rate: now one line per
    # variant (with its seconds), warp-specialized variants last, and a time budget.
    variants = sorted(TMA_VARIANTS, key=lambda c: c[-1])
    if args.plain_only:
        variants = [c for c in variants if not c[-1]]
    for name in args.shapes.split(","):
        n, width = SHAPES[name]
        weights = [
            ((torch.randn(n, width, device="cuda", generator=gen) / width**0.5).bfloat16(), None)
            for _ in range(28)
        ]
        floor_us = n * width * 2 / (reading * 1e9) * 1e6
        for rows in [int(r) for r in args.rows.split(",")]:
            x = torch.randn(rows, width, device="cuda", generator=gen).bfloat16()
            torch_us = gemv._time(lambda w, b, x=x: torch.nn.functional.linear(x, w), weights)
            ours = []
            for tile in gemv.FEW_ROWS:
                for splits in gemv.SPLITS:
                    plan = gemv.Plan(*tile, splits)
                    if width // splits < plan.block_k:
                        continue
                    ms = gemv._time(
                        lambda w, b, x=x, plan=plan: gemv.run(x, w, None, plan), weights
                    )
                    ours.append((round(ms * 1e3, 2), plan.label()))
            print(json.dumps({"kind": "ours", "shape": name, "best": sorted(ours)[:2],
                              "torch_us": round(torch_us * 1e3, 2), "floor_us": round(floor_us, 2),
                              "s": round(time.perf_counter() - began, 1)}), flush=True)  # fmt: skip
            tma, failed = [], {}
            for config in variants:
                if time.perf_counter() - began > args.budget:
                    break
                t0 = time.perf_counter()
                block_n, block_k, warps, stages, splits, ws = config
                label = f"{block_n}x{block_k}/w{warps}s{stages}/k{splits}" + ("/ws" if ws else "")
                if width // splits < block_k:
                    continue
                try:
                    launch = tma_launcher(x, [w for w, _ in weights], *config)
                    ms = gemv._time(lambda w, b, f=launch: f(w), weights)
                except Exception as error:  # a tile the card cannot hold, no warp specialization
                    failed[label] = str(error).splitlines()[0][:120] if str(error) else repr(error)
                    continue
                tma.append((round(ms * 1e3, 2), label))
                print(json.dumps({"kind": "variant", "shape": name, "label": label,
                                  "us": round(ms * 1e3, 2), "of_floor": round(floor_us / (ms * 1e3), 3),
                                  "s": round(time.perf_counter() - t0, 1)}), flush=True)  # fmt: skip
            ours.sort()
            tma.sort()
            print(json.dumps({
                "kind": "gemv_tma", "shape": name, "rows": rows, "floor_us": round(floor_us, 2),
                "torch_us": round(torch_us * 1e3, 2), "ours_best": ours[:3], "tma_best": tma[:5],
                "tma_of_floor": round(floor_us / tma[0][0], 3) if tma else None,
                "ours_of_floor": round(floor_us / ours[0][0], 3) if ours else None,
                "failed": len(failed), "a_failure": next(iter(failed.items()), None),
            }), flush=True)  # fmt: skip
        del weights
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
