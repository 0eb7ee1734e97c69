"""Ad hoc (issue 46, 2026-11-30c): what a decode step between prefill chunks costs.
A running batch of R rows at C tokens; a 128K prompt prefilled in 16K chunks with, after each
chunk, (a) no step, (b) an eager step as the engine takes it, (c) the same with a graph captured
at the first step and replayed; plus the host return time of a chunk's forward (a sync inside?)."""

import json
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
from transformers import DynamicCache

import bench_hf
from longscope.models.hf import HFBackend, StaticDecoder
from longscope.models.hf.prefill import chunk_bounds
from longscope.models.memory_plan import decode_capacity

out = open(sys.argv[1], "w")  # noqa: SIM115 (open for the whole script)


def rec(**kw):
    kw["card"] = torch.cuda.get_device_name()
    print(json.dumps(kw), flush=True)
    out.write(json.dumps(kw) + "\n")
    out.flush()


model = bench_hf.build_model()
backend = HFBackend(
    "random", model=model, tokenizer=bench_hf.IdTokenizer(), prompt_mode="completion"
)
bench_hf.longscope_group(backend, bench_hf.prompt_ids(1024), 2, 4)
bench_hf.longscope_group(backend, bench_hf.prompt_ids(1024), 1, 4)
model.config._attn_implementation = "longscope_sdpa"
kw = backend.engine._cache_kw


def running(rows, context):
    ids = torch.tensor(bench_hf.prompt_ids(context, seed=3), device="cuda")
    cache = DynamicCache(config=model.config)
    with torch.inference_mode(), backend.prefill_context():
        backend.prefill_ids(ids, cache, 16384)
    if rows > 1:
        cache.batch_repeat_interleave(rows)
    positions = torch.tensor([context] * rows, device="cuda")
    dec = StaticDecoder(
        torch,
        model,
        cache,
        context,
        decode_capacity(context + 256),
        None,
        positions,
        backend.engine.kernels,
    )
    del cache
    return dec


def chunks(ids, mode, dec, timing):
    cache = DynamicCache(config=model.config)
    tokens = torch.full((dec.rows,), 5, dtype=torch.long, device="cuda")
    host_returns = []
    start = bench_hf.sync_time()
    for s, e in chunk_bounds(int(ids.shape[0]), 16384):
        t = time.perf_counter()
        with backend.prefill_context():
            model(input_ids=ids[s:e][None], **{kw: cache}, use_cache=True, logits_to_keep=1)
        host_returns.append(time.perf_counter() - t)
        if mode == "none":
            continue
        if mode == "sync_eager":
            torch.cuda.synchronize()
        t = time.perf_counter()
        host = torch.empty(dec.rows, dtype=torch.long, pin_memory=True)
        host.copy_(tokens, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()
        logits = dec.step(tokens, capture=(mode == "graph"))
        tokens = logits.argmax(-1)
        ready.synchronize()
        host.tolist()
        timing.append(time.perf_counter() - t)
    total = bench_hf.sync_time() - start
    del cache
    return total, host_returns


with torch.inference_mode():
    ids = torch.tensor(bench_hf.prompt_ids(131072, seed=5), device="cuda")
    for rows, context in ((1, 4096), (4, 65536), (4, 131072)):
        dec = running(rows, context)
        # the step alone: eager host time, graph replay, capture
        for _ in range(3):
            dec._forward()
        s = bench_hf.sync_time()
        for _ in range(10):
            dec._forward()
        eager = (bench_hf.sync_time() - s) / 10
        s = time.perf_counter()
        for _ in range(10):
            dec._forward()
        eager_host = (time.perf_counter() - s) / 10
        torch.cuda.synchronize()
        s = bench_hf.sync_time()
        dec.step(dec.tokens.clone())
        capture = bench_hf.sync_time() - s
        for _ in range(3):
            dec.graph.replay()
        s = bench_hf.sync_time()
        for _ in range(20):
            dec.graph.replay()
        replay = (bench_hf.sync_time() - s) / 20
        rec(
            kind="step_alone",
            rows=rows,
            context=context,
            eager_ms=round(eager * 1e3, 2),
            eager_host_ms=round(eager_host * 1e3, 2),
            capture_ms=round(capture * 1e3, 2),
            replay_ms=round(replay * 1e3, 2),
        )
        for mode in ("none", "eager", "sync_eager", "graph", "eager"):
            dec.graph = dec.logits = None
            timing = []
            total, host_returns = chunks(ids, mode, dec, timing)
            rec(
                kind="prefill_128k",
                rows=rows,
                context=context,
                mode=mode,
                total_s=round(total, 3),
                steps=len(timing),
                step_ms=[round(t * 1e3, 1) for t in timing],
                chunk_host_ms=[round(t * 1e3, 1) for t in host_returns],
            )
        dec.close()
        del dec
        torch.cuda.empty_cache()
