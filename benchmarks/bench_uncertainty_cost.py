"""CPU cost of the standard errors and the bootstrap on a RULER-sized scored run (issue 31).

    .venv/bin/python benchmarks/bench_uncertainty_cost.py           # 13 tasks x 6 lengths x 500
    .venv/bin/python benchmarks/bench_uncertainty_cost.py --smoke   # x 20 samples

A synthetic run: every request scored right with a probability falling with length. Times are CPU
seconds (`time.process_time`), so that a shared machine's load does not count.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

from longscope.analysis.uncertainty import with_uncertainty
from longscope.summary import simple_summary
from longscope.types import Generation, Score, ScoredRow

LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)


def rows(tasks: int, per: int, seed: int = 0) -> list[ScoredRow]:
    rng = random.Random(seed)
    out = []
    for t in range(tasks):
        for length in LENGTHS:
            for i in range(per):
                meta = {"target_length": length, "achieved_length": length - 50}
                sample = {
                    "id": f"t{t}-{length}-{i}",
                    "task": f"task{t}",
                    "language": "en",
                    "length": length,
                    "question": "q",
                    "gold": ["a"],
                    "meta": meta,
                }
                right = rng.random() < 0.95 - length / 250_000
                out.append(ScoredRow(sample, 0, Generation("a", "ok"), Score(float(right), 1.0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--per", type=int, default=500, help="samples per task and length")
    args = parser.parse_args()
    made = rows(13, 20 if args.smoke else args.per)
    start = time.process_time()
    summary = simple_summary("synthetic", "Synthetic", made)
    summarized = time.process_time()
    filled = with_uncertainty(summary, made)
    done = time.process_time()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    print(
        f"{len(made)} requests: summary {summarized - start:.2f} s CPU, standard errors and "
        f"{filled.uncertainty['bootstrap']['replicates']}-replicate bootstrap "
        f"{done - summarized:.2f} s CPU; {filled.uncertainty['standard_errors']} scores with an "
        f"SE, {filled.uncertainty['unmatched']} unmatched"
    )


if __name__ == "__main__":
    main()
