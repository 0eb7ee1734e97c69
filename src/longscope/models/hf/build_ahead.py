"""The Triton kernels a run launches, built while the model's weights load.

Why (issue 46): a new process builds each Triton kernel at its first launch, on the CPU, while the
card waits. On an H200 a fresh machine's RULER through the CLI built 10-14 of them (2.3-4.7 s) in
its first prefills and in the captures of its first batches (calls AO, AS, AU, AV), while the load
before them (3.6-4.4 s: the checkpoint read and copied to the card) leaves the card's compute
idle. Here a one-layer twin of the model (its widths and heads, a small vocabulary, weights left
uninitialised) prefills and decodes through the engine's own code, so that the kernels it builds
are the run's; then one decode attention per launch variant a batch of up to `max_batch` rows can
take (`attention_launches`).

Where (`KernelSwitches.build_ahead`): "thread", a thread of this process, joined by the load.
Measured on an H200 (call AX): every build inside the load and none in the run, but Triton builds
mostly inside Python's lock, so the load waited 4.0 s for them (7.9 s against 3.6) and RULER from
nothing took 1.154x the engine's prefill against 1.156x without (AV). "process": a process of its
own, with its own lock, fills Triton's disk cache, where this process's first launches find the
builds; the load does not wait for it (not yet measured on a card).

A kernel's build depends on its constants and on which integer arguments are 1 or multiples of 16
(Triton's specialisation), not on the values the twin computes: its uninitialised weights give
garbage that nothing reads. Only Llama-family configurations (`kernels.GRAPH_MODEL_TYPES`), the
ones whose steps these kernels run. Best effort: where the twin cannot be built, does not fit
beside the model, or fails, the run builds its kernels at their first launch, as before.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from longscope.models.hf.kernels import GRAPH_MODEL_TYPES, KernelSwitches, decode_kernels
from longscope.models.memory_plan import DECODE_BLOCK, ModelShape, decode_capacity

_log = logging.getLogger(__name__)

TWIN_VOCAB = 256
"""The twin's vocabulary: its embedding and output projection run on torch's kernels, not ours."""
TWIN_PROMPTS = (64, 33)
"""The twin's prompt lengths: a multiple of 16 and not (the SiLU product's element count is an
integer argument Triton specialises on)."""
MARGIN_BYTES = 2 << 30
"""Device memory the twin leaves free beside the model's weights."""
MODES = ("thread", "process")
"""Where `KernelSwitches.build_ahead` builds (`BuildAhead`); anything else: nowhere."""
THREADS = 1
"""Threads the launches run in, in order (the twin's steps first). Triton builds mostly inside
Python's lock: in 8 threads a 7B's 19 builds took 17.3 s summed (4.8 s from first to last, six of
them the same split stage built at once in six threads) and slowed the weights' load beside them
from 3.6 to 6.1 s (H200, call AW)."""


def twin_config(config: Any) -> Any | None:
    """Return a copy of `config` with one layer and `TWIN_VOCAB` tokens, or None where the build
    ahead does not apply (not a Llama-family decoder)."""
    if str(getattr(config, "model_type", "")) not in GRAPH_MODEL_TYPES:
        return None
    twin = copy.deepcopy(config)
    twin.num_hidden_layers = 1
    if getattr(twin, "layer_types", None):
        twin.layer_types = list(twin.layer_types[:1])
    twin.vocab_size = TWIN_VOCAB
    twin.pad_token_id = None  # an embedding's padding index must fall inside its vocabulary
    return twin


