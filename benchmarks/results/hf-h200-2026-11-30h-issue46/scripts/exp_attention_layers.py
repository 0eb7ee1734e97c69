"""Issue 46, sixteenth pass: the decode attention's split stage timed against the read rate with
`--layers` caches of their own launched back to back (no L2 flush, no launch gap in the time: the
2026-11-30g script's do_bench of one launch put 32 rows at 0.69-0.75 of the read rate), at
Qwen2.5-7B's attention (28 query heads over 4 KV heads of 128, bf16), per split target, per keys a
balanced split reads at least (`--min-keys`: only with e7b049c-49227c7's `BALANCED_MIN_KEYS`),
and a flat variant (`--flat`: every row's keys in equal pieces, numbered row after row, the last
piece of a row to finish merging them). One JSON line per (rows, lengths, target, least keys).

What it found did not carry over to the step (BENCHMARKS.md, sixteenth pass): pieces of 1,024
keys ran here at 0.888 of the read rate against the split stage's 0.858 (64 rows of 1,024-9,216
keys). The engine's split stage was then given splits of at least 1,024 keys (not this kernel):
bench_hf.py's batched 64-row step took 7.967 ms with them against 7.898 without, in one process.

    python3 exp_attention_layers.py --rows 64,32 --lengths 1024-9216,4096 --targets 2048 --flat 512,1024
    TRITON_INTERPRET=1 python3 exp_attention_layers.py --rows 3 --lengths 300-1200 --targets 48 \
        --layers 1 --configs 128/w4s2 --flat 256,512    # the harness on a CPU, float32
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from longscope.models.hf import decode_ops, split_tuning  # noqa: E402

HEADS, KV_HEADS, DIM = 28, 4, 128
# the split stage's candidates as the engine's tuner has them: (keys per inner step, warps, stages)
ENGINE = [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in split_tuning._split_configs()]
WIDE = [
    (block, warps, stages)
    for block, warps, stages in itertools.product((32, 64, 128, 256), (2, 4, 8), (2, 3, 4, 5))
    if not (block == 256 and stages > 3)  # shared memory: 256 keys x 128 dims x 2 x stages
]


@triton.jit(do_not_specialize=["batch", "slots"])
def _flat_body(
    q_ptr, k_ptr, v_ptr, valid_ptr, len_ptr, part_ptr, lse_ptr, count_ptr, out_ptr,
    scale, batch, slots,
    stride_qb, stride_kb, stride_kh, stride_vb, stride_vh, stride_mb, stride_ob,
    GROUPS: tl.constexpr, GROUP_PAD: tl.constexpr, DIM: tl.constexpr, BLOCK: tl.constexpr,
    CHUNK: tl.constexpr, ROWS_PAD: tl.constexpr, IEEE: tl.constexpr,
):  # fmt: skip
    # Work of equal size: every row's keys in CHUNK-key pieces, numbered row after row; program
    # `item` of KV head `head` takes piece `item` (past the last piece: nothing). The last of a
    # row's pieces to finish merges them (an arrival counter), as the split stage's fused merge.
    item = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    heads = tl.num_programs(1)
    every = tl.arange(0, ROWS_PAD)
    lens = tl.load(len_ptr + every, mask=every < batch, other=0)
    pieces = tl.cdiv(lens, CHUNK)
    ends = tl.cumsum(pieces, 0)
    if item < tl.max(ends, 0):
        batch_row = tl.sum((ends <= item).to(tl.int32), 0)
        first_piece = tl.sum(tl.where(every < batch_row, pieces, 0), 0)
        piece = item - first_piece
        row = batch_row.to(tl.int64)
        length = tl.load(len_ptr + row)
        start = piece * CHUNK
        end = tl.minimum(start + CHUNK, length)
        groups = tl.arange(0, GROUP_PAD)
        dims = tl.arange(0, DIM)
        real = groups < GROUPS
        q_rows = q_ptr + row * stride_qb + (head * GROUPS + groups)[:, None] * DIM + dims[None, :]
        query = tl.load(q_rows, mask=real[:, None], other=0.0)
        best = tl.full([GROUP_PAD], float("-inf"), tl.float32)
        total = tl.zeros([GROUP_PAD], tl.float32)
        acc = tl.zeros([GROUP_PAD, DIM], tl.float32)
        keys = k_ptr + row * stride_kb + head * stride_kh
        values = v_ptr + row * stride_vb + head * stride_vh
        for first in range(start, end, BLOCK):
            cols = first + tl.arange(0, BLOCK)
            inside = cols < end
            ok = tl.load(valid_ptr + row * stride_mb + cols, mask=inside, other=0) != 0
            key = tl.load(
                keys + cols[:, None] * DIM + dims[None, :], mask=inside[:, None], other=0.0
            )
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
                acc = acc * keep[:, None] + tl.dot(probs, value, input_precision="ieee")
            else:
                acc = acc * keep[:, None] + tl.dot(probs.to(value.dtype), value)
            best = new_best
        empty = total == 0.0
        lse = tl.where(empty, float("-inf"), best + tl.log(tl.where(empty, 1.0, total)))
        out = acc / tl.where(empty, 1.0, total)[:, None]
        slot = (row * heads + head) * slots + piece
        tl.store(lse_ptr + slot * GROUP_PAD + groups, lse, mask=real)
        tl.store(
            part_ptr + (slot * GROUP_PAD + groups)[:, None] * DIM + dims[None, :],
            out,
            mask=real[:, None],
        )
        tl.debug_barrier()
        arrived = tl.atomic_add(count_ptr + row * heads + head, 1, sem="acq_rel", scope="gpu")
        mine = tl.cdiv(length, CHUNK)
        if arrived == mine - 1:
            base = (row * heads + head) * slots * GROUP_PAD + groups
            lses, parts = lse_ptr + base, part_ptr + base[:, None] * DIM + dims[None, :]
            top = tl.full([GROUP_PAD], float("-inf"), tl.float32)
            for index in range(0, mine):
                each = tl.load(
                    lses + index * GROUP_PAD, mask=real, other=float("-inf"), cache_modifier=".cg"
                )
                top = tl.maximum(top, each)
            shift = tl.where(top == float("-inf"), 0.0, top)
            weight_sum = tl.zeros([GROUP_PAD], tl.float32)
            merged = tl.zeros([GROUP_PAD, DIM], tl.float32)
            for index in range(0, mine):
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
                out_ptr + row * stride_ob + (head * GROUPS + groups)[:, None] * DIM + dims[None, :]
            )
            tl.store(dst, merged.to(out_ptr.dtype.element_ty), mask=real[:, None])
            tl.atomic_xchg(count_ptr + row * heads + head, 0)


def _label(block: int, warps: int, stages: int) -> str:
    return f"{block}/w{warps}s{stages}"


def _parse(label: str) -> tuple[int, int, int]:
    block, rest = label.split("/w")
    warps, stages = rest.split("s")
    return int(block), int(warps), int(stages)


def _lengths(spec: str, rows: int, gen: torch.Generator) -> torch.Tensor:
    if "-" in spec:  # rows spread evenly over a range, shuffled: answers ending at different times
        low, high = (int(x) for x in spec.split("-"))
        spread = torch.linspace(low, high, rows).round().long()
        return spread[torch.randperm(rows, generator=gen)]
    return torch.full((rows,), int(spec), dtype=torch.long)


def _time_ms(fn, layers: int) -> float:  # type: ignore[no-untyped-def]
    """Milliseconds a layer: the median of 10 timed calls (after 3) of `layers` launches each,
    by device events around the whole call (each layer reads caches of its own, as in a step)."""
    if not torch.cuda.is_available():
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3 / layers
    for _ in range(3):
        fn()
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / layers)
    return sorted(times)[len(times) // 2]


def run_shape(
    rows: int, spec: str, target: int, least: int, reading: float, args: argparse.Namespace
) -> dict:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(rows * 1000 + target)
    lengths = _lengths(spec, rows, gen)
    capacity = int(lengths.max()) + 64
    # Triton's CPU interpreter gets bf16 dots wrong (the engine's own CPU tests run float32)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    on = torch.Generator(device=device).manual_seed(rows * 1000 + target)  # (the CPU's: slow)
    keys = torch.randn(rows, KV_HEADS, capacity, DIM, generator=on, device=device).to(dtype)
    values = torch.randn(rows, KV_HEADS, capacity, DIM, generator=on, device=device).to(dtype)
    # the other layers' caches (copies: the answer is checked on the first)
    layers = [(keys, values)] + [(keys.clone(), values.clone()) for _ in range(args.layers - 1)]
    query = torch.randn(rows, HEADS, DIM, generator=on, device=device).to(dtype)
    cols = torch.arange(capacity)[None, :]
    valid = (cols < lengths[:, None]).to(device)
    lens = lengths.to(device=device, dtype=torch.int32)
    scale = DIM**-0.5
    decode_ops.SPLIT_TARGET = target
    if hasattr(decode_ops, "BALANCED_MIN_KEYS"):
        decode_ops.BALANCED_MIN_KEYS = least
    elif least != 128:
        sys.exit("exp_attention_layers.py: --min-keys needs e7b049c's decode_ops.BALANCED_MIN_KEYS")
    attention = decode_ops.DecodeAttention(rows, HEADS, KV_HEADS, DIM, capacity, dtype, device)
    attention.tuned = True  # each configuration below is launched as given, not autotuned
    out = torch.empty((rows, HEADS * DIM), dtype=dtype, device=device)
    fused = attention.fuses(True)
    grid, call_args, options = attention._split_call(
        query, keys, values, valid, lens, scale, False, out if fused else None
    )
    options.pop("BLOCK", None)

    def launch(block: int, warps: int, stages: int) -> None:
        for layer_keys, layer_values in reversed(layers):  # the first layer's answer last
            each = list(call_args)
            each[1], each[2] = layer_keys, layer_values
            decode_ops._attention_split_body[grid](
                *each, **options, BLOCK=block, num_warps=warps, num_stages=stages
            )
            if not fused:
                attention.merge(out)

    # the answer of every configuration against a float32 reference (rows' own keys only)
    want = torch.empty(rows, HEADS, DIM)
    for row in range(rows):  # on the device (the CPU's took seconds a shape)
        n = int(lengths[row])
        k = keys[row, :, :n].float().repeat_interleave(HEADS // KV_HEADS, 0)
        v = values[row, :, :n].float().repeat_interleave(HEADS // KV_HEADS, 0)
        q = query[row].float()
        weights = ((k @ q[:, :, None]).squeeze(-1) * scale).softmax(-1)
        want[row] = (weights[:, None, :] @ v).squeeze(1).cpu()
    kv_bytes = int(lengths.sum()) * KV_HEADS * DIM * 2 * keys.element_size()
    floor_ms = kv_bytes / (reading * 1e9) * 1e3 if reading else None
    results, worst_error = [], 0.0
    configs = list(ENGINE)
    if not args.engine_only:
        configs += [c for c in WIDE if c not in configs]
    if args.configs:
        configs = [_parse(label) for label in args.configs.split(",")]
    if args.check_only:
        configs = configs[:2]
    deadline = time.time() + args.budget
    for block, warps, stages in configs:
        if time.time() > deadline:
            break
        out.fill_(float("nan"))  # a configuration that writes nothing is not scored on another's
        try:
            ms = _time_ms(lambda: launch(block, warps, stages), args.layers)  # noqa: B023
        except Exception as exc:  # a configuration the card cannot build (shared memory)
            results.append({"config": _label(block, warps, stages), "error": str(exc)[:80]})
            continue
        got = out.view(rows, HEADS, DIM).float().cpu()
        error = (got - want).abs().max().item()
        worst_error = max(worst_error, error)
        row = {"config": _label(block, warps, stages), "ms": round(ms, 4), "error": round(error, 4)}
        if floor_ms:
            row["of_read"] = round(floor_ms / ms, 3)
        results.append(row)
    flat = {}
    for chunk in [int(x) for x in args.flat.split(",") if x]:
        slots = -(-capacity // chunk)
        pad = max(16, triton.next_power_of_2(HEADS // KV_HEADS))
        part = torch.empty((rows, KV_HEADS, slots, pad, DIM), dtype=torch.float32, device=device)
        lse = torch.empty((rows, KV_HEADS, slots, pad), dtype=torch.float32, device=device)
        count = torch.zeros(rows * KV_HEADS, dtype=torch.int32, device=device)

        def flat_launch(  # the loop's buffers bound as defaults
            block: int, warps: int, stages: int, chunk: int = chunk, slots: int = slots,
            pad: int = pad, part: Any = part, lse: Any = lse, count: Any = count,
        ) -> None:  # fmt: skip
            for layer_keys, layer_values in reversed(layers):
                _flat_body[(rows * slots, KV_HEADS)](
                    query, layer_keys, layer_values, valid.view(torch.uint8), lens, part, lse,
                    count, out, scale, rows, slots,
                    query.stride(0), layer_keys.stride(0), layer_keys.stride(1),
                    layer_values.stride(0), layer_values.stride(1), valid.stride(0), out.stride(0),
                    GROUPS=HEADS // KV_HEADS, GROUP_PAD=pad, DIM=DIM, BLOCK=min(block, chunk),
                    CHUNK=chunk, ROWS_PAD=max(16, triton.next_power_of_2(rows)),
                    IEEE=dtype == torch.float32, num_warps=warps, num_stages=stages,
                )  # fmt: skip

        rows_of = []
        for block, warps, stages in configs:
            out.fill_(float("nan"))
            try:
                ms = _time_ms(lambda: flat_launch(block, warps, stages), args.layers)  # noqa: B023
            except Exception as exc:
                rows_of.append({"config": _label(block, warps, stages), "error": str(exc)[:80]})
                continue
            error = (out.view(rows, HEADS, DIM).float().cpu() - want).abs().max().item()
            worst_error = max(worst_error, error)
            each = {
                "config": _label(block, warps, stages),
                "ms": round(ms, 4),
                "error": round(error, 4),
            }
            if floor_ms:
                each["of_read"] = round(floor_ms / ms, 3)
            rows_of.append(each)
        ok = [r for r in rows_of if "ms" in r]
        flat[chunk] = {
            "best": min(ok, key=lambda r: r["ms"]) if ok else None,
            "configs": rows_of if args.all_rows else len(rows_of),
        }
    timed = [r for r in results if "ms" in r]
    best = min(timed, key=lambda r: r["ms"]) if timed else None
    engine = [r for r in timed if r["config"] in {_label(*c) for c in ENGINE}]
    return {
        "kind": "decode_attention",
        "card": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "rows": rows,
        "lengths": spec,
        "mean_keys": round(float(lengths.float().mean()), 1),
        "target": target,
        "min_keys": least,
        "layers": args.layers,
        "splits": attention.splits,
        "split_size": attention.split_size,
        "fused_merge": fused,
        "kv_mb": round(kv_bytes / 1e6, 1),
        "floor_ms": round(floor_ms, 4) if floor_ms else None,
        "untuned": next((r for r in timed if r["config"] == _label(*split_tuning.UNTUNED)), None),
        "engine_best": min(engine, key=lambda r: r["ms"]) if engine else None,
        "best": best,
        "flat": flat,
        "worst_error": round(worst_error, 4),
        "configs": results if args.all_rows else len(results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="64,32")
    parser.add_argument("--lengths", default="2048-8192,4096")
    parser.add_argument("--targets", default="1024,2048,4096")
    parser.add_argument("--min-keys", default="128", help="keys a balanced split reads at least")
    parser.add_argument("--layers", type=int, default=28, help="caches launched back to back")
    parser.add_argument("--flat", default="", help="keys a piece of the flat variant, a list")
    parser.add_argument("--configs", default="", help="BLOCK/wWARPSsSTAGES,... (default: all)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds a shape's sweep")
    parser.add_argument("--engine-only", action="store_true", help="the engine's 5 configurations")
    parser.add_argument("--all-rows", action="store_true", help="print every configuration")
    parser.add_argument("--check-only", action="store_true", help="tiny shapes, 2 configurations")
    args = parser.parse_args()
    if args.check_only:
        args.rows, args.lengths, args.targets, args.layers = "3", "100-300", "16", 2
    reading = 0.0
    if torch.cuda.is_available():
        from bench_hf import read_rates

        reading, best_read = read_rates()
        print(json.dumps({"kind": "read", "median_gbps": reading, "best_gbps": best_read}))
    elif os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit(
            "exp_decode_attention.py: no CUDA; run on a GPU or with TRITON_INTERPRET=1 --check-only"
        )
    for rows, spec, target, least in itertools.product(
        [int(x) for x in args.rows.split(",")],
        args.lengths.split(","),
        [int(x) for x in args.targets.split(",")],
        [int(x) for x in args.min_keys.split(",")],
    ):
        print(json.dumps(run_shape(rows, spec, target, least, reading, args)), flush=True)


if __name__ == "__main__":
    main()
