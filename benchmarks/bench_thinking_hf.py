"""The cost of budget forcing in the hf engine: a request whose thinking is closed at its budget
against one plain generation of the same total length, on a random-weight model.

    PYTHONPATH=src:. python3 benchmarks/bench_thinking_hf.py --out thinking_hf.jsonl
    PYTHONPATH=src:. python3 benchmarks/bench_thinking_hf.py --smoke      # tiny, CPU or GPU

The model has Qwen2.5-0.5B's shape (24 layers, hidden 896, GQA 14/2) with random bf16 weights and
the offline test tokenizer (tests/gpu/tiny.py); speed does not depend on weight values. Its
end-of-sequence rows are zeroed so that neither variant stops early. The forced request's prompt
opens a think block the model never closes, so every forced request runs THINK thinking tokens,
the family's forced close, then ANSWER answer tokens: as many decode steps as the plain request's
THINK + close + ANSWER tokens. Forcing feeds the close in place of sampled tokens on the same
cache, so the target is no second prefill and a wall time within 5% of the plain one.

Checked on every run: both variants decode exactly the same number of tokens, the forced one is
forced with exactly THINK thinking tokens, and each variant prefills once (the engine's count).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

from longscope.models.hf import HFBackend
from longscope.models.thinking import THINKING_FORMATS
from longscope.types import GenerationConfig, Request

TEXT = "The quick brown fox jumps over the lazy dog. The secret number is 4821. "


def build(smoke: bool, device: str) -> tuple[Any, Any]:
    """Return (model, tokenizer): Qwen2.5-0.5B's shape, or a tiny one for --smoke."""
    tok = tiny_tokenizer()
    shape = (
        {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2}
        if smoke
        else {"layers": 24, "hidden": 896, "heads": 14, "kv_heads": 2, "intermediate": 4864}
    )
    dtype = "float32" if device == "cpu" else "bfloat16"
    model = tiny_qwen2(vocab_size=len(tok), device=device, dtype=dtype, **shape)
    with torch.no_grad():
        for eos in {2, tok.convert_tokens_to_ids("<|im_end|>")}:
            model.lm_head.weight[eos].zero_()  # never the argmax: no early stop
    return model, tok


def timed(backend: HFBackend, requests: list[Request]) -> tuple[float, list[Any], dict]:
    started = time.perf_counter()
    gens = asyncio.run(backend.generate_group(requests))
    return time.perf_counter() - started, gens, dict(backend.engine.last_decode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--prompt", type=int, default=8192, help="prompt tokens")
    parser.add_argument("--thinking", type=int, default=256)
    parser.add_argument("--answer", type=int, default=64)
    parser.add_argument("--batch", type=str, default="1,8", help="requests decoded together")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.smoke:
        args.prompt, args.thinking, args.answer, args.repeats = 256, 12, 6, 1
        args.batch = "1,2"
    model, tok = build(args.smoke, device)
    backend = HFBackend("bench", model=model, tokenizer=tok, prompt_mode="completion")
    unit = tok.encode(TEXT, add_special_tokens=False)
    prompt = tok.decode((unit * (args.prompt // len(unit) + 1))[: args.prompt]) + "<think>"
    forced = len(tok.encode(THINKING_FORMATS["think"].forced, add_special_tokens=False))
    total = args.thinking + forced + args.answer
    card = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "cpu"
    rows = []
    for batch in (int(b) for b in args.batch.split(",")):

        def requests(budget: bool, batch: int = batch) -> list[Request]:
            config = (
                GenerationConfig(max_tokens=args.answer, thinking_budget=args.thinking)
                if budget
                else GenerationConfig(max_tokens=total)
            )
            return [
                Request("s", r, "completion", prompt=prompt, config=config) for r in range(batch)
            ]

        timed(backend, requests(False))  # warm-up: kernels, graphs, allocator
        timed(backend, requests(True))
        times: dict[str, list[float]] = {"plain": [], "forced": []}
        for _ in range(args.repeats):
            for name, budget in (("plain", False), ("forced", True)):
                wall, gens, decode = timed(backend, requests(budget))
                times[name].append(wall)
                for gen in gens:
                    assert gen.status == "length", (name, gen.status, gen.error)
                    if budget:
                        use = gen.budget
                        assert use is not None and use.forced, use
                        assert use.thinking_tokens == args.thinking, use
                        assert use.answer_tokens == args.answer, use
                        # completion tokens count what the model wrote, not the forced close
                        assert gen.completion_tokens + forced == total, gen.completion_tokens
                    else:
                        assert gen.completion_tokens == total, gen.completion_tokens
        plain, forced_s = statistics.median(times["plain"]), statistics.median(times["forced"])
        row = {
            "device": card,
            "batch": batch,
            "prompt_tokens": len(backend.encode_request(requests(False)[0])),
            "decoded_tokens": total,
            "plain_s": round(plain, 4),
            "forced_s": round(forced_s, 4),
            "forced_over_plain": round(forced_s / plain, 4),
            "path": decode.get("path"),
            "repeats": args.repeats,
        }
        rows.append(row)
        print(json.dumps(row))
    if args.out is not None:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
