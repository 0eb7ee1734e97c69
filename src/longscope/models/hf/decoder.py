"""The hf engine's graph decode: the static-cache step captured as a CUDA graph.

For Llama-family decoders (Llama, Mistral, Qwen2, Qwen3) the decode step is our own forward over a
fixed-capacity KV cache with a slot per row, captured on CUDA as a CUDA graph (an eager step
launches some 1,000 kernels from Python, which made decode CPU-bound: BENCHMARKS.md); rows of
documents of different lengths decode together. Other models, and `cuda_graph=0`, decode with
transformers' forward as the step (`eager.eager_decode`).
"""

from __future__ import annotations

import contextlib
import time
from functools import partial
from typing import Any

from longscope.models.hf.kernels import (
    GRAPH_MODEL_TYPES,
    KernelSwitches,
    merged_weights,
    rms_norm,
    triton_step_unsupported,
)
from longscope.models.hf.prefill import fixed_copy, take_layer
from longscope.models.memory_plan import DECODE_BLOCK


class StaticDecoder:
    """One decode step of a Llama-family decoder over a fixed-capacity KV cache, as a CUDA graph.

    The step reads its inputs (tokens, positions, each row's cache slot) from tensors that stay
    at one address, writes the new keys and values into each row's slot in place and marks it
    valid, so the same captured graph serves every step; the host only advances positions and
    slots. Rows have their own slots, so rows of documents of different lengths decode together.
    Running a step twice with the same inputs gives the same state, which lets the warm-up before
    capture run the first step for real. Attention reads the whole capacity with the slots not
    yet written masked out. `rebuild` drops finished rows and adds a joining batch's rows (a new
    graph is captured at the next step); `park` keeps finished rows in place until then, so that
    the graph stays valid. Off CUDA the same step runs without a graph.
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
        self.live = torch.ones(batch, dtype=torch.long, device=self.device)
        """1 for a row that decodes, 0 for a parked one (`park`): how far each slot moves a step."""
        self.tokens = torch.zeros(batch, dtype=torch.long, device=self.device)
        self.graph: Any = None
        self.logits: Any = None
        self.path = "graph" if self.device.type == "cuda" else "static"
        self.why = "" if self.path == "graph" else f"device {self.device.type}: no CUDA graph"
        self.capture_s = 0.0
        self.captures = 0
        self.rebuild_s = 0.0
        self.rebuilds = 0
        self.parks = 0
        self.replaces = 0
        self.unwarmed_failures = 0
        self._stream: Any = None
        self.steps = 0
        self.largest = batch
        self.merged: list[Any] = []
        self.ops: Any = None
        self.gemv: Any = None
        self._projections: list[list[tuple[Any, Any]]] | None = None
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
        from longscope.models.hf import decode_ops, gemv

        self.ops, self.gemv = decode_ops, gemv
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
        if self.kernels == "triton":  # every step counted; a tuning now due: captured again
            due = self.attention.stepped()
            gemv = self.switches.decode_gemv and self.gemv.stepped(self.rows, self.merged[0].qkv)
            if due or gemv:
                self.graph = self.logits = None
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
        self.slot.add_(self.live).clamp_(max=self.capacity - 1)
        self.steps += 1
        return logits

    def park(self, rows: list[int]) -> None:
        """Keep the finished `rows` in the batch, parked, so that the captured graph stays valid:
        their slot goes back to 0 and stays there (a step reads one key of theirs, and their
        tokens are ignored); the next `rebuild` drops them. A row leaving otherwise costs a
        cache rebuild and a new capture (40-60 ms of an H200 idle) before the next step."""
        index = self.torch.tensor(rows, dtype=self.torch.long, device=self.device)
        self.live.index_fill_(0, index, 0)
        self.slot.index_fill_(0, index, 0)
        self.parks += 1

    def replace(self, rows: list[int], joining: StaticDecoder) -> None:
        """Put `joining`'s rows in the places of parked `rows`, in place: every tensor the
        captured graph reads stays where it is, so the graph stays valid (no rebuild, no capture;
        a join otherwise copies every running row's cache and captures again). Slots past a
        joining row's prompt keep the parked row's keys, unread: the step reads a row's slots up
        to its own (the Triton step) or those marked valid (the torch step)."""
        torch = self.torch
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        span = min(int(joining.slot.max()) + 1, joining.capacity, self.capacity)
        for store, theirs in ((self.keys, joining.keys), (self.values, joining.values)):
            for layer, cache in enumerate(store):
                cache[index, :, :span] = theirs[layer][:, :, :span]
                theirs[layer] = None
        valid = self.valid.new_zeros((len(rows), self.capacity))
        valid[:, :span] = joining.valid[:, :span]
        self.valid[index] = valid
        self.positions[index] = joining.positions
        self.slot[index] = joining.slot
        self.live[index] = 1
        self.replaces += 1
        joining.close()

    @property
    def rows(self) -> int:
        return int(self.tokens.shape[0])

    def rebuild(
        self,
        keep: list[int],
        capacity: int,
        joining: StaticDecoder | None = None,
        copy: bool = False,
    ) -> None:
        """Keep rows `keep` (in that order), then `joining`'s rows, over `capacity` slots.

        Rows leaving from either end of the batch leave the others as a slice of the same cache
        (no copy; with `copy`, copied all the same, so that the rows left go free). Otherwise
        layer by layer, each old layer freed once copied, and only the slots each row has
        written (whole caches copied per join were terabytes for 64 rows of 8K answers).
        Unwritten slots are zero for the torch step (NaN would poison the product even masked);
        the Triton step never reads them.
        """
        torch = self.torch
        started = time.perf_counter()
        kept = len(keep)
        first = keep[0] if keep else 0
        contiguous = kept and keep == list(range(first, first + kept))
        if joining is None and contiguous and capacity <= self.capacity and not copy:
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
        self.live = torch.ones(rows, dtype=torch.long, device=self.device)
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
        self.live = self.live[rows].clone()
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
        if self._stream is None:
            self._stream = torch.cuda.Stream(self.device)
        stream = self._stream
        # Before the capture: tuning runs kernels for real. A failure here is met again by the
        # step's own fallback (`_forward`), which turns the Triton step off.
        with contextlib.suppress(Exception):
            self._prepare_kernels()
        stream.wait_stream(torch.cuda.current_stream(self.device))
        try:
            # A batch that captured on its stream before (cuBLAS handles and workspace, kernels
            # compiled) captures again without the warm-up step (20 ms of host on an H200, the
            # device idle), unless that fails (a kernel new to this shape), then as the first time.
            graph = self._record(stream, warm=False) if self.captures else None
            if graph is None:
                graph = self._record(stream, warm=True)
            self.graph = graph
            self.captures += 1
        except RuntimeError as exc:
            # A model the capture cannot take still decodes right with the same step, eagerly.
            torch.cuda.synchronize(self.device)
            self.graph = self.logits = None
            self.path, self.why = "static", f"capture failed: {str(exc)[:200]}"
        self.capture_s += time.perf_counter() - started

    def _record(self, stream: Any, warm: bool) -> Any:
        """Capture the step on `stream` (after one step run for real when `warm`, as a first
        capture requires); return the graph, or None where an unwarmed capture failed."""
        torch = self.torch
        if warm:
            with torch.cuda.stream(stream):
                self._forward()
            torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        try:
            # On this batch's side stream (torch's default capture stream is one per process);
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
        except Exception:
            if warm:
                raise
            torch.cuda.synchronize(self.device)
            self.unwarmed_failures += 1
            return None
        return graph

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
        merged gate/up, SiLU product (in the gate/up GEMV where that timed faster), down_proj,
        residual add + the next RMSNorm."""
        ops, torch = self.ops, self.torch
        inner = self.model.model
        residual = inner.embed_tokens(self.tokens)
        self.valid.scatter_(1, self.slot[:, None], True)
        lengths = self.slot + 1
        cos, sin = self.rotary(residual[:, None], self.positions[:, None])
        cos, sin = cos[:, 0].contiguous(), sin[:, 0].contiguous()
        first = self.layers[0].input_layernorm
        launch = self._launch()
        pdl, gemv = launch[0], self.switches.decode_gemv
        x = ops.add_rms_norm(residual, None, first.weight, first.variance_epsilon, pdl)
        self._prepare_kernels()

        def linear(x: Any, weight: Any, bias: Any) -> Any:
            plain = torch.nn.functional.linear
            return self.gemv.linear(x, weight, bias, pdl) if gemv else plain(x, weight, bias)

        def project(module: Any, x: Any) -> Any:
            # Plain Linear modules by `linear` (a tensor, or `gemv.Parts` the next kernel sums);
            # anything else (a quantized layer) as it is.
            if type(module) is torch.nn.Linear:
                return linear(x, module.weight, module.bias)
            return module(x)

        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            attn, merged = layer.self_attn, self.merged[index]
            qkv = linear(x, merged.qkv, merged.qkv_bias)
            keys, values = self.keys[index], self.values[index]
            query = ops.rope_store(
                qkv, cos, sin, keys, values, self.slot, self.heads, self.kv_heads, pdl
            )
            out = self.attention(query, keys, values, self.valid, lengths, attn.scaling, *launch)
            post = layer.post_attention_layernorm
            x = ops.add_rms_norm(
                residual, project(attn.o_proj, out), post.weight, post.variance_epsilon, pdl
            )
            # silu(gate) * up in the gate/up GEMV where its one-kernel plan won, else two kernels
            act = self.gemv.gated(x, merged.gate_up, merged.gate_up_bias, pdl) if gemv else None
            if act is None:
                gate_up = linear(x, merged.gate_up, merged.gate_up_bias)
                act = ops.silu_mul_packed(gate_up, pdl)
            down = project(layer.mlp.down_proj, act)
            norm = inner.norm if index == last else self.layers[index + 1].input_layernorm
            x = ops.add_rms_norm(residual, down, norm.weight, norm.variance_epsilon, pdl)
        lm_head = self.model.lm_head
        if type(lm_head) is torch.nn.Linear:  # logits leave the step: a tensor, torch's matmul
            return torch.nn.functional.linear(x, lm_head.weight, lm_head.bias)
        return lm_head(x)

    def _prepare_kernels(self) -> None:
        """Choose the Triton step's configurations for this batch before a graph is captured
        (nothing while one is): the attention's split stage for its launch class, the GEMV for
        its rows on each projection's shape (`gemv.prepare`), each once per process and once due."""
        torch = self.torch
        if self.kernels != "triton" or torch.cuda.is_current_stream_capturing():
            return
        if not self.attention.tuned and self.attention.due():
            lengths = self.slot + 1
            self.attention.tune(self.keys[0], self.values[0], self.valid, lengths, *self._launch())
        if not self.switches.decode_gemv:
            return
        if self._projections is None:
            modules = [[layer.self_attn.o_proj for layer in self.layers]]
            modules.append([layer.mlp.down_proj for layer in self.layers])
            self._projections = [
                [(m.qkv, m.qkv_bias) for m in self.merged],
                [(m.gate_up, m.gate_up_bias) for m in self.merged],
            ] + [  # o_proj and down where plain Linear modules (else not by `linear`)
                [(module.weight, module.bias) for module in each]
                for each in modules
                if all(type(module) is torch.nn.Linear for module in each)
            ]
        gate_up = self._projections[1]
        # launched as the GEMV is timed: programmatically dependent where the card takes it
        silu = partial(self.ops.silu_mul_packed, pdl=self.gemv.pdl_supported(self.device))
        self.gemv.prepare(self.rows, self._projections, gated=gate_up, silu=silu)

    def _launch(self) -> tuple[bool, bool]:
        """How the Triton step launches: programmatically dependent (the switch, where the card
        and Triton take it), attention merged in its split stage (the switch)."""
        pdl = self.switches.decode_pdl and self.gemv.pdl_supported(self.device)
        return pdl, self.switches.decode_fused_merge

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
            "parks": self.parks,
            "replaces": self.replaces,
            "unwarmed_failures": self.unwarmed_failures,
            "steps": self.steps,
            "capacity": self.capacity,
            "largest_batch": self.largest,
            "kernels": self.kernels,
            "kernels_why": self.kernels_why,
            "pdl": self.kernels == "triton" and self._launch()[0],
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
