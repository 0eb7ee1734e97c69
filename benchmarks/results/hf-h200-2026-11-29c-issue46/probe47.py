"""One-off probe (session 2026-11-29c, issue 46): where RULER's last seconds and a decode step's
last fractions go. E1 model load paths; E2 a graph capture's parts; E3 the step's replay per BLAS
library; E4 thin GEMVs alone per BLAS library. Prints JSON rows; writes them to argv[1]."""

import gc
import json
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
from transformers import AutoModelForCausalLM

import bench_hf
from longscope.models import hf
from longscope.models.hf import HFBackend
from longscope.models.memory_plan import decode_capacity

out = open(sys.argv[1], "a")  # noqa: SIM115
parts = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else {"e1", "e2", "e3", "e4"}


def rec(**row):
    row["card"] = torch.cuda.get_device_name()
    print(json.dumps(row), flush=True)
    out.write(json.dumps(row) + "\n")
    out.flush()


def t():
    torch.cuda.synchronize()
    return time.perf_counter()


reading = bench_hf.read_bandwidth()
rec(kind="ceilings", read_gbps=round(reading, 1))

# E4: thin projections alone, 8 weight copies rotated (past the 50 MB L2), 16 calls a graph.
if "e4" in parts:
    shapes = {
        "qkv": (3584, 4608),
        "o": (3584, 3584),
        "gateup": (3584, 37888),
        "down": (18944, 3584),
        "head": (3584, 152064),
    }
    for lib in ("cublas", "cublaslt"):
        torch.backends.cuda.preferred_blas_library(lib)
        for name, (k, n) in shapes.items():
            copies = 4 if name == "head" else 8
            ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
            for m in (1, 8, 64):
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                for w in ws:
                    torch.nn.functional.linear(x, w)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s):
                    for _ in range(16 // copies):
                        for w in ws:
                            torch.nn.functional.linear(x, w)
                g.replay()
                a = t()
                for _ in range(20):
                    g.replay()
                per = (t() - a) / 20 / 16
                rec(
                    kind="gemv",
                    lib=lib,
                    name=name,
                    m=m,
                    us=round(per * 1e6, 2),
                    bound_us=round(n * k * 2 / reading / 1e3, 2),
                    ratio=round(per / (n * k * 2 / reading / 1e9), 3),
                )
            del ws
    torch.backends.cuda.preferred_blas_library("cublas")
    torch.cuda.empty_cache()

model = bench_hf.build_model()
backend = HFBackend(
    "random-qwen2.5-7b", model=model, tokenizer=bench_hf.IdTokenizer(), prompt_mode="completion"
)
backend.engine.max_batch = 64
for members in (1, 16):
    bench_hf.longscope_group(backend, bench_hf.prompt_ids(1024), members, 4)


def decoder_at(n, batch):
    from transformers import DynamicCache

    ids = bench_hf.prompt_ids(n)
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        with backend.prefill_context():
            backend.prefill_ids(torch.tensor(ids, device="cuda"), cache, 16384)
        positions = torch.tensor([n] * batch, device="cuda")
        d = hf.StaticDecoder(
            torch, model, cache, n, decode_capacity(n + 64), None, positions, backend.engine.kernels
        )
        del cache
    d.tokens.fill_(5)
    return d


def capture_parts(d, stream, warm):
    """Return (warm-up s, launches s, capture_end s) of one capture of d's step on stream."""
    a = t()
    if warm:
        with torch.cuda.stream(stream):
            d._forward()
        torch.cuda.current_stream().wait_stream(stream)
    b = t()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        g.capture_begin(capture_error_mode="thread_local")
        logits = d._forward()
        c = time.perf_counter()
        g.capture_end()
    e = time.perf_counter()
    d.graph, d.logits = g, logits
    return b - a, c - b, e - c


if "e2" in parts or "e3" in parts:
    with torch.inference_mode():
        for n, batch in ((32768, 1), (4096, 1)):
            d = decoder_at(n, batch)
            if "e2" in parts:
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                for i in range(3):
                    fresh = torch.cuda.Stream() if i == 0 else stream
                    warm = i < 2
                    w, launch, end = capture_parts(d, fresh if i == 0 else stream, warm)
                    d.graph.replay()
                    ref = d.logits.clone()
                    eager = d._forward().clone()
                    rec(
                        kind="capture",
                        context=n,
                        batch=batch,
                        attempt=i,
                        warm=warm,
                        stream="new" if i == 0 else "kept",
                        warm_ms=round(w * 1e3, 2),
                        launch_ms=round(launch * 1e3, 2),
                        end_ms=round(end * 1e3, 2),
                        same=bool(torch.equal(ref, eager)),
                    )
                a = time.perf_counter()
                for _ in range(5):
                    d._forward()
                torch.cuda.synchronize()
                rec(
                    kind="eager_step_host",
                    context=n,
                    batch=batch,
                    ms=round((time.perf_counter() - a) / 5 * 1e3, 2),
                )
            if "e3" in parts:
                for lib in ("cublas", "cublaslt", "cublas", "cublaslt"):
                    torch.backends.cuda.preferred_blas_library(lib)
                    d.graph = None
                    d.step(d.tokens.clone())
                    for _ in range(5):
                        d.graph.replay()
                    a = t()
                    for _ in range(50):
                        d.graph.replay()
                    rec(
                        kind="replay",
                        context=n,
                        batch=batch,
                        lib=lib,
                        ms=round((t() - a) / 50 * 1e3, 3),
                    )
                torch.backends.cuda.preferred_blas_library("cublas")
            d.close()
            torch.cuda.empty_cache()

# E1: load paths, the saved model read back twice each.
if "e1" in parts:
    import tempfile

    folder = tempfile.mkdtemp(dir="/root")
    a = time.perf_counter()
    model.save_pretrained(folder)
    rec(kind="save", s=round(time.perf_counter() - a, 2))
    del backend, model
    gc.collect()
    torch.cuda.empty_cache()
    for way in ("cpu_then_to", "device_map", "cpu_then_to", "device_map"):
        a = t()
        if way == "device_map":
            m = AutoModelForCausalLM.from_pretrained(
                folder, dtype=torch.bfloat16, device_map=torch.device("cuda:0")
            )
        else:
            m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
            m.to(torch.device("cuda"))
        s = t() - a
        rec(
            kind="load",
            way=way,
            s=round(s, 2),
            device=str(m.device),
            dtype=str(next(m.parameters()).dtype),
        )
        del m
        gc.collect()
        torch.cuda.empty_cache()
