"""The hf engine's decode: the static-cache step captured as a CUDA graph, the eager loop of
forward calls, and per-request samplers.

For Llama-family decoders (Llama, Mistral, Qwen2, Qwen3) the decode step is our own forward over a
fixed-capacity KV cache with a slot per row, captured on CUDA as a CUDA graph (an eager step
launches some 1,000 kernels from Python, which made decode CPU-bound: BENCHMARKS.md); rows of
documents of different lengths decode together. Other models, and `cuda_graph=0`, decode with
transformers' forward as the step (`eager_decode`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from longscope.models.hf.kernels import (
    GRAPH_MODEL_TYPES,
    KernelSwitches,
    merged_weights,
    rms_norm,
    triton_step_unsupported,
)
from longscope.models.hf.members import Member, force_next
from longscope.models.memory_plan import DECODE_BLOCK
from longscope.types import Request


class Sampler:
    """Greedy or temperature/top-p sampling with the request's own seeded generator."""

    def __init__(self, torch: Any, request: Request, device: Any) -> None:
        self.temperature = request.config.temperature
        self.top_p = request.config.top_p
        self.generator = None
        if self.temperature > 0:
            self.generator = torch.Generator(device=device)
            self.generator.manual_seed(int(request.config.seed))

    def pick(self, torch: Any, logits: Any) -> Any:
        """Return the next token id (a 1-element tensor) for one row of logits."""
        if self.generator is None:
            return logits.argmax(dim=-1, keepdim=True)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < self.top_p
            sorted_probs = sorted_probs * keep
            choice = torch.multinomial(sorted_probs, 1, generator=self.generator)
            return order.gather(-1, choice)
        return torch.multinomial(probs, 1, generator=self.generator)


