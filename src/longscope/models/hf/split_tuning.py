"""How the decode attention's split stage (`decode_ops`) picks its configuration on CUDA.

Five configurations (keys per inner step, warps, stages) are candidates. Triton's autotuner times
them briefly (`_bench`), once per launch class (`load_class`: how many programs, how many keys
each reads), and keeps its choice beside the builds in Triton's disk cache. Until a launch class
has decoded `gemv.TUNE_AFTER_STEPS` steps in the process, the stage runs the configuration the
autotuner chose most often for its class (`untuned`), as the GEMV runs torch's matmul until then:
a tuning builds five kernels and times them, which short answers never repay. On an H200 a fresh
machine's RULER through the CLI spent 4.2 s of its 184 tuning the split stage, 2.3 s of it
building (issue 46, tenth pass).
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

import torch
import triton
from triton.runtime.errors import OutOfResources

from longscope.models.hf import gemv
from longscope.models.hf.triton_builds import count_step, reached

UNTUNED = (64, 4, 2)
"""(keys per inner step, warps, stages) of the split stage before its launch class is tuned,
where `UNTUNED_BY_CLASS` names none: the autotuner's choice on an H200 in 55 of 60 records of
launch classes 3, 4 and 6 (`bench_hf.py`'s `attention_choices` rows in issue 46's results)."""
UNTUNED_BY_CLASS = {5: (64, 4, 3), 7: (128, 4, 2), 8: (64, 4, 3)}
"""The classes of many programs reading long splits, where the autotuner chose otherwise (issue
46's records on an H200: class 7, 128/w4s2 in 9 of 11; class 8, 64/w4s3 in 8 of 11; class 5,
64/w4s3 in 2 of 2). RULER's batches holding a 64K-128K row fall there and never reach a
tuning: with `UNTUNED` in every class its prefills' steps took about as much longer as the tuning
had taken (eleventh pass; measured across machines, so within their spread). Class 0 (few
programs, short splits: little to read) keeps `UNTUNED`, which spares a build."""

_STEPS: dict[tuple[Any, ...], int] = {}
"""Steps decoded so far in this process per launch key (dims, group padding, load class,
balanced splits, device)."""


def _split_configs() -> list[Any]:
    # Measured per card on first use (before a graph is captured): keys per inner step and warps.
    return [
        triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages)
        for block, warps, stages in ((64, 4, 2), (128, 4, 2), (64, 4, 3), (128, 8, 3), (32, 2, 3))
    ]


_PLAIN: set[tuple[int, int, int]] = set()
"""(load class, head dim, bytes a key value) whose `UNTUNED_BY_CLASS` configuration did not fit
this process's card (`launch_untuned`): `UNTUNED` there from then on."""


def untuned(load_class: int, dim: int, width: int = 2) -> tuple[int, int, int]:
    """Return (keys per inner step, warps, stages) of the split stage of `load_class` untuned,
    for heads of `dim` values of `width` bytes. `UNTUNED_BY_CLASS` was recorded at head dim 128
    in bf16: larger heads and wider values keep `UNTUNED`."""
    if dim > 128 or width > 2 or (load_class, dim, width) in _PLAIN:
        return UNTUNED
    return UNTUNED_BY_CLASS.get(load_class, UNTUNED)


@functools.cache
def _options(config: tuple[int, int, int]) -> dict[str, Any]:
    block, warps, stages = config
    return triton.Config({"BLOCK": block}, num_warps=warps, num_stages=stages).all_kwargs()


def untuned_options(load_class: int, dim: int, width: int = 2) -> dict[str, Any]:
    """Return the launch options of `untuned(load_class, dim, width)` (as the autotuner passes
    a configuration's)."""
    return _options(untuned(load_class, dim, width))


def launch_untuned(
    kernel: Any, grid: Any, args: Any, options: dict[str, Any], load_class: int, width: int
) -> None:
    """Launch the split stage untuned (keys of `width` bytes a value). A class's own
    configuration that does not fit the card (less shared memory than an H200's: 128 keys a step
    read more at once) gives way to `UNTUNED` for good. Triton finds that when it loads the
    build, before any CUDA call: in a step's warm-up, or in a capture without one, which the
    decoder then takes again with one (`StaticDecoder._record`)."""
    dim = int(options["DIM"])
    try:
        kernel[grid](*args, **options, **untuned_options(load_class, dim, width))
    except OutOfResources:
        if untuned(load_class, dim, width) == UNTUNED:
            raise
        _PLAIN.add((load_class, dim, width))
        kernel[grid](*args, **options, **untuned_options(load_class, dim, width))


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
    graph captured before it runs `untuned`)."""
    return count_step(_STEPS, key, gemv.TUNE_AFTER_STEPS)


def due(key: tuple[Any, ...]) -> bool:
    """Return whether the launch `key` has decoded `gemv.TUNE_AFTER_STEPS` steps."""
    return reached(_STEPS, key, gemv.TUNE_AFTER_STEPS)
