"""Where a chunked prefill's GPU time goes (random-weight Qwen2.5-7B shape, bf16): the torch
profiler's kernels summed into matmuls, attention, norms and the rest, against the matmul peak.

    PYTHONPATH=src python benchmarks/profile_prefill.py --length 32768 --chunk 16384
    PYTHONPATH=src python benchmarks/profile_prefill.py --smoke   # 4K in 2K chunks

Checked on every run: the kernel groups add up to the total kernel time.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import torch
from transformers import DynamicCache

from bench_hf import QWEN25_7B, IdTokenizer, build_model, matmul_peak, prefill_flops, prompt_ids
from longscope.models.hf import HFBackend


def category(name: str) -> str:
    low = name.lower()
    if any(k in low for k in ("flash", "fmha", "cudnn", "attention", "sdpa")):
        return "attention"
    if any(k in low for k in ("gemm", "nvjet", "xmma", "cutlass", "sm90", "matmul")):
        return "matmul"
    if "norm" in low:
        return "norm"
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32768)
    parser.add_argument("--chunk", type=int, default=16384)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--smoke", action="store_true", help="4K in 2K chunks")
    args = parser.parse_args()
    if args.smoke:
        args.length, args.chunk, args.top = 4096, 2048, 5
    peak = matmul_peak()
    model = build_model()
    backend = HFBackend("random-qwen2.5-7b", model=model, tokenizer=IdTokenizer())
    ids = torch.tensor(prompt_ids(args.length), device="cuda")

    def prefill() -> None:
        cache = DynamicCache(config=model.config)
        with torch.inference_mode(), backend.prefill_context():
            backend.prefill_ids(ids, cache, args.chunk)
        del cache

    for _ in range(2):
        prefill()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        prefill()
        torch.cuda.synchronize()
    kernels: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if str(event.device_type).endswith("CUDA"):
            kernels[event.name] += event.device_time / 1e3  # ms
    total = sum(kernels.values())
    groups: dict[str, float] = defaultdict(float)
    for name, ms in kernels.items():
        groups[category(name)] += ms
    assert total > 0 and abs(sum(groups.values()) - total) < 1e-6 * total, (groups, total)
    params = sum(p.numel() for p in model.parameters())
    nonembed = params - 2 * QWEN25_7B["vocab_size"] * QWEN25_7B["hidden_size"]
    flops = prefill_flops(nonembed, args.length, QWEN25_7B)
    dense = 2 * nonembed * args.length
    card = torch.cuda.get_device_name()
    print(
        json.dumps(
            {
                "card": card,
                "length": args.length,
                "chunk": args.chunk,
                "matmul_peak_tflops": round(peak, 1),
                "kernel_ms": round(total, 1),
                "of_peak_by_kernel_time": round(flops / (total / 1e3) / 1e12 / peak, 3),
                "groups_ms": {k: round(v, 1) for k, v in sorted(groups.items())},
                "dense_matmul_of_peak": round(dense / (groups["matmul"] / 1e3) / 1e12 / peak, 3),
                "attention_of_peak": round(
                    (flops - dense) / (groups["attention"] / 1e3) / 1e12 / peak, 3
                ),
            }
        )
    )
    for name, ms in sorted(kernels.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{ms:9.2f} ms {100 * ms / total:5.1f}%  {category(name):9s} {name[:110]}")


if __name__ == "__main__":
    main()
