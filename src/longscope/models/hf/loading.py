"""A loaded model's move onto its GPU: the weights copied through pinned staging buffers by a few
threads at once, where `Module.to` sends one pageable copy at a time.

transformers maps a checkpoint's tensors from the file, so the move to the device is where their
bytes are read. A pageable host-to-device copy goes through the driver's own staging, one copy at a
time: 6.1-6.7 GB/s for a 7B (15.2 GB, bf16, from the page cache) on an H200's host, and threads with
streams of their own gained nothing (6.4-6.6 GB/s). Each thread here copies into one pinned buffer
while the other is sent: 9.7-9.9 GB/s with 4 and 8 threads, 1.53 s against 2.26-2.50 s in an
ad hoc script (BENCHMARKS.md, issue 46 eleventh pass, call AR); this path, swapping the copies
in, 1.93-2.05 s against `Module.to`'s 2.43-2.48 s, alternately (twelfth pass, call AT).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

STAGE_THREADS = 4
STAGE_BYTES = 256 << 20
"""Each thread holds two pinned buffers of this size while the model moves (2 GiB in all), or of
the model's largest tensor where that is smaller."""


def move_to_device(torch: Any, model: Any, device: Any) -> str:
    """Move `model`'s parameters and buffers to `device`; return how: "staged" (`move_staged`),
    or "to" (`Module.to`) with why where the staged move does not apply or failed."""
    if device.type != "cuda":
        model.to(device)
        return "to"
    if device.index is None:  # the staging threads' current device is not the caller's
        device = torch.device("cuda", torch.cuda.current_device())
    why = _not_plain(torch, model)
    if not why:
        try:
            move_staged(torch, model, device)
        except RuntimeError as exc:  # pinned memory refused (a memlock limit), out of memory
            why = first_line(exc)
    # `Module.to` moves what is left: everything where the staged move did not run (it swaps
    # nothing in unless every tensor arrived), nothing after it.
    model.to(device)
    return f"to: {why}" if why else "staged"


def move_staged(
    torch: Any,
    model: Any,
    device: Any,
    threads: int = STAGE_THREADS,
    stage_bytes: int = STAGE_BYTES,
) -> None:
    """Copy every parameter and buffer of `model` to `device` in `threads` threads, largest
    first (they finish together), each through two staging buffers of `stage_bytes` at most
    (pinned for a CUDA device), then put the copies in place of the originals. A parameter
    shared by several modules (tied weights) is one object: it is copied once and stays shared.
    A copy that fails stops the ones not begun and raises; nothing is put in place then."""
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    order = sorted(tensors, key=lambda key: -tensors[key].numel())
    largest = max((t.numel() * t.element_size() for t in tensors.values()), default=0)
    stage_bytes = max(1, min(stage_bytes, largest))  # a small model pins no more than it needs
    local = threading.local()
    cuda = device.type == "cuda"

    def copy(tensor: Any) -> Any:
        if not hasattr(local, "buffers"):
            if cuda:
                # A new thread's current device is 0: leaving a stream's context of another
                # device would make a context on device 0.
                torch.cuda.set_device(device)
            local.stream = torch.cuda.Stream(device) if cuda else None
            local.buffers = [
                torch.empty(stage_bytes, dtype=torch.uint8, pin_memory=cuda) for _ in range(2)
            ]
            local.sent = [None, None]
        moved = torch.empty(tensor.shape, dtype=tensor.dtype, device=device)
        source, target = _bytes(torch, tensor.contiguous()), _bytes(torch, moved)
        try:
            for index, start in enumerate(range(0, source.numel(), stage_bytes)):
                end = min(start + stage_bytes, source.numel())
                which = index % 2
                if local.sent[which] is not None:
                    local.sent[which].synchronize()  # its last copy to the device is done
                staged = local.buffers[which][: end - start]
                staged.copy_(source[start:end])
                if cuda:
                    with torch.cuda.stream(local.stream):
                        target[start:end].copy_(staged, non_blocking=True)
                        local.sent[which] = torch.cuda.Event()
                        local.sent[which].record(local.stream)
                else:
                    target[start:end].copy_(staged)
        finally:
            if cuda:
                # Allocated on the thread's default stream, written on its own: every copy into
                # it done before it is used, or freed after a failure.
                local.stream.synchronize()
        return moved

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="hf-move")
    try:
        futures = [pool.submit(copy, tensors[key]) for key in order]
        copies = {key: future.result() for key, future in zip(order, futures, strict=True)}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if cuda and hasattr(torch._C, "_host_emptyCache"):
            torch._C._host_emptyCache()  # the pinned buffers go back to the system now
    for module in model.modules():
        for param in module._parameters.values():
            if param is not None and id(param) in copies:
                param.data = copies[id(param)]
        for name, buffer in module._buffers.items():
            if buffer is not None and id(buffer) in copies:
                module._buffers[name] = copies[id(buffer)]


def first_line(exc: BaseException) -> str:
    """Return the first line of `exc`'s message (200 characters at most), else its type's name."""
    lines = str(exc).strip().splitlines()
    return (lines[0][:200] if lines else "") or type(exc).__name__


def _bytes(torch: Any, tensor: Any) -> Any:
    return tensor.reshape(-1).view(torch.uint8)


def _not_plain(torch: Any, model: Any) -> str:
    """Return why a tensor of `model` is not one the staged move copies ("" when all are):
    plain dense tensors in host memory (not quantized, not a subclass, not on another device)."""
    for tensor in (*model.parameters(), *model.buffers()):
        if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
            return f"a tensor of type {type(tensor).__name__}"
        if tensor.device.type != "cpu" or tensor.layout != torch.strided or tensor.is_quantized:
            return f"a tensor on {tensor.device.type} ({tensor.layout}, {tensor.dtype})"
    return ""
