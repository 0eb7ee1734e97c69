"""The hf engine's admission: the device memory it may use, the memory plan of a prefill beside
the running batch, and which of a job's members run next (`Engine` inherits it)."""

from __future__ import annotations

from typing import Any

from longscope.models.base import available_host_bytes
from longscope.models.hf.kernels import KernelSwitches, import_torch
from longscope.models.hf.members import Member, shared_prefix
from longscope.models.memory_plan import (
    CHUNK_QUANTUM,
    GIB,
    MemoryPlan,
    ModelShape,
    choose_chunk,
    join_pays,
    plan_join,
)

NO_ROWS_FREE = "the running batch has no rows free"
JOIN_DOES_NOT_PAY = "joining reads more than it saves"
"""Why a job waits beside a running batch, memory aside (dropping parked rows changes neither)."""


class Admission:
    """What an engine admits: its memory (`free_bytes`, `held_bytes`), plans and next batch."""

    model: Any
    shape: ModelShape | None
    vram_gib: float | None
    prefill_chunk: int | None
    max_batch: int
    kernels: KernelSwitches
    last_chunk: int
    last_plan: Any
    last_prefix: int

    def free_bytes(self) -> int:
        """Return the device bytes free for a new request: what the device has free (torch's cache
        counts as free), within what `vram_gib` leaves beside what longscope already holds."""
        budget = int(self.vram_gib * GIB) if self.vram_gib is not None else None
        if budget is not None and self.model is None:  # nothing loaded holds memory yet
            return budget
        torch, _ = import_torch()
        device = self.model.device
        if device.type != "cuda":
            free = available_host_bytes()
        else:
            free, _total = torch.cuda.mem_get_info(device)
            free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free) if budget is None else max(0, min(int(free), budget - self.held_bytes()))

    def held_bytes(self) -> int:
        """Return the device bytes longscope holds now: on CUDA every live tensor (weights and the
        running batch's caches), elsewhere the weights."""
        if self.model is None:
            return 0
        torch, _ = import_torch()
        device = self.model.device
        if device.type == "cuda":
            return int(torch.cuda.memory_allocated(device))
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    def plan(
        self,
        tokens: int,
        sequences: int,
        free: int,
        prefix: int,
        suffix: int,
        running: tuple[int, int] = (0, 0),
    ) -> tuple[int, MemoryPlan]:
        """Return the prefill chunk and the memory plan for a batch (the chunk the option names,
        else the largest multiple of 1024 up to `PREFILL_CHUNK_MAX` that fits), beside the
        `running` (rows, capacity) of a batch decoding now."""
        assert self.shape is not None
        rows, capacity = running
        if self.prefill_chunk:
            plan = plan_join(
                self.shape,
                tokens,
                sequences,
                free,
                rows=rows,
                capacity=capacity,
                chunk=self.prefill_chunk,
                prefix=prefix,
                suffix=suffix,
                unrepeated=self._unrepeated(self.prefill_chunk),
            )
            return self.prefill_chunk, plan
        return choose_chunk(
            self.shape,
            tokens,
            sequences,
            free,
            prefix=prefix,
            suffix=suffix,
            unrepeated=self._unrepeated(CHUNK_QUANTUM),
            rows=rows,
            capacity=capacity,
        )

    def _unrepeated(self, chunk: int) -> bool:
        """Return whether prefix chunks of `chunk` tokens attend to grouped KV heads unrepeated
        (cuDNN's split path: CUDA, 16-bit, whole quanta), so the plan counts no repeated keys
        but for a rest under one quantum (`chunk_bounds`)."""
        model = self.model
        return bool(
            model is not None
            and self.shape is not None
            and chunk % CHUNK_QUANTUM == 0
            and getattr(model.device, "type", "") == "cuda"
            and self.shape.dtype_bytes == 2
            and self.kernels.cudnn_split
            and self.kernels.cudnn_gqa
        )

    def next_batch(
        self, members: list[Member], pending: list[int], running: tuple[int, int] = (0, 0)
    ) -> tuple[list[int], str]:
        """Return the members to run next (or none, with the reason).

        Alone: the largest prefix of `pending` whose plan fits. Beside `running` (rows, capacity
        of the batch decoding now): the whole of `pending` up to `max_batch` rows in all, when
        its join plan fits and joining pays (`join_pays`), else none (it waits; splitting it
        would prefill its prefix twice).
        """
        assert self.shape is not None
        free = self.free_bytes()
        rows, capacity = running
        take = pending[: self.max_batch - rows] if rows else pending[: self.max_batch]
        if rows and len(take) < min(len(pending), self.max_batch):
            return [], NO_ROWS_FREE
        while take:
            batch = [members[i] for i in take]
            tokens = max(len(m.ids) + m.request.config.max_tokens for m in batch)
            prefix = shared_prefix(batch)
            suffix = max(len(m.ids) for m in batch) - prefix
            self.last_chunk, plan = self.plan(tokens, len(batch), free, prefix, suffix, running)
            self.last_plan, self.last_prefix = plan, prefix
            if rows:
                pays = join_pays(
                    self.shape, rows=rows, capacity=capacity, tokens=tokens, sequences=len(take)
                )
                if plan.fits and pays:
                    return take, ""
                return [], plan.reason or JOIN_DOES_NOT_PAY
            if plan.fits:
                return take, ""
            if len(take) == 1:
                return [], plan.reason
            take = take[: len(take) // 2]
        return [], "no request"
