"""The hf engine's kernels: which fused ops and attention kernels run, and our attention function.

The choices are engine state (`KernelSwitches`, one per backend), not process globals: a
benchmark turns one off for one backend, and an error that turns one off (a Triton that cannot
build a kernel, a cuDNN without attention) is recorded where that backend reports it. The
attention function is registered with transformers once per process and is called from inside a
model's forward, which knows no backend: it reads the switches of the engine whose prefill is
running on this thread (`active`), set by `using`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from longscope.errors import UsageError
from longscope.models.memory_plan import CHUNK_QUANTUM

ATTENTION = "longscope_sdpa"
"""Our attention: SDPA with a lower-right causal bias for prefill chunks (flash kernel, no mask)."""
GRAPH_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3"})
"""Decoders whose layers the graph decode re-implements (pre-norm, RoPE, GQA, gated MLP)."""
CUDNN_SPLIT_MIN_QUERIES = 256
"""Chunks of fewer queries keep the flash path: a short suffix does not earn back cuDNN's setup."""
SHAPE_QUANTUM = CHUNK_QUANTUM
"""cuDNN takes only lengths in whole quanta: full prefill chunks at whole-chunk offsets recur
from document to document, so their graphs are built once per process, not once per document."""


@dataclass
class KernelSwitches:
    """Which fused ops and attention kernels an engine uses, and what turned one off.

    Mutable on purpose: an op that fails at run time switches itself off here and the engine
    goes on with transformers' exact path.
    """

    fast_rope: bool = True
    """The graph decode rotates query and key together by a roll (`StaticDecoder._apply_rope`)."""
    fused_norm: bool = True
    """The graph decode computes RMSNorm with torch's fused kernel (one launch, not seven)."""
    decode_triton: bool = True
    """The graph decode on CUDA runs its layers as Triton kernels over merged QKV and gate/up
    projections, attention reading only each row's written keys (`decode_ops`)."""
    decode_error: str = ""
    """The error that turned `decode_triton` off."""
    decode_gemv: bool = True
    """The Triton step's 16-bit projections of 64 rows or fewer (QKV, o_proj, gate/up, down) run
    as `gemv`'s split-K GEMV, its slices summed by the kernel that reads them, on the shapes
    where it timed faster than torch's matmul on this card (tuned once per row padding, after
    `gemv.TUNE_AFTER_STEPS` steps at it: short answers never pay for a tuning); gate/up
    with the SiLU product in the same kernel where that timed faster (`gemv.tune_gated`)."""
    decode_fused_merge: bool = True
    """The Triton step's attention merges its splits in the split stage where a row's KV head
    has few (`decode_ops.FUSED_MERGE_SPLITS`): one launch a layer fewer."""
    decode_pdl: bool = True
    """The Triton step's kernels launch programmatically dependent where the card and Triton
    take it (`gemv.pdl_supported`: compute capability 9 or more): each one's programs are placed
    while the one before it drains."""
    park_rows: str = "auto"
    """When a finished group's rows stay in the running batch, parked (`StaticDecoder.park`):
    "auto": with the Triton step always (a parked row costs one key a step), with the torch step
    only while another group waits to take their places (it reads every row's whole cache, parked
    or not); "always"; "never" (each leave rebuilds the cache, and captures again on CUDA)."""
    fused_prefill_norm: bool = True
    """Prefill on CUDA runs Llama-family RMSNorms as torch's fused kernel (`fused_prefill_norms`)."""
    fused_prefill_ops: bool = True
    """Prefill on CUDA runs the rotary embedding and `silu(gate) * up` of Llama-family models as
    Triton kernels (`fused_prefill_ops`)."""
    fused_ops_error: str = ""
    """The error that turned `fused_prefill_ops` off."""
    build_ahead: str = "thread"
    """A load on CUDA builds the Triton kernels its run launches while the weights load
    (`build_ahead.BuildAhead`), where they were built at their first launch while the card waited:
    "thread" (joined by the load), "process" (a process of its own filling Triton's disk cache,
    not waited for), "off"."""
    cudnn_split: bool = True
    """Prefill may use cuDNN attention (`attention`)."""
    cudnn_gqa: bool = True
    """... with grouped KV heads passed unrepeated."""
    cudnn_used: int = 0
    """Prefill chunks that ran as two cuDNN calls."""
    cudnn_error: str = ""
    """The last error that turned a cuDNN option off."""


