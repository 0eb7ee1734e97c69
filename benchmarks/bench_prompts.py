"""Time to build all 20 LongCtx prompts (128K tier included), tokenized, per tokenizer.

"cold" starts with an empty token-count cache (the pool is tokenized sentence by sentence once);
"warm" reuses the cache, as every later run on the machine does. Every prompt is checked to hold
what its tier claims: its counted tokens and the answer budget within the tier's length, and, for
the first and last prompt of each build, the count equal to the rendered prompt tokenized whole.

    .venv/bin/python benchmarks/bench_prompts.py [--smoke]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

from longscope.models.registry import resolve_model_path
from longscope.suites.base import BuildContext
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.text.tokenizers import GGUFTokenizer, QwenTokenizer, Tokenizer
from longscope.types import GenerationConfig


def build_seconds(tokenizer: Tokenizer, language: str, tiers: tuple[int, ...]) -> tuple[float, int]:
    """Return the seconds to build the tiers' prompts and their total counted tokens (checked)."""
    suite = LongCtxSuite(**LongCtxSuite.completed({"tiers": tiers, "language": language}))
    config = GenerationConfig()
    started = time.perf_counter()
    samples = suite.build(BuildContext(tokenizer, "completion", config))
    seconds = time.perf_counter() - started
    assert samples, "no prompt was built"
    for sample in samples:
        assert 0 < sample.prompt_tokens <= sample.length - config.max_tokens, (
            sample.id,
            sample.prompt_tokens,
            sample.length,
        )
    for sample in (samples[0], samples[-1]):
        prompt, _ = suite.template.render(sample, "completion")
        whole = len(tokenizer.encode(prompt))
        # The count covers the prompt as sent (plus the BOS and seam tokens the suite reserves),
        # never fewer tokens than the engine will see.
        assert whole <= sample.prompt_tokens <= whole + 4, (sample.id, whole, sample.prompt_tokens)
    return seconds, sum(s.prompt_tokens for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tier 1 only, one warm build")
    args = parser.parse_args()
    tiers, repeats = ((1,), 1) if args.smoke else ((1, 2, 3, 4, 5), 5)
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    print(f"| tokenizer | language | cold s | warm s (median of {repeats}) | prompt tokens |")
    print("|---|---|---|---|---|")
    tokenizers: dict[str, Tokenizer] = {
        "qwen2.5 (default, tiktoken)": QwenTokenizer(),
        "gemma3-270m (GGUF, llama.cpp)": GGUFTokenizer(resolve_model_path("gemma3-270m")),
    }
    for name, tokenizer in tokenizers.items():
        for language in ("en", "zh"):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["LONGSCOPE_CACHE"] = cache
                cold, tokens = build_seconds(tokenizer, language, tiers)
                warm_runs = [build_seconds(tokenizer, language, tiers) for _ in range(repeats)]
            assert all(count == tokens for _, count in warm_runs), "a warm build differs"
            warm = statistics.median(seconds for seconds, _ in warm_runs)
            print(f"| {name} | {language} | {cold:.2f} | {warm:.3f} | {tokens:,} |", flush=True)


if __name__ == "__main__":
    main()
