"""The hf engine's prefill: a unit's shared prefix once, in chunks, then each member's own tokens
as one left-padded batch; the clock and memory release the engine's phases share; and the
hand-over of a prefilled cache's layers into the graph decode's fixed cache."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Iterator
from typing import Any

from longscope.models.hf.kernels import (
    SHAPE_QUANTUM,
    KernelSwitches,
    fused_prefill_norms,
    fused_prefill_ops,
    prefill_kernels,
    using,
)
from longscope.models.hf.members import Unit


def chunk_bounds(length: int, chunk: int) -> list[tuple[int, int]]:
    """Return the (start, end) of each prefill chunk of `length` tokens.

    Whole chunks, then the rest. When chunks are whole multiples of `SHAPE_QUANTUM` and a rest
    that is not follows a cached prefix, the rest is split into its whole quanta (cuDNN's split
    path) and under a quantum of tokens (flash): flash attention after a long prefix ran at 47-54%
    of the matmul peak on an H200 against 66-68% for the split cuDNN path (BENCHMARKS.md).
    """
    bounds = []
    start = 0
    while start + chunk < length:
        bounds.append((start, start + chunk))
        start += chunk
    rest = length - start
    whole = rest // SHAPE_QUANTUM * SHAPE_QUANTUM
    if start and chunk % SHAPE_QUANTUM == 0 and 0 < whole < rest:
        bounds.append((start, start + whole))
        start += whole
    if start < length:
        bounds.append((start, length))
    return bounds


@contextlib.contextmanager
def prefill_context(model: Any, switches: KernelSwitches) -> Iterator[None]:
    """Run a prefill inside: the engine's switches active for our attention, the attention
    kernel order (`prefill_kernels`), fused RMSNorm, rotary embedding and SiLU-gated product."""
    with (
        using(switches),
        prefill_kernels(),
        fused_prefill_norms(model, switches),
        fused_prefill_ops(model, switches),
    ):
        yield


def prefill_ids(model: Any, cache_kw: str, ids: Any, cache: Any, chunk: int) -> Any:
    """Prefill one sequence's token ids (a 1D tensor on the device) into `cache`, in chunks
    (`chunk_bounds`); return the last chunk's output (its last logits only)."""
    out = None
    for start, end in chunk_bounds(int(ids.shape[0]), chunk):
        out = model(
            input_ids=ids[start:end][None],
            **{cache_kw: cache},
            use_cache=True,
            logits_to_keep=1,
        )
    return out


def prefill_steps(
    model: Any, cache_kw: str, pad: int, switches: KernelSwitches, unit: Unit
) -> Generator[None, None, tuple]:
    """Prefill a unit, yielding after each forward call; return its cache, last logits, 2D
    attention mask (None without padding), next positions and padded length.

    The members' shared prefix is prefilled once, in chunks (`chunk_bounds`), and its cache
    repeated per member; each member's tokens after it follow as one batch, left-padded to
    one length: the padding sits between prefix and suffix, masked out, and positions count
    only real tokens, so every member computes what it would alone.
    """
    import torch
    import transformers

    device = model.device
    batch = unit.members
    count = len(batch)
    prefix = unit.prefix
    cache = transformers.DynamicCache(config=model.config)
    ids = torch.tensor(batch[0].ids[:prefix], device=device)
    for start, end in chunk_bounds(prefix, unit.chunk):
        with prefill_context(model, switches):
            model(
                input_ids=ids[start:end][None],
                **{cache_kw: cache},
                use_cache=True,
                logits_to_keep=1,
            )
        yield
    del ids
    if count > 1 and prefix:
        cache.batch_repeat_interleave(count)
    suffixes = [m.ids[prefix:] for m in batch]
    longest = max(len(s) for s in suffixes)
    padded = any(len(s) != longest for s in suffixes)
    rows = [[pad] * (longest - len(s)) + s for s in suffixes]
    input_ids = torch.tensor(rows, device=device)
    mask = positions = None
    if padded:
        mask = torch.ones(count, prefix + longest, dtype=torch.long, device=device)
        positions = torch.zeros(count, longest, dtype=torch.long, device=device)
        for row, suffix in enumerate(suffixes):
            gap = longest - len(suffix)
            mask[row, prefix : prefix + gap] = 0
            positions[row, gap:] = torch.arange(prefix, prefix + len(suffix), device=device)
            positions[row, :gap] = prefix
    step = max(1, unit.chunk // count)
    logits = None
    for start in range(0, longest, step):
        end = min(longest, start + step)
        kwargs: dict[str, Any] = {}
        if padded:
            kwargs["attention_mask"] = mask[:, : prefix + end]
            kwargs["position_ids"] = positions[:, start:end]
        with prefill_context(model, switches):
            out = model(
                input_ids=input_ids[:, start:end],
                **{cache_kw: cache},
                use_cache=True,
                logits_to_keep=1,
                **kwargs,
            )
        logits = out.logits[:, -1, :]
        del out
        yield
    following = torch.tensor([len(m.ids) for m in batch], device=device)
    return cache, logits, mask, following, prefix + longest


class PhaseClock:
    """Wall time of a batch's phases; syncs the device at each lap (phases are sequential)."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.last = time.perf_counter()

    def lap(self) -> float:
        """Return seconds since the last lap, rounded to the millisecond."""
        if self.cuda:
            self.torch.cuda.synchronize()
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        return round(elapsed, 3)


def release(torch: Any) -> None:
    """Hand the blocks a rebuild freed back to the device: they are smaller than what the next
    rebuild allocates, and `free_bytes` would count them as free."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


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
