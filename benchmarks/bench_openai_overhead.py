"""Harness CPU per request through the official `openai` SDK, against an instant local server.

The server is a fake that only answers (a fixed chat completion, at once); it runs in its own
process so that its CPU is not counted. Everything else is the product: LongCtx samples rendered
into requests, the `openai` backend (official async SDK client, retries, answer parsing), the
runner's scheduling with 64 requests in flight, the SQLite store and the progress counters. Timed
is the sending phase only (first request started to last answer stored): sample building and
scoring are reported by bench_overhead.py.

    .venv/bin/python benchmarks/bench_openai_overhead.py [--requests 2000] [--concurrency 64]
    .venv/bin/python benchmarks/bench_openai_overhead.py --profile   # cProfile's top functions
    .venv/bin/python benchmarks/bench_openai_overhead.py --smoke     # 100 requests, 8 in flight
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from longscope.models.openai_api import OpenAIBackend
from longscope.run.runner import RunOptions, run_async
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.types import Generation, Request

ANSWER = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "0.003 arc-seconds"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100000, "completion_tokens": 5, "total_tokens": 100005},
    }
).encode()
MODELS = json.dumps(
    {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "x"}]}
).encode()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            body = MODELS if head.startswith(b"GET") else ANSWER
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve() -> None:
    server = await asyncio.start_server(_answer, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


class TimedBackend(OpenAIBackend):
    """The openai backend, noting when the first request starts and the last answer returns."""

    first: float | None = None
    first_cpu = 0.0
    last = 0.0
    last_cpu = 0.0

    async def generate(self, request: Request) -> Generation:
        if self.first is None:
            self.first, self.first_cpu = time.perf_counter(), time.process_time()
        generation = await super().generate(request)
        self.last, self.last_cpu = time.perf_counter(), time.process_time()
        return generation


def _measure(port: int, requests: int, concurrency: int, quiet: bool, profile: bool) -> dict:
    depths = tuple(round((i + 0.3) / 100, 3) for i in range(100))
    suite = LongCtxSuite(
        **LongCtxSuite.completed({"lengths": (1024,), "depths": depths, "types": ("needle",)})
    )
    backend = TimedBackend(
        "m", base_url=f"http://127.0.0.1:{port}/v1", context_length=8192, concurrency=concurrency
    )
    repeats = max(1, requests // len(depths))
    profiler = cProfile.Profile() if profile else None
    with tempfile.TemporaryDirectory() as tmp:
        options = RunOptions(output=Path(tmp) / "run", repeats=repeats, quiet=quiet)
        if profiler:
            profiler.enable()
        result = asyncio.run(run_async(suite, backend, options))
        if profiler:
            profiler.disable()
    assert backend.first is not None
    assert result.sent == repeats * len(depths), (result.sent, repeats * len(depths))
    assert result.scores.to_dict()["statuses"] == {"ok": result.sent}, "every answer must be ok"
    assert backend.last > backend.first, "no time passed between the first and last answer"
    wall = backend.last - backend.first
    cpu = backend.last_cpu - backend.first_cpu
    if profiler:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats("longscope", 25)
    return {
        "requests": result.sent,
        "wall_s": wall,
        "requests_per_s": result.sent / wall,
        "cpu_ms_per_request": 1000 * cpu / result.sent,
        "cpu_share": cpu / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--progress", action="store_true", help="with the progress bar")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="100 requests, 8 in flight")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.concurrency = 100, 8
    if args.serve:
        asyncio.run(_serve())
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        numbers = _measure(port, args.requests, args.concurrency, not args.progress, args.profile)
    finally:
        server.kill()
        server.wait()
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    print(
        f"{numbers['requests']} chat requests (1K-token LongCtx prompts), "
        f"{args.concurrency} in flight, progress {'on' if args.progress else 'off'}: "
        f"{numbers['requests_per_s']:.0f} requests/s, "
        f"harness CPU {numbers['cpu_ms_per_request']:.2f} ms/request "
        f"({100 * numbers['cpu_share']:.0f}% of a core)"
    )


if __name__ == "__main__":
    main()
