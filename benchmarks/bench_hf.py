"""The hf backend on a random-weight Qwen2.5-7B-shaped model (bf16): issue 13's table and targets.

Measures in one run, on the GPU it finds:
- a document's 6 generations of 64 tokens at 8K/32K/128K: per-request `generate` x6, one prefill +
  batched `generate`, and longscope's `generate_group` (one prefill + batched plain decode loop);
- decode ms per step after a 32K prompt at batch 1 and 6 (CUDA-graph decode, and the eager loop
  at batch 1) against the memory-bandwidth bound: the bytes a step must read (weights but the
  input embedding, whose one row per token is read; KV cache once) over the measured read rate;
- prefill (plain SDPA in one call; longscope's chunked prefill with cuDNN and with flash; cuDNN
  attention in one call) as a fraction of the bf16 matmul peak measured in the same run, and the
  chunked prefill's last logits against the one-call flash prefill;
- peak memory of each group against the memory plan;
- the saved model's move to the GPU after `from_pretrained` (`move`): `Module.to` against the
  engine's staged move (`hf/loading.py`), alternately, from the page cache.

Speed does not depend on weight values, so no download is needed. Usage:
    PYTHONPATH=src python benchmarks/bench_hf.py --out results.jsonl [--lengths 8192,32768,131072]
    PYTHONPATH=src python benchmarks/bench_hf.py --smoke   # the table and prefill at 2K only

Checked on every run: every answer of a group is `length` with exactly the tokens asked for, each
document's answers come back complete, every ratio is two figures of the same row divided.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import itertools
import json
import shutil
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from longscope.models import hf
from longscope.models.hf import HFBackend, decode_kernels
from longscope.models.memory_plan import GIB
from longscope.types import GenerationConfig, Request

QWEN25_7B = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 131072 + 1024,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
}
NEW_TOKENS = 64
MEMBERS = 6


class IdTokenizer:
    """Text is space-separated token ids: the benchmark sends exact lengths without a vocabulary."""

    pad_token_id = 0
    eos_token_id = None
    chat_template = None

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [int(t) for t in text.split()]

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return " ".join(str(i) for i in ids)


def sync_time() -> float:
    torch.cuda.synchronize()
    return time.perf_counter()


def matmul_peak() -> float:
    """Return measured bf16 TFLOP/s of an 8192^3 product on random data (median of 10)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start = sync_time()
        a @ b
        times.append(sync_time() - start)
    times.sort()
    return 2 * 8192**3 / times[len(times) // 2] / 1e12


def copy_bandwidth() -> float:
    """Return measured device-to-device copy GB/s, counting bytes read plus written."""
    src = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    start = sync_time()
    for _ in range(5):
        dst.copy_(src)
    elapsed = (sync_time() - start) / 5
    del src, dst
    return 2 * (4 << 30) / elapsed / 1e9


def read_rates(reads: int = 15) -> tuple[float, float]:
    """Return measured device read GB/s: a sum over 4 GiB (reads dominate; the result is tiny),
    the median of `reads` (the bounds' rate, as in every earlier run, which took five) and the
    best of them (two processes on one machine gave medians 4.5% apart over five reads)."""
    src = torch.randn(1 << 30, device="cuda", dtype=torch.float32)
    src.sum()
    times = []
    for _ in range(reads):
        start = sync_time()
        src.sum()
        times.append(sync_time() - start)
    times.sort()
    del src
    return (4 << 30) / times[len(times) // 2] / 1e9, (4 << 30) / times[0] / 1e9


def read_bandwidth() -> float:
    """Return the median read GB/s of `read_rates`."""
    return read_rates()[0]


def build_model() -> Any:
    config = Qwen2Config(**QWEN25_7B, eos_token_id=None, pad_token_id=0, bos_token_id=None)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def prompt_ids(length: int, seed: int = 1) -> list[int]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(1000, 150000, (length,), generator=gen).tolist()


def hf_generate_each(model: Any, ids: list[int]) -> float:
    """Return seconds for 6 separate `generate` calls (each prefills the whole prompt)."""
    tensor = torch.tensor([ids], device="cuda")
    start = sync_time()
    for _ in range(MEMBERS):
        model.generate(
            tensor, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False
        )
    return sync_time() - start


def hf_generate_shared(model: Any, ids: list[int]) -> float:
    """Return seconds for one prefill, the cache repeated 6 times, and one batched `generate`."""
    from transformers import DynamicCache

    start = sync_time()
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        prompt = torch.tensor([ids[:-1]], device="cuda")
        model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(MEMBERS)
        batch = torch.tensor([ids] * MEMBERS, device="cuda")
        model.generate(
            batch,
            past_key_values=cache,
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    elapsed = sync_time() - start
    del cache
    return elapsed


def requests(ids: list[int], members: int, new_tokens: int, name: str = "doc") -> list[Request]:
    text = " ".join(map(str, ids))
    return [
        Request(name, r, "completion", prompt=text, config=GenerationConfig(max_tokens=new_tokens))
        for r in range(members)
    ]


def longscope_group(backend: HFBackend, ids: list[int], members: int, new_tokens: int) -> float:
    reqs = requests(ids, members, new_tokens)
    start = sync_time()
    out = asyncio.run(backend.generate_group(reqs))
    elapsed = sync_time() - start
    statuses = {g.status for g in out}
    assert statuses == {"length"}, (statuses, out[0].error)
    assert all(g.completion_tokens == new_tokens for g in out)
    return elapsed


def forget_kernels(keep_disk: bool = False) -> int:
    """Leave the next decode to build and tune the step's kernels as a new process on a fresh
    machine does: drop Triton's loaded kernels of longscope's modules and the split stage's tuned
    configurations, the GEMV plans, the tunings' step counts, and point Triton's disk cache at an empty
    folder (`keep_disk`: keep it, as a machine's next process finds it). Return how many loaded
    kernels were dropped."""
    import tempfile

    import triton

    from longscope.models.hf import decode_ops, gemv, kernels, split_tuning, triton_ops

    dropped = 0
    for module in (decode_ops, gemv, kernels, triton_ops):
        for value in list(vars(module).values()):
            if isinstance(getattr(value, "cache", None), dict):  # an autotuner's choices
                value.cache.clear()
            # a JIT function holds its builds; an autotuner holds the JIT function (`fn`)
            for holder in (value, getattr(value, "fn", None)):
                caches = getattr(holder, "device_caches", None)
                if isinstance(caches, dict):
                    dropped += sum(len(entry[0]) for entry in caches.values())
                    caches.clear()
    for table in (gemv._PLANS, gemv._TIMES, gemv._RANKED, gemv._STEPS, split_tuning._STEPS):
        table.clear()
    if not keep_disk:
        triton.knobs.cache.dir = tempfile.mkdtemp(prefix="triton-fresh-")
        atexit.register(shutil.rmtree, triton.knobs.cache.dir, True)  # nobody reads it after
    return dropped


def weights_move(model: Any, record: Any, repeats: int = 2) -> None:
    """Issue 46: the model saved, then loaded with `from_pretrained` (its tensors mapped from the
    file) and moved to the GPU by `Module.to` or as the engine moves it (`loading.move_to_device`,
    which must take its staged path: pinned buffers, `STAGE_THREADS` threads), alternately,
    `repeats` times each. Both read the file from the page cache (it was just written and read)."""
    import gc
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM

    from longscope.models.hf import loading

    folder = Path(tempfile.mkdtemp(prefix="bench-move-"))
    try:
        model.save_pretrained(str(folder))
        size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
        device = torch.device("cuda", torch.cuda.current_device())
        for mode in ["to", "staged"] * repeats:
            loaded = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16)
            start = sync_time()
            if mode == "to":
                loaded.to(device)
            else:
                how = loading.move_to_device(torch, loaded, device)
                assert how == "staged", f"the engine's move fell back: {how}"
            took = sync_time() - start
            on_device = all(t.device == device for t in (*loaded.parameters(), *loaded.buffers()))
            assert on_device, f"{mode}: a tensor was left behind"
            same = torch.equal(loaded.lm_head.weight, model.lm_head.weight)
            assert same, f"{mode}: lm_head differs from the model saved"
            record(
                kind="weights_move", mode=mode, seconds=round(took, 3), file_bytes=size,
                gb_per_s=round(size / took / 1e9, 2), threads=loading.STAGE_THREADS,
                stage_bytes=loading.STAGE_BYTES,
            )  # fmt: skip
            del loaded
            gc.collect()
            torch.cuda.empty_cache()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def first_batch(backend: HFBackend, record: Any, threads: list[int], repeats: int = 2) -> None:
    """Issue 46: a new process's first batch (4 rows of a 4K prompt, 4 tokens each) from nothing
    (`forget_kernels`): prefill, the step's kernels built and tuned (the split stage's five
    configurations, the GEMV's candidates at 16 rows, gate/up with the SiLU product), a graph
    captured, with the variants a tuning times built at once in `threads` threads first
    (`triton_builds.build_at_once`; 0: each built where first launched), alternately."""
    from longscope.models.hf import triton_builds

    default = triton_builds.BUILD_THREADS
    ids = prompt_ids(4096, seed=7)
    # once untimed: this process's first 4K prefill (cuDNN's graphs, the allocator) is no arm's
    longscope_group(backend, ids, 4, 4)
    try:
        for repeat in range(repeats):
            for count in threads:
                triton_builds.BUILD_THREADS = count
                dropped = forget_kernels()
                seconds = longscope_group(backend, ids, 4, 4)
                last = backend.engine.last_decode
                record(
                    kind="first_batch", build_threads=count, repeat=repeat,
                    seconds=round(seconds, 3), capture_ms=last.get("capture_ms"), dropped=dropped,
                )  # fmt: skip
    finally:
        triton_builds.BUILD_THREADS = default


def run_documents(backend: HFBackend, documents: list[list[Request]], together: bool) -> float:
    """Return seconds to answer every document: one after another (each awaited before the
    next is handed over, as with one group in flight) or handed over at once, as the runner does."""

    async def at_once() -> list[list[Any]]:
        return await asyncio.gather(*(backend.generate_group(d) for d in documents))

    start = sync_time()
    if together:
        answers = asyncio.run(at_once())
    else:
        answers = [asyncio.run(backend.generate_group(d)) for d in documents]
    elapsed = sync_time() - start
    for document, answered in zip(documents, answers, strict=True):
        assert [g.completion_tokens for g in answered] == [r.config.max_tokens for r in document], {
            g.status for g in answered
        }
    return elapsed


def continuous(backend: HFBackend, record: Any, cases: list[tuple[int, int, int, int]]) -> None:
    """Documents of one length handed over one after another, then at once (the engine decodes
    the groups that fit together, one step between another group's prefill chunks)."""
    for length, count, new_tokens, max_batch in cases:
        backend.engine.max_batch = max_batch
        documents = [
            requests(prompt_ids(length - new_tokens, seed=10 + d), MEMBERS, new_tokens, f"doc{d}")
            for d in range(count)
        ]
        row: dict[str, Any] = {"kind": "continuous", "prompt": length, "documents": count}
        row.update(members=MEMBERS, new_tokens=new_tokens, max_batch=backend.engine.max_batch)
        before = dict(backend.engine.stats)
        row["one_after_another_s"] = round(run_documents(backend, documents, False), 2)
        apart = {k: backend.engine.stats[k] - before[k] for k in ("steps", "row_steps")}
        torch.cuda.empty_cache()
        before = dict(backend.engine.stats)
        backend.engine.stats["longest_wait_s"] = 0.0
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        row["at_once_s"] = round(run_documents(backend, documents, True), 2)
        row["peak_gib"] = round((torch.cuda.max_memory_allocated() - base) / GIB, 2)
        stats = backend.engine.stats
        row["speedup"] = round(row["one_after_another_s"] / row["at_once_s"], 2)
        row["steps_apart"] = apart["steps"]
        row["steps_at_once"] = stats["steps"] - before["steps"]
        row["rows_per_step_at_once"] = round(
            (stats["row_steps"] - before["row_steps"]) / max(1, row["steps_at_once"]), 2
        )
        row["joined"] = stats["joined"] - before["joined"]
        row["steps_in_prefill"] = stats["steps_in_prefill"] - before["steps_in_prefill"]
        row["longest_wait_s"] = stats["longest_wait_s"]
        row["captures"] = backend.engine.last_decode.get("captures")
        torch.cuda.empty_cache()
        record(**row)
    backend.engine.max_batch = 32


def prefill_flops(params: int, n: int, cfg: dict[str, int]) -> float:
    """Return dense + causal-attention FLOPs of prefilling n tokens (no lm_head: last logits only)."""
    attn = 2 * n * n * cfg["num_attention_heads"] * 128 * cfg["num_hidden_layers"]
    return 2 * params * n + attn


def time_prefill(
    model: Any,
    ids: list[int],
    chunk: int,
    attention: str,
    kernels: str,
    backend: HFBackend | None = None,
    reps: int = 1,
) -> tuple[list[float], Any, int]:
    """Return the seconds of each of `reps` prefills of `ids`, the last position's logits
    (float32) and the peak bytes allocated during the last one (cache included).

    kernels: "flash" or "cudnn" (SDPA limited to that kernel; longscope's split cuDNN path off
    for flash), or "longscope" (the backend's own prefill: `HFBackend.prefill_context` and
    `prefill_ids`, i.e. cuDNN for whole-quantum chunks, fused RMSNorm, the rest split off), or
    "longscope_unfused" (the same with transformers' RMSNorm, rotary embedding and SiLU-gated
    product), or "longscope_unfused_ops" (fused RMSNorm, transformers' rotary and SiLU product).
    """
    from transformers import DynamicCache

    model.config._attn_implementation = attention
    tensor = torch.tensor(ids, device="cuda")
    backends = torch.nn.attention.SDPBackend
    ours = kernels.startswith("longscope")
    # The backend's switches (engine state) for this variant; the other variants call the model
    # with them active, as the engine's prefill does.
    assert backend is not None
    switches = backend.engine.kernels
    switches.cudnn_split = kernels != "flash"
    switches.fused_prefill_norm = kernels in ("longscope", "longscope_unfused_ops")
    switches.fused_prefill_ops = kernels == "longscope"
    times = []
    for _ in range(reps):
        if ours:
            assert backend is not None
            context = backend.prefill_context()
        else:
            only = backends.CUDNN_ATTENTION if kernels == "cudnn" else backends.FLASH_ATTENTION
            context = contextlib.ExitStack()
            context.enter_context(hf.using(switches))
            context.enter_context(torch.nn.attention.sdpa_kernel([only]))
        out = None
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        with torch.inference_mode(), context:
            cache = DynamicCache(config=model.config)
            start = sync_time()
            if ours:
                out = backend.prefill_ids(tensor, cache, chunk)
            else:
                for begin in range(0, len(ids), chunk):
                    out = model(
                        input_ids=tensor[None, begin : begin + chunk],
                        past_key_values=cache,
                        use_cache=True,
                        logits_to_keep=1,
                    )
            times.append(sync_time() - start)
        peak = torch.cuda.max_memory_allocated() - base
        logits = out.logits[0, -1].float()
        del cache, out
    switches.cudnn_split = switches.fused_prefill_norm = switches.fused_prefill_ops = True
    return times, logits, peak


def profile_decode(model: Any, ids: list[int], record: Any, path: str) -> None:
    from transformers import DynamicCache

    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        tensor = torch.tensor([ids], device="cuda")
        for begin in range(0, len(ids), 8192):
            model(
                input_ids=tensor[:, begin : begin + 8192], past_key_values=cache, logits_to_keep=1
            )
        token = torch.tensor([[5]], device="cuda")
        for _ in range(3):
            model(input_ids=token, past_key_values=cache, logits_to_keep=1)
        for kernels in ("default", "no_cudnn"):
            context = decode_kernels() if kernels == "no_cudnn" else contextlib.nullcontext()
            with context:
                start = sync_time()
                for _ in range(32):
                    model(input_ids=token, past_key_values=cache, logits_to_keep=1)
                launched = time.perf_counter() - start
                total = sync_time() - start
            record(
                kind="decode_bare_loop",
                kernels=kernels,
                context=len(ids),
                cpu_ms_per_step=round(launched / 32 * 1e3, 2),
                ms_per_step=round(total / 32 * 1e3, 2),
            )
        if path:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(4):
                    model(input_ids=token, past_key_values=cache, logits_to_keep=1)
                torch.cuda.synchronize()
            table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=25)
            with open(path, "w") as handle:
                handle.write(table)
            table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
            with open(path, "a") as handle:
                handle.write(table)
    del cache


def profile_static_step(model: Any, ids: list[int], record: Any, path: str) -> None:
    """Profile the graph decode's step run eagerly (kernel times, no launch gaps) after 32K."""
    from transformers import DynamicCache

    from longscope.models.memory_plan import decode_capacity

    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        tensor = torch.tensor([ids], device="cuda")
        for begin in range(0, len(ids), 8192):
            model(
                input_ids=tensor[:, begin : begin + 8192], past_key_values=cache, logits_to_keep=1
            )
        positions = torch.tensor([len(ids)], device="cuda")
        decoder = hf.StaticDecoder(
            torch, model, cache, len(ids), decode_capacity(len(ids) + 64), None, positions
        )
        del cache
        decoder.tokens.fill_(5)
        for _ in range(3):
            decoder._forward()
        start = sync_time()
        for _ in range(10):
            decoder._forward()
        eager = (sync_time() - start) / 10
        record(kind="static_step_eager", context=len(ids), ms_per_step=round(eager * 1e3, 2))
        if path:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(4):
                    decoder._forward()
                torch.cuda.synchronize()
            table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=30)
            with open(path + ".static", "w") as handle:
                handle.write(table)
        decoder.close()
    torch.cuda.empty_cache()


