"""How the decode attention's split stage (`decode_ops`) picks its configuration on CUDA.

Five configurations (keys per inner step, warps, stages) are candidates. Triton's autotuner times
them briefly (`_bench`), once per launch class (`load_class`: how many programs, how many keys
each reads), and keeps its choice beside the builds in Triton's disk cache. Until a launch class
has decoded `gemv.TUNE_AFTER_STEPS` steps in the process, the stage runs one configuration,
`UNTUNED`, as the GEMV runs torch's matmul until then: a tuning builds five kernels and times
them, which short answers never repay. On an H200 a fresh machine's RULER through the CLI spent
4.2 s of its 184 tuning the split stage, 2.3 s of it building (issue 46, tenth pass). The
autotuner had chosen 64/w4s2 in most launch classes, and that is `UNTUNED`.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

import torch
import triton

from longscope.models.hf import gemv
from longscope.models.hf.triton_builds import count_step, reached

UNTUNED = (64, 4, 2)
"""(keys per inner step, warps, stages) of the split stage before its launch class is tuned: the
autotuner's most frequent choice on an H200 (launch classes 3, 4 and 6 in issue 46's runs). Its
choice per class was tried and taken out: on Triton's disk cache RULER took 177.87 s with it
against 177.89 without, and from nothing it built three kernels more (twelfth pass)."""

_STEPS: dict[tuple[Any, ...], int] = {}
"""Steps decoded so far in this process per launch key (dims, group padding, load class,
balanced splits, device)."""


def _split_configs() -> list[Any]:
    # Measured per card on first use (before a graph is captured): keys per inner step and warps.
    return [
        triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages)
        for block, warps, stages in ((64, 4, 2), (128, 4, 2), (64, 4, 3), (128, 8, 3), (32, 2, 3))
    ]


@functools.cache
def untuned_options() -> dict[str, Any]:
    """Return the launch options of `UNTUNED` (as the autotuner passes a configuration's)."""
    block, warps, stages = UNTUNED
    return triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages).all_kwargs()


def _bench(fn: Any, quantiles: Any = None, **_: Any) -> Any:
    """Time `fn` as Triton's do_bench does, briefly (its default takes 125 ms a configuration);
    where it cannot allocate its 256 MB L2 flush (a card full of cache), by device events, ten
    runs after two (the split stage reads far more than the L2 holds)."""
    try:
        return triton.testing.do_bench(fn, warmup=5, rep=20, quantiles=quantiles)
    except torch.OutOfMemoryError:
        pass
    fn()
    fn()
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    if quantiles is None:
        return times[len(times) // 2]
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]


def tuned_kernel(kernel: Any) -> Any:
    """Autotune on a GPU; under Triton's CPU interpreter (tests) the caller gives `BLOCK`."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return kernel
    # Keyed by the launch's class too (`load_class`): a configuration tuned on a warm-up's short
    # rows (20 programs) ran the split stage after 32K at half the read rate (0.90 ms a step
    # against 0.44 of bytes on an H200, issue 46). Timed by `_bench`.
    extra: dict[str, Any] = {}
    if "do_bench" in inspect.signature(triton.autotune).parameters:
        extra["do_bench"] = _bench
    if "cache_results" in inspect.signature(triton.autotune).parameters:
        # beside the builds in Triton's disk cache: a machine's next process reads the choice
        # (timing the five took 1.8 s of RULER's 190 s through the CLI, an H200, issue 46)
        extra["cache_results"] = True
    return triton.autotune(
        configs=_split_configs(), key=["DIM", "GROUP_PAD", "load_class", "BALANCED"], **extra
    )(kernel)


def load_class(programs: int, split_size: int) -> int:
    """Return the split stage's tuning class: how many programs fill the card (under 2 a
    multiprocessor, under 8, more) times how many keys each reads (up to 256, 1,024, more)."""
    wide = 0 if programs < 264 else 1 if programs < 1056 else 2
    deep = 0 if split_size <= 256 else 1 if split_size <= 1024 else 2
    return 3 * wide + deep


def stepped(key: tuple[Any, ...]) -> bool:
    """Count a decode step of the launch `key`; return True on the step that makes it `due` (a
    graph captured before it runs `UNTUNED`)."""
    return count_step(_STEPS, key, gemv.TUNE_AFTER_STEPS)


def due(key: tuple[Any, ...]) -> bool:
    """Return whether the launch `key` has decoded `gemv.TUNE_AFTER_STEPS` steps."""
    return reached(_STEPS, key, gemv.TUNE_AFTER_STEPS)
