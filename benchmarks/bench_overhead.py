"""Harness overhead per request: everything but the model.

An instant backend (it exists only here) answers at once, so the time between two consecutive calls
in serial mode is the harness's own work per request: rendering the request, the SQLite commit of
the generation, progress, scheduling. Scoring and sample building are timed separately.

    .venv/bin/python benchmarks/bench_overhead.py [--samples 400] [--smoke]

Sample ids carry the depth in whole percent, so one length holds at most 100 distinct depths: 400
samples are 100 depths at each of four lengths a few tokens apart (4,072-4,096), all ~4K prompts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from longscope.models.base import Backend, ModelInfo
from longscope.run.runner import RunOptions, run_async
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.text.tokenizers import QwenTokenizer, Tokenizer
from longscope.types import Generation, Request


class InstantBackend(Backend):
    """Answers every request immediately with the right needle answer; records call times."""

    name = "bench/instant"
    max_concurrency = 1

    def __init__(self) -> None:
        self.calls: list[float] = []
        self._tokenizer = QwenTokenizer()

    async def info(self) -> ModelInfo:
        return ModelInfo("bench:instant", 1 << 20, "user", "completion", self._tokenizer.name)

    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    async def generate(self, request: Request) -> Generation:
        self.calls.append(time.perf_counter())
        return Generation(
            "0.003 arc-seconds", "ok", prompt_tokens=request.prompt_tokens, completion_tokens=5
        )

    async def aclose(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--smoke", action="store_true", help="20 samples")
    args = parser.parse_args()
    samples = 20 if args.smoke else args.samples
    per_length = min(samples, 100)
    depths = tuple(i / 100 for i in range(per_length))
    lengths = tuple(4096 - 8 * k for k in range(-(-samples // per_length)))
    suite = LongCtxSuite(
        **LongCtxSuite.completed({"lengths": lengths, "depths": depths, "types": ("needle",)})
    )
    backend = InstantBackend()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = asyncio.run(
            run_async(suite, backend, RunOptions(output=Path(tmp) / "run", quiet=True, serial=True))
        )
        total = time.perf_counter() - started
    requests = len(depths) * len(lengths)
    assert len(backend.calls) == requests == result.sent, (len(backend.calls), requests)
    assert result.scores.to_dict()["statuses"] == {"ok": requests}, result.scores.to_dict()[
        "statuses"
    ]
    gaps = [b - a for a, b in zip(backend.calls, backend.calls[1:], strict=False)]
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    print(f"requests: {len(backend.calls)} (~4K-token needle prompts, serial)")
    print(
        f"per-request harness overhead: median {1000 * statistics.median(gaps):.2f} ms, "
        f"p90 {1000 * statistics.quantiles(gaps, n=10)[-1]:.2f} ms"
    )
    print(
        f"sample build: {result.timing['build_s']:.2f} s for {requests} samples; "
        f"whole run incl. build and scoring: {total:.2f} s"
    )


if __name__ == "__main__":
    main()
