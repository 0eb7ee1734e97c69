"""The hf engine's eager decode (transformers' forward as the step: models the graph step does not
cover, `cuda_graph=0`) and the per-request samplers both decodes use."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from longscope.models.hf.members import Member, force_next
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
