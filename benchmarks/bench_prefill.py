"""Embedded backend prefill tokens/s against bare llama-cpp-python on the same prompts.

Both load the same GGUF with the same engine settings (n_ctx 32768, flash attention, every usable
CPU) and generate one token; each trial starts with a unique word so no KV prefix is reused.
Variants alternate per trial so drift on this shared machine hits both alike.

    .venv/bin/python benchmarks/bench_prefill.py [--lengths 4k,16k,32k] [--trials 5,3,1] [--smoke]

`--smoke`: one trial at 512 tokens with a 1K context. Checked on every run: both variants prefill the
length claimed (the haystack is built to 64 tokens under it; at most 128 under), the same number of tokens
give or take the variant's prefix word.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time

from llama_cpp import Llama

from longscope.cpu_check import usable_cpus
from longscope.models.llamacpp import LlamaCppBackend
from longscope.models.registry import resolve_model_path
from longscope.text.haystack import FillerPool, build_haystack
from longscope.text.tokenizers import GGUFTokenizer
from longscope.types import GenerationConfig, Request

WORDS = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="4k,16k,32k")
    parser.add_argument("--trials", default="5,3,1", help="trials per length (each runs both)")
    parser.add_argument("--smoke", action="store_true", help="one trial at 512 tokens, n_ctx 1024")
    args = parser.parse_args()
    n_ctx = 32768
    if args.smoke:
        args.lengths, args.trials, n_ctx = "512", "1", 1024
    lengths = [int(x[:-1]) * 1024 if x.endswith("k") else int(x) for x in args.lengths.split(",")]
    trials = [int(x) for x in args.trials.split(",")]
    trials += [trials[-1]] * (len(lengths) - len(trials))
    path = resolve_model_path("gemma3-270m")
    cores = usable_cpus()  # what the embedded backend gives itself
    settings = {"n_ctx": n_ctx, "flash_attn": True, "n_threads": cores, "n_threads_batch": cores}
    bare = Llama(model_path=str(path), verbose=False, **settings)
    ours = LlamaCppBackend(path, name="gemma3-270m", prompt_mode="completion", n_ctx=n_ctx)
    asyncio.run(ours.info())
    pool = FillerPool(GGUFTokenizer(path), "en", seed=7)
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, {cores} cores, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(
        "| length | trials | prompt tokens | bare tok/s (median) | longscope tok/s (median) | longscope / bare |"
    )
    print("|---|---|---|---|---|---|")
    for length, n_trials in zip(lengths, trials, strict=True):
        context = build_haystack(pool, length - 64, []).text
        rates: dict[str, list[float]] = {"bare": [], "ours": []}
        counts: dict[str, set[int]] = {"bare": set(), "ours": set()}
        n_tokens = 0
        for trial in range(n_trials):
            for variant in ("bare", "ours") if trial % 2 == 0 else ("ours", "bare"):
                prompt = f"{WORDS[(trial * 2 + len(rates[variant])) % len(WORDS)]} {variant}{trial}.{context}\nAnswer:"
                started = time.perf_counter()
                if variant == "bare":
                    out = bare.create_completion(prompt=prompt, max_tokens=1, temperature=0.0)
                    n_tokens = out["usage"]["prompt_tokens"]
                else:
                    gen = asyncio.run(
                        ours.generate(
                            Request(
                                "b",
                                0,
                                "completion",
                                prompt=prompt,
                                config=GenerationConfig(max_tokens=1, temperature=0.0),
                            )
                        )
                    )
                    n_tokens = gen.prompt_tokens
                rates[variant].append(n_tokens / (time.perf_counter() - started))
                counts[variant].add(n_tokens)
        sent = counts["bare"] | counts["ours"]
        assert all(length - 128 <= n <= length for n in sent), (length, sent)
        assert max(sent) - min(sent) <= 4, sent  # the prefix words differ by a few tokens at most
        label = f"{length // 1024}K" if length >= 1024 else str(length)
        bare_rate = statistics.median(rates["bare"])
        ours_rate = statistics.median(rates["ours"])
        print(
            f"| {label} | {n_trials} | {n_tokens} | {bare_rate:.0f} | {ours_rate:.0f} | "
            f"{ours_rate / bare_rate:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
