"""Memory plans: what a prompt costs a transformer on a GPU before it is sent, and what context
llama.cpp can hold in host memory before it loads.

Pure Python on purpose (no torch): the plans are tested in CI and read by the HF backend before it
prefills (and before a group joins a running batch) and by the llama.cpp backend before it loads,
so that what cannot fit is recorded `skipped` with its reason instead of crashing the run (the
seed's "VRAM cascade").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB = 1 << 30

_DTYPE_BYTES = {
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "float32": 4,
    "fp32": 4,
    "float": 4,
}


def dtype_bytes(name: str) -> int:
    """Return the bytes of one element of a dtype named like torch or transformers names it."""
    key = name.removeprefix("torch.").lower()
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}: use bfloat16, float16 or float32")
    return _DTYPE_BYTES[key]


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that decide its memory use."""

    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    dtype_bytes: int = 2
    weight_bytes: int = 0
    """Bytes of the weights (0 when they are already on the device and counted as used)."""

    @property
    def kv_bytes_per_token(self) -> int:
        """Return the KV-cache bytes one token takes in one sequence (keys and values, all layers)."""
        return self.num_layers * self.num_kv_heads * self.head_dim * 2 * self.dtype_bytes

    @classmethod
    def from_config(cls, config: dict[str, Any], dtype: str = "bfloat16") -> ModelShape:
        """Return the shape of a Hugging Face `config.json` (as a dict), weights estimated from it."""
        cfg = dict(config.get("text_config") or config)
        hidden = int(cfg["hidden_size"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        head_dim = int(cfg.get("head_dim") or hidden // heads)
        layers = int(cfg["num_hidden_layers"])
        inter = int(cfg.get("intermediate_size") or 4 * hidden)
        vocab = int(cfg["vocab_size"])
        width = dtype_bytes(dtype)
        per_layer = (
            hidden * heads * head_dim  # q
            + 2 * hidden * kv_heads * head_dim  # k, v
            + heads * head_dim * hidden  # o
            + 3 * hidden * inter  # gate, up, down
        )
        embeddings = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
        return cls(
            num_layers=layers,
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            hidden_size=hidden,
            intermediate_size=inter,
            vocab_size=vocab,
            dtype_bytes=width,
            weight_bytes=(layers * per_layer + embeddings) * width,
        )


DECODE_BLOCK = 1024
"""Keys per block in the graph decode's attention; its fixed cache capacity is a multiple of it."""
CHUNK_QUANTUM = 1024
"""Prefill chunks chosen by the plan are whole multiples of this (the lengths cuDNN attention
takes in the HF backend: their graphs recur from document to document)."""
PREFILL_CHUNK_MAX = 16384
"""The largest prefill chunk the plan picks by itself. Measured on an H200 (BENCHMARKS.md, 7B
shape): 16K-token chunks at 72.9% / 75.2% of the matmul peak at 32K / 128K, 8K chunks 72.0 /
74.2%, 32K chunks 74.8 / 75.7% for twice the activation memory."""


def decode_capacity(tokens: int) -> int:
    """Return the fixed KV-cache capacity (tokens per sequence) the graph decode allocates.

    A CUDA graph replays fixed shapes, so the cache is allocated once for prompt plus answer;
    rounding up to whole blocks lets the attention sum its blocks in parallel (one partial product
    per block) and lets groups of similar length share a shape.
    """
    if tokens <= DECODE_BLOCK:
        return max(1, tokens)
    return -(-tokens // DECODE_BLOCK) * DECODE_BLOCK


def prefill_activation_bytes(
    shape: ModelShape, chunk: int, context: int, sequences: int = 1
) -> int:
    """Return the activation peak of prefilling `chunk` tokens (per sequence) after `context` tokens.

    One layer's live tensors: the residual stream and its norm, q/k/v/attention output, the MLP's
    gate, up and their product; plus keys and values repeated to all query heads for the chunk's
    attention (grouped-query attention runs on repeated heads on the lower-right causal path), and
    float32 logits of the last position only (the backend asks the model for no others).
    """
    tokens = chunk * sequences
    width = shape.dtype_bytes
    attn_dims = shape.num_heads * shape.head_dim
    per_token = (
        3 * shape.hidden_size + 2 * attn_dims + 2 * shape.num_kv_heads * shape.head_dim
    ) * width + 3 * shape.intermediate_size * width
    repeated_kv = 2 * sequences * context * attn_dims * width
    logits = sequences * shape.vocab_size * 4 * 2
    return tokens * per_token + repeated_kv + logits


@dataclass(frozen=True)
class MemoryPlan:
    """What a group of sequences needs on the device, and whether it fits the free memory."""

    tokens: int
    """Tokens per sequence: prompt plus the longest answer asked for."""
    sequences: int
    weight_bytes: int
    kv_bytes: int
    activation_bytes: int
    margin_bytes: int
    free_bytes: int

    @property
    def needed_bytes(self) -> int:
        """Return the bytes this plan needs beyond what the device already holds."""
        return self.weight_bytes + self.kv_bytes + self.activation_bytes + self.margin_bytes

    @property
    def fits(self) -> bool:
        """Return whether the plan fits the free memory."""
        return self.needed_bytes <= self.free_bytes

    @property
    def reason(self) -> str:
        """Return the `insufficient_vram` reason recorded for a skipped request ("" if it fits)."""
        if self.fits:
            return ""
        return insufficient_vram(self.needed_bytes, self.tokens, self.sequences, self.free_bytes)


def insufficient_vram(needed: int, tokens: int, sequences: int, free: int) -> str:
    """Return the reason stored with a request that the device cannot hold."""
    return (
        f"insufficient_vram: needs {needed / GIB:.1f} GiB for {tokens} tokens x {sequences} "
        f"sequences, {free / GIB:.1f} GiB free"
    )


def plan_memory(
    shape: ModelShape,
    tokens: int,
    sequences: int,
    free_bytes: int,
    *,
    chunk: int = 8192,
    prefix: int = 0,
    suffix: int | None = None,
    weights_resident: bool = True,
    unrepeated: bool = False,
) -> MemoryPlan:
    """Return the plan for `sequences` sequences of `tokens` tokens each (prompt plus answer).

    The peak is the largest of the backend's phases: the shared `prefix` prefilled once for one
    sequence; its cache copied per member layer by layer (one layer's extra copy at a time); the
    members' prompt `suffix` prefilled as a batch; decoding, either over a cache that grows by
    concatenation (one layer's old and new copy at a time) or, for the CUDA-graph decode, over a
    fixed cache of `decode_capacity(tokens)` filled from the prefill's cache layer by layer (one
    layer of the prompt's cache left over at a time) plus the step's float32 attention scores.
    The margin covers kernel workspaces and allocator rounding (peak against plan is measured in
    benchmarks/bench_hf.py). `unrepeated`: the prefix's chunks (whole multiples of
    `CHUNK_QUANTUM`) attend to grouped KV heads as they are (the HF backend's cuDNN path), and
    only a rest under one quantum repeats the keys and values of the whole prefix.
    """
    per_token = shape.kv_bytes_per_token
    layer_share = max(1, shape.num_layers)
    if suffix is None:
        suffix = max(1, tokens - prefix)
    prompt = min(tokens, prefix + suffix)
    prefix_act = prefill_activation_bytes(shape, min(chunk, prefix), prefix, 1) if prefix else 0
    if prefix and unrepeated:
        prefix_act = max(
            prefill_activation_bytes(shape, min(chunk, prefix), 0, 1),
            prefill_activation_bytes(shape, min(CHUNK_QUANTUM - 1, prefix), prefix, 1),
        )
    phases = [
        per_token * prefix + prefix_act,
        per_token * prefix * sequences + per_token * prefix * sequences // layer_share,
        per_token * prompt * sequences
        + prefill_activation_bytes(
            shape,
            min(max(1, chunk // sequences), suffix),
            prompt if suffix > 1 else 0,
            sequences,
        ),
        per_token * tokens * sequences
        + per_token * tokens * sequences // layer_share
        + sequences * shape.vocab_size * 4 * 2,
        per_token * decode_capacity(tokens) * sequences
        + per_token * prompt * sequences // layer_share
        + sequences * shape.num_heads * decode_capacity(tokens) * 4 * 3
        + sequences * shape.vocab_size * 4 * 2,
    ]
    kv = per_token * tokens * sequences
    peak = max(phases)
    margin = max(256 << 20, peak // 20)
    return MemoryPlan(
        tokens=tokens,
        sequences=sequences,
        weight_bytes=0 if weights_resident else shape.weight_bytes,
        kv_bytes=kv,
        activation_bytes=max(0, peak - kv),
        margin_bytes=margin,
        free_bytes=free_bytes,
    )


def choose_chunk(
    shape: ModelShape,
    tokens: int,
    sequences: int,
    free_bytes: int,
    *,
    prefix: int = 0,
    suffix: int | None = None,
    cap: int = PREFILL_CHUNK_MAX,
    unrepeated: bool = False,
    rows: int = 0,
    capacity: int = 0,
) -> tuple[int, MemoryPlan]:
    """Return the largest prefill chunk (a multiple of `CHUNK_QUANTUM`, at most `cap`) whose plan
    fits, with that plan; when none fits, the smallest chunk and its plan (the least it needs).
    Beside a running decode of `rows` rows over `capacity` slots, the plan is `plan_join`'s."""
    chunk = max(1, cap)
    while True:
        plan = plan_join(
            shape,
            tokens,
            sequences,
            free_bytes,
            rows=rows,
            capacity=capacity,
            chunk=chunk,
            prefix=prefix,
            suffix=suffix,
            unrepeated=unrepeated and chunk % CHUNK_QUANTUM == 0,
        )
        if plan.fits or chunk <= CHUNK_QUANTUM:
            return chunk, plan
        chunk = max(CHUNK_QUANTUM, (chunk - 1) // CHUNK_QUANTUM * CHUNK_QUANTUM)


def max_sequences(
    shape: ModelShape, tokens: int, free_bytes: int, *, chunk: int = 8192, prefix: int = 0
) -> int:
    """Return how many sequences of `tokens` tokens fit together (0 when not even one does)."""
    count = 0
    while plan_memory(shape, tokens, count + 1, free_bytes, chunk=chunk, prefix=prefix).fits:
        count += 1
        if count >= 4096:
            break
    return count


def max_tokens(shape: ModelShape, free_bytes: int, *, chunk: int = 8192, sequences: int = 1) -> int:
    """Return the most tokens per sequence that fit for `sequences` sequences (binary search)."""
    low, high = 0, 1 << 24
    while low < high:
        mid = (low + high + 1) // 2
        if plan_memory(shape, mid, sequences, free_bytes, chunk=chunk).fits:
            low = mid
        else:
            high = mid - 1
    return low


def plan_join(
    shape: ModelShape,
    tokens: int,
    sequences: int,
    free_bytes: int,
    *,
    rows: int,
    capacity: int,
    chunk: int = 8192,
    prefix: int = 0,
    suffix: int | None = None,
    unrepeated: bool = False,
) -> MemoryPlan:
    """Return the plan for `sequences` sequences of `tokens` tokens joining a running graph decode
    of `rows` rows over a fixed cache of `capacity` slots each (0 rows: `plan_memory`).

    The running rows' cache is allocated already (not in `free_bytes`). The group prefills beside
    it as it would alone; then its own fixed cache and the running one are copied into one fixed
    cache of the larger capacity for all rows, layer by layer. Each new layer is larger than the
    blocks the copy frees, so the allocator cannot reuse them: the whole merged cache is counted on
    top of the group's own, with the merged step's float32 scores and logits.
    """
    alone = plan_memory(
        shape,
        tokens,
        sequences,
        free_bytes,
        chunk=chunk,
        prefix=prefix,
        suffix=suffix,
        unrepeated=unrepeated,
    )
    if rows <= 0:
        return alone
    per_token = shape.kv_bytes_per_token
    merged = max(capacity, decode_capacity(tokens))
    total = rows + sequences
    join = (
        per_token * decode_capacity(tokens) * sequences
        + per_token * merged * total
        + total * shape.num_heads * merged * 4 * 3
        + total * shape.vocab_size * 4 * 2
    )
    peak = max(alone.kv_bytes + alone.activation_bytes, join)
    return MemoryPlan(
        tokens=tokens,
        sequences=sequences,
        weight_bytes=0,
        kv_bytes=alone.kv_bytes,
        activation_bytes=max(0, peak - alone.kv_bytes),
        margin_bytes=max(256 << 20, peak // 20),
        free_bytes=free_bytes,
    )


def join_pays(shape: ModelShape, *, rows: int, capacity: int, tokens: int, sequences: int) -> bool:
    """Return whether a group of `sequences` sequences of `tokens` tokens should decode inside a
    running batch of `rows` rows over `capacity` slots rather than after it.

    A decode step reads all weights once and every row's whole fixed cache. Together, every row
    reads the larger capacity; apart, the group's steps read the weights again. Joining pays when
    the empty slots it makes the batch read cost fewer bytes than that second weight read: a 7B
    model (15 GB) takes an 8K document's rows into a 32K batch, not into a 128K one.
    """
    own = decode_capacity(tokens)
    merged = max(capacity, own)
    wasted = (rows + sequences) * merged - rows * capacity - sequences * own
    return wasted * shape.kv_bytes_per_token <= shape.weight_bytes


HOST_CONTEXT_QUANTUM = 256
"""A context lowered to what host memory holds is a whole multiple of this."""


def gguf_kv_bytes_per_token(metadata: dict[str, str], cache_bytes: int = 2) -> int:
    """Return llama.cpp's KV-cache bytes per token of context (all layers, f16 cache) from a GGUF
    file's metadata, or 0 when the metadata does not say (the plan is then skipped)."""
    try:
        arch = metadata["general.architecture"]
        layers = int(metadata[f"{arch}.block_count"])
        heads = int(metadata[f"{arch}.attention.head_count"])
        kv_heads = int(metadata.get(f"{arch}.attention.head_count_kv", heads))
        width = int(metadata[f"{arch}.embedding_length"])
        key = int(metadata.get(f"{arch}.attention.key_length", width // heads))
        value = int(metadata.get(f"{arch}.attention.value_length", key))
    except (KeyError, ValueError, ZeroDivisionError):
        return 0
    return layers * kv_heads * (key + value) * cache_bytes


def host_context(
    *,
    weight_bytes: int,
    kv_per_token: int,
    scratch_per_token: int,
    free_bytes: int,
    tokens: int,
) -> tuple[int, str]:
    """Return the context (tokens) llama.cpp should allocate in host memory, and why it is less
    than `tokens` ("" when it is not).

    llama.cpp allocates the KV cache for its whole context when it loads, so a context the memory
    cannot hold is lowered before loading (samples past it are then skipped with the reason, the
    seed's cascade), never left to the kernel's out-of-memory killer. Needed: the weights, the KV
    cache, per-token scratch of the compute graph (the attention mask of a micro-batch, and its
    scores without flash attention), and a margin of 256 MiB or 5%.
    """
    per_token = kv_per_token + scratch_per_token

    def needed(count: int) -> int:
        body = weight_bytes + count * per_token
        return body + max(256 << 20, body // 20)

    if per_token <= 0 or needed(tokens) <= free_bytes:
        return tokens, ""
    # needed(n) >= needed(0) + n x per_token: an upper bound, then down by quanta.
    bound = min(tokens, max(0, free_bytes - needed(0)) // per_token)
    fits = bound // HOST_CONTEXT_QUANTUM * HOST_CONTEXT_QUANTUM
    while fits > 0 and needed(fits) > free_bytes:
        fits -= HOST_CONTEXT_QUANTUM
    reason = (
        f"host memory: needs {needed(tokens) / GIB:.1f} GiB for {tokens} tokens, "
        f"{free_bytes / GIB:.1f} GiB free"
    )
    return fits, reason
