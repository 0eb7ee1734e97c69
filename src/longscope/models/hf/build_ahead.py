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
Measured on an H200 (calls AX, AZ, BA): every build inside the load and none in the run, but
Triton builds mostly inside Python's lock, so the load waited 4.0-4.8 s for them, and RULER from
nothing (a model that loads in 3-4 s) took 1.146x and 1.152x the engine's prefill against 1.139x
and 1.148x without. "process": a process of its own, with its own lock, fills Triton's disk
cache, where this process's first launches find the builds; the load does not wait for it, so its
memory (`PROCESS_BYTES`) is in use while the run's first batches are planned. On that 3-4 s load
it imported torch too slowly to get ahead of the run, which built every kernel itself (call AY).

A kernel's build depends on its constants and on which integer arguments are 1 or multiples of 16
(Triton's specialisation), not on the values the twin computes: its uninitialised weights give
garbage that nothing reads. Only Llama-family configurations (`kernels.GRAPH_MODEL_TYPES`), the
ones whose steps these kernels run. Best effort: where the twin cannot be built, does not fit
beside the model, or fails, the run builds its kernels at their first launch, as before.
"""

from __future__ import annotations

import contextlib
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
from typing import Any

from longscope.models.hf.kernels import GRAPH_MODEL_TYPES, KernelSwitches, decode_kernels
from longscope.models.hf.loading import first_line
from longscope.models.memory_plan import DECODE_BLOCK, ModelShape, decode_capacity

_log = logging.getLogger(__name__)

TWIN_VOCAB = 256
"""The twin's vocabulary: its embedding and output projection run on torch's kernels, not ours."""
TWIN_PROMPTS = (64, 33)
"""The twin's prompt lengths: a multiple of 16 and not (the SiLU product's element count is an
integer argument Triton specialises on)."""
MARGIN_BYTES = 2 << 30
"""Device memory the twin leaves free beside the model's weights."""
PROCESS_BYTES = 1 << 30
"""A build process's own CUDA context and buffers: in use while the run's first batches are
planned (the process is not waited for), so counted here before it starts."""
MODES = ("thread", "process")
"""Where `KernelSwitches.build_ahead` builds (`BuildAhead`); anything else: nowhere."""


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
        process that does the same. Never raises: what went wrong is in `summary`."""
        ahead = cls()
        try:
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
            need += PROCESS_BYTES if mode == "process" else 0
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
            twin = _meta_twin(transformers, twin_cfg, dtype, attn_implementation)
            ahead.summary = "running"
            args = (torch, [twin], device, copy.copy(switches), max_batch, decode)
            ahead._thread = threading.Thread(
                target=ahead._run, args=args, name="hf-build-ahead", daemon=True
            )
            ahead._thread.start()
        except Exception as exc:
            ahead.summary = f"failed: {first_line(exc)}"
        return ahead

    def _spawn(self, order: dict[str, Any]) -> None:
        import triton

        env = dict(os.environ)
        # where this process looks for builds and finds its modules, either set in code
        env["TRITON_CACHE_DIR"] = str(triton.knobs.cache.dir)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        code = "from longscope.models.hf.build_ahead import main; raise SystemExit(main())"
        text = json.dumps(order).encode()
        self._process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(text)
            self._process.stdin.close()
        except OSError as exc:  # it ended before reading its order
            self._process.kill()
            self._process.wait()
            self.summary = f"failed: {first_line(exc)}"
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
    """Put the twin (`held[0]`, on the meta device) on `device`, prefill and decode it, then run
    one decode attention per launch variant where its decode ran the Triton step; free it;
    return what it did. One launch after another on a stream of its own: Triton builds mostly
    inside Python's lock (call AW: in 8 threads 19 builds took 17.3 s summed, six of them the
    same one built at once, and slowed the load beside them from 3.6 to 6.1 s)."""
    started = time.perf_counter()
    cuda = device.type == "cuda"
    failed: list[str] = []  # first lines only: a kept exception would hold the twin's frames
    launches, twin = 0, None
    try:
        if cuda:
            torch.cuda.set_device(device)
            _own_caches(torch.cuda.current_device())
        held[0].to_empty(device=device)
        twin = held[0].eval()
        stream = torch.cuda.Stream(device) if cuda else None
        with torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            with torch.inference_mode():  # as the engine thread runs
                launches += 1
                kernels = _guarded(failed, _twin_steps, torch, twin, switches, decode)
                if kernels == "triton" and cuda:
                    for shape in _attention_shapes(twin, max_batch, switches):
                        launches += 1
                        _guarded(failed, _attention, torch, switches, device, twin.dtype, shape)
            if stream is not None:
                stream.synchronize()
        took = time.perf_counter() - started
        summary = f"{launches - len(failed)} of {launches} launches in {took:.1f} s"
        return summary + (f"; {len(failed)} failed: {failed[0]}" if failed else "")
    except Exception as exc:  # out of memory, a twin that will not run: built where launched
        return f"failed: {first_line(exc)}"
    finally:
        twin = None
        held.clear()  # the twin's memory back to the device before the engine measures it
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


def _guarded(failed: list[str], call: Any, *args: Any) -> Any:
    """Return `call(*args)`, or None with its error's first line added to `failed`."""
    try:
        return call(*args)
    except Exception as exc:
        failed.append(first_line(exc))
        return None


