"""The graph decode step's Triton kernels built ahead, in background threads, beside the first
prefill.

Why (issue 46, RULER through the CLI on a fresh H200): the step's kernels were built where the
first batch captured its graph, the device idle meanwhile: 3.9 s of a 184 s run went to the
attention's five tuned configurations and its merges alone. `start` builds them from the moment
the engine holds its model, as Triton's `warmup` does (compiled and loaded, not run; a pointer
given as its dtype, which Triton takes as aligned, as the step's buffers are), each for the
specialization the step's own launch asks for (`variants`). A kernel the step reaches before its
thread is built there as before (Triton's cache takes whichever is first), so nothing waits on
these threads, and a launch not foreseen here still builds. What is built ahead is decided only
by the model's shape and the kernel switches: the step's tuning still times every plan on the
card before the graph is captured.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from longscope.models.memory_plan import DECODE_BLOCK

log = logging.getLogger(__name__)

BUILD_THREADS = 4
"""Threads building at once (fewer on a machine of fewer cores: one is left to the run)."""


@dataclass(frozen=True)
class Build:
    """One kernel variant to build: the kernel, its arguments (pointers as dtypes) and keywords
    (constexprs and launch options), as the step's launch passes them."""

    name: str
    kernel: Any
    args: tuple[Any, ...]
    options: dict[str, Any]

    def __call__(self) -> None:
        self.kernel.warmup(*self.args, grid=(1,), **self.options)


