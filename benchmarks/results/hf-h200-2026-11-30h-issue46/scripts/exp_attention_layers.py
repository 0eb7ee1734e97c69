"""Issue 46, sixteenth pass: the decode attention's split stage timed as a step runs it, against
the read rate: `--layers` caches of their own launched back to back (no L2 flush between, no
launch gap timed: the 2026-11-30g script's do_bench of one launch put 32 rows at 0.66-0.75 of the
read rate, the flush's write-back and the launch inside its time), per keys a balanced split reads
at least (`--min-keys`, `decode_ops.BALANCED_MIN_KEYS`). Otherwise as the 2026-11-30g script:

The ninth pass put the 64-row step (7B shape, about 4K keys a row) at 1.282x its roofline on one
machine, 0.20 ms over 1.25x; attention holds about half the step's bytes at about 88% of the read
rate, the matmuls the rest (TMA loading would win back ~0.1 ms there: fifteenth pass). This times
the split stage with its fused merge, as the step runs it, at Qwen2.5-7B's attention (28 query
heads over 4 KV heads of 128, bf16) over rows of different lengths, for each configuration (keys
per inner step, warps, stages) and each target count of programs (`SPLIT_TARGET`), against the
bytes it must read (each row's keys and values up to its length) over the read rate measured in the
same process. One JSON line per (rows, lengths, target): the engine's five configurations, then a
wider sweep; the best of each and its share of the read rate.

    python3 exp_decode_attention.py [--rows 64,32] [--lengths 2048-8192,4096] [--targets 1024,2048,4096]
    TRITON_INTERPRET=1 python3 exp_decode_attention.py --check-only   # the harness on a CPU
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import torch

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
    decode_ops.SPLIT_TARGET, decode_ops.BALANCED_MIN_KEYS = target, least
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
