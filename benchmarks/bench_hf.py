"""The hf backend on a random-weight Qwen2.5-7B-shaped model (bf16): issue 13's table and targets.

Measures in one run, on the GPU it finds:
- a document's 6 generations of 64 tokens at 8K/32K/128K: per-request `generate` x6, one prefill +
  batched `generate`, and longscope's `generate_group` (one prefill + batched plain decode loop);
- decode ms per step after a 32K prompt at batch 1 and 6 against the memory-bandwidth bound
  (weights + KV read once per step at the measured copy bandwidth);
- prefill (plain SDPA in one call; longscope's chunked prefill; cuDNN attention) as a fraction of
  the bf16 matmul peak measured in the same run;
- peak memory of the 128K group against the memory plan.

Speed does not depend on weight values, so no download is needed. Usage:
    PYTHONPATH=src python benchmarks/bench_hf.py --out results.jsonl [--lengths 8192,32768,131072]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

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


def requests(ids: list[int], members: int, new_tokens: int) -> list[Request]:
    text = " ".join(map(str, ids))
    return [
        Request("doc", r, "completion", prompt=text, config=GenerationConfig(max_tokens=new_tokens))
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


def prefill_flops(params: int, n: int, cfg: dict[str, int]) -> float:
    """Return dense + causal-attention FLOPs of prefilling n tokens (no lm_head: last logits only)."""
    attn = 2 * n * n * cfg["num_attention_heads"] * 128 * cfg["num_hidden_layers"]
    return 2 * params * n + attn


def time_prefill(model: Any, ids: list[int], chunk: int, attention: str, cudnn: bool) -> float:
    from transformers import DynamicCache

    model.config._attn_implementation = attention
    tensor = torch.tensor([ids], device="cuda")
    context = torch.nn.attention.sdpa_kernel(
        [torch.nn.attention.SDPBackend.CUDNN_ATTENTION]
        if cudnn
        else [torch.nn.attention.SDPBackend.FLASH_ATTENTION]
    )
    with torch.inference_mode(), context:
        cache = DynamicCache(config=model.config)
        start = sync_time()
        for begin in range(0, len(ids), chunk):
            model(
                input_ids=tensor[:, begin : begin + chunk],
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        elapsed = sync_time() - start
    del cache
    return elapsed


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="8192,32768,131072")
    parser.add_argument("--out", default="bench_hf.jsonl")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--profile", default="", help="write the decode profile table here")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    log = open(args.out, "a")  # noqa: SIM115

    def record(**row: Any) -> None:
        row["card"] = torch.cuda.get_device_name()
        print(json.dumps(row), flush=True)
        log.write(json.dumps(row) + "\n")
        log.flush()

    record(kind="env", torch=torch.__version__, transformers=__import__("transformers").__version__)
    peak = matmul_peak()
    bandwidth = copy_bandwidth()
    record(kind="ceilings", matmul_tflops=round(peak, 1), copy_gbps=round(bandwidth, 1))

    model = build_model()
    params = sum(p.numel() for p in model.parameters())
    nonembed = params - 2 * QWEN25_7B["vocab_size"] * QWEN25_7B["hidden_size"]
    weight_bytes = params * 2
    backend = HFBackend(
        "random-qwen2.5-7b", model=model, tokenizer=IdTokenizer(), prompt_mode="completion"
    )
    record(kind="model", params=params, attention=model.config._attn_implementation)

    # Warm-up: kernels, allocator, cuBLAS handles.
    longscope_group(backend, prompt_ids(1024), 2, 4)

    # 1. The table: 6 generations of 64 tokens on one prompt.
    for n in lengths:
        ids = prompt_ids(n - NEW_TOKENS)
        row: dict[str, Any] = {"kind": "table", "prompt": n}
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        row["longscope_s"] = round(longscope_group(backend, ids, MEMBERS, NEW_TOKENS), 2)
        plan = backend.last_plan
        row["peak_gib"] = round((torch.cuda.max_memory_allocated() - base) / GIB, 2)
        row["plan_kv_act_gib"] = round((plan.kv_bytes + plan.activation_bytes) / GIB, 2)
        row["plan_total_gib"] = round(plan.needed_bytes / GIB, 2)
        if not args.skip_baseline:
            model.config._attn_implementation = "sdpa"
            row["generate_x6_s"] = round(hf_generate_each(model, ids), 2)
            row["prefill_once_generate_s"] = round(hf_generate_shared(model, ids), 2)
            model.config._attn_implementation = "longscope_sdpa"
            row["ratio_vs_x6"] = round(row["generate_x6_s"] / row["longscope_s"], 2)
        torch.cuda.empty_cache()
        record(**row)

    # 2. Decode after 32K at batch 1 and 6: (T(65 tokens) - T(1 token)) / 64.
    ids = prompt_ids(32768)
    for batch in (1, 6):
        one = longscope_group(backend, ids, batch, 1)
        full = longscope_group(backend, ids, batch, 65)
        step = (full - one) / 64
        kv = 32768 * backend.shape.kv_bytes_per_token * batch
        bound = (weight_bytes + kv) / (bandwidth * 1e9 / 2)  # a read is half a copy's traffic
        record(
            kind="decode",
            context=32768,
            batch=batch,
            ms_per_step=round(step * 1e3, 2),
            bound_ms=round(bound * 1e3, 2),
            ratio=round(step / bound, 2),
        )
        torch.cuda.empty_cache()

    # 2b. Where a decode step's time goes: a bare loop of forward calls (no sync per step),
    # and the profiler's top operators by CPU time.
    profile_decode(model, prompt_ids(32768), record, args.profile)

    # 3. Prefill as a fraction of the matmul peak.
    for n in lengths:
        ids = prompt_ids(n)
        flops = prefill_flops(nonembed, n, QWEN25_7B)
        for name, chunk, attention, cudnn in (
            ("sdpa_one_call", n, "sdpa", False),
            ("longscope_chunk8192", 8192, "longscope_sdpa", False),
            ("longscope_one_call", n, "longscope_sdpa", False),
            ("cudnn_one_call", n, "longscope_sdpa", True),
        ):
            try:
                seconds = time_prefill(model, ids, chunk, attention, cudnn)
            except RuntimeError as exc:
                record(kind="prefill", prompt=n, variant=name, error=str(exc)[:200])
                continue
            tflops = flops / seconds / 1e12
            record(
                kind="prefill",
                prompt=n,
                variant=name,
                seconds=round(seconds, 3),
                tflops=round(tflops, 1),
                of_peak=round(tflops / peak, 3),
            )
            torch.cuda.empty_cache()
        model.config._attn_implementation = "longscope_sdpa"


if __name__ == "__main__":
    main()