def variants(model: Any, switches: Any, pdl: bool) -> list[Build]:
    """Return the step's kernel variants for `model` (a Llama-style decoder the Triton step
    takes), in the order a first batch reaches them: the attention's split stage (each tuned
    configuration, merged in it and not), rotary, residual + RMSNorm and the SiLU product for
    every K slicing, the merges, then the GEMV's candidate plans by row padding (1, 16, 32, 64)."""
    import torch

    from longscope.models.hf import decode_ops, gemv

    config = model.config
    if str(getattr(config, "hidden_act", "")) not in ("silu", "swish"):
        return []
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    first = model.model.layers[0]
    attn, mlp = first.self_attn, first.mlp
    dim = int(getattr(attn, "head_dim", 0) or config.hidden_size // heads)
    dtype = attn.q_proj.weight.dtype
    if getattr(attn, "q_norm", None) is not None or not decode_ops.attention_fits(
        dim, heads // kv_heads, dtype
    ):
        return []  # a layer the Triton step does not take (`triton_step_unsupported`)
    hidden = int(attn.o_proj.weight.shape[0])
    inner = int(mlp.down_proj.weight.shape[1])
    qkv_bias = attn.q_proj.bias is not None
    gate_bias = mlp.gate_proj.bias is not None
    launch = {"launch_pdl": True} if pdl else {}
    fp = {"enable_fp_fusion": False, **launch}
    groups = heads // kv_heads
    group_pad = max(16, 1 << (groups - 1).bit_length())
    out: list[Build] = []

    # Attention: a capacity of whole blocks (as `decode_capacity` gives past one block).
    capacity = 2 * DECODE_BLOCK
    split_size = -(-capacity // decode_ops.BLOCK_N) * decode_ops.BLOCK_N
    ieee = dtype == torch.float32
    f32, i64, i32, u8 = torch.float32, torch.int64, torch.int32, torch.uint8
    short: list[Build] = []
    # A capacity of one block or less is the prompt and answer's own (`decode_capacity`): its
    # rows' mask stride is not a multiple of 16, a specialization of its own (built last).
    for merge, mask_stride in ((True, capacity), (False, capacity), (True, 15), (False, 15)):
        args = (
            dtype, dtype, dtype, u8, i64, f32, f32, i32, dtype if merge else f32,
            1.0, split_size, 1, 0,
            heads * dim, kv_heads * capacity * dim, capacity * dim, kv_heads * capacity * dim,
            capacity * dim, mask_stride, heads * dim if merge else 0,
        )  # fmt: skip
        constants = {
            "GROUPS": groups, "GROUP_PAD": group_pad, "DIM": dim, "IEEE": ieee, "PDL": pdl,
            "MERGE": merge, "BALANCED": decode_ops.BALANCED_SPLITS, **launch,
        }  # fmt: skip
        for each in decode_ops._split_configs():
            options = {**constants, **each.all_kwargs()}
            build = Build("attention split", decode_ops._attention_split_body, args, options)
            (out if mask_stride == capacity else short).append(build)

    # A projection reaches its reader as torch's tensor (0) or the GEMV's float32 slices.
    slicings = [0, *gemv.SPLITS] if switches.decode_gemv else [0]
    width = (heads + 2 * kv_heads) * dim
    for splits in slicings:
        source = f32 if splits else dtype
        bias = dtype if splits and qkv_bias else source
        args = (
            source, bias, 0 if not splits else width, dtype, dtype, dtype, dtype, dtype, i64,
            width, dim, kv_heads * capacity * dim, capacity * dim, kv_heads * capacity * dim,
            capacity * dim,
        )  # fmt: skip
        options = {
            "HEADS": heads, "KV_HEADS": kv_heads, "HALF": dim // 2, "SPLITS": splits,
            "HAS_BIAS": bool(splits) and qkv_bias, "PDL": pdl, **fp,
        }  # fmt: skip
        out.append(Build("rotary", decode_ops._rope_store_kernel, args, options))
    norm = {"BLOCK": 1 << (hidden - 1).bit_length(), "num_warps": decode_ops.NORM_WARPS, **fp}
    eps = float(getattr(first.input_layernorm, "variance_epsilon", 1e-6))
    plain = (dtype, dtype, dtype, 0, dtype, dtype, hidden, eps)
    out.append(
        Build("norm", decode_ops._add_rms_norm_kernel, plain, {
            "ADD": False, "SPLITS": 0, "HAS_BIAS": False, "PDL": pdl, **norm,
        })
    )  # fmt: skip
    for splits in slicings:
        source = f32 if splits else dtype
        for bias in {attn.o_proj.bias is not None, mlp.down_proj.bias is not None}:
            args = (dtype, source, dtype if bias and splits else source, hidden if splits else 0,
                    dtype, dtype, hidden, eps)  # fmt: skip
            options = {"ADD": True, "SPLITS": splits, "HAS_BIAS": bias and bool(splits), "PDL": pdl}
            out.append(Build("norm", decode_ops._add_rms_norm_kernel, args, {**options, **norm}))
        args = (source, dtype if splits and gate_bias else source, 2 * inner if splits else 0,
                dtype, inner)  # fmt: skip
        options = {"BLOCK": 1024, "SPLITS": splits, "HAS_BIAS": bool(splits) and gate_bias}
        out.append(
            Build("silu", decode_ops._silu_mul_packed_kernel, args, {**options, "PDL": pdl, **fp})
        )
    out += _merges(decode_ops, heads, kv_heads, dim, groups, group_pad, dtype, pdl, switches)
    if switches.decode_gemv:
        shapes = [
            (width, hidden, qkv_bias),
            (hidden, heads * dim, attn.o_proj.bias is not None),
            (2 * inner, hidden, gate_bias),
            (hidden, inner, mlp.down_proj.bias is not None),
        ]
        out += _gemvs(gemv, shapes, dtype, pdl)
    return _unique(out + short)


def _merges(
    ops: Any, heads: int, kv_heads: int, dim: int, groups: int, group_pad: int, dtype: Any,
    pdl: bool, switches: Any,
) -> list[Build]:  # fmt: skip
    # The merge kernel runs where a row's KV head has more splits than the split stage merges
    # itself (or the fused merge is off): its constexprs follow the split count and the batch.
    import torch

    seen: list[Build] = []
    least = ops.FUSED_MERGE_SPLITS + 1 if switches.decode_fused_merge else 1
    for batch in range(1, 65):
        most = ops.splits_for(batch, kv_heads, 1 << 30)
        dblock = min(dim, ops.MERGE_DIMS)
        while dblock < dim and batch * heads * (dim // dblock) > ops.MERGE_PROGRAMS:
            dblock *= 2
        pad = 1 << (least - 1).bit_length()
        while pad // 2 < most and pad >= 1:
            constants = {
                "GROUPS": groups, "GROUP_PAD": group_pad, "DIM": dim, "SPLITS_PAD": pad,
                "CHUNK": min(pad, 4096 // dblock), "DBLOCK": dblock, "PDL": pdl,
            }  # fmt: skip
            if pdl:
                constants["launch_pdl"] = True
            args = (torch.float32, torch.float32, dtype, heads * dim, 2)
            seen.append(Build("attention merge", ops._attention_merge_kernel, args, constants))
            pad *= 2
    return seen


def _gemvs(gemv: Any, shapes: list[tuple[int, int, bool]], dtype: Any, pdl: bool) -> list[Build]:
    import torch

    out: list[Build] = []
    for pad in (1, 16, 32, 64):
        for index, (n, width, bias) in enumerate(shapes):
            for plan in gemv._candidates(pad, width):
                # the gate/up shape (index 2) also in one slice with the SiLU product
                for gated in (False, True) if index == 2 and plan.splits == 1 else (False,):
                    tile = plan.block_n // 2 if gated else plan.block_n
                    k_split = gemv._k_split(width, plan)
                    output = dtype if gated else torch.float32
                    args = (
                        dtype, dtype, output, dtype, pad, n, width, k_split, width, width,
                    )  # fmt: skip
                    options = {
                        "M_PAD": pad, "BLOCK_N": plan.block_n, "BLOCK_K": plan.block_k,
                        "EVEN": width % plan.block_k == 0,
                        "EVEN_N": (n // 2 if gated else n) % tile == 0, "PDL": pdl,
                        "GATED": gated, "HAS_BIAS": gated and bias,
                        "num_warps": plan.warps, "num_stages": plan.stages,
                    }  # fmt: skip
                    if pdl:
                        options["launch_pdl"] = True
                    out.append(Build(f"gemv {pad} rows", gemv._gemv_kernel, args, options))
    return out


def _unique(builds: list[Build]) -> list[Build]:
    # One build per specialization: the arguments' kinds (a pointer's dtype; an int's
    # divisibility by 16, or 1) and the keywords, as Triton keys its cache.
    kept: dict[tuple[Any, ...], Build] = {}
    for build in builds:
        kinds = tuple(
            ("one" if arg == 1 else arg % 16 == 0)
            if isinstance(arg, int) and not isinstance(arg, bool)
            else str(arg)
            for arg in build.args
        )
        key = (build.kernel, kinds, tuple(sorted((k, str(v)) for k, v in build.options.items())))
        kept.setdefault(key, build)
    return list(kept.values())


def start(model: Any, switches: Any, device: Any = None) -> threading.Thread | None:
    """Build the step's kernels for `model`'s shape (its modules may be on the meta device:
    only their shapes are read) for `device` (default: the model's) in background threads
    (`variants`), where the Triton step can run on a CUDA card; return the thread handing them
    out (None: nothing to build, or already built or being built for this shape). Best effort: a
    build that fails is left to the step, which reports its own errors."""
    import importlib.util

    import torch

    device = torch.device(device if device is not None else getattr(model, "device", "cpu"))
    if device.type != "cuda" or not switches.decode_triton or not torch.cuda.is_available():
        return None
    if os.environ.get("TRITON_INTERPRET") == "1" or importlib.util.find_spec("triton") is None:
        return None
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    from longscope.models.hf import gemv

    try:
        pdl = switches.decode_pdl and gemv.pdl_supported(device)
        builds = variants(model, switches, pdl)
    except Exception as exc:  # a model the step does not take: its decoder says why
        log.debug("no decode kernels built ahead: %s", exc)
        return None
    key = (device, repr([(b.name, b.args, sorted(b.options.items())) for b in builds]))
    with _STARTED_LOCK:
        if not builds or key in _STARTED:
            return None
        _STARTED.add(key)
    thread = threading.Thread(
        target=_build_all, args=(builds, device), name="hf-builds", daemon=True
    )
    thread.start()
    return thread


_STARTED: set[tuple[Any, str]] = set()
_STARTED_LOCK = threading.Lock()


def _build_all(builds: list[Build], device: Any) -> None:
    import torch

    threads = max(1, min(BUILD_THREADS, (os.cpu_count() or 2) - 1))

    def one(build: Callable[[], None]) -> None:
        torch.cuda.set_device(device)  # the current device is per thread
        try:
            build()
        except Exception as exc:
            log.debug("decode kernel not built ahead: %s", exc)

    with ThreadPoolExecutor(threads, thread_name_prefix="hf-build") as pool:
        list(pool.map(one, builds))
