"""Issue 46, seventeenth pass: how much the read ceiling that bench_hf.py divides by moves between
processes and allocations on one machine. Prints, per fresh 4 GiB buffer, the median and best of
15 reads of torch's sum (bench_hf.read_rates, float32) and of the same bytes as bfloat16, and a
copy's rate. Run it in several processes."""

import json
import sys
import time

import torch


def rate(fn, nbytes: int, reads: int = 15) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(reads):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    times.sort()
    return round(nbytes / times[len(times) // 2] / 1e9, 1), round(nbytes / times[0] / 1e9, 1)


out = {"process": sys.argv[1] if len(sys.argv) > 1 else "0"}
for buffer in range(3):
    src = torch.randn(1 << 30, device="cuda", dtype=torch.float32)
    out[f"f32_sum_{buffer}"] = rate(src.sum, 4 << 30)
    half = src.view(torch.bfloat16)  # the same 4 GiB read as 2^31 bf16 values
    out[f"bf16_sum_{buffer}"] = rate(half.sum, 4 << 30)
    dst = torch.empty_like(src)
    out[f"copy_{buffer}"] = rate(lambda dst=dst, src=src: dst.copy_(src), 8 << 30)
    del src, half, dst
    torch.cuda.empty_cache()
print(json.dumps(out), flush=True)