def _meta_twin(transformers: Any, twin_cfg: Any, dtype: Any, attn_implementation: str) -> Any:
    import torch

    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(
            twin_cfg, dtype=dtype, attn_implementation=attn_implementation
        )


def _attention_shapes(
    twin: Any, max_batch: int, switches: KernelSwitches
) -> list[tuple[int, int, int, int, int]]:
    """(rows, heads, KV heads, dims, capacity) of each decode attention to run for the twin."""
    config = twin.config
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    first = twin.model.layers[0].self_attn
    dim = int(getattr(first, "head_dim", 0) or config.hidden_size // heads)
    launches = attention_launches(max_batch, heads, kv_heads, dim, switches.decode_fused_merge)
    return [(rows, heads, kv_heads, dim, capacity) for rows, capacity in launches]


def _own_caches(device: int) -> None:
    """Make each of our kernels' build table for `device` here, in this thread: one made by two
    threads at once (Triton's is a defaultdict) would keep one thread's builds and lose the
    other's."""
    from longscope.models.hf import decode_ops, triton_ops

    for module in (decode_ops, triton_ops):
        for value in list(vars(module).values()):
            caches = getattr(value, "device_caches", None)
            if caches is not None:
                caches[device]


def _no_tuning() -> None:
    """The twin's step chooses no configuration: its weights are uninitialised, and what a
    tuning chose (or failed on) would be kept for the real model's shapes."""


def _twin_steps(torch: Any, twin: Any, switches: KernelSwitches, decode: bool) -> str:
    """Prefill the twin as the engine prefills (`prefill_context`), then run its decode step once
    per prompt as a batch's first step runs before its capture, uncounted (the tunings' step
    counts are the run's) and untuned; return the step's kernels ("triton", "torch"; "" where
    the engine would decode eagerly)."""
    import inspect

    import transformers

    from longscope.models.hf.decoder import StaticDecoder, graph_unsupported
    from longscope.models.hf.prefill import prefill_context

    params = inspect.signature(twin.forward).parameters
    cache_kw = "cache" if "cache" in params else "past_key_values"
    kernels = ""
    for length in TWIN_PROMPTS:
        cache = transformers.DynamicCache(config=twin.config)
        ids = torch.arange(length, device=twin.device) % TWIN_VOCAB
        with prefill_context(twin, switches):
            twin(input_ids=ids[None], **{cache_kw: cache}, use_cache=True, logits_to_keep=1)
        if not decode or graph_unsupported(twin):
            continue
        positions = torch.tensor([length], device=twin.device)
        with decode_kernels():
            capacity = decode_capacity(length + 16)
            decoder = StaticDecoder(torch, twin, cache, length, capacity, None, positions, switches)
            decoder._prepare_kernels = _no_tuning  # type: ignore[method-assign]
            decoder.tokens.zero_()
            decoder._forward()  # what `step` launches, without its counting
            kernels = decoder.kernels
            decoder.close()
    return kernels


def _attention(
    torch: Any,
    switches: KernelSwitches,
    device: Any,
    dtype: Any,
    shape: tuple[int, int, int, int, int],
) -> None:
    """Run the decode attention once over a full cache of `shape` (rows, heads, KV heads, dims,
    capacity), launched as the step launches it (`StaticDecoder._launch`)."""
    from longscope.models.hf import decode_ops, gemv

    rows, heads, kv_heads, dim, capacity = shape
    attention = decode_ops.DecodeAttention(rows, heads, kv_heads, dim, capacity, dtype, device)
    keys = torch.zeros((rows, kv_heads, capacity, dim), dtype=dtype, device=device)
    valid = torch.ones((rows, capacity), dtype=torch.bool, device=device)
    lengths = torch.full((rows,), capacity, dtype=torch.long, device=device)
    query = torch.zeros((rows, heads, dim), dtype=dtype, device=device)
    pdl = switches.decode_pdl and gemv.pdl_supported(device)
    attention(query, keys, keys, valid, lengths, dim**-0.5, pdl, switches.decode_fused_merge)


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
