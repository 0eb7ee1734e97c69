"""Time to build all 20 LongCtx prompts (128K tier included), tokenized, per tokenizer.

"cold" starts with an empty token-count cache (the pool is tokenized sentence by sentence once);
"warm" reuses the cache, as every later run on the machine does.

    .venv/bin/python benchmarks/bench_prompts.py
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time

from longscope.models.registry import resolve_model_path
from longscope.suites.base import BuildContext
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.text.tokenizers import GGUFTokenizer, QwenTokenizer
from longscope.types import GenerationConfig


def build_seconds(tokenizer, language: str) -> tuple[float, int]:
    suite = LongCtxSuite(tiers=(1, 2, 3, 4, 5), language=language)
    started = time.perf_counter()
    samples = suite.build(BuildContext(tokenizer, "completion", GenerationConfig()))
    return time.perf_counter() - started, sum(s.meta["prompt_tokens"] for s in samples)


def main() -> None:
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    print("| tokenizer | language | cold s | warm s (median of 5) | prompt tokens |")
    print("|---|---|---|---|---|")
    tokenizers = {
        "qwen2.5 (default, tiktoken)": QwenTokenizer(),
        "gemma3-270m (GGUF, llama.cpp)": GGUFTokenizer(resolve_model_path("gemma3-270m")),
    }
    for name, tokenizer in tokenizers.items():
        for language in ("en", "zh"):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["LONGSCOPE_CACHE"] = cache
                cold, tokens = build_seconds(tokenizer, language)
                warm = statistics.median(build_seconds(tokenizer, language)[0] for _ in range(5))
            print(f"| {name} | {language} | {cold:.2f} | {warm:.3f} | {tokens:,} |", flush=True)


if __name__ == "__main__":
    main()
