"""100-LongBench context building: first-time token counting of the default pool, and 100 samples
at 128K for one task from a cached pool.

The default pool (the Python reference manual, ~85K tokens) cannot fill 128K without repeating
documents, so the 128K measurement uses a larger pool written here from LongCtx's filler generator
(1,000 documents of ~300 tokens); only timing is measured, not answers. The baseline, in the
same process, tokenizes every finished prompt whole instead of adding cached per-document counts.

    .venv/bin/python benchmarks/bench_hundred.py [--smoke]

Checked on every run: both builds give identical lengths, no sample exceeds its target, and the
ratio printed is the two measured times divided. `--smoke`: 5 samples at 8K from 100 documents.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.suites.hundred.pool import CountedPool, load_pool
from longscope.text.filler import filler_sentences
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import GenerationConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="5 samples at 8K, 100 documents")
    args = parser.parse_args()
    documents_n, length, count = (100, 8192, 5) if args.smoke else (1000, 131072, 100)
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    tokenizer = QwenTokenizer()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["LONGSCOPE_CACHE"] = cache
        documents, source = load_pool("pydoc")
        started = time.perf_counter()
        pool = CountedPool(documents, source, tokenizer)
        print(
            f"default pool: {len(documents)} documents, {pool.total_tokens:,} tokens, "
            f"first count {time.perf_counter() - started:.2f} s"
        )
        started = time.perf_counter()
        CountedPool(documents, source, tokenizer)
        print(f"default pool, cached: {time.perf_counter() - started:.3f} s")

        big = Path(cache) / "pool.jsonl"
        stream = filler_sentences("en", 11)
        with big.open("w") as handle:
            for i in range(documents_n):
                text = " ".join(itertools.islice(stream, 14))
                handle.write(json.dumps({"id": i, "context": text}) + "\n")
        suite = create_suite(
            "hundred",
            {"tasks": ["kv_retrieval"], "lengths": [length], "samples": count, "pool": str(big)},
        )
        ctx = BuildContext(tokenizer, "completion", GenerationConfig(max_tokens=64))
        warm = create_suite(
            "hundred",
            {"tasks": ["kv_retrieval"], "lengths": [2048], "samples": 1, "pool": str(big)},
        )
        warm.build(ctx)  # counts the pool once (cached on disk)
        started = time.perf_counter()
        samples = suite.build(ctx)
        seconds = time.perf_counter() - started
        mean_tokens = sum(s.meta["achieved_length"] for s in samples) / len(samples)
        additive = CountedPool(*load_pool(str(big)), tokenizer).additive
        assert len(samples) == count, (len(samples), count)
        assert all(0 < s.meta["achieved_length"] <= length for s in samples)
        print(
            f"{count} kv_retrieval samples at {length // 1024}K from a cached pool: {seconds:.2f} s "
            f"(mean achieved length {mean_tokens:,.0f} tokens; pool additive: {additive})"
        )
        # Baseline in the same process: every finished prompt tokenized whole.
        original = CountedPool.__init__

        def non_additive(self, *args, **kwargs):
            original(self, *args, **kwargs)
            self.additive = False

        CountedPool.__init__ = non_additive
        started = time.perf_counter()
        recounted = suite.build(ctx)
        baseline = time.perf_counter() - started
        CountedPool.__init__ = original
        same = [s.meta["achieved_length"] for s in samples] == [
            s.meta["achieved_length"] for s in recounted
        ]
        assert same, "the cached counts and whole-prompt counts disagree"
        print(
            f"the same, each prompt tokenized whole: {baseline:.2f} s "
            f"(ratio {seconds / baseline:.2f}; identical lengths: {same})"
        )


if __name__ == "__main__":
    main()