def attention_launches(
    max_batch: int, heads: int, kv_heads: int, dim: int, fused: bool
) -> list[tuple[int, int]]:
    """Return (rows, capacity) of one decode attention per build it can take for batches of up to
    `max_batch` rows: merged in the split stage or by the merge kernel with its constants
    (`decode_ops.merge_layout`), over a short cache or a whole-block one; the smallest of each."""
    from longscope.models.hf.decode_ops import (
        FUSED_MERGE_SPLITS,
        MIN_SPLIT,
        merge_layout,
        splits_for,
    )

    widest = max(splits_for(1, kv_heads, 1 << 40), 1)  # one row's most splits
    # A cache of up to `DECODE_BLOCK` tokens is exactly prompt plus answer long
    # (`decode_capacity`): each split count there, over a multiple of 16 tokens and not (the
    # split stage's mask stride); past it, whole blocks.
    short = range(MIN_SPLIT, DECODE_BLOCK, MIN_SPLIT)
    capacities = [c for k in short for c in (k, k + 8)]
    capacities += [DECODE_BLOCK * k for k in range(1, widest * MIN_SPLIT // DECODE_BLOCK + 2)]
    chosen: dict[tuple[Any, ...], tuple[int, int]] = {}
    for rows in range(1, max_batch + 1):
        for capacity in capacities:
            splits = splits_for(rows, kv_heads, capacity)
            merged = fused and splits <= FUSED_MERGE_SPLITS
            layout = None if merged else merge_layout(rows, heads, dim, splits)
            key = (merged, capacity % 16 == 0, layout)
            best = chosen.get(key)
            if best is None or rows * capacity < best[0] * best[1]:
                chosen[key] = (rows, capacity)
    return sorted(chosen.values())


class BuildAhead:
    """The build ahead of one load, started before the weights are read (`summary` says what it
    did). `KernelSwitches.build_ahead`: "thread", in a thread of this process, which the load
    joins after the weights are on the device; "process", in a process of its own, which fills
    Triton's disk cache, where this process's first launches then find the builds (its
    interpreter lock is its own; not waited for); "off"."""

    def __init__(self) -> None:
        self.summary = "not started"
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(
        cls,
        torch: Any,
        transformers: Any,
        config: Any,
        dtype: Any,
        device: Any,
        switches: KernelSwitches,
        max_batch: int,
        attn_implementation: str,
        decode: bool = True,
    ) -> BuildAhead:
        """Build the twin on the meta device here (the caller holds the lock transformers' model
        building needs) and start the thread that puts it on `device` and runs it; or start the
        process that does the same."""
        ahead = cls()
        mode = switches.build_ahead
        if device.type != "cuda" or mode not in MODES:
            ahead.summary = f"device {device.type}" if device.type != "cuda" else "off"
            return ahead
        if device.index is None:  # the threads' current device is not the caller's
            device = torch.device("cuda", torch.cuda.current_device())
        twin_cfg = twin_config(config)
        if twin_cfg is None:
            ahead.summary = f"not a Llama-family model ({getattr(config, 'model_type', '?')})"
            return ahead
        name = str(dtype).removeprefix("torch.")
        need = ModelShape.from_config(config.to_dict(), name).weight_bytes
        need += ModelShape.from_config(twin_cfg.to_dict(), name).weight_bytes + MARGIN_BYTES
        free = torch.cuda.mem_get_info(device)[0]
        if free < need:
            ahead.summary = f"skipped: {free / 2**30:.1f} GiB free, {need / 2**30:.1f} needed"
            return ahead
        if mode == "process":
            order = {
                "config": twin_cfg.to_dict(), "dtype": name, "device": device.index,
                "switches": dataclasses.asdict(switches), "max_batch": max_batch,
                "decode": decode, "attention": attn_implementation,
            }  # fmt: skip
            ahead._spawn(order)
            return ahead
        try:
            twin = _meta_twin(transformers, twin_cfg, dtype, attn_implementation)
        except Exception as exc:  # a configuration transformers will not build with one layer
            ahead.summary = f"skipped: {_first_line(exc)}"
            return ahead
        ahead.summary = "running"
        args = (torch, [twin], device, copy.copy(switches), max_batch, decode)
        ahead._thread = threading.Thread(
            target=ahead._run, args=args, name="hf-build-ahead", daemon=True
        )
        ahead._thread.start()
        return ahead

    def _spawn(self, order: dict[str, Any]) -> None:
        import triton

        env = dict(os.environ)
        # where this process looks for builds, which a caller may have set in code
        env["TRITON_CACHE_DIR"] = str(triton.knobs.cache.dir)
        command = [sys.executable, "-m", "longscope.models.hf.build_ahead"]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(order).encode())
            self._process.stdin.close()
        except OSError as exc:
            self.summary = f"failed: {_first_line(exc)}"
            return
        self.summary = f"in process {self._process.pid}"
        threading.Thread(target=self._reap, name="hf-build-ahead", daemon=True).start()

    def _reap(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            return
        # its last line: what it did, or the error it ended on
        lines = process.stdout.read().decode(errors="replace").strip().splitlines()
        code = process.wait()
        said = lines[-1][:300] if lines else f"exit code {code}"
        self.summary = f"in process {process.pid}: {said}"
        _log.debug("kernels built ahead: %s", self.summary)

    def join(self) -> str:
        """Wait for the thread's builds (not for a process: the run's launches find what it
        built by then); return `summary`."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        return self.summary

    def stop(self) -> None:
        """End a build process still running (the backend closes)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()

    def _run(self, *args: Any) -> None:
        self.summary = run_twin(*args)  # (`run_twin`'s arguments)
        _log.debug("kernels built ahead: %s", self.summary)


def run_twin(
    torch: Any,
    held: list[Any],
    device: Any,
    switches: KernelSwitches,
    max_batch: int,
    decode: bool,
) -> str:
    """Put the twin (`held[0]`, on the meta device) on `device`, run its launches, free it;
    return what it did."""
    started = time.perf_counter()
    jobs: list[Any] = []
    cuda = device.type == "cuda"
    try:
        if cuda:
            torch.cuda.set_device(device)
        held[0].to_empty(device=device)
        jobs += _jobs(torch, held[0].eval(), device, switches, max_batch, decode and cuda)
        if cuda:
            _own_caches(torch.cuda.current_device())
            failed = _in_threads(torch, device, jobs)
        else:
            failed = [exc for exc in (_plain(job) for job in jobs) if exc is not None]
        took = time.perf_counter() - started
        summary = f"{len(jobs) - len(failed)} of {len(jobs)} launches in {took:.1f} s"
        if failed:
            summary += f"; {len(failed)} failed: {_first_line(failed[0])}"
        return summary
    except Exception as exc:  # out of memory, a twin that will not run: built where launched
        return f"failed: {_first_line(exc)}"
    finally:
        jobs.clear()
        held.clear()  # the twin's memory back to the device before the engine measures it
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


def _plain(job: Any) -> Exception | None:
    try:
        job()
    except Exception as exc:
        return exc
    return None


def _meta_twin(transformers: Any, twin_cfg: Any, dtype: Any, attn_implementation: str) -> Any:
    import torch

    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(
            twin_cfg, dtype=dtype, attn_implementation=attn_implementation
        )


def _jobs(
    torch: Any, twin: Any, device: Any, switches: KernelSwitches, max_batch: int, decode: bool
) -> list[Any]:
    """Return the launches to run: the twin's steps, and one decode attention per variant."""
    jobs: list[Any] = [partial(_twin_steps, torch, twin, switches, decode)]
    if not decode:
        return jobs
    from longscope.models.hf import decode_ops

    config = twin.config
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    first = twin.model.layers[0].self_attn
    dim = int(getattr(first, "head_dim", 0) or config.hidden_size // heads)
    if not decode_ops.attention_fits(dim, heads // kv_heads, twin.dtype):
        return jobs
    launches = attention_launches(max_batch, heads, kv_heads, dim, switches.decode_fused_merge)
    for rows, capacity in launches:
        shape = (rows, heads, kv_heads, dim, capacity)
        jobs.append(partial(_attention, torch, decode_ops, switches, device, twin.dtype, shape))
    return jobs


def _own_caches(device: int) -> None:
    """Make each of our kernels' build table for `device` here, once: threads making one at once
    would each keep their own, and the builds of all but one would be lost to the run."""
    from longscope.models.hf import decode_ops, triton_ops

    for module in (decode_ops, triton_ops):
        for value in list(vars(module).values()):
            caches = getattr(value, "device_caches", None)
            if caches is not None:
                caches[device]


def _in_threads(torch: Any, device: Any, jobs: list[Any]) -> list[Exception]:
    """Run `jobs` in `THREADS` threads, each on a stream of its own on `device`; return the
    errors."""

    def one(job: Any) -> Exception | None:
        torch.cuda.set_device(device)  # the current device is per thread
        stream = torch.cuda.Stream(device)
        try:
            with torch.cuda.stream(stream):
                job()
            stream.synchronize()
        except Exception as exc:
            return exc
        return None

    with ThreadPoolExecutor(min(THREADS, len(jobs)), thread_name_prefix="hf-build") as pool:
        return [exc for exc in pool.map(one, jobs) if exc is not None]


def _twin_steps(torch: Any, twin: Any, switches: KernelSwitches, decode: bool) -> None:
    """Prefill the twin as the engine prefills (`prefill_context`), then step its decode once per
    prompt as a batch's first step runs before its capture (uncaptured, the same kernels)."""
    import inspect

    import transformers

    from longscope.models.hf.decoder import StaticDecoder
    from longscope.models.hf.prefill import prefill_context

    params = inspect.signature(twin.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    for length in TWIN_PROMPTS:
        cache = transformers.DynamicCache(config=twin.config)
        ids = torch.arange(length, device=twin.device) % TWIN_VOCAB
        with torch.no_grad(), prefill_context(twin, switches):
            twin(input_ids=ids[None], **{cache_kw: cache}, use_cache=True, logits_to_keep=1)
        if not decode:
            continue
        positions = torch.tensor([length], device=twin.device)
        with torch.no_grad(), decode_kernels():
            decoder = StaticDecoder(
                torch, twin, cache, length, decode_capacity(length + 16), None, positions, switches
            )
            decoder.step(torch.zeros(1, dtype=torch.long, device=twin.device), capture=False)
            decoder.close()


def _attention(
    torch: Any,
    decode_ops: Any,
    switches: KernelSwitches,
    device: Any,
    dtype: Any,
    shape: tuple[int, int, int, int, int],
) -> None:
    """Run the decode attention once over a full cache of `shape` (rows, heads, KV heads, dims,
    capacity), launched as the step launches it (`StaticDecoder._launch`)."""
    from longscope.models.hf import gemv

    rows, heads, kv_heads, dim, capacity = shape
    attention = decode_ops.DecodeAttention(rows, heads, kv_heads, dim, capacity, dtype, device)
    keys = torch.zeros((rows, kv_heads, capacity, dim), dtype=dtype, device=device)
    valid = torch.ones((rows, capacity), dtype=torch.bool, device=device)
    lengths = torch.full((rows,), capacity, dtype=torch.long, device=device)
    query = torch.zeros((rows, heads, dim), dtype=dtype, device=device)
    pdl = switches.decode_pdl and gemv.pdl_supported(device)
    attention(query, keys, keys, valid, lengths, dim**-0.5, pdl, switches.decode_fused_merge)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0][:200] if lines else "") or type(exc).__name__


def main() -> int:
    """A build process (`BuildAhead`, "process"): read its order (JSON) from standard input, run
    the twin, print what it did."""
    order = json.loads(sys.stdin.read())
    import torch
    import transformers

    from longscope.models.hf.kernels import ATTENTION, register_attention

    config = dict(order["config"])
    twin_cfg = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    dtype = getattr(torch, order["dtype"])
    index = order["device"]
    device = torch.device("cpu") if index is None else torch.device("cuda", index)
    known = {f.name for f in dataclasses.fields(KernelSwitches)}
    switches = KernelSwitches(**{k: v for k, v in order["switches"].items() if k in known})
    attention = order["attention"]
    if attention == ATTENTION:  # ours: registered in this process too
        attention = register_attention(None)
    twin = _meta_twin(transformers, twin_cfg, dtype, attention)
    print(run_twin(torch, [twin], device, switches, order["max_batch"], order["decode"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