_active: contextvars.ContextVar[KernelSwitches | None] = contextvars.ContextVar(
    "longscope_hf_kernels", default=None
)


def active() -> KernelSwitches:
    """Return the switches of the engine running on this thread (defaults where none is)."""
    return _active.get() or KernelSwitches()


@contextlib.contextmanager
def using(switches: KernelSwitches) -> Iterator[KernelSwitches]:
    """Make `switches` the ones our attention reads on this thread while inside."""
    token = _active.set(switches)
    try:
        yield switches
    finally:
        _active.reset(token)


def import_torch() -> tuple[Any, Any]:
    """Return (torch, transformers), or a usage error naming the extra to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise UsageError(
            "the hf backend needs torch and transformers: pip install 'longscope[gpu]'"
        ) from exc
    return torch, transformers


def rms_norm(torch: Any, norm: Any, hidden: Any, fused: bool = True) -> Any:
    """Return `norm(hidden)` for a Llama-style RMSNorm, in one fused kernel where torch has one.

    Same arithmetic as transformers' module (float32 normalisation, cast back, times the weight);
    a decode step runs 2 norms per layer, each 7 small kernels unfused, at ~2 us each even inside
    a graph.
    """
    eps = getattr(norm, "variance_epsilon", None)
    function = getattr(torch.nn.functional, "rms_norm", None)
    if not fused or eps is None or function is None:
        return norm(hidden)
    normed = function(hidden.float(), (hidden.shape[-1],), eps=eps)
    return norm.weight * normed.to(hidden.dtype)


@contextlib.contextmanager
def fused_prefill_norms(model: Any, switches: KernelSwitches | None = None) -> Any:
    """Run the RMSNorms of a Llama-family model on CUDA as one fused kernel while inside.

    transformers' RMSNorm is 7 elementwise kernels over float32 copies (about 36 bytes of memory
    traffic per element, twice per layer and token: some 9% of a 7B prefill's dense-matmul
    time); the fused kernel reads and writes the bf16 tensor once. Same arithmetic (float32
    normalisation, rounded to the input dtype, then times the weight in that dtype); only the
    order of the float32 sum of squares differs. Yields the number of modules switched.
    """
    import torch

    switches = switches or KernelSwitches()
    switched = []
    kind = str(getattr(getattr(model, "config", None), "model_type", ""))
    fused = getattr(torch.nn.functional, "rms_norm", None)
    device = getattr(model, "device", None)
    if (
        switches.fused_prefill_norm
        and fused is not None
        and kind in GRAPH_MODEL_TYPES
        and getattr(device, "type", "") == "cuda"
    ):
        for module in model.modules():
            if (
                type(module).__name__.endswith("RMSNorm")
                and isinstance(getattr(module, "variance_epsilon", None), float)
                and getattr(module, "weight", None) is not None
                and "forward" not in module.__dict__
            ):
                module.forward = functools.partial(_fused_norm_forward, module)
                switched.append(module)
    try:
        yield len(switched)
    finally:
        for module in switched:
            del module.forward


@contextlib.contextmanager
def fused_prefill_ops(model: Any, switches: KernelSwitches | None = None) -> Any:
    """Run a Llama-family model's rotary embedding and SiLU-gated MLP product on CUDA as one
    Triton kernel each while inside (`triton_ops`: bit-identical to transformers' in 16 bits).
    Yields the number of MLPs switched (0 where it does not apply)."""
    switches = switches or KernelSwitches()
    kind = str(getattr(getattr(model, "config", None), "model_type", ""))
    device = getattr(model, "device", None)
    layers = getattr(getattr(model, "model", None), "layers", None) or []
    if (
        not switches.fused_prefill_ops
        or kind not in GRAPH_MODEL_TYPES
        or getattr(device, "type", "") != "cuda"
        or not layers
        or importlib.util.find_spec("triton") is None
    ):
        yield 0
        return
    module = sys.modules.get(type(layers[0].self_attn).__module__)
    _install_rotate(module)
    act = str(getattr(model.config, "hidden_act", ""))
    switched = []
    if act in ("silu", "swish"):
        for layer in layers:
            mlp = getattr(layer, "mlp", None)
            if (
                mlp is not None
                and all(hasattr(mlp, n) for n in ("gate_proj", "up_proj", "down_proj"))
                and "forward" not in mlp.__dict__
            ):
                mlp.forward = functools.partial(_fused_mlp_forward, mlp, switches)
                switched.append(mlp)
    token = _rotating.set(switches)
    try:
        yield len(switched)
    finally:
        _rotating.reset(token)
        for mlp in switched:
            del mlp.forward


_rotating: contextvars.ContextVar[KernelSwitches | None] = contextvars.ContextVar(
    "longscope_rotating", default=None
)
"""The switches of the prefill running on this thread inside `fused_prefill_ops` (None: none)."""
_rotate_lock = threading.Lock()


def _install_rotate(module: Any) -> None:
    """Replace a modeling module's `apply_rotary_pos_emb`, once per process, by one that runs the
    Triton kernel for a thread inside `fused_prefill_ops` and transformers' own elsewhere.

    Installed once and never swapped back: engines on several devices prefill at the same time
    in their own threads, and a patch each one set and restored would undo the others'.
    """
    original = getattr(module, "apply_rotary_pos_emb", None)
    if original is None:
        return
    with _rotate_lock:
        original = module.apply_rotary_pos_emb
        if getattr(original, "_longscope_rotate", False):
            return
        from longscope.models.hf import triton_ops

        def rotate(q: Any, k: Any, cos: Any, sin: Any, *args: Any, **kwargs: Any) -> Any:
            switches = _rotating.get()
            if (
                switches is not None
                and switches.fused_prefill_ops
                and not args
                and kwargs.get("unsqueeze_dim", 1) == 1
                and triton_ops.rope_fits(q, cos, sin)
                and triton_ops.rope_fits(k, cos, sin)
            ):
                try:
                    return triton_ops.rope(q, cos, sin), triton_ops.rope(k, cos, sin)
                except Exception as exc:  # a Triton that cannot build it: transformers' is exact
                    switches.fused_prefill_ops, switches.fused_ops_error = False, str(exc)[:300]
            return original(q, k, cos, sin, *args, **kwargs)

        rotate._longscope_rotate = True  # type: ignore[attr-defined]
        module.apply_rotary_pos_emb = rotate


def _fused_mlp_forward(mlp: Any, switches: KernelSwitches, hidden: Any) -> Any:
    gate, up = mlp.gate_proj(hidden), mlp.up_proj(hidden)
    if switches.fused_prefill_ops and gate.is_cuda:
        from longscope.models.hf import triton_ops

        try:
            return mlp.down_proj(triton_ops.silu_mul(gate, up))
        except Exception as exc:  # a Triton that cannot build it: torch's two kernels are exact
            switches.fused_prefill_ops, switches.fused_ops_error = False, str(exc)[:300]
    return mlp.down_proj(mlp.act_fn(gate) * up)


def _fused_norm_forward(module: Any, hidden: Any) -> Any:
    import torch

    normed = torch.nn.functional.rms_norm(hidden, (hidden.shape[-1],), eps=module.variance_epsilon)
    return module.weight * normed


class Merged(NamedTuple):
    """A layer's QKV and gate/up weights as one matrix each (the modules' own weights are views
    into them, so no memory is added), with their biases (None where the layer has none)."""

    qkv: Any
    qkv_bias: Any
    gate_up: Any
    gate_up_bias: Any


def merged_weights(torch: Any, layer: Any) -> Merged:
    """Return `layer`'s merged projections, made once: the q/k/v (and gate/up) weights are
    copied into one tensor and the modules' parameters become views of it, so the prefill's
    forward and the decode read the same memory. Made again if the model was moved since."""
    attn, mlp = layer.self_attn, layer.mlp
    groups = ((attn.q_proj, attn.k_proj, attn.v_proj), (mlp.gate_proj, mlp.up_proj))
    made = getattr(layer, "_longscope_merged", None)
    if made is not None and made.qkv.data_ptr() == attn.q_proj.weight.data_ptr():
        return made
    parts: list[Any] = []
    for modules in groups:
        weight = torch.cat([m.weight.detach() for m in modules])
        biases = [m.bias for m in modules]
        bias = None
        if all(b is not None for b in biases):
            bias = torch.cat([b.detach() for b in biases])
        start = 0
        for module in modules:
            rows = module.weight.shape[0]
            module.weight = torch.nn.Parameter(weight[start : start + rows], requires_grad=False)
            if bias is not None:
                module.bias = torch.nn.Parameter(bias[start : start + rows], requires_grad=False)
            start += rows
        parts += [weight, bias]
    made = Merged(*parts)
    layer._longscope_merged = made
    return made


def triton_step_unsupported(decoder: Any) -> str:
    """Return why the Triton step (`decode_ops`) cannot run a `StaticDecoder` ("" when it can)."""
    import importlib.util

    switches = decoder.switches
    if not switches.decode_triton:
        return f"decode_triton off {switches.decode_error}".strip()
    if decoder.device.type != "cuda":
        return f"device {decoder.device.type}"
    if importlib.util.find_spec("triton") is None:
        return "no triton"
    from longscope.models.hf import decode_ops

    dtype = decoder.keys[0].dtype
    groups = decoder.heads // decoder.kv_heads
    if not decode_ops.attention_fits(decoder.head_dim, groups, dtype):
        return f"head dim {decoder.head_dim}, {groups} query heads per KV head, {dtype}"
    model = decoder.model
    act = str(getattr(model.config, "hidden_act", ""))
    if act not in ("silu", "swish"):
        return f"activation {act}"
    for layer in decoder.layers:
        attn, mlp = layer.self_attn, layer.mlp
        if getattr(attn, "q_norm", None) is not None:
            return "query/key norms"
        if not all(hasattr(mlp, n) for n in ("gate_proj", "up_proj", "down_proj")):
            return "MLP without gate/up/down projections"
        biases = [getattr(m, "bias", None) for m in (attn.q_proj, attn.k_proj, attn.v_proj)]
        gate_biases = [getattr(m, "bias", None) for m in (mlp.gate_proj, mlp.up_proj)]
        for group in (biases, gate_biases):
            if any(b is None for b in group) and any(b is not None for b in group):
                return "biases on some projections only"
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            if not isinstance(getattr(norm, "variance_epsilon", None), float):
                return "RMSNorm without variance_epsilon"
    if not isinstance(getattr(model.model.norm, "variance_epsilon", None), float):
        return "RMSNorm without variance_epsilon"
    if not decoder.switches.fast_rope:
        return "fast_rope off"
    cos, _sin = decoder.rotary(decoder.keys[0].new_zeros(1, 1, 1), decoder.positions[:1, None])
    if cos.shape[-1] != decoder.head_dim:
        return "partial rotary embedding"
    return ""


def decode_kernels() -> Any:
    """Return a context that keeps decode attention off cuDNN.

    Measured on an H200 (BENCHMARKS.md): SDPA picks cuDNN for one query over a 32K cache, and
    cuDNN builds a new graph for every cache length, 1.7 ms of CPU per layer and step (47 of a
    68 ms step); flash and memory-efficient kernels have no such setup.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(
        [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    )


def prefill_kernels() -> Any:
    """Return a context that keeps prefill attention off cuDNN unless `attention` asks for it.

    torch 2.11 on Hopper tries cuDNN first, and cuDNN builds a graph for every new shape: 100-750
    ms measured on an H200 (BENCHMARKS.md), paid again by every document whose last chunk has a
    new length. `attention` picks cuDNN itself for shapes that recur (`_recurring`).
    """
    return _kernel_order(cudnn_first=False)


def _kernel_order(cudnn_first: bool) -> Any:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    order = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    if cudnn_first:
        order.insert(0, SDPBackend.CUDNN_ATTENTION)
    try:
        return sdpa_kernel(order, set_priority=True)
    except TypeError:  # torch without set_priority: the listed kernels, in torch's order
        return sdpa_kernel(order) if cudnn_first else contextlib.nullcontext()


def _recurring(*lengths: int) -> bool:
    return all(n % SHAPE_QUANTUM == 0 for n in lengths)


_registered = False


def register_attention(requested: str | None) -> str:
    """Return the attention implementation to load with, registering ours on first use.

    flash-attn when installed; otherwise SDPA with a lower-right causal bias for chunks that
    follow a cached prefix, which keeps the flash kernel without building a mask. transformers'
    registry is per process, so registering is too (once).
    """
    global _registered
    if requested:
        return requested
    if importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

        AttentionInterface.register(ATTENTION, attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, _padding_mask)
        _registered = True
    return ATTENTION


def _padding_mask(*args: Any, **kwargs: Any) -> Any:
    """Return transformers' SDPA mask when the batch has padding or the layer sees a local window
    (`local_size`: sliding-window or chunked attention); plain causal is implied otherwise.

    Our `attention` takes no mask as plain causal over every key it is given, so a sliding-window
    layer (Gemma 3, Mistral) needs the mask: without it a prompt longer than the window was read
    with full attention in those layers (Gemma 3 270M: prefill logits off by half their range).
    """
    if kwargs.get("attention_mask") is None and kwargs.get("local_size") is None:
        return None
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(*args, **kwargs)


# torch's memory-efficient SDPA kernel on CUDA returns silently wrong output for masked calls
# whose keys are broadcast across query heads with stride 0, which is what transformers'
# `repeat_kv` leaves for a model with one KV head (Gemma 3 270M), when the queries number 1 past
# a multiple of 32; on contiguous copies of the same keys it is right (pytorch/pytorch#191937).
# Measured on an H200 (BENCHMARKS.md, issue 46's fifteenth pass): 545 queries off by 2.5, 544 or
# 546 exact, whatever the key count; copied keys exact at every length. The copy is made at every
# length, not only at the lengths seen to fail: it costs a temporary, and a wrong answer costs more.
# Transformers' own SDPA `generate` for Gemma 3 left its eager one on exactly such prompts.
def with_contiguous_shared_kv(module: Any, key: Any, value: Any) -> tuple[Any, Any, Any]:
    """Return (module, key, value) for `sdpa_attention_forward`: where one KV head serves several
    query heads, the keys and values copied out to every query head (contiguous) and a stand-in
    module saying so, else the three as they are."""
    from types import SimpleNamespace

    groups = getattr(module, "num_key_value_groups", 1)
    if groups <= 1 or key.shape[1] != 1:
        return module, key, value  # several KV heads: `repeat_kv`'s reshape already copies
    stand_in = SimpleNamespace(
        num_key_value_groups=1,
        is_causal=getattr(module, "is_causal", True),
        training=getattr(module, "training", False),
    )
    key = key.expand(-1, groups, -1, -1).contiguous()  # one KV head: as many heads as groups
    value = value.expand(-1, groups, -1, -1).contiguous()
    return stand_in, key, value


def attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Return attention output (batch, q, heads, dim) for a causal decoder layer."""
    import torch
    import torch.nn.functional as F

    if attention_mask is not None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        if query.is_cuda and query.shape[2] > 1:
            module, key, value = with_contiguous_shared_kv(module, key, value)
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    q_len, kv_len = query.shape[2], key.shape[2]
    groups = getattr(module, "num_key_value_groups", 1)
    if q_len == 1:
        # Decode: each KV head's query heads become its rows (no mask needed for one query), so
        # the kernel reads each key once instead of a repeated copy per query head.
        batch, heads, _, dim = query.shape
        packed = query.reshape(batch, key.shape[1], heads // key.shape[1], dim)
        out = F.scaled_dot_product_attention(packed, key, value, scale=scaling)
        return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None
    switches = active()
    if q_len == kv_len:
        # Measured on an H200: cuDNN 66-69% of the matmul peak at 32K-128K in one call, flash
        # 48-56%; equal at 8K.
        cudnn = (
            switches.cudnn_split
            and query.is_cuda
            and query.dtype in (torch.bfloat16, torch.float16)
            and q_len >= CUDNN_SPLIT_MIN_QUERIES
            and _recurring(q_len)
        )
        with _kernel_order(cudnn_first=cudnn):
            out = F.scaled_dot_product_attention(
                query, key, value, is_causal=True, scale=scaling, enable_gqa=groups > 1
            )
    else:
        from torch.nn.attention.bias import causal_lower_right

        out = None
        if (
            switches.cudnn_split
            and q_len >= CUDNN_SPLIT_MIN_QUERIES
            and query.is_cuda
            and query.dtype in (torch.bfloat16, torch.float16)
            and _recurring(q_len, kv_len)
        ):
            out = _cudnn_split_any(switches, query, key, value, scaling, groups)
        if out is None:
            if groups > 1:
                key = key.repeat_interleave(groups, dim=1)
                value = value.repeat_interleave(groups, dim=1)
            out = F.scaled_dot_product_attention(
                query, key, value, attn_mask=causal_lower_right(q_len, kv_len), scale=scaling
            )
        del key, value
    return out.transpose(1, 2).contiguous(), None


def _cudnn_split_any(
    switches: KernelSwitches, query: Any, key: Any, value: Any, scaling: float | None, groups: int
) -> Any | None:
    """Return `cudnn_after_prefix`, with grouped KV heads as they are where cuDNN takes them
    (no repeated copy of the prefix's keys and values), else repeated; None if cuDNN fails."""
    if groups > 1 and switches.cudnn_gqa:
        try:
            out = cudnn_after_prefix(query, key, value, scaling)
            switches.cudnn_used += 1
            return out
        except RuntimeError as exc:
            switches.cudnn_gqa, switches.cudnn_error = False, str(exc)[:300]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    try:
        out = cudnn_after_prefix(query, key, value, scaling)
    except RuntimeError as exc:
        # No cuDNN attention for this build or shape: the flash path is exact too.
        switches.cudnn_split, switches.cudnn_error = False, str(exc)[:300]
        return None
    switches.cudnn_used += 1
    return out


def cudnn_after_prefix(query: Any, key: Any, value: Any, scaling: float | None) -> Any:
    """Return causal attention of a chunk after a cached prefix as two cuDNN calls.

    cuDNN's causal mask is upper-left, which is wrong for a chunk whose keys start before its
    queries; so the chunk attends to the prefix without a mask and to itself with the causal
    mask (now square), and the two softmaxes are merged by their log-sum-exps: exact up to
    rounding, and the prefix part is a dense product cuDNN runs near its best rate.
    """
    import torch

    batch, heads, q_len, _ = query.shape
    past = key.shape[2] - q_len
    op = torch.ops.aten._scaled_dot_product_cudnn_attention
    parts = []
    for keys, values, causal in (
        (key[:, :, :past], value[:, :, :past], False),
        (key[:, :, past:], value[:, :, past:], True),
    ):
        result = op(query, keys, values, None, True, 0.0, causal, False, scale=scaling)
        parts.append((result[0], result[1].reshape(batch, heads, q_len, 1).float()))
    (out_old, lse_old), (out_new, lse_new) = parts
    # The chunk part's share of the softmax mass, exp(lse_new) / (exp(lse_old) + exp(lse_new)):
    # one interpolation in float32 (4 passes over the output, against 9 for weighted sums).
    share = torch.sigmoid(lse_new - lse_old)
    return torch.lerp(out_old.float(), out_new.float(), share).to(query.dtype)