class StaticDecoder:
    """One decode step of a Llama-family decoder over a fixed-capacity KV cache, as a CUDA graph.

    The step reads its inputs (tokens, positions, each row's cache slot) from tensors that stay
    at one address, writes the new keys and values into each row's slot in place and marks it
    valid, so the same captured graph serves every step; the host only advances positions and
    slots. Rows have their own slots, so rows of documents of different lengths decode together.
    Running a step twice with the same inputs gives the same state, which lets the warm-up before
    capture run the first step for real. Attention reads the whole capacity with the slots not
    yet written masked out. `rebuild` drops finished rows and adds a joining batch's rows (a new
    graph is captured at the next step). Off CUDA the same step runs without a graph.
    """

    def __init__(
        self,
        torch: Any,
        model: Any,
        cache: Any,
        length: int,
        capacity: int,
        mask: Any,
        positions: Any,
        switches: KernelSwitches | None = None,
    ) -> None:
        self.torch = torch
        self.switches = switches or KernelSwitches()
        self.model = model
        self.device = model.device
        inner = model.model
        self.layers = list(inner.layers)
        config = model.config
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        first = self.layers[0].self_attn
        self.head_dim = int(getattr(first, "head_dim", 0) or config.hidden_size // self.heads)
        self.rotary = rotary(model, first)
        self.rope = rope_function(first)
        self.capacity = capacity
        self.block = DECODE_BLOCK if capacity > DECODE_BLOCK else capacity
        self.keys: list[Any] = []
        self.values: list[Any] = []
        for index in range(len(self.layers)):
            # One layer at a time: the prompt's cache is freed as the fixed one fills.
            key, value = take_layer(cache, index)
            self.keys.append(fixed_copy(torch, key, capacity))
            self.values.append(fixed_copy(torch, value, capacity))
            del key, value
        batch = self.keys[0].shape[0]
        self.valid = torch.zeros(batch, capacity, dtype=torch.bool, device=self.device)
        if mask is not None:
            self.valid[:, :length] = mask[:, :length].bool()
        else:
            self.valid[:, :length] = True
        self.positions = positions.clone()
        self.slot = torch.full((batch,), length, dtype=torch.long, device=self.device)
        self.tokens = torch.zeros(batch, dtype=torch.long, device=self.device)
        self.graph: Any = None
        self.logits: Any = None
        self.path = "graph" if self.device.type == "cuda" else "static"
        self.why = "" if self.path == "graph" else f"device {self.device.type}: no CUDA graph"
        self.capture_s = 0.0
        self.captures = 0
        self.rebuild_s = 0.0
        self.rebuilds = 0
        self.steps = 0
        self.largest = batch
        self.merged: list[Any] = []
        self.ops: Any = None
        self.attention: Any = None
        self._choose_kernels()

    def _choose_kernels(self) -> None:
        """Use the Triton step (`decode_ops`) where it applies: CUDA, Triton, the switch on, a
        Llama-style layer it covers; else the torch step (`_forward_torch`)."""
        self.kernels, self.kernels_why = "torch", ""
        why = triton_step_unsupported(self)
        if why:
            self.kernels_why = why
            return
        from longscope.models.hf import decode_ops

        self.ops = decode_ops
        self.merged = [merged_weights(self.torch, layer) for layer in self.layers]
        self._new_attention()
        self.kernels, self.kernels_why = "triton", ""

    def _new_attention(self) -> None:
        if self.ops is not None:
            self.attention = self.ops.DecodeAttention(
                self.rows, self.heads, self.kv_heads, self.head_dim, self.capacity,
                self.keys[0].dtype, self.device,
            )  # fmt: skip

    def step(self, tokens: Any, capture: bool = True) -> Any:
        """Return the logits (batch, vocab) after feeding `tokens`, one per row; `capture` False:
        an uncaptured batch steps eagerly (the same kernels), as between prefill chunks, where
        the batch changes at the chunks' end (a capture, 50-75 ms on an H200, would be lost)."""
        self.tokens.copy_(tokens)
        if self.path == "graph" and self.graph is None and capture:
            self._capture()
        if self.graph is not None:
            self.graph.replay()
            logits = self.logits
        else:
            logits = self._forward()
        self.positions.add_(1)
        # A finished row keeps stepping with its batch until its unit ends: it must not write
        # past its own cache.
        self.slot.add_(1).clamp_(max=self.capacity - 1)
        self.steps += 1
        return logits

    @property
    def rows(self) -> int:
        return int(self.tokens.shape[0])

    def rebuild(self, keep: list[int], capacity: int, joining: StaticDecoder | None = None) -> None:
        """Keep rows `keep` (in that order), then `joining`'s rows, over `capacity` slots.

        Rows leaving from either end of the batch leave the others as a slice of the same cache
        (no copy). Otherwise layer by layer, each old layer freed once copied, and only the
        slots each row has written (whole caches copied per join were terabytes for 64 rows of
        8K answers). Unwritten slots are zero for the torch step (NaN would poison the product
        even masked); the Triton step never reads them.
        """
        torch = self.torch
        started = time.perf_counter()
        kept = len(keep)
        first = keep[0] if keep else 0
        contiguous = kept and keep == list(range(first, first + kept))
        if joining is None and contiguous and capacity <= self.capacity:
            # The larger capacity stays: the step reads only what each row wrote.
            self._slice(first, kept)
            self.rebuilds += 1
            self.rebuild_s += time.perf_counter() - started
            return
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        rows = kept + (joining.rows if joining is not None else 0)
        written = (self.slot + 1).clamp(max=self.capacity).tolist()
        theirs_written = int((joining.slot + 1).max()) if joining is not None else 0
        allocate = "new_empty" if self.kernels == "triton" else "new_zeros"
        in_place = kept > 0 and keep == list(range(kept))
        for store, other in (
            (self.keys, joining.keys if joining is not None else None),
            (self.values, joining.values if joining is not None else None),
        ):
            for layer, old in enumerate(store):
                _, heads, width, dim = old.shape
                new = getattr(old, allocate)((rows, heads, capacity, dim))
                if in_place:
                    # The rows stay where they are (a join): one copy up to the longest written.
                    span = min(capacity, width, max(written[:kept]))
                    new[:kept, :, :span].copy_(old[:kept, :, :span])
                else:
                    for row, source in enumerate(keep):
                        span = min(capacity, width, written[source])
                        new[row, :, :span].copy_(old[source, :, :span])
                if other is not None:
                    theirs = other[layer]
                    span = min(capacity, theirs.shape[2], theirs_written)
                    new[kept:, :, :span].copy_(theirs[:, :, :span])
                    other[layer] = None
                store[layer] = new
                del old
        valid = self.valid.new_zeros((rows, capacity))
        span = min(capacity, self.valid.shape[1])
        valid[:kept, :span] = self.valid.index_select(0, index)[:, :span]
        parts = [self.positions.index_select(0, index)], [self.slot.index_select(0, index)]
        if joining is not None:
            theirs = joining.valid[:, :capacity]
            valid[kept:, : theirs.shape[1]] = theirs
            parts[0].append(joining.positions)
            parts[1].append(joining.slot)
            joining.close()
        self.valid = valid
        self.positions = torch.cat(parts[0])
        self.slot = torch.cat(parts[1]).clamp_(max=capacity - 1)
        self.tokens = torch.zeros(rows, dtype=torch.long, device=self.device)
        self.capacity = capacity
        self.block = DECODE_BLOCK if capacity > DECODE_BLOCK else capacity
        self.graph = self.logits = None
        self.largest = max(self.largest, rows)
        self._new_attention()
        self.rebuilds += 1
        self.rebuild_s += time.perf_counter() - started  # host time: the copies are queued

    def _slice(self, first: int, kept: int) -> None:
        """Keep rows first .. first + kept as views of the same cache (a new graph follows)."""
        rows = slice(first, first + kept)
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.valid = self.valid[rows]
        self.positions = self.positions[rows].clone()
        self.slot = self.slot[rows].clone()
        self.tokens = self.torch.zeros(kept, dtype=self.torch.long, device=self.device)
        self.graph = self.logits = None
        self._new_attention()

    def _zero_unwritten(self) -> None:
        """Zero every slot not marked valid (the torch step reads them; a Triton rebuild skips them)."""
        for store in (self.keys, self.values):
            for cache in store:
                cache.masked_fill_(~self.valid[:, None, :, None], 0)

    def _capture(self) -> None:
        torch = self.torch
        started = time.perf_counter()
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        try:
            with torch.cuda.stream(stream):
                # Warm-up on a side stream (cuBLAS handles, workspaces), as capture requires.
                self._forward()
            torch.cuda.current_stream(self.device).wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            # On this device's side stream (torch's default capture stream is one per process);
            # thread-local, so another device's engine thread allocating meanwhile cannot
            # invalidate it. Begun and ended by hand: `torch.cuda.graph` synchronizes the device
            # and empties the allocator's cache first (a capture between prefill chunks waited
            # for the chunk before it: RULER through the CLI lost 28 s to 45 such waits).
            with torch.cuda.stream(stream):
                graph.capture_begin(capture_error_mode="thread_local")
                try:
                    self.logits = self._forward()
                finally:
                    graph.capture_end()
            self.graph = graph
            self.captures += 1
        except RuntimeError as exc:
            # A model the capture cannot take still decodes right with the same step, eagerly.
            torch.cuda.synchronize(self.device)
            self.graph = self.logits = None
            self.path, self.why = "static", f"capture failed: {str(exc)[:200]}"
        self.capture_s += time.perf_counter() - started

    def _forward(self) -> Any:
        if self.kernels == "triton":
            try:
                return self._forward_triton()
            except Exception as exc:  # a Triton that cannot build a kernel: the torch step is exact
                if self.torch.cuda.is_current_stream_capturing():
                    raise
                self._zero_unwritten()
                self.switches.decode_triton = False
                self.switches.decode_error = str(exc)[:300]
                self.kernels, self.kernels_why = "torch", f"triton failed: {str(exc)[:200]}"
        return self._forward_torch()

    def _forward_triton(self) -> Any:
        """The step as 10 launches a layer (`decode_ops`): merged QKV, rotary with the cache
        write, split attention over each row's written keys, o_proj, residual add + RMSNorm,
        merged gate/up, SiLU product, down_proj, residual add + the next RMSNorm."""
        ops, torch = self.ops, self.torch
        inner = self.model.model
        residual = inner.embed_tokens(self.tokens)
        self.valid.scatter_(1, self.slot[:, None], True)
        lengths = self.slot + 1
        cos, sin = self.rotary(residual[:, None], self.positions[:, None])
        cos, sin = cos[:, 0].contiguous(), sin[:, 0].contiguous()
        first = self.layers[0].input_layernorm
        x = ops.add_rms_norm(residual, None, first.weight, first.variance_epsilon)
        plain = torch.nn.functional.linear
        linear = ops.linear if self.switches.decode_gemm else plain

        def project(module: Any, x: Any) -> Any:
            # Plain Linear modules by `linear`; anything else (a quantized layer) as it is.
            if type(module) is torch.nn.Linear:
                return linear(x, module.weight, module.bias)
            return module(x)

        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            attn, merged = layer.self_attn, self.merged[index]
            qkv = linear(x, merged.qkv, merged.qkv_bias)
            keys, values = self.keys[index], self.values[index]
            query = ops.rope_store(
                qkv, cos, sin, keys, values, self.slot, self.heads, self.kv_heads
            )
            out = self.attention(query, keys, values, self.valid, lengths, attn.scaling)
            post = layer.post_attention_layernorm
            x = ops.add_rms_norm(
                residual, project(attn.o_proj, out), post.weight, post.variance_epsilon
            )
            gate_up = linear(x, merged.gate_up, merged.gate_up_bias)
            down = project(layer.mlp.down_proj, ops.silu_mul_packed(gate_up))
            norm = inner.norm if index == last else self.layers[index + 1].input_layernorm
            x = ops.add_rms_norm(residual, down, norm.weight, norm.variance_epsilon)
        return project(self.model.lm_head, x)

    def _forward_torch(self) -> Any:
        torch = self.torch
        batch = self.tokens.shape[0]
        inner = self.model.model
        hidden = inner.embed_tokens(self.tokens[:, None])
        self.valid.scatter_(1, self.slot[:, None], True)
        slots = self.slot.view(batch, 1, 1, 1).expand(batch, self.kv_heads, 1, self.head_dim)
        bias = torch.where(self.valid, 0.0, float("-inf"))[:, None, None, :]
        cos, sin = self.rotary(hidden, self.positions[:, None])
        rope = self._rope_tables(cos, sin)
        shape = (batch, 1, -1, self.head_dim)
        for index, layer in enumerate(self.layers):
            attn = layer.self_attn
            x = self._norm(layer.input_layernorm, hidden)
            query = attn.q_proj(x).view(shape)
            key = attn.k_proj(x).view(shape)
            value = attn.v_proj(x).view(shape).transpose(1, 2)
            if getattr(attn, "q_norm", None) is not None:
                query, key = attn.q_norm(query), attn.k_norm(key)
            query, key = self._apply_rope(query.transpose(1, 2), key.transpose(1, 2), rope)
            keys, values = self.keys[index], self.values[index]
            keys.scatter_(2, slots, key)
            values.scatter_(2, slots, value)
            out = self._attend(query, keys, values, bias, attn.scaling)
            hidden = hidden + attn.o_proj(out.view(batch, 1, -1))
            hidden = hidden + layer.mlp(self._norm(layer.post_attention_layernorm, hidden))
        hidden = self._norm(inner.norm, hidden)
        return self.model.lm_head(hidden[:, -1, :])

    def _norm(self, norm: Any, hidden: Any) -> Any:
        return rms_norm(self.torch, norm, hidden, fused=self.switches.fused_norm)

    def _rope_tables(self, cos: Any, sin: Any) -> tuple[Any, Any, Any]:
        """Return (cos, sin, sin with its first half negated), each (batch, 1, 1, dim)."""
        torch = self.torch
        cos, sin = cos[:, None], sin[:, None]
        if not self.switches.fast_rope or cos.shape[-1] != self.head_dim:
            return cos[:, 0], sin[:, 0], None
        half = self.head_dim // 2
        return cos, sin, torch.cat([-sin[..., :half], sin[..., half:]], dim=-1)

    def _apply_rope(self, query: Any, key: Any, rope: tuple[Any, Any, Any]) -> tuple[Any, Any]:
        """Return query and key rotated, as transformers' `apply_rotary_pos_emb` does (its
        rotate_half times sin is a roll by half the head times sin with its first half negated:
        5 kernels a layer for query and key together instead of 10)."""
        cos, sin, signed = rope
        if signed is None:
            return self.rope(query, key, cos, sin)
        torch = self.torch
        heads = query.shape[1]
        both = torch.cat([query, key], dim=1)
        rolled = torch.roll(both, self.head_dim // 2, dims=-1)
        both = both * cos + rolled * signed
        return both[:, :heads], both[:, heads:]

    def _attend(self, query: Any, keys: Any, values: Any, bias: Any, scale: float) -> Any:
        """Return attention of one query per row over the whole cache, (batch, heads * dim).

        Each KV head's query heads become rows of one product, so each key is read once. The
        value product runs per block of keys and sums the blocks: one product over the whole
        cache would leave the GPU with one output tile per head to reduce 32K+ keys.
        """
        torch = self.torch
        batch, dim = query.shape[0], self.head_dim
        groups = self.heads // self.kv_heads
        packed = query.reshape(batch, self.kv_heads, groups, dim)
        # bias + scale * scores in one kernel, in float32 (the bias is float32).
        scores = torch.add(bias, torch.matmul(packed, keys.transpose(2, 3)), alpha=scale)
        probs = torch.softmax(scores, dim=-1).to(values.dtype)
        blocks = self.capacity // self.block
        if blocks > 1:
            probs = probs.view(batch, self.kv_heads, groups, blocks, self.block).transpose(2, 3)
            split = values.view(batch, self.kv_heads, blocks, self.block, dim)
            # Summing bf16 partials accumulates in float32 and rounds once, in one kernel.
            out = torch.matmul(probs, split).sum(dim=2)
        else:
            out = torch.matmul(probs, values)
        return out.reshape(batch, self.heads * dim)

    def stats(self) -> dict[str, Any]:
        """Return how this batch decoded (for benchmarks and tests)."""
        return {
            "path": self.path,
            "why": self.why,
            "capture_ms": round(self.capture_s * 1e3, 1),
            "captures": self.captures,
            "rebuild_ms": round(self.rebuild_s * 1e3, 1),
            "rebuilds": self.rebuilds,
            "steps": self.steps,
            "capacity": self.capacity,
            "largest_batch": self.largest,
            "kernels": self.kernels,
            "kernels_why": self.kernels_why,
        }

    def close(self) -> None:
        """Drop the graph (and its memory pool) and the fixed cache."""
        self.graph = self.logits = None
        self.keys.clear()
        self.values.clear()


def graph_unsupported(model: Any) -> str:
    """Return why the graph decode cannot run `model` ("" when it can)."""
    config = model.config
    kind = str(getattr(config, "model_type", ""))
    if kind not in GRAPH_MODEL_TYPES:
        return f"model type {kind!r} has no graph decode"
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not layers or getattr(model, "lm_head", None) is None:
        return "no model.layers or lm_head"
    for name in ("embed_tokens", "norm"):
        if getattr(inner, name, None) is None:
            return f"no model.{name}"
    # Sliding-window layers see fewer keys than the full cache this step attends over.
    layer_types = getattr(config, "layer_types", None) or []
    if any(t != "full_attention" for t in layer_types):
        return "sliding-window layers"
    sliding = kind == "mistral" or getattr(config, "use_sliding_window", False)
    if not layer_types and sliding and getattr(config, "sliding_window", None):
        return "sliding window"
    for layer in layers:
        attn = getattr(layer, "self_attn", None)
        needed = ("q_proj", "k_proj", "v_proj", "o_proj", "scaling")
        if attn is None or any(not hasattr(attn, n) for n in needed):
            return "attention without q/k/v/o projections"
        for name in ("input_layernorm", "post_attention_layernorm", "mlp"):
            if getattr(layer, name, None) is None:
                return f"layer without {name}"
    first = layers[0].self_attn
    embedding = rotary(model, first)
    if embedding is None or rope_function(first) is None:
        return "no rotary embedding"
    rope = str(getattr(embedding, "rope_type", "default"))
    if "dynamic" in rope or "longrope" in rope:
        # Their frequencies change with the sequence length; a graph would freeze them.
        return f"rope type {rope}"
    return ""


def rotary(model: Any, attn: Any) -> Any:
    """Return the rotary embedding module (per attention in newer transformers, else per model)."""
    return getattr(attn, "rotary_emb", None) or getattr(model.model, "rotary_emb", None)


def rope_function(attn: Any) -> Any:
    """Return the `apply_rotary_pos_emb` of the module that defines the attention class."""
    import sys

    module = sys.modules.get(type(attn).__module__)
    return getattr(module, "apply_rotary_pos_emb", None)


def take_layer(cache: Any, index: int) -> tuple[Any, Any]:
    """Return a cache layer's keys and values, dropping the cache's own reference to them."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        layer = layers[index]
        key, value = layer.keys, layer.values
        layer.keys = layer.values = None
        return key, value
    key, value = cache.key_cache[index], cache.value_cache[index]
    cache.key_cache[index] = cache.value_cache[index] = None
    return key, value


def fixed_copy(torch: Any, tensor: Any, capacity: int) -> Any:
    """Return `tensor` (batch, heads, length, dim) copied into a zeroed buffer of `capacity`.

    The slots past the prompt must hold finite numbers: a masked score is -inf, but garbage
    (NaN) in keys or values would still turn the softmax or the value product into NaN.
    """
    batch, heads, length, dim = tensor.shape
    fixed = torch.empty(batch, heads, capacity, dim, dtype=tensor.dtype, device=tensor.device)
    fixed[:, :, :length].copy_(tensor)
    fixed[:, :, length:].zero_()
    return fixed


def choose(torch: Any, logits: Any, samplers: list[Sampler]) -> Any:
    """Return one token per row; greedy rows in one argmax, sampled rows with their generators."""
    if all(s.generator is None for s in samplers):
        return logits.argmax(dim=-1)
    rows = [s.pick(torch, logits[i]) for i, s in enumerate(samplers)]
    return torch.cat(rows).view(-1)


def eager_decode(
    model: Any,
    cache_kw: str,
    batch: list[Member],
    cache: Any,
    logits: Any,
    mask: Any,
    positions: Any,
    accept: Callable[[Member, int, float], None],
) -> int:
    """Decode with the eager loop of forward calls; return the number of forward calls."""
    import torch

    device = model.device
    samplers = [Sampler(torch, m.request, device) for m in batch]
    longest = max(m.request.config.max_tokens for m in batch)
    on_gpu = device.type == "cuda"
    tokens = choose(torch, logits, samplers)
    calls = 0
    for step in range(longest):
        ready = None
        if on_gpu:
            # Pinned memory makes the copy asynchronous; the event says when it landed.
            host = torch.empty(len(batch), dtype=tokens.dtype, pin_memory=True)
            host.copy_(tokens, non_blocking=True)
            ready = torch.cuda.Event()
            ready.record()
        else:
            host = tokens
        active = [m for m in batch if not m.status]
        if step + 1 < longest and active:
            # Launch the next step before reading this one's tokens: the GPU keeps working.
            kwargs: dict[str, Any] = {}
            if mask is not None:
                mask = torch.cat([mask, mask.new_ones(len(batch), 1)], dim=1)
                kwargs = {"attention_mask": mask, "position_ids": positions[:, None]}
            out = model(
                input_ids=tokens[:, None],
                **{cache_kw: cache},
                use_cache=True,
                logits_to_keep=1,
                **kwargs,
            )
            positions = positions + 1
            calls += 1
            next_tokens = choose(torch, out.logits[:, -1, :], samplers)
        else:
            next_tokens = None
        if ready is not None:
            ready.synchronize()
        now = time.perf_counter()
        for member, token in zip(batch, host.tolist(), strict=True):
            if not member.status:
                accept(member, token, now)
        force_next(next_tokens, batch)
        if all(m.status for m in batch) or next_tokens is None:
            break
        tokens = next_tokens
    for member in batch:
        if not member.status:
            member.status = "length"
    return calls
