"""Ad hoc (issue 46, 2026-11-30c): loading a saved bf16 7B (random weights) onto the GPU:
from_pretrained on the CPU then .to("cuda") (as shipped) against device_map="cuda" (accelerate)."""

import gc
import json
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
import transformers

import bench_hf

out = open(sys.argv[1], "w")  # noqa: SIM115 (open for the whole script)


def rec(**kw):
    kw["card"] = torch.cuda.get_device_name()
    print(json.dumps(kw), flush=True)
    out.write(json.dumps(kw) + "\n")
    out.flush()


path = "/root/m7b"
t = time.perf_counter()
model = bench_hf.build_model()
model.save_pretrained(path)
del model
gc.collect()
torch.cuda.empty_cache()
rec(kind="saved", s=round(time.perf_counter() - t, 2))
try:
    import accelerate

    rec(kind="accelerate", version=accelerate.__version__)
except ImportError as exc:
    rec(kind="accelerate", error=str(exc))
for mode in ("cpu_then_to", "device_map", "cpu_then_to", "device_map", "device_map_parallel"):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    try:
        if mode == "cpu_then_to":
            m = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
            t1 = time.perf_counter()
            m.to("cuda")
        else:
            import os

            if mode.endswith("parallel"):
                os.environ["HF_ENABLE_PARALLEL_LOADING"] = "true"
            m = transformers.AutoModelForCausalLM.from_pretrained(
                path, dtype=torch.bfloat16, device_map="cuda"
            )
            t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        dev = str(next(m.parameters()).device)
        dt = str(next(m.parameters()).dtype)
        tied = m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
        rec(
            kind="load",
            mode=mode,
            from_pretrained_s=round(t1 - t0, 3),
            to_s=round(t2 - t1, 3),
            total_s=round(t2 - t0, 3),
            device=dev,
            dtype=dt,
            tied=tied,
            allocated_gb=round(torch.cuda.memory_allocated() / 1e9, 2),
        )
        del m
    except Exception as exc:
        rec(kind="load", mode=mode, error=repr(exc)[:400])
    gc.collect()
    torch.cuda.empty_cache()