STEP_MODES = (
    "torch", "triton-cublas", "triton", "triton-nopdl", "triton-unfused", "triton-nogated",
)  # fmt: skip
"""The decode step's kernels: the torch step; the Triton step with torch's (cuBLAS) matmuls;
the Triton step with `gemv`'s split-K GEMV where it timed faster per shape (the default); the
same launched one after another (not programmatically dependent: its GEMV plans were still timed
with it, once per process); the same with the attention merged by its own kernel always; the
same with the SiLU product always in its own kernel (not in the gate/up GEMV)."""


def set_step_mode(backend: HFBackend, mode: str) -> None:
    """Switch the engine's decode step to `mode` (one of `STEP_MODES`)."""
    from longscope.models.hf import gemv

    switches = backend.engine.kernels
    switches.decode_triton = mode != "torch"
    switches.decode_gemv = mode not in ("torch", "triton-cublas")
    switches.decode_pdl = mode != "triton-nopdl"
    switches.decode_fused_merge = mode != "triton-unfused"
    gemv.GATED = mode != "triton-nogated"


def profile_step(
    model: Any,
    backend: HFBackend,
    ids: list[int],
    record: Any,
    path: str,
    modes: tuple[str, ...] = ("torch", "triton"),
    rows: int = 1,
) -> None:
    """Issue 46: one decode step after `ids` at batch `rows` (the prompt's cache repeated), per
    kernel mode ("torch": the torch step, "triton": `decode_ops`): kernels launched per step and
    their device time (profiler, the step run eagerly), the captured graph's replay time (device
    only, back to back) and the eager step's wall time; the engine's own ms per step (`decode`
    rows) minus the replay is the host gap per step. Writes the top kernels of each mode to
    `path`.triton / .torch (`.rowsN` after them for several rows)."""
    from torch.profiler import ProfilerActivity, profile
    from transformers import DynamicCache

    from longscope.models.memory_plan import decode_capacity

    for mode in modes:
        set_step_mode(backend, mode)
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            with backend.prefill_context():
                backend.prefill_ids(torch.tensor(ids, device="cuda"), cache, 16384)
            if rows > 1:
                cache.batch_repeat_interleave(rows)
            positions = torch.tensor([len(ids)] * rows, device="cuda")
            decoder = hf.StaticDecoder(
                torch, model, cache, len(ids), decode_capacity(len(ids) + 64), None, positions,
                backend.engine.kernels,
            )  # fmt: skip
            del cache
            decoder.tokens.fill_(5)
            for _ in range(3):
                decoder._forward()
            start = sync_time()
            for _ in range(10):
                decoder._forward()
            eager = (sync_time() - start) / 10
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(4):
                    decoder._forward()
                torch.cuda.synchronize()
            events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
            kernels = sum(e.count for e in events) / 4
            device_ms = sum(e.self_device_time_total for e in events) / 4 / 1e3
            if path:
                table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=30)
                Path(f"{path}.{mode}{'' if rows == 1 else f'.rows{rows}'}").write_text(table)
            decoder.step(decoder.tokens.clone())  # captures the graph
            graph = decoder.graph
            replay = None
            if graph is not None:
                for _ in range(3):
                    graph.replay()
                start = sync_time()
                for _ in range(50):
                    graph.replay()
                replay = (sync_time() - start) / 50
            record(
                kind="step_profile",
                context=len(ids),
                rows=rows,
                kernels=mode,
                pdl=decoder.stats().get("pdl"),
                used=decoder.kernels,
                why=decoder.kernels_why,
                launches_per_step=round(kernels, 1),
                kernel_ms_per_step=round(device_ms, 3),
                eager_ms_per_step=round(eager * 1e3, 3),
                graph_replay_ms=round(replay * 1e3, 3) if replay else None,
            )
            decoder.close()
        torch.cuda.empty_cache()
    set_step_mode(backend, "triton")


