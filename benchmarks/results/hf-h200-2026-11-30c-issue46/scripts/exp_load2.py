"""Ad hoc (issue 46, 2026-11-30c): a saved bf16 7B moved to the GPU: model.to (as shipped) against
tensors copied in N threads (own streams, pageable), and through pinned staging buffers."""

import gc
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

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
model = bench_hf.build_model()
model.save_pretrained(path)
del model
gc.collect()
torch.cuda.empty_cache()
dev = torch.device("cuda")


def threaded(model, n):
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    local = threading.local()

    def copy(t):
        if t.device == dev:
            return t
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = torch.cuda.Stream(dev)
        dst = torch.empty(t.shape, dtype=t.dtype, device=dev)
        with torch.cuda.stream(s):
            dst.copy_(t)
        s.synchronize()
        return dst

    # largest first: the threads finish together
    order = sorted(tensors, key=lambda k: -tensors[k].numel())
    with ThreadPoolExecutor(n) as pool:
        moved = dict(zip(order, pool.map(lambda k: copy(tensors[k]), order), strict=False))
    model._apply(lambda t: moved.get(id(t), t))


def pinned(model, n, size=256 << 20):
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    local = threading.local()

    def copy(t):
        s = getattr(local, "s", None)
        if s is None:
            s = local.s = torch.cuda.Stream(dev)
            local.buf = [torch.empty(size, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
            local.ev = [None, None]
        dst = torch.empty(t.shape, dtype=t.dtype, device=dev)
        src = t.contiguous().view(-1).view(torch.uint8)
        flat = dst.view(-1).view(torch.uint8)
        for i, start in enumerate(range(0, src.numel(), size)):
            b = i % 2
            if local.ev[b] is not None:
                local.ev[b].synchronize()
            end = min(start + size, src.numel())
            local.buf[b][: end - start].copy_(src[start:end])
            with torch.cuda.stream(s):
                flat[start:end].copy_(local.buf[b][: end - start], non_blocking=True)
                local.ev[b] = torch.cuda.Event()
                local.ev[b].record(s)
        s.synchronize()
        return dst

    order = sorted(tensors, key=lambda k: -tensors[k].numel())
    with ThreadPoolExecutor(n) as pool:
        moved = dict(zip(order, pool.map(lambda k: copy(tensors[k]), order), strict=False))
    model._apply(lambda t: moved.get(id(t), t))


ref = None
for mode in ("to", "threads4", "threads8", "pinned4", "to", "threads8", "threads16", "pinned8"):
    m = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if mode == "to":
        m.to(dev)
    elif mode.startswith("threads"):
        threaded(m, int(mode[7:]))
    else:
        pinned(m, int(mode[6:]))
    torch.cuda.synchronize()
    took = time.perf_counter() - t0
    check = sum(float(p.float().sum()) for p in list(m.parameters())[:6])
    ok = all(p.device == dev for p in m.parameters()) and all(b.device == dev for b in m.buffers())
    rec(
        kind="move",
        mode=mode,
        s=round(took, 3),
        gb_s=round(15.23 / took, 1),
        all_on_device=ok,
        check=check,
        allocated_gb=round(torch.cuda.memory_allocated() / 1e9, 2),
    )
    del m
    gc.collect()
    torch.cuda.empty_cache()
