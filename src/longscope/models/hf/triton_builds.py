"""Triton kernel variants built at once, in threads, before a tuning times them one by one; and
the decode steps a tuning waits for (`count_step`, `reached`: the GEMV's and the split stage's).

Why (issue 46): a tuning launches each candidate (the split stage's five configurations, the GEMV's
plans) one after another, and Triton built each at its first launch, on the CPU, while the card
waited. A new process's first batch on an H200 took 11.5 s that way and 9.6 s with its variants
built here first (BENCHMARKS.md, issue 46 ninth pass).
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

_log = logging.getLogger(__name__)

BUILD_THREADS = 8
"""Kernel variants built at once before a tuning times them (`build_at_once`; under 2: none)."""


def build_at_once(kernel: Any, calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]]) -> None:
    """Build `kernel` for each (grid, args, keywords) launch in threads, as Triton's warmup does
    (compiled, loaded at its first launch), before a tuning launches them one after another:
    Triton builds on the CPU, mostly outside Python's lock (a new process's first batch, an H200:
    9.6 s against 11.5, issue 46). A variant already built costs a lookup; one that fails here is
    built, and fails, where launched, as before (the first failure is logged at debug level)."""
    if len(calls) < 2 or BUILD_THREADS < 2 or os.environ.get("TRITON_INTERPRET") == "1":
        return
    device = torch.cuda.current_device()
    caches = getattr(kernel, "device_caches", None)  # a JIT function's builds, per device
    if caches is not None:
        caches[device]  # made once here: threads making it at once would each keep their own

    def one(call: tuple[Any, tuple[Any, ...], dict[str, Any]]) -> Exception | None:
        torch.cuda.set_device(device)  # the current device is per thread
        try:
            kernel.warmup(*call[1], grid=call[0], **call[2])
        except Exception as exc:
            return exc
        return None

    workers = max(1, min(BUILD_THREADS, len(calls), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers, thread_name_prefix="triton-build") as pool:
        failed = [exc for exc in pool.map(one, calls) if exc is not None]
    if failed:
        _log.debug("%d of %d builds ahead failed: %s", len(failed), len(calls), failed[0])


_STEP_LOCK = threading.Lock()


def count_step(steps: dict[Any, int], key: Any, after: int) -> bool:
    """Count a decode step of `key` in `steps`; return True on the step that reaches `after` (a
    tuning that waits for it is due from there, `reached`, and a graph captured before is stale)."""
    with _STEP_LOCK:
        steps[key] = steps.get(key, 0) + 1
        return steps[key] == after


def reached(steps: dict[Any, int], key: Any, after: int) -> bool:
    """Return whether `key` has decoded `after` steps in `steps`."""
    return steps.get(key, 0) >= after