def decode_lengths(
    backend: HFBackend,
    lengths: list[int],
    record: Any,
    weight_bytes: int,
    reading: float,
    modes: tuple[str, ...] = ("triton", "torch"),
    best_read: float = 0.0,
) -> None:
    """Issue 46: decode at batch 1 after each prompt length, Triton step against the torch step,
    by the engine's own decode clock (capture left out) against the bandwidth bound (weights but
    the input embedding, plus the KV cache at the answer's mean length, over the read rate)."""
    new_tokens = 256
    for n in lengths:
        ids = prompt_ids(n)
        for mode in modes:
            set_step_mode(backend, mode)
            longscope_group(backend, ids, 1, new_tokens)
            stats = backend.engine.last_decode
            step = (stats["decode_s"] - stats.get("capture_ms", 0) / 1e3) / max(1, stats["steps"])
            kv = (n + new_tokens // 2) * backend.engine.shape.kv_bytes_per_token
            bound = (weight_bytes + kv) / (reading * 1e9)
            record(
                kind="decode_length",
                context=n,
                batch=1,
                mode=mode,
                pdl=stats.get("pdl"),
                kernels=stats.get("kernels"),
                why=stats.get("kernels_why"),
                steps=stats["steps"],
                ms_per_step=round(step * 1e3, 3),
                bound_ms=round(bound * 1e3, 3),
                ratio=round(step / bound, 3),
                ratio_at_best_read=round(step / bound * (best_read or reading) / reading, 3),
            )
            torch.cuda.empty_cache()
    set_step_mode(backend, "triton")


def decode_batched(
    backend: HFBackend,
    rows_list: list[int],
    record: Any,
    weight_bytes: int,
    reading: float,
    peak: float,
    flops_per_token: float,
    prompt: int = 1024,
    longest: int = 8192,
    best_read: float = 0.0,
    window: tuple[int, str] | None = None,
) -> None:
    """Issue 46: batched decode of long answers, rows finishing at different times: `rows`
    answers as documents of 8 (one prompt each), answer j of all asking for `longest` - j *
    (`longest` / 2) / rows tokens, handed over at once. Per step against the roofline: the larger
    of bytes (weights once, plus each row's KV at its length) over the read rate and FLOPs (2 x
    non-embedding parameters per row, plus attention) over the matmul peak, summed over the
    steps the engine took with the rows it held. `window` (step, path): the device's kernels and
    idle gaps over a few steps from that step on (`step_window`)."""
    kv_token = backend.engine.shape.kv_bytes_per_token
    layers, heads = QWEN25_7B["num_hidden_layers"], QWEN25_7B["num_attention_heads"]
    for rows in rows_list:
        backend.engine.max_batch = max(32, rows)
        docs = []
        for d in range(rows // 8):
            ids = prompt_ids(prompt, seed=100 + d)
            text = " ".join(map(str, ids))
            docs.append(
                [
                    Request(
                        f"doc{d}", r, "completion", prompt=text,
                        config=GenerationConfig(
                            max_tokens=longest - (d * 8 + r) * (longest // 2) // rows
                        ),
                    )
                    for r in range(8)
                ]
            )  # fmt: skip
        before = dict(backend.engine.stats)
        with step_window(backend, record, rows, *(window or (0, ""))) as watched:
            elapsed = run_documents(backend, docs, together=True)
        # the device window's own time (profiled steps, the trace's export) is no step's
        elapsed -= watched.get("overhead_s", 0.0)
        stats = backend.engine.stats
        steps = stats["steps"] - before["steps"]
        row_steps = stats["row_steps"] - before["row_steps"]
        # A document's rows step until its longest answer ends (its unit leaves then).
        seconds_bound = 0.0
        for doc in docs:
            span = max(r.config.max_tokens for r in doc)
            kv_tokens = len(doc) * (span * prompt + span * span / 2)
            seconds_bound += kv_tokens * kv_token / (reading * 1e9)
        weight_s = steps * weight_bytes / (reading * 1e9)
        flops = row_steps * flops_per_token + sum(
            4 * layers * heads * 128 * len(doc) * (span * prompt + span * span / 2)
            for doc in docs
            for span in [max(r.config.max_tokens for r in doc)]
        )
        byte_bound = weight_s + seconds_bound
        flop_bound = flops / (peak * 1e12)
        last = backend.engine.last_decode
        decode_s = last.get("decode_s", elapsed) - watched.get("overhead_s", 0.0)
        steps_s = decode_s - (last.get("capture_ms") or 0.0) / 1e3
        record(
            kind="decode_batched",
            rows=rows,
            prompt=prompt,
            longest_answer=longest,
            kernels=last.get("kernels"),
            pdl=last.get("pdl"),
            steps=steps,
            rows_per_step=round(row_steps / max(1, steps), 2),
            wall_s=round(elapsed, 2),
            decode_s=round(decode_s, 2),
            ms_per_step=round(decode_s / max(1, steps) * 1e3, 3),
            bytes_bound_ms=round(byte_bound / max(1, steps) * 1e3, 3),
            flops_bound_ms=round(flop_bound / max(1, steps) * 1e3, 3),
            ratio=round(decode_s / max(byte_bound, flop_bound), 3),
            ratio_at_best_read=round(
                decode_s / max(byte_bound * reading / (best_read or reading), flop_bound), 3
            ),
            # the steps alone: without the captures, which build kernels on a first run
            ratio_steps=round(steps_s / max(byte_bound, flop_bound), 3),
            ms_per_step_steps=round(steps_s / max(1, steps) * 1e3, 3),
            captures=last.get("captures"),
            capture_ms=last.get("capture_ms"),
            window_overhead_s=watched.get("overhead_s"),
            rebuilds=last.get("rebuilds"),
            rebuild_host_ms=last.get("rebuild_ms"),
            joined=stats["joined"] - before["joined"],
            gemm=decode_ops_choices(),
            # the split stage's choice per launch class as this run left it (a run with other
            # candidates forgets them: `set_split_candidates`)
            attention=attention_choices(),
        )
        torch.cuda.empty_cache()
    backend.engine.max_batch = 32


@contextlib.contextmanager
def step_window(backend: HFBackend, record: Any, rows: int, first: int, path: str) -> Any:
    """Time every decode step's host call (`_decode_once`) and the host time between calls; with
    `path`, profile the device over `WINDOW_STEPS` steps from step `first` on: the span, the time
    no kernel ran, the largest idle gaps with the kernels around them, kernel time by name a step
    (a batched step is not a graph replayed alone: where its time goes beyond the replay's)."""
    engine = backend.engine
    original = engine._decode_once
    calls: list[tuple[float, float]] = []
    profiler: list[Any] = []
    watched: dict[str, float] = {}
    trace = Path(f"{path}.rows{rows}.json")
    if path:
        trace.unlink(missing_ok=True)  # an earlier run's trace is not this one's

    def timed(*args: Any, **kwargs: Any) -> Any:
        if path and len(calls) == first:
            from torch.profiler import ProfilerActivity, profile

            watched["began"] = time.perf_counter()
            profiler.append(profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]))
            profiler[0].start()
        start = time.perf_counter()
        result = original(*args, **kwargs)
        calls.append((start, time.perf_counter()))
        if profiler and len(calls) == first + WINDOW_STEPS:
            torch.cuda.synchronize()
            ran = profiler.pop()
            ran.stop()
            ran.export_chrome_trace(str(trace))
            watched["ended"] = time.perf_counter()
        return result

    engine._decode_once = timed
    try:
        yield watched
    finally:
        del engine._decode_once
        if profiler:  # the run ended inside the window
            profiler.pop().stop()
    inside = sorted(end - start for start, end in calls)
    if "ended" in watched:
        # the window's profiled steps, stop and export, less what as many steps take unwatched
        outside = sorted(
            end - start
            for index, (start, end) in enumerate(calls)
            if not first <= index < first + WINDOW_STEPS
        )
        typical = outside[len(outside) // 2] if outside else 0.0
        spent = watched["ended"] - watched["began"] - WINDOW_STEPS * typical
        watched["overhead_s"] = round(max(0.0, spent), 3)
    between = sorted(b[0] - a[1] for a, b in itertools.pairwise(calls))
    if not inside:
        return
    record(
        kind="decode_batched_host",
        rows=rows,
        calls=len(calls),
        call_ms_median=round(inside[len(inside) // 2] * 1e3, 3),
        call_ms_p99=round(inside[int(len(inside) * 0.99)] * 1e3, 3),
        between_ms_median=round(between[len(between) // 2] * 1e3, 3) if between else None,
        between_ms_sum=round(sum(between) * 1e3, 1),
    )
    if path and trace.exists():
        record(kind="decode_batched_window", rows=rows, **window_summary(str(trace)))


WINDOW_STEPS = 6
"""Decode steps the device window of a batched run covers (`step_window`)."""


def window_summary(trace_path: str) -> dict[str, Any]:
    """Summarize a chrome trace's device events: span, busy (their union), idle, the 12 largest
    gaps with the kernels either side, and kernel microseconds a step by name (top 20)."""
    events = json.loads(Path(trace_path).read_text()).get("traceEvents", [])
    device = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), str(e.get("name", "")))
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "ts" in e
    )
    if not device:
        return {"events": 0}
    busy, gaps, reach, last = 0.0, [], device[0][0], device[0][2]
    for start, end, name in device:
        if start > reach:
            gaps.append((start - reach, last[:60], name[:60]))
        busy += max(0.0, end - max(start, reach))
        if end > reach:
            reach, last = end, name
    by_name: dict[str, float] = {}
    for start, end, name in device:
        by_name[name[:80]] = by_name.get(name[:80], 0.0) + end - start
    span = reach - device[0][0]
    top = sorted(by_name.items(), key=lambda item: -item[1])[:20]
    return {
        "events": len(device),
        "steps": WINDOW_STEPS,
        "span_us": round(span, 1),
        "busy_us": round(busy, 1),
        "idle_us": round(span - busy, 1),
        "gaps_over_2us": sum(1 for g in gaps if g[0] > 2),
        "largest_gaps": [[round(g[0], 1), g[1], g[2]] for g in sorted(gaps, reverse=True)[:12]],
        "kernel_us_per_step": {name: round(us / WINDOW_STEPS, 1) for name, us in top},
    }


def decode_ops_choices() -> dict[str, Any]:
    """Return the GEMV plans tuned so far (shape -> plan or "torch", with both times in ms)."""
    from longscope.models.hf import gemv

    return gemv.plans()


def attention_choices() -> dict[str, str]:
    """Return the attention split stage's tuned configurations so far (key -> configuration)."""
    from longscope.models.hf import decode_ops

    return decode_ops.attention_choices()


def long_output(
    backend: HFBackend,
    record: Any,
    rows: int = 64,
    answer: int = 8192,
    prompt: int = 1024,
) -> None:
    """Issue 46.2: a long-output run (LongProc-like): `rows` requests of their own prompts,
    each answered with `answer` tokens, handed over at once as the runner hands them (one group
    each), against the engine's decode time for the same tokens (the same rows as one group:
    one prefill, one capture, no joins or leaves). Their ratio is what joining, leaving,
    rebuilds, captures and the harness cost on top of decoding."""
    backend.engine.max_batch = max(32, rows)
    ids = prompt_ids(prompt, seed=7)
    before = dict(backend.engine.stats)
    started = sync_time()
    longscope_group(backend, ids, rows, answer)
    alone_wall = sync_time() - started
    alone = backend.engine.last_decode
    alone_steps = backend.engine.stats["steps"] - before["steps"]
    docs = [
        [
            Request(
                f"req{d}", 0, "completion", prompt=" ".join(map(str, prompt_ids(prompt, 300 + d))),
                config=GenerationConfig(max_tokens=answer),
            )
        ]
        for d in range(rows)
    ]  # fmt: skip
    before = dict(backend.engine.stats)
    wall = run_documents(backend, docs, together=True)
    stats = backend.engine.stats
    last = backend.engine.last_decode
    engine_s = alone["decode_s"]
    record(
        kind="long_output",
        rows=rows,
        answer=answer,
        prompt=prompt,
        engine_decode_s=round(engine_s, 2),
        engine_wall_s=round(alone_wall, 2),
        engine_steps=alone_steps,
        engine_ms_per_step=round(engine_s / max(1, alone_steps) * 1e3, 3),
        engine_capture_ms=alone.get("capture_ms"),
        run_wall_s=round(wall, 2),
        run_steps=stats["steps"] - before["steps"],
        rows_per_step=round(
            (stats["row_steps"] - before["row_steps"]) / max(1, stats["steps"] - before["steps"]), 2
        ),
        joined=stats["joined"] - before["joined"],
        units=stats["units"] - before["units"],
        last_batch=last,
        ratio=round(wall / engine_s, 3),
    )
    backend.engine.max_batch = 32
    torch.cuda.empty_cache()


def attend_layers(
    attention: Any, query: Any, keys: list[Any], values: list[Any], valid: Any, lengths: Any
) -> None:
    """Run `attention` once per layer's cache, as a step does."""
    for k, v in zip(keys, values, strict=True):
        attention(query, k, v, valid, lengths, 0.088)


def attention_sweep(record: Any, reading: float) -> None:
    """Issue 46: the decode attention alone (28 layers' worth, one CUDA graph, batch 1, a 7B's
    4 KV heads x 7 query heads of 128) at each `MIN_SPLIT`, against its KV bytes over the read
    rate: which split size the card wants."""
    from longscope.models.hf import decode_ops

    gen = torch.Generator(device="cuda").manual_seed(3)
    default = decode_ops.MIN_SPLIT
    for length in (32768 + 128, 131072 + 128):
        capacity = length + 128
        keys = [
            torch.randn(1, 4, capacity, 128, device="cuda", generator=gen).bfloat16()
            for _ in range(28)
        ]
        values = [
            torch.randn(1, 4, capacity, 128, device="cuda", generator=gen).bfloat16()
            for _ in range(28)
        ]
        query = torch.randn(1, 28, 128, device="cuda", generator=gen).bfloat16()
        valid = torch.ones(1, capacity, dtype=torch.bool, device="cuda")
        lengths = torch.tensor([length], device="cuda")
        kv_bytes = 28 * 2 * 4 * length * 128 * 2
        for minimum in (128, 256, 512, 1024):
            decode_ops.MIN_SPLIT = minimum
            attention = decode_ops.DecodeAttention(1, 28, 4, 128, capacity, torch.bfloat16, "cuda")
            layers = partial(attend_layers, attention, query, keys, values, valid, lengths)
            took = graph_ms(layers) / 1e3
            record(
                kind="attention_sweep",
                length=length,
                min_split=minimum,
                splits=attention.splits,
                ms_28_layers=round(took * 1e3, 3),
                bytes_ms=round(kv_bytes / (reading * 1e9) * 1e3, 3),
                tbps=round(kv_bytes / took / 1e12, 2),
            )
        del keys, values
        torch.cuda.empty_cache()
    decode_ops.MIN_SPLIT = default


def graph_ms(fn: Any, replays: int = 20) -> float:
    """Return ms per replay of `fn` captured once in a CUDA graph (device time, back to back)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(3):
        graph.replay()
    start = sync_time()
    for _ in range(replays):
        graph.replay()
    return (sync_time() - start) / replays * 1e3


def repeat(fn: Any, args: tuple[Any, ...], times: int = 28) -> None:
    """Call `fn(*args)` `times` times (a layer's kernel, once per layer)."""
    for _ in range(times):
        fn(*args)


GEMV_SHAPES = {"o_proj": (3584, 3584, False), "down": (3584, 18944, False),
               "qkv": (4608, 3584, True), "gate_up": (37888, 3584, False)}  # fmt: skip


def decode_ops_sweep(record: Any, reading: float, gemv_rows: tuple[int, ...] = (8, 64)) -> None:
    """Issue 46: the batched step's small kernels alone, 28 layers' worth in one CUDA graph (as
    the step launches them, programmatically dependent where the card takes it): the attention
    merge per `MERGE_DIMS`, the residual add + RMSNorm per `NORM_WARPS` on the GEMV's slices,
    and the GEMV over a wider grid of tiles than `gemv`'s candidates against torch's matmul, at
    a 7B's shapes (each layer's own random weights: no L2 reuse)."""
    from longscope.models.hf import decode_ops, gemv

    gen = torch.Generator(device="cuda").manual_seed(5)
    pdl = gemv.pdl_supported(torch.device("cuda"))
    default_dims, default_warps = decode_ops.MERGE_DIMS, decode_ops.NORM_WARPS
    for batch, context in ((1, 32768), (8, 8192), (64, 4096)):
        capacity = context + 128
        keys = torch.randn(batch, 4, capacity, 128, device="cuda", generator=gen).bfloat16()
        values = torch.randn(batch, 4, capacity, 128, device="cuda", generator=gen).bfloat16()
        query = torch.randn(batch, 28, 128, device="cuda", generator=gen).bfloat16()
        valid = torch.ones(batch, capacity, dtype=torch.bool, device="cuda")
        lengths = torch.full((batch,), context, device="cuda")
        out = torch.empty(batch, 28 * 128, device="cuda", dtype=torch.bfloat16)
        for dims in (32, 64, 128):
            decode_ops.MERGE_DIMS = dims
            attention = decode_ops.DecodeAttention(
                batch, 28, 4, 128, capacity, torch.bfloat16, "cuda"
            )
            inputs = (query, keys, values, valid, lengths, 0.088, pdl)
            attention(*inputs)
            merge = graph_ms(partial(repeat, attention.merge, (out, pdl)))
            both = graph_ms(partial(repeat, attention, inputs))
            record(
                kind="merge_sweep", batch=batch, context=context, splits=attention.splits,
                merge_dims=dims, pdl=pdl, merge_us=round(merge / 28 * 1e3, 2),
                split_and_merge_us=round(both / 28 * 1e3, 2),
            )  # fmt: skip
        del keys, values
        torch.cuda.empty_cache()
    decode_ops.MERGE_DIMS = default_dims
    width = 3584
    weight = torch.rand(width, device="cuda", generator=gen).bfloat16() + 0.5
    for rows in (1, 8, 64):
        residual = torch.randn(rows, width, device="cuda", generator=gen).bfloat16()
        for slices in (0, 2, 4):
            part = torch.randn(slices or 1, rows, width, device="cuda", generator=gen) * 1e-3
            given = gemv.Parts(part, None, torch.bfloat16) if slices else part[0].bfloat16()
            for warps in (4, 8, 16):
                decode_ops.NORM_WARPS = warps
                took = graph_ms(
                    partial(repeat, decode_ops.add_rms_norm, (residual, given, weight, 1e-6, pdl))
                )  # fmt: skip
                record(
                    kind="norm_sweep", rows=rows, slices=slices, norm_warps=warps, pdl=pdl,
                    us=round(took / 28 * 1e3, 2),
                )  # fmt: skip
    decode_ops.NORM_WARPS = default_warps
    listed = {gemv.Plan(*tile, 1).label().split("/k")[0] for tile in gemv.FEW_ROWS}
    tiles = [
        (n, k, warps, stages)
        for n in (32, 64, 128, 256)
        for k in (64, 128, 256)
        for warps in (4, 8)
        for stages in (3, 4)
    ]
    for name, (n, k, bias) in GEMV_SHAPES.items():
        weights = [
            (
                (torch.randn(n, k, device="cuda", generator=gen) / k**0.5).bfloat16(),
                torch.randn(n, device="cuda", generator=gen).bfloat16() if bias else None,
            )
            for _ in range(28)
        ]
        floor_us = n * k * 2 / (reading * 1e9) * 1e6
        for rows in gemv_rows:
            x = torch.randn(rows, k, device="cuda", generator=gen).bfloat16()
            base = gemv._time(lambda w, b, x=x: torch.nn.functional.linear(x, w, b), weights)
            timed = []
            for block_n, block_k, warps, stages in tiles:
                for splits in gemv.SPLITS:
                    plan = gemv.Plan(block_n, block_k, warps, stages, splits)
                    if k // splits < block_k or -(-k // gemv._k_split(k, plan)) != splits:
                        continue
                    try:
                        ms = gemv._time(
                            lambda w, b, x=x, plan=plan: gemv.run(x, w, b, plan, pdl=pdl), weights
                        )  # fmt: skip
                    except Exception:  # a tile this card cannot hold
                        continue
                    timed.append((ms, plan.label()))
            timed.sort()
            record(
                kind="gemv_sweep", shape=name, rows=rows, floor_us=round(floor_us, 2),
                torch_us=round(base * 1e3, 2),
                best=[(round(ms * 1e3, 2), label) for ms, label in timed[:8]],
                candidates={
                    label: round(ms * 1e3, 2) for ms, label in timed
                    if label.split("/k")[0] in listed
                },
            )  # fmt: skip
        del weights
        torch.cuda.empty_cache()


def attention_checks(record: Any) -> None:
    """cuDNN's cost for a new shape (it builds a graph per shape), and attention error against
    float64 for flash (lower-right causal) and longscope's two-call cuDNN path, 7B-like heads."""
    from torch.nn.attention.bias import causal_lower_right

    gen = torch.Generator(device="cuda").manual_seed(0)
    q_len, kv_len, heads, dim = 8192, 32768, 28, 128
    query = torch.randn(1, heads, q_len, dim, device="cuda", generator=gen).bfloat16()
    key = torch.randn(1, heads, kv_len, dim, device="cuda", generator=gen).bfloat16()
    value = torch.randn(1, heads, kv_len, dim, device="cuda", generator=gen).bfloat16()
    scale = dim**-0.5
    with torch.inference_mode():
        for shape in ((q_len - 3, kv_len - 5), (q_len - 3, kv_len - 5), (q_len, kv_len)):
            q, k, v = query[:, :, : shape[0]], key[:, :, : shape[1]], value[:, :, : shape[1]]
            start = sync_time()
            hf.cudnn_after_prefix(q, k, v, scale)
            record(
                kind="cudnn_split_call",
                q=shape[0],
                kv=shape[1],
                ms=round((sync_time() - start) * 1e3, 2),
            )
        mask = causal_lower_right(q_len, kv_len)
        with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.FLASH_ATTENTION]):
            flash = torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=mask, scale=scale
            )
        split = hf.cudnn_after_prefix(query, key, value, scale)
        rows = slice(q_len - 256, q_len)  # the last queries see (almost) all keys
        q64, k64, v64 = query[:, :, rows].double(), key.double(), value.double()
        scores = q64 @ k64.transpose(2, 3) * scale
        allowed = torch.arange(kv_len, device="cuda")[None, :] <= (
            torch.arange(q_len, device="cuda")[rows, None] + kv_len - q_len
        )
        reference = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v64
        for name, out in (("flash_lower_right", flash), ("cudnn_two_calls", split)):
            error = (out[:, :, rows].double() - reference).norm() / reference.norm()
            record(kind="attention_error", variant=name, rel_error=float(f"{error.item():.2e}"))
    torch.cuda.empty_cache()


_ENGINE_SPLIT_CONFIGS: list[Any] = []
"""The engine's own `split_tuning._split_configs`, kept while another list stands in."""


def set_split_candidates(spec: str) -> None:
    """Give the decode attention's split stage the candidates `spec` (BLOCK/wWARPSsSTAGES,...;
    "engine": the engine's own) and forget its choices, so that each launch class tunes again."""
    import triton

    from longscope.models.hf import decode_ops, split_tuning

    if not _ENGINE_SPLIT_CONFIGS:
        _ENGINE_SPLIT_CONFIGS.append(split_tuning._split_configs)
    given = _ENGINE_SPLIT_CONFIGS[0]
    if spec == "engine" and split_tuning._split_configs is given:
        return  # the engine's already: its choices so far stay
    if spec != "engine":
        configs = []
        for label in spec.split(","):
            block, rest = label.split("/w")
            warps, stages = rest.split("s")
            config = {"BLOCK": int(block)}
            configs.append(triton.Config(config, num_warps=int(warps), num_stages=int(stages)))

        def given() -> list[Any]:
            return list(configs)

    # the autotuner's list, and the one `tune` builds at once before it times them
    decode_ops._split_configs = split_tuning._split_configs = given
    kernel = decode_ops._attention_split_kernel
    if hasattr(kernel, "configs"):
        kernel.configs = given()
        kernel.cache.clear()


ABLATABLE = ("norms", "rope", "attention", "silu")
"""The step's kernels `ablated` can leave out: residual add + RMSNorm, rotary with the cache write,
the attention (split stage and merge), the separate SiLU product."""


def ablation_names(parts: str) -> set[str]:
    """Return the kernels `parts` names (comma-separated; "none" or nothing: none); ValueError
    naming any `ABLATABLE` does not have."""
    names = {part.strip() for part in parts.split(",") if part.strip() not in ("", "none")}
    unknown = sorted(names - set(ABLATABLE))
    if unknown:
        known = ", ".join(ABLATABLE)
        raise ValueError(
            f"--ablate: {', '.join(unknown)} is not a step kernel; use {known} or none"
        )
    return names


@contextlib.contextmanager
def ablated(parts: str) -> Any:
    """Run the Triton decode step without the kernels named in `parts` (comma-separated, from
    `ABLATABLE`; "none": the whole step): each returns a buffer of its output's shape, left as it
    was, and launches nothing, so the answers are garbage but the step's other kernels read what
    they always read. What a step saves so is the most that fusing those kernels away could."""
    from longscope.models.hf import decode_ops

    names = ablation_names(parts)
    buffers: dict[tuple[Any, ...], Any] = {}

    def buffer(shape: tuple[int, ...], like: Any) -> Any:  # like: a tensor or the GEMV's Parts
        import torch

        key = (tuple(int(n) for n in shape), like.dtype, str(like.device))
        if key not in buffers:
            buffers[key] = torch.zeros(key[0], dtype=like.dtype, device=like.device)
        return buffers[key]

    def add_rms_norm(residual: Any, x: Any, weight: Any, eps: float, pdl: bool = False) -> Any:
        return buffer(residual.shape, residual)

    def rope_store(qkv: Any, cos: Any, sin: Any, keys: Any, values: Any, slot: Any, heads: int,
                   kv_heads: int, pdl: bool = False) -> Any:  # fmt: skip
        return buffer((slot.shape[0], heads, keys.shape[-1]), keys)

    def attention(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        return buffer((query.shape[0], self.heads * self.dim), query)

    def silu_mul_packed(x: Any, pdl: bool = False) -> Any:
        rows, width = x.shape
        return buffer((rows, width // 2), x)

    stand_ins = {
        "norms": (decode_ops, "add_rms_norm", add_rms_norm),
        "rope": (decode_ops, "rope_store", rope_store),
        "attention": (decode_ops.DecodeAttention, "__call__", attention),
        "silu": (decode_ops, "silu_mul_packed", silu_mul_packed),
    }
    saved = []
    try:
        for name in sorted(names):
            owner, attribute, stand_in = stand_ins[name]
            saved.append((owner, attribute, getattr(owner, attribute)))
            setattr(owner, attribute, stand_in)
        yield sorted(names)
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="8192,32768,131072")
    parser.add_argument("--out", default="bench_hf.jsonl")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--profile", default="", help="write the decode profile table here")
    parser.add_argument(
        "--skip",
        default="",
        help="parts to leave out: continuous,table,decode,step,attention,bare,prefill,"
        "lengths,batched,profile46,sweep,long,ops46,first,move",
    )
    parser.add_argument("--step-modes", default="torch,triton-cublas,triton")
    parser.add_argument("--profile-rows", default="1", help="profile46: rows of the step (a list)")
    parser.add_argument("--profile-context", type=int, default=32768, help="profile46: tokens")
    parser.add_argument("--decode-modes", default="triton,triton-cublas,torch")
    parser.add_argument("--long-rows", type=int, default=64)
    parser.add_argument("--long-answer", type=int, default=8192)
    parser.add_argument("--decode-lengths", default="8192,32768,131072")
    parser.add_argument("--batched-rows", default="8,32,64")
    parser.add_argument("--batched-longest", type=int, default=8192)
    parser.add_argument("--batched-modes", default="triton", help="batched: step modes")
    parser.add_argument(
        "--batched-window",
        default="",
        help="batched: STEP,PATH profiles the device over a few steps from STEP (`step_window`)",
    )
    parser.add_argument(
        "--balanced-splits",
        default="",
        help="batched: 1 splits by each row's keys, 0 by capacity (default: the engine's)",
    )
    parser.add_argument(
        "--split-targets", default="", help="batched: attention programs (default: the engine's)"
    )
    parser.add_argument(
        "--ablate",
        default="none",
        help="batched: step variants without some kernels, separated by ':' (each a comma list "
        "of norms, rope, attention, silu; none: the whole step), e.g. none:norms,rope:attention",
    )
    parser.add_argument(
        "--split-configs",
        default="engine",
        help="batched: the split stage's candidates, BLOCK/wWARPSsSTAGES,... variants "
        "separated by ':' (engine: the engine's five)",
    )
    parser.add_argument(
        "--first-batch-threads", default="0,8", help="first: build threads compared (a list)"
    )
    parser.add_argument("--smoke", action="store_true", help="table and prefill at 2K only")
    args = parser.parse_args()
    try:
        for variant in args.ablate.split(":"):
            ablation_names(variant)
    except ValueError as error:
        parser.error(str(error))
    if args.smoke:
        args.lengths = "2048"
        args.skip = (
            "continuous,decode,step,attention,bare,batched,profile46,sweep,long,ops46,first,move"
        )
        args.decode_lengths = "2048"
        args.out = "/dev/null"
    lengths = [int(x) for x in args.lengths.split(",")]
    skip = set(args.skip.split(","))
    log = open(args.out, "a")  # noqa: SIM115

    def record(**row: Any) -> None:
        row["card"] = torch.cuda.get_device_name()
        print(json.dumps(row), flush=True)
        log.write(json.dumps(row) + "\n")
        log.flush()

    from longscope.models.hf import gemv

    # The steps measured here are a long run's, tuned from the first step; a run of short
    # answers leaves the GEMV and the split stage untuned (`gemv.TUNE_AFTER_STEPS`, 4,096 steps).
    shipped, gemv.TUNE_AFTER_STEPS = gemv.TUNE_AFTER_STEPS, 0
    record(
        kind="env",
        torch=torch.__version__,
        transformers=__import__("transformers").__version__,
        gemv_tune_after_steps={"shipped": shipped, "here": gemv.TUNE_AFTER_STEPS},
    )
    peak = matmul_peak()
    bandwidth = copy_bandwidth()
    reading, best_read = read_rates()
    # One machine measured 4.09 and 4.27 TB/s in two processes (issue 46, fifth pass): rows
    # also give their ratio at the best of the five reads, the harder bound.
    record(
        kind="ceilings",
        matmul_tflops=round(peak, 1),
        copy_gbps=round(bandwidth, 1),
        read_gbps=round(reading, 1),
        read_best_gbps=round(best_read, 1),
    )

    model = build_model()
    params = sum(p.numel() for p in model.parameters())
    embed = QWEN25_7B["vocab_size"] * QWEN25_7B["hidden_size"]
    nonembed = params - 2 * embed
    # A decode step reads every weight but the input embedding (one row per token).
    step_weight_bytes = (params - embed) * 2
    backend = HFBackend(
        "random-qwen2.5-7b", model=model, tokenizer=IdTokenizer(), prompt_mode="completion"
    )
    switches = backend.engine.kernels
    record(kind="model", params=params, attention=model.config._attn_implementation)

    # Warm-up: kernels, allocator, cuBLAS handles; the decode step's Triton kernels compiled
    # and tuned for each row padding (1, 16, 32, 64 rows: once per machine, cached on disk).
    backend.engine.max_batch = 64
    for members in (2, 1, 32, 64):
        longscope_group(backend, prompt_ids(1024), members, 4)
    backend.engine.max_batch = 32
    record(kind="gemm_choices", **decode_ops_choices())
    record(kind="attention_choices", **attention_choices())

    if "move" not in skip:
        weights_move(model, record)
    if "first" not in skip:
        threads = [int(x) for x in args.first_batch_threads.split(",")]
        first_batch(backend, record, threads)
        forget_kernels()  # what follows tunes and builds its own again
    # 0. Continuous batching across documents.
    if "continuous" not in skip:
        cases = [(8192, 4, 256, 16), (8192, 4, 256, 32), (32768, 4, 64, 32)]
        continuous(backend, record, [*cases, (8192, 4, 1024, 16), (8192, 4, 1024, 32)])

    # 1. The table: 6 generations of 64 tokens on one prompt.
    for n in lengths if "table" not in skip else []:
        ids = prompt_ids(n - NEW_TOKENS)
        row: dict[str, Any] = {"kind": "table", "prompt": n}
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        row["longscope_s"] = round(longscope_group(backend, ids, MEMBERS, NEW_TOKENS), 2)
        plan = backend.engine.last_plan
        row["peak_gib"] = round((torch.cuda.max_memory_allocated() - base) / GIB, 2)
        row["plan_kv_act_gib"] = round((plan.kv_bytes + plan.activation_bytes) / GIB, 2)
        row["plan_total_gib"] = round(plan.needed_bytes / GIB, 2)
        row["decode"] = backend.engine.last_decode
        row["prefill_chunk"] = backend.engine.last_chunk
        row["cudnn_split_calls"] = switches.cudnn_used
        row["cudnn_split_error"] = switches.cudnn_error
        row["fused_ops_error"] = switches.fused_ops_error
        if not args.skip_baseline:
            model.config._attn_implementation = "sdpa"
            row["generate_x6_s"] = round(hf_generate_each(model, ids), 2)
            row["prefill_once_generate_s"] = round(hf_generate_shared(model, ids), 2)
            model.config._attn_implementation = "longscope_sdpa"
            row["ratio_vs_x6"] = round(row["generate_x6_s"] / row["longscope_s"], 2)
        torch.cuda.empty_cache()
        record(**row)
        # One sequence of the same prompt: the prefill, not the decode, is its plan's peak.
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        single: dict[str, Any] = {"kind": "single", "prompt": n}
        single["longscope_s"] = round(longscope_group(backend, ids, 1, NEW_TOKENS), 2)
        plan = backend.engine.last_plan
        single["prefill_s"] = backend.engine.last_decode.get("prefill_s")
        single["prefill_chunk"] = backend.engine.last_chunk
        if single["prefill_s"]:
            # First prefill of this prompt in the process: cuDNN graph builds for its new shapes
            # (the rest split off the last chunk) are inside.
            done = prefill_flops(nonembed, len(ids) - 1, QWEN25_7B) / single["prefill_s"] / 1e12
            single["prefill_of_peak"] = round(done / peak, 3)
        single["peak_gib"] = round((torch.cuda.max_memory_allocated() - base) / GIB, 2)
        single["plan_kv_act_gib"] = round((plan.kv_bytes + plan.activation_bytes) / GIB, 2)
        single["plan_total_gib"] = round(plan.needed_bytes / GIB, 2)
        torch.cuda.empty_cache()
        record(**single)

    # 2. Decode after 32K at batch 1 and 6: (T(129 tokens) - T(65 tokens)) / 64, so that the
    # prefill and the graph capture (both in each call) cancel; the capture is reported apart.
    ids = prompt_ids(32768)
    variants = ((1, True, True), (1, True, False), (6, True, True), (1, False, True))
    for batch, graph, fused in variants if "decode" not in skip else ():
        backend.engine.cuda_graph = graph
        # fused: RMSNorm in torch's fused kernel and the rope of query and key in 5 kernels.
        backend.engine.kernels.fused_norm = backend.engine.kernels.fast_rope = fused
        one = longscope_group(backend, ids, batch, 1)
        mid = longscope_group(backend, ids, batch, 65)
        full = longscope_group(backend, ids, batch, 129)
        stats = backend.engine.last_decode
        # The decode phase's own clock (device synced at its ends), capture left out.
        step = (stats["decode_s"] - stats.get("capture_ms", 0) / 1e3) / max(1, stats["steps"])
        kv = 32768 * backend.engine.shape.kv_bytes_per_token * batch
        bound = (step_weight_bytes + kv) / (reading * 1e9)
        old_bound = (params * 2 + kv) / (bandwidth * 1e9 / 2)  # BENCHMARKS.md's earlier formula
        record(
            kind="decode",
            context=32768,
            batch=batch,
            path=stats.get("path"),
            fused_norm_rope=fused,
            capture_ms=stats.get("capture_ms"),
            ms_per_step=round(step * 1e3, 2),
            ms_per_step_from_totals=round((full - mid) / 64 * 1e3, 2),
            ms_per_step_with_capture=round((mid - one) / 64 * 1e3, 2),
            bound_ms=round(bound * 1e3, 2),
            ratio=round(step / bound, 2),
            old_bound_ms=round(old_bound * 1e3, 2),
        )
        torch.cuda.empty_cache()
    backend.engine.cuda_graph = True
    backend.engine.kernels.fused_norm = backend.engine.kernels.fast_rope = True

    # Issue 46: where a step's time goes, decode at batch 1 after 8K-128K, batched long answers.
    if "sweep" not in skip:
        attention_sweep(record, reading)
    if "ops46" not in skip:
        decode_ops_sweep(record, reading)
    if "profile46" not in skip:
        modes = tuple(args.step_modes.split(","))
        ids = prompt_ids(args.profile_context)
        for rows in [int(x) for x in args.profile_rows.split(",")]:
            profile_step(model, backend, ids, record, args.profile, modes, rows)
    if "lengths" not in skip:
        decode = [int(x) for x in args.decode_lengths.split(",")]
        modes = tuple(args.decode_modes.split(","))
        decode_lengths(backend, decode, record, step_weight_bytes, reading, modes, best_read)
    if "batched" not in skip:
        from longscope.models.hf import decode_ops

        rows = [int(x) for x in args.batched_rows.split(",")]
        default_target, default_balanced = decode_ops.SPLIT_TARGET, decode_ops.BALANCED_SPLITS
        targets = args.split_targets or str(default_target)
        window = None
        if args.batched_window:
            step, path = args.batched_window.split(",", 1)
            window = (int(step), path)
        for target, candidates, left_out in itertools.product(
            [int(x) for x in targets.split(",")],
            args.split_configs.split(":"),
            args.ablate.split(":"),
        ):
            # programs the attention's split stage aims at (default: the engine's)
            decode_ops.SPLIT_TARGET = target
            set_split_candidates(candidates)
            for mode in args.batched_modes.split(","):
                for balanced in args.balanced_splits.split(",") if args.balanced_splits else [""]:
                    decode_ops.BALANCED_SPLITS = balanced == "1" if balanced else default_balanced
                    set_step_mode(backend, mode)
                    record(
                        kind="split_target",
                        split_target=target,
                        candidates=candidates,
                        mode=mode,
                        balanced=decode_ops.BALANCED_SPLITS,
                        ablated=left_out,
                    )
                    with ablated(left_out):
                        decode_batched(
                            backend, rows, record, step_weight_bytes, reading, peak,
                            2 * (params - embed), longest=args.batched_longest,
                            best_read=best_read, window=window,
                        )  # fmt: skip
        decode_ops.SPLIT_TARGET = default_target
        decode_ops.BALANCED_SPLITS = default_balanced
        set_split_candidates("engine")
        set_step_mode(backend, "triton")
    if "long" not in skip:
        long_output(backend, record, args.long_rows, args.long_answer)

    if "step" not in skip:
        profile_static_step(model, prompt_ids(32768), record, args.profile)
    if "attention" not in skip:
        attention_checks(record)

    # 2b. Where a decode step's time goes: a bare loop of forward calls (no sync per step),
    # and the profiler's top operators by CPU time.
    if "bare" not in skip:
        profile_decode(model, prompt_ids(32768), record, args.profile)

    # 3. Prefill as a fraction of the matmul peak; last logits against the flash one-call prefill.
    # Each variant runs `reps` times: the first pays cuDNN's graph builds for shapes not seen yet
    # in this process (of_peak_first), the last is the steady state (of_peak).
    for n in lengths if "prefill" not in skip else []:
        ids = prompt_ids(n)
        flops = prefill_flops(nonembed, n, QWEN25_7B)
        reps = 2 if n > 32768 else 3
        free = backend.free_bytes()
        # The backend's own choice for a single sequence of this prompt (and one answer token).
        chunk, plan = backend.engine.plan(n + 1, 1, free, n, 1)
        chunk = min(chunk, n)
        reference = None
        for name, size, attention, kernels, count in (
            ("sdpa_one_call_flash", n, "sdpa", "flash", 1),
            ("longscope_default", chunk, "longscope_sdpa", "longscope", reps),
            ("longscope_default_unfused", chunk, "longscope_sdpa", "longscope_unfused", reps),
            (
                "longscope_default_unfused_ops",
                chunk,
                "longscope_sdpa",
                "longscope_unfused_ops",
                reps,
            ),
            ("longscope_chunk8192", 8192, "longscope_sdpa", "longscope", reps),
            ("longscope_chunk16384", 16384, "longscope_sdpa", "longscope", reps),
            ("longscope_chunk32768", 32768, "longscope_sdpa", "longscope", reps),
            ("longscope_one_call", n, "longscope_sdpa", "longscope", reps),
            ("cudnn_one_call", n, "longscope_sdpa", "cudnn", reps),
        ):
            if size > n or (name.startswith("longscope_chunk") and size == chunk):
                continue
            before = switches.cudnn_used
            try:
                times, logits, peak_bytes = time_prefill(
                    model, ids, size, attention, kernels, backend, count
                )
            except RuntimeError as exc:
                record(kind="prefill", prompt=n, variant=name, error=str(exc)[:200])
                continue
            if reference is None:
                reference = logits
            error = (logits - reference).norm() / reference.norm()
            row: dict[str, Any] = {"kind": "prefill", "prompt": n, "variant": name}
            row.update(chunk=size, seconds=[round(t, 3) for t in times])
            row["of_peak"] = round(flops / times[-1] / 1e12 / peak, 3)
            row["of_peak_first"] = round(flops / times[0] / 1e12 / peak, 3)
            row["tflops"] = round(flops / times[-1] / 1e12, 1)
            row["logits_rel_error"] = float(f"{error.item():.2e}")
            row["same_argmax"] = bool(logits.argmax() == reference.argmax())
            row["cudnn_split_calls"] = switches.cudnn_used - before
            row["cudnn_split_error"] = switches.cudnn_error
            row["cudnn_gqa_unrepeated"] = switches.cudnn_gqa
            row["peak_gib"] = round(peak_bytes / GIB, 2)
            if name == "longscope_default":
                # The plan's prefill phase for this prompt (whole multiples: no flash rest, so
                # the plan's repeated keys for a flash chunk are not used here).
                row["plan_kv_act_gib"] = round((plan.kv_bytes + plan.activation_bytes) / GIB, 2)
            record(**row)
            del logits
            torch.cuda.empty_cache()
        model.config._attn_implementation = "longscope_sdpa"
    record(kind="gemm_choices", **decode_ops_choices())
    record(kind="attention_choices", **attention_choices())


if __name__ == "__main__":
    main()
