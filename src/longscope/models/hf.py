"""Hugging Face transformers models on a GPU: one prefill per shared prefix, continuous batching
across groups, VRAM-aware skipping.

torch and transformers are imported lazily (the optional `gpu` extra), so longscope imports and its
CI runs without them. One engine thread owns the device. Groups of requests queue; the engine
prefills a group's shared prefix once, in chunks (bounded activation memory at 128K and beyond),
copies the cache per member, and adds the members' rows to the batch that is decoding, between
whose steps the prefill's chunks run. The decode is a plain loop of steps, not `generate`; each
member samples with its own seeded generator, so a request gives the same tokens alone or in any
batch.

For Llama-family decoders (Llama, Mistral, Qwen2, Qwen3) the decode step is our own forward over a
fixed-capacity KV cache with a slot per row, captured on CUDA as a CUDA graph (an eager step
launches some 1,000 kernels from Python, which made decode CPU-bound: BENCHMARKS.md); rows of
documents of different lengths decode together, and finished groups leave. Other models, and
`cuda_graph=0`, run one group at a time with transformers' forward as the step.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import gc
import hashlib
import importlib.util
import inspect
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from longscope.models.base import ModelInfo, UsageError, available_host_bytes, split_reasoning
from longscope.models.memory_plan import (
    CHUNK_QUANTUM,
    DECODE_BLOCK,
    GIB,
    PREFILL_CHUNK_MAX,
    MemoryPlan,
    ModelShape,
    choose_chunk,
    decode_capacity,
    insufficient_vram,
    join_pays,
    plan_join,
)
from longscope.types import Generation, PromptMode, Request

ATTENTION = "longscope_sdpa"
"""Our attention: SDPA with a lower-right causal bias for prefill chunks (flash kernel, no mask)."""

_OPTIONS = (
    "context_length",
    "prompt_mode",
    "dtype",
    "attn_implementation",
    "device",
    "prefill_chunk",
    "max_batch",
    "vram_gib",
    "cuda_graph",
)
_GRAPH_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3"})
"""Decoders whose layers the graph decode re-implements (pre-norm, RoPE, GQA, gated MLP)."""


class HFTokenizerAdapter:
    """A transformers tokenizer seen through longscope's `Tokenizer` protocol (exact counts)."""

    exact = True

    def __init__(self, tokenizer: Any, name: str) -> None:
        self.name = name
        self._tok = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)


@dataclass
class _Member:
    """One request's decoding state inside a batch."""

    request: Request
    ids: list[int]
    generated: list[int] = field(default_factory=list)
    status: str = ""
    deadline: float | None = None
    stop_at: int = -1


class _Job:
    """The requests of one `generate_group` call; answered when each has a generation."""

    def __init__(self, members: list[_Member]) -> None:
        self.members = members
        self.results: list[Generation | None] = [None] * len(members)
        self.pending = list(range(len(members)))
        """Members not yet admitted to the device."""
        self.future: concurrent.futures.Future[list[Generation]] = concurrent.futures.Future()

    def put(self, index: int, generation: Generation) -> None:
        self.results[index] = generation
        if all(r is not None for r in self.results):
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                self.future.set_result([r for r in self.results if r is not None])

    def fail(self, exc: BaseException) -> None:
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self.future.set_exception(exc)


@dataclass(eq=False)
class _Unit:
    """Members of one job admitted together: one prefill of their shared prefix."""

    job: _Job
    indices: list[int]
    chunk: int
    plan: Any
    prefix: int
    """Tokens the members share and prefill once (`_shared_prefix`, as planned)."""
    started: float = 0.0

    @property
    def members(self) -> list[_Member]:
        return [self.job.members[i] for i in self.indices]

    @property
    def tokens(self) -> int:
        return max(len(m.ids) + m.request.config.max_tokens for m in self.members)

    @property
    def longest(self) -> int:
        return max(m.request.config.max_tokens for m in self.members)

    def start(self) -> float:
        """Start the members' clocks (their deadlines count from admission, not from queueing)."""
        self.started = time.perf_counter()
        for member in self.members:
            timeout = member.request.timeout_s
            member.deadline = self.started + timeout if timeout else None
        return self.started


@dataclass(eq=False)
class _Row:
    """One member decoding in the running batch."""

    unit: _Unit
    member: _Member
    index: int
    sampler: Any
    length: int
    """The unit's padded prompt length: the row's first decode slot."""

    @property
    def max_tokens(self) -> int:
        return self.member.request.config.max_tokens


def _drain(steps: Generator[None, None, Any]) -> Any:
    """Run a generator of steps to its end; return what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


class HFBackend:
    """One transformers causal LM on one device, driven by one engine thread.

    Groups queue; the engine prefills each (one prefill per shared prefix) and decodes its
    members in one batch with the groups already decoding, where the memory plan and the bytes a
    step reads allow (continuous batching over a fixed-capacity cache, one decode slot per row).
    """

    max_concurrency = 8
    """Groups the runner hands over at once: the engine queues them and prefills the next while
    the running batch decodes."""

    def __init__(
        self,
        name: str,
        *,
        prompt_mode: PromptMode = "chat",
        context_length: int = 0,
        dtype: str = "bfloat16",
        attn_implementation: str | None = None,
        device: str | None = None,
        prefill_chunk: int | None = None,
        max_batch: int = 32,
        vram_gib: float | None = None,
        cuda_graph: bool = True,
        model: Any = None,
        tokenizer: Any = None,
    ) -> None:
        self.name = f"hf/{name}"
        self.model_name = name
        self.prompt_mode = prompt_mode
        self.requested_context = context_length
        self.dtype_name = dtype
        self.attn_implementation = attn_implementation
        self.device_name = device
        self.prefill_chunk = max(1, prefill_chunk) if prefill_chunk else None
        """Tokens per prefill chunk; None: the memory plan picks the largest multiple of 1024 that
        fits, up to `PREFILL_CHUNK_MAX`."""
        self.last_chunk = self.prefill_chunk or PREFILL_CHUNK_MAX
        """The prefill chunk of the last plan; the batch it planned runs with it."""
        self.max_batch = max(1, max_batch)
        self.vram_gib = vram_gib
        """Device memory longscope may hold in all, weights, caches and activations included (a
        share of a card, e.g. 40 on an 80 GB card shared with another job); None: the card's."""
        self.cuda_graph = cuda_graph
        self.last_decode: dict[str, Any] = {}
        """How the last batch decoded: path ("graph", "static", "eager"), why, capture time."""
        self._model = model
        self._tok = tokenizer
        self._lock = threading.Lock()
        self.last_plan: Any = None
        self.last_prefix = 0
        self.engine_stats: dict[str, Any] = {
            "units": 0,
            "joined": 0,
            "steps": 0,
            "row_steps": 0,
            "steps_in_prefill": 0,
            "longest_wait_s": 0.0,
            "prefill_s": 0.0,
        }
        """Units prefilled, units that joined a running batch, decode steps, rows over all
        steps, steps taken between another unit's prefill chunks and the longest a running
        batch waited between two steps then, the last unit's prefill seconds."""
        self._wake = threading.Condition()
        self._jobs: list[_Job] = []
        self._engine: threading.Thread | None = None
        self._closing = False
        self._changed = False
        self._batch: Any = None
        self._rows: list[_Row] = []
        self._tokens: Any = None
        self._clock: Any = None
        if model is not None:
            self._prepare_model(model)

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> HFBackend:
        """Build from a Hub model name or local folder and `-M` options."""
        options = dict(options)
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise UsageError(
                f"unknown hf option(s) {', '.join(unknown)}: known are {', '.join(_OPTIONS)}"
            )
        mode = options.pop("prompt_mode", "chat")
        if mode not in ("chat", "completion"):
            raise UsageError(f"bad prompt_mode {mode!r}: use chat or completion")
        vram = options.pop("vram_gib", None)
        return cls(
            name,
            prompt_mode=mode,
            context_length=int(options.pop("context_length", 0)),
            dtype=str(options.pop("dtype", "bfloat16")),
            attn_implementation=options.pop("attn_implementation", None),
            device=options.pop("device", None),
            prefill_chunk=int(options.pop("prefill_chunk", 0)) or None,
            max_batch=int(options.pop("max_batch", 32)),
            vram_gib=float(vram) if vram is not None else None,
            cuda_graph=str(options.pop("cuda_graph", "1")).lower() not in ("0", "false", "no"),
        )

    # -- loading -----------------------------------------------------------------------------

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                torch, transformers = _import_torch()
                try:
                    tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name)
                    model = transformers.AutoModelForCausalLM.from_pretrained(
                        self.model_name,
                        dtype=_torch_dtype(torch, self.dtype_name),
                        attn_implementation=_register_attention(self.attn_implementation),
                    )
                except OSError as exc:
                    raise UsageError(f"cannot load {self.model_name!r}: {exc}") from exc
                model.to(self._device(torch))
                self._tok = tokenizer
                self._prepare_model(model)
                self._model = model
            if self.prompt_mode == "chat" and not getattr(self._tok, "chat_template", None):
                raise UsageError(
                    f"{self.model_name} has no chat template: use -M prompt_mode=completion "
                    "(base model)"
                )
        return self._model

    def _device(self, torch: Any) -> Any:
        if self.device_name:
            return torch.device(self.device_name)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def _prepare_model(self, model: Any) -> None:
        model.eval()
        config = model.config
        if self.attn_implementation is None and getattr(config, "_attn_implementation", "") in (
            "sdpa",
            "",
            None,
        ):
            # A model built by the caller (tests, benchmark) gets our attention too.
            config._attn_implementation = _register_attention(None)
        self.shape = ModelShape.from_config(config.to_dict(), str(model.dtype))
        self._eos = _eos_ids(model, self._tok)
        self._pad = self._tok.pad_token_id if self._tok.pad_token_id is not None else 0
        # transformers renamed `past_key_values` to `cache` (5.2x warns about the old name).
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    async def _ensure_loaded(self) -> Any:
        if self._model is not None:
            return self._model
        return await asyncio.to_thread(self._load)

    async def info(self) -> ModelInfo:
        model = await self._ensure_loaded()
        config = model.config
        trained = _max_positions(config)
        if self.requested_context:
            length, source = self.requested_context, "user"
        else:
            length, source = trained, "config"
        digest = hashlib.sha256(config.to_json_string().encode()).hexdigest()[:12]
        return ModelInfo(
            model_id=f"hf:{self.model_name}:{digest}",
            context_length=length,
            context_source=source if length else "unknown",
            prompt_mode=self.prompt_mode,
            tokenizer=self.model_name,
            details={
                "dtype": str(model.dtype),
                "attention": config._attn_implementation,
                "device": str(model.device),
                "max_position_embeddings": trained,
                "prefill_chunk": self.prefill_chunk or f"auto (at most {PREFILL_CHUNK_MAX})",
                "kv_bytes_per_token": self.shape.kv_bytes_per_token,
                "free_gib": round(self.free_bytes() / GIB, 2),
            },
        )

    def tokenizer(self) -> HFTokenizerAdapter:
        self._load()
        return HFTokenizerAdapter(self._tok, self.model_name)

    # -- memory ------------------------------------------------------------------------------

    def free_bytes(self) -> int:
        """Return the device bytes free for a new request: what the device has free (torch's cache
        counts as free), within what `vram_gib` leaves beside what longscope already holds."""
        budget = int(self.vram_gib * GIB) if self.vram_gib is not None else None
        if budget is not None and self._model is None:  # nothing loaded holds memory yet
            return budget
        torch, _ = _import_torch()
        device = self._model.device
        if device.type != "cuda":
            free = available_host_bytes()
        else:
            free, _total = torch.cuda.mem_get_info(device)
            free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free) if budget is None else max(0, min(int(free), budget - self.held_bytes()))

    def held_bytes(self) -> int:
        """Return the device bytes longscope holds now: on CUDA every live tensor (weights and the
        running batch's caches), elsewhere the weights."""
        if self._model is None:
            return 0
        torch, _ = _import_torch()
        device = self._model.device
        if device.type == "cuda":
            return int(torch.cuda.memory_allocated(device))
        return sum(p.numel() * p.element_size() for p in self._model.parameters())

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: Request) -> Generation:
        return (await self.generate_group([request]))[0]

    async def generate_group(self, requests: Sequence[Request]) -> list[Generation]:
        """Return one generation per request, prefilling the requests' shared prefix once.

        The group joins the engine's queue; the engine decodes it in one batch with the groups
        already running where memory and the bytes a step reads allow (`_admit`).
        """
        await self._ensure_loaded()
        members = await asyncio.to_thread(
            lambda: [_Member(r, self.encode_request(r)) for r in requests]
        )
        job = _Job(members)
        with self._wake:
            if self._closing:
                raise RuntimeError(f"{self.name} is closed")
            self._jobs.append(job)
            self._changed = True
            if self._engine is None or not self._engine.is_alive():
                self._engine = threading.Thread(target=self._serve, name="hf-engine", daemon=True)
                self._engine.start()
            self._wake.notify()
        return await asyncio.wrap_future(job.future)

    def encode_request(self, request: Request) -> list[int]:
        """Return the prompt token ids exactly as the model receives them."""
        if request.mode == "completion":
            return list(self._tok.encode(request.prompt, add_special_tokens=True))
        if not getattr(self._tok, "chat_template", None):
            raise UsageError(f"{self.model_name} has no chat template: use prompt_mode=completion")
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        text = self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        # The template already holds the special tokens (BOS, role markers).
        return list(self._tok.encode(text, add_special_tokens=False))

    # -- the engine: one thread owns the device ---------------------------------------------

    def _serve(self) -> None:
        """Admit groups and decode the running batch until closed (the engine thread)."""
        torch, _ = _import_torch()
        with torch.inference_mode():
            while True:
                with self._wake:
                    while not self._closing and not self._jobs and not self._rows:
                        self._wake.wait()
                    if self._closing and not self._rows:
                        for job in self._jobs:
                            job.fail(RuntimeError(f"{self.name} closed"))
                        self._jobs.clear()
                        return
                job = self._jobs[0] if self._jobs else None
                try:
                    admitted = job is not None and self._admit(job)
                except Exception as exc:  # handed to every caller waiting on it
                    self._fail_running(exc, job)
                    continue
                try:
                    if self._rows:
                        self._decode_once()
                    elif job is not None and not admitted:
                        raise RuntimeError("the engine admitted nothing and decodes nothing")
                except Exception as exc:
                    self._fail_running(exc, None)

    def _admit(self, job: _Job) -> bool:
        """Start the next part of `job` if it can run now; return whether anything changed."""
        if not job.pending or job.future.cancelled():
            # Admitted whole (its rows decode on), or its caller is gone.
            job.pending = []
            with self._wake:
                self._jobs.remove(job)
            return True
        why = self._static_unsupported()
        if why and self._rows:
            return False
        if not why and self._rows and not self._changed:
            return False  # nothing freed or arrived since the last try
        running = (len(self._rows), self._batch.capacity) if self._rows else (0, 0)
        take, reason = self._next_batch(job.members, job.pending, running)
        if not take:
            if self._rows:
                self._changed = False
                return False  # wait for the running batch to free rows and memory
            for index in job.pending:
                job.put(index, _skipped(job.members[index], reason))
            job.pending = []
            return True
        job.pending = [i for i in job.pending if i not in take]
        unit = _Unit(job, take, chunk=self.last_chunk, plan=self.last_plan, prefix=self.last_prefix)
        if why:
            self._run_eager(unit, why)
        else:
            self._join(unit)
        return True

    def _run_eager(self, unit: _Unit, why: str) -> None:
        """Run a unit alone with transformers' forward as the decode step (models the graph
        decode does not cover, `cuda_graph=0`)."""
        torch, _ = _import_torch()
        batch = unit.members
        started = unit.start()
        clock = _PhaseClock(torch, self._model.device)
        try:
            cache, logits, mask, positions, _length = _drain(self._prefill_steps(unit))
            prefill_s = clock.lap()
            with decode_kernels():
                steps = self._decode(batch, cache, logits, mask, positions)
            del cache, logits
            self.last_decode = {"path": "eager", "why": why, "steps": steps}
            self.last_decode.update(prefill_s=prefill_s, decode_s=clock.lap())
        except torch.OutOfMemoryError:
            self._out_of_memory([unit])
            return
        latency = time.perf_counter() - started
        for member, index in zip(batch, unit.indices, strict=True):
            unit.job.put(index, self._finish(member, latency))

    def _join(self, unit: _Unit) -> None:
        """Prefill a unit and add its rows to the running batch (or start one with them).

        The running batch takes one decode step after each prefill chunk, so its answers go on
        while a long prompt prefills; its rows wait at most one chunk.
        """
        torch, _ = _import_torch()
        unit.start()
        clock = _PhaseClock(torch, self._model.device)
        stepped = time.perf_counter()
        try:
            prefill = self._prefill_steps(unit)
            while True:
                try:
                    next(prefill)
                except StopIteration as done:
                    cache, logits, mask, positions, length = done.value
                    break
                if self._rows:
                    # Its tokens reach the host after the chunk queued before it: from one
                    # step's tokens to the next is how long the running rows wait.
                    self._decode_once()
                    self.engine_stats["steps_in_prefill"] += 1
                    now = time.perf_counter()
                    waited = max(self.engine_stats["longest_wait_s"], round(now - stepped, 3))
                    self.engine_stats["longest_wait_s"] = waited
                    stepped = now
            prefill_s = clock.lap()
            capacity = decode_capacity(length + unit.longest)
            decoder = _StaticDecoder(torch, self._model, cache, length, capacity, mask, positions)
            del cache
        except torch.OutOfMemoryError:
            self._out_of_memory([unit])
            return
        rows = [
            _Row(unit, m, i, _Sampler(torch, m.request, decoder.device), length)
            for m, i in zip(unit.members, unit.indices, strict=True)
        ]
        first = _choose(torch, logits, [r.sampler for r in rows])
        del logits
        self.engine_stats["units"] += 1
        self.engine_stats["prefill_s"] = prefill_s
        if not self._rows:
            self._batch, self._rows, self._tokens = decoder, rows, first
            self._clock = clock
            clock.lap()  # the decode phase starts here (the fixed cache is filled)
            return
        self.engine_stats["joined"] += 1
        try:
            capacity = max(capacity, self._batch.capacity)
            self._batch.rebuild(list(range(len(self._rows))), capacity, joining=decoder)
        except torch.OutOfMemoryError:
            decoder.close()
            self._out_of_memory([*{r.unit: None for r in self._rows}, unit])
            return
        self._rows = self._rows + rows
        self._tokens = torch.cat([self._tokens, first])
        _release(torch)

    def _decode_once(self) -> None:
        """Feed the chosen tokens and launch the next step before reading them, so the device
        never waits on the host's bookkeeping (stop strings, EOS); finish units that are done."""
        torch, _ = _import_torch()
        batch, rows, tokens = self._batch, self._rows, self._tokens
        cuda = batch.device.type == "cuda"
        host = torch.empty(len(rows), dtype=torch.long, pin_memory=cuda)
        host.copy_(tokens, non_blocking=cuda)
        ready = None
        if cuda:
            ready = torch.cuda.Event()
            ready.record()
        following = None
        # A row whose token now is its last by length needs no step after it.
        if any(not r.member.status and len(r.member.generated) + 1 < r.max_tokens for r in rows):
            try:
                following = _choose(torch, batch.step(tokens), [r.sampler for r in rows])
            except torch.OutOfMemoryError:
                self._out_of_memory(list({r.unit: None for r in rows}))
                return
            self.engine_stats["steps"] += 1
            self.engine_stats["row_steps"] += len(rows)
        if ready is not None:
            ready.synchronize()
        now = time.perf_counter()
        for row, token in zip(rows, host.tolist(), strict=True):
            if not row.member.status:
                self._accept(row.member, token, now)
                if not row.member.status and following is None:
                    row.member.status = "length"
        self._tokens = following
        done = [
            u
            for u in {r.unit: None for r in rows}
            if all(r.member.status for r in rows if r.unit is u)
        ]
        if not done:
            return
        for row in rows:
            if row.unit in done:
                row.unit.job.put(row.index, self._finish(row.member, now - row.unit.started))
        keep = [i for i, r in enumerate(rows) if r.unit not in done]
        self._changed = True
        if not keep:
            self._end_batch()
            return
        kept_rows = [rows[i] for i in keep]
        capacity = decode_capacity(max(r.length + r.max_tokens for r in kept_rows))
        try:
            batch.rebuild(keep, capacity)
        except torch.OutOfMemoryError:
            self._out_of_memory(list({r.unit: None for r in kept_rows}))
            return
        self._rows = kept_rows
        self._tokens = following.index_select(0, torch.tensor(keep, device=following.device))
        _release(torch)

    def _end_batch(self) -> None:
        torch, _ = _import_torch()
        batch = self._batch
        self.last_decode = batch.stats() if batch is not None else {}
        if self._clock is not None:
            self.last_decode.update(prefill_s=self.engine_stats["prefill_s"])
            self.last_decode.update(decode_s=self._clock.lap())
        if batch is not None:
            batch.close()
        self._batch, self._rows, self._tokens, self._clock = None, [], None, None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _out_of_memory(self, units: list[_Unit]) -> None:
        """Record `units` skipped after an out-of-memory error, free, and go on."""
        torch, _ = _import_torch()
        running = {r.unit for r in self._rows}
        if running & set(units):
            self._end_batch()
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        free = self.free_bytes()
        for unit in units:
            plan = unit.plan
            needed = plan.needed_bytes if plan is not None else 0
            reason = (
                insufficient_vram(needed, unit.tokens, len(unit.members), free)
                + " (out of memory while running; the plan said it fits)"
            )
            for member, index in zip(unit.members, unit.indices, strict=True):
                unit.job.put(index, _skipped(member, reason))
        self._changed = True

    def _fail_running(self, exc: BaseException, job: _Job | None) -> None:
        """Hand an unexpected error to every caller whose requests were running or starting."""
        jobs = {r.unit.job: None for r in self._rows}
        if job is not None:
            jobs[job] = None
            job.pending = []
        with contextlib.suppress(Exception):
            self._end_batch()
        self._batch, self._rows, self._tokens = None, [], None
        with self._wake:
            for failed in jobs:
                failed.fail(exc)
                if failed in self._jobs:
                    self._jobs.remove(failed)

    def _static_unsupported(self) -> str:
        """Return why units decode with the eager loop ("" when the graph step runs them)."""
        if not self.cuda_graph:
            return "cuda_graph off"
        return graph_unsupported(self._model)

    def _tokens_needed(self, member: _Member) -> int:
        return len(member.ids) + member.request.config.max_tokens

    def _next_batch(
        self, members: list[_Member], pending: list[int], running: tuple[int, int] = (0, 0)
    ) -> tuple[list[int], str]:
        """Return the members to run next (or none, with the reason).

        Alone: the largest prefix of `pending` whose plan fits. Beside `running` (rows, capacity
        of the batch decoding now): the whole of `pending` up to `max_batch` rows in all, when
        its join plan fits and joining pays (`join_pays`), else none (it waits; splitting it
        would prefill its prefix twice).
        """
        free = self.free_bytes()
        rows, capacity = running
        take = pending[: self.max_batch - rows] if rows else pending[: self.max_batch]
        if rows and len(take) < min(len(pending), self.max_batch):
            return [], "the running batch has no rows free"
        while take:
            batch = [members[i] for i in take]
            tokens = max(self._tokens_needed(m) for m in batch)
            prefix = _shared_prefix(batch)
            suffix = max(len(m.ids) for m in batch) - prefix
            self.last_chunk, plan = self.plan(tokens, len(batch), free, prefix, suffix, running)
            self.last_plan, self.last_prefix = plan, prefix
            if rows:
                pays = join_pays(
                    self.shape, rows=rows, capacity=capacity, tokens=tokens, sequences=len(take)
                )
                if plan.fits and pays:
                    return take, ""
                return [], plan.reason or "joining reads more than it saves"
            if plan.fits:
                return take, ""
            if len(take) == 1:
                return [], plan.reason
            take = take[: len(take) // 2]
        return [], "no request"

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
        model = self._model
        return bool(
            model is not None
            and chunk % CHUNK_QUANTUM == 0
            and getattr(model.device, "type", "") == "cuda"
            and self.shape.dtype_bytes == 2
            and cudnn_split["enabled"]
            and cudnn_split["gqa"]
        )

    @contextlib.contextmanager
    def prefill_context(self) -> Any:
        """Run the prefill inside: attention kernel order (`prefill_kernels`), fused RMSNorm,
        rotary embedding and SiLU-gated product (`fused_prefill_ops`)."""
        with prefill_kernels(), fused_prefill_norms(self._model), fused_prefill_ops(self._model):
            yield

    def prefill_ids(self, ids: Any, cache: Any, chunk: int) -> Any:
        """Prefill one sequence's token ids (a 1D tensor on the device) into `cache`, in chunks
        (`chunk_bounds`); return the last chunk's output (its last logits only)."""
        out = None
        for start, end in chunk_bounds(int(ids.shape[0]), chunk):
            out = self._model(
                input_ids=ids[start:end][None],
                **{self._cache_kw: cache},
                use_cache=True,
                logits_to_keep=1,
            )
        return out

    def _prefill_steps(self, unit: _Unit) -> Generator[None, None, tuple]:
        """Prefill a unit, yielding after each forward call; return its cache, last logits, 2D
        attention mask (None without padding), next positions and padded length.

        The members' shared prefix is prefilled once, in chunks (`chunk_bounds`), and its cache
        repeated per member; each member's tokens after it follow as one batch, left-padded to
        one length: the padding sits between prefix and suffix, masked out, and positions count
        only real tokens, so every member computes what it would alone.
        """
        torch, transformers = _import_torch()
        model = self._model
        device = model.device
        batch = unit.members
        count = len(batch)
        prefix = unit.prefix
        cache = transformers.DynamicCache(config=model.config)
        ids = torch.tensor(batch[0].ids[:prefix], device=device)
        for start, end in chunk_bounds(prefix, unit.chunk):
            with self.prefill_context():
                model(
                    input_ids=ids[start:end][None],
                    **{self._cache_kw: cache},
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
        rows = [[self._pad] * (longest - len(s)) + s for s in suffixes]
        input_ids = torch.tensor(rows, device=device)
        mask = positions = None
        if padded:
            mask = torch.ones(count, prefix + longest, dtype=torch.long, device=device)
            positions = torch.zeros(count, longest, dtype=torch.long, device=device)
            for row, suffix in enumerate(suffixes):
                pad = longest - len(suffix)
                mask[row, prefix : prefix + pad] = 0
                positions[row, pad:] = torch.arange(prefix, prefix + len(suffix), device=device)
                positions[row, :pad] = prefix
        step = max(1, unit.chunk // count)
        logits = None
        for start in range(0, longest, step):
            end = min(longest, start + step)
            kwargs: dict[str, Any] = {}
            if padded:
                kwargs["attention_mask"] = mask[:, : prefix + end]
                kwargs["position_ids"] = positions[:, start:end]
            with self.prefill_context():
                out = model(
                    input_ids=input_ids[:, start:end],
                    **{self._cache_kw: cache},
                    use_cache=True,
                    logits_to_keep=1,
                    **kwargs,
                )
            logits = out.logits[:, -1, :]
            del out
            yield
        following = torch.tensor([len(m.ids) for m in batch], device=device)
        return cache, logits, mask, following, prefix + longest

    def _decode(
        self, batch: list[_Member], cache: Any, logits: Any, mask: Any, positions: Any
    ) -> int:
        """Decode with the eager loop of forward calls; return the number of forward calls."""
        torch, _ = _import_torch()
        model = self._model
        device = model.device
        samplers = [_Sampler(torch, m.request, device) for m in batch]
        longest = max(m.request.config.max_tokens for m in batch)
        on_gpu = device.type == "cuda"
        tokens = _choose(torch, logits, samplers)
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
                    **{self._cache_kw: cache},
                    use_cache=True,
                    logits_to_keep=1,
                    **kwargs,
                )
                positions = positions + 1
                calls += 1
                next_tokens = _choose(torch, out.logits[:, -1, :], samplers)
            else:
                next_tokens = None
            if ready is not None:
                ready.synchronize()
            now = time.perf_counter()
            for member, token in zip(batch, host.tolist(), strict=True):
                if not member.status:
                    self._accept(member, token, now)
            if all(m.status for m in batch) or next_tokens is None:
                break
            tokens = next_tokens
        for member in batch:
            if not member.status:
                member.status = "length"
        return calls

    def _accept(self, member: _Member, token: int, now: float) -> None:
        config = member.request.config
        if token in self._eos:
            member.status = "ok"
            return
        member.generated.append(token)
        if config.stop:
            longest = max(len(s) for s in config.stop)
            tail = self._tok.decode(member.generated[-(longest + 8) :], skip_special_tokens=True)
            if any(s in tail for s in config.stop):
                member.status = "ok"
                member.stop_at = 1
                return
        if len(member.generated) >= config.max_tokens:
            member.status = "length"
        elif member.deadline is not None and now > member.deadline:
            member.status = "timeout"

    def _finish(self, member: _Member, latency: float) -> Generation:
        text = self._tok.decode(member.generated, skip_special_tokens=True)
        if member.stop_at >= 0:
            cuts = [text.find(s) for s in member.request.config.stop if s in text]
            text = text[: min(cuts)] if cuts else text
        answer, reasoning = split_reasoning(text)
        error = ""
        if member.status == "timeout":
            error = f"exceeded {member.request.timeout_s:.0f}s"
        return Generation(
            text=answer,
            reasoning=reasoning,
            status=member.status,  # type: ignore[arg-type]
            prompt_tokens=len(member.ids),
            completion_tokens=len(member.generated),
            latency_s=latency,
            error=error,
        )

    async def aclose(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._engine is not None:
            self._engine.join()
        with self._wake:
            self._engine, self._closing = None, False
        with self._lock:
            if self._model is not None:
                self._model = None
                gc.collect()
                torch, _ = _import_torch()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()


class _Sampler:
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


class _StaticDecoder:
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
    ) -> None:
        self.torch = torch
        self.model = model
        self.device = model.device
        inner = model.model
        self.layers = list(inner.layers)
        config = model.config
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        first = self.layers[0].self_attn
        self.head_dim = int(getattr(first, "head_dim", 0) or config.hidden_size // self.heads)
        self.rotary = _rotary(model, first)
        self.rope = _rope_function(first)
        self.capacity = capacity
        self.block = DECODE_BLOCK if capacity > DECODE_BLOCK else capacity
        self.keys: list[Any] = []
        self.values: list[Any] = []
        for index in range(len(self.layers)):
            # One layer at a time: the prompt's cache is freed as the fixed one fills.
            key, value = _take_layer(cache, index)
            self.keys.append(_fixed_copy(torch, key, capacity))
            self.values.append(_fixed_copy(torch, value, capacity))
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
        self.steps = 0
        self.largest = batch

    def step(self, tokens: Any) -> Any:
        """Return the logits (batch, vocab) after feeding `tokens`, one per row."""
        self.tokens.copy_(tokens)
        if self.path == "graph" and self.graph is None:
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

    def rebuild(
        self, keep: list[int], capacity: int, joining: _StaticDecoder | None = None
    ) -> None:
        """Keep rows `keep` (in that order), then `joining`'s rows, over `capacity` slots.

        Layer by layer, each old layer freed once copied. Slots past what a row wrote are zero
        (finite: masked scores are -inf, but NaN in values would still poison the product).
        """
        torch = self.torch
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        kept = len(keep)
        rows = kept + (joining.rows if joining is not None else 0)
        for store, other in (
            (self.keys, joining.keys if joining is not None else None),
            (self.values, joining.values if joining is not None else None),
        ):
            for layer, old in enumerate(store):
                _, heads, width, dim = old.shape
                new = old.new_zeros((rows, heads, capacity, dim))
                span = min(capacity, width)
                for row, source in enumerate(keep):
                    new[row, :, :span].copy_(old[source, :, :span])
                if other is not None:
                    theirs = other[layer]
                    new[kept:, :, : min(capacity, theirs.shape[2])].copy_(theirs[:, :, :capacity])
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
            with torch.cuda.graph(graph):
                self.logits = self._forward()
            self.graph = graph
            self.captures += 1
        except RuntimeError as exc:
            # A model the capture cannot take still decodes right with the same step, eagerly.
            torch.cuda.synchronize(self.device)
            self.graph = self.logits = None
            self.path, self.why = "static", f"capture failed: {str(exc)[:200]}"
        self.capture_s += time.perf_counter() - started

    def _forward(self) -> Any:
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
            x = _rms_norm(torch, layer.input_layernorm, hidden)
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
            hidden = hidden + layer.mlp(_rms_norm(torch, layer.post_attention_layernorm, hidden))
        hidden = _rms_norm(torch, inner.norm, hidden)
        return self.model.lm_head(hidden[:, -1, :])

    def _rope_tables(self, cos: Any, sin: Any) -> tuple[Any, Any, Any]:
        """Return (cos, sin, sin with its first half negated), each (batch, 1, 1, dim)."""
        torch = self.torch
        cos, sin = cos[:, None], sin[:, None]
        if not FAST_ROPE["enabled"] or cos.shape[-1] != self.head_dim:
            return cos[:, 0], sin[:, 0], None
        half = self.head_dim // 2
        return cos, sin, torch.cat([-sin[..., :half], sin[..., half:]], dim=-1)

    def _apply_rope(self, query: Any, key: Any, rope: tuple[Any, Any, Any]) -> tuple[Any, Any]:
        """Return query and key rotated, as transformers' `apply_rotary_pos_emb` does.

        Its rotate_half (slice, negate, concatenate) times sin equals rolling by half the head
        and multiplying by sin with its first half negated; doing query and key together, that
        is 5 kernels a layer instead of 10 (each a few microseconds in a 7B decode step).
        """
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
            "steps": self.steps,
            "capacity": self.capacity,
            "largest_batch": self.largest,
        }

    def close(self) -> None:
        """Drop the graph (and its memory pool) and the fixed cache."""
        self.graph = self.logits = None
        self.keys.clear()
        self.values.clear()


FAST_ROPE = {"enabled": True}
"""Whether the graph decode rotates query and key together by a roll (see `_apply_rope`)."""
FUSED_NORM = {"enabled": True}
"""Whether the graph decode computes RMSNorm with torch's fused kernel (one launch, not seven)."""


def _rms_norm(torch: Any, norm: Any, hidden: Any) -> Any:
    """Return `norm(hidden)` for a Llama-style RMSNorm, in one fused kernel where torch has one.

    Same arithmetic as transformers' module (float32 normalisation, cast back, times the weight);
    a decode step runs 2 norms per layer, each 7 small kernels unfused, at ~2 us each even inside
    a graph.
    """
    eps = getattr(norm, "variance_epsilon", None)
    fused = getattr(torch.nn.functional, "rms_norm", None)
    if not FUSED_NORM["enabled"] or eps is None or fused is None:
        return norm(hidden)
    normed = fused(hidden.float(), (hidden.shape[-1],), eps=eps)
    return norm.weight * normed.to(hidden.dtype)


FUSED_PREFILL_NORM = {"enabled": True}
"""Whether prefill on CUDA runs Llama-family RMSNorms as torch's fused kernel (`fused_prefill_norms`)."""


@contextlib.contextmanager
def fused_prefill_norms(model: Any) -> Any:
    """Run the RMSNorms of a Llama-family model on CUDA as one fused kernel while inside.

    transformers' RMSNorm is 7 elementwise kernels over float32 copies (about 36 bytes of memory
    traffic per element, twice per layer and token: some 9% of a 7B prefill's dense-matmul
    time); the fused kernel reads and writes the bf16 tensor once. Same arithmetic (float32
    normalisation, rounded to the input dtype, then times the weight in that dtype); only the
    order of the float32 sum of squares differs. Yields the number of modules switched.
    """
    import torch

    switched = []
    kind = str(getattr(getattr(model, "config", None), "model_type", ""))
    fused = getattr(torch.nn.functional, "rms_norm", None)
    device = getattr(model, "device", None)
    if (
        FUSED_PREFILL_NORM["enabled"]
        and fused is not None
        and kind in _GRAPH_MODEL_TYPES
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


FUSED_PREFILL_OPS: dict[str, Any] = {"enabled": True, "error": ""}
"""Whether prefill on CUDA runs the rotary embedding and `silu(gate) * up` of Llama-family
models as Triton kernels (`fused_prefill_ops`); the error that turned it off."""


@contextlib.contextmanager
def fused_prefill_ops(model: Any) -> Any:
    """Run a Llama-family model's rotary embedding and SiLU-gated MLP product on CUDA as one
    Triton kernel each while inside (models/hf_triton.py: bit-identical to transformers' in 16
    bits). Yields the number of MLPs switched (0 where it does not apply)."""
    kind = str(getattr(getattr(model, "config", None), "model_type", ""))
    device = getattr(model, "device", None)
    layers = getattr(getattr(model, "model", None), "layers", None) or []
    if (
        not FUSED_PREFILL_OPS["enabled"]
        or kind not in _GRAPH_MODEL_TYPES
        or getattr(device, "type", "") != "cuda"
        or not layers
        or importlib.util.find_spec("triton") is None
    ):
        yield 0
        return
    import sys

    from longscope.models import hf_triton

    module = sys.modules.get(type(layers[0].self_attn).__module__)
    original = getattr(module, "apply_rotary_pos_emb", None)

    def rotate(q: Any, k: Any, cos: Any, sin: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            FUSED_PREFILL_OPS["enabled"]
            and not args
            and kwargs.get("unsqueeze_dim", 1) == 1
            and hf_triton.rope_fits(q, cos, sin)
            and hf_triton.rope_fits(k, cos, sin)
        ):
            try:
                return hf_triton.rope(q, cos, sin), hf_triton.rope(k, cos, sin)
            except Exception as exc:  # a Triton that cannot build it: transformers' is exact
                FUSED_PREFILL_OPS["enabled"], FUSED_PREFILL_OPS["error"] = False, str(exc)[:300]
        return original(q, k, cos, sin, *args, **kwargs)

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
                mlp.forward = functools.partial(_fused_mlp_forward, mlp)
                switched.append(mlp)
    if original is not None:
        module.apply_rotary_pos_emb = rotate
    try:
        yield len(switched)
    finally:
        if original is not None:
            module.apply_rotary_pos_emb = original
        for mlp in switched:
            del mlp.forward


def _fused_mlp_forward(mlp: Any, hidden: Any) -> Any:
    gate, up = mlp.gate_proj(hidden), mlp.up_proj(hidden)
    if FUSED_PREFILL_OPS["enabled"] and gate.is_cuda:
        from longscope.models import hf_triton

        try:
            return mlp.down_proj(hf_triton.silu_mul(gate, up))
        except Exception as exc:  # a Triton that cannot build it: torch's two kernels are exact
            FUSED_PREFILL_OPS["enabled"], FUSED_PREFILL_OPS["error"] = False, str(exc)[:300]
    return mlp.down_proj(mlp.act_fn(gate) * up)


def _fused_norm_forward(module: Any, hidden: Any) -> Any:
    import torch

    normed = torch.nn.functional.rms_norm(hidden, (hidden.shape[-1],), eps=module.variance_epsilon)
    return module.weight * normed


class _PhaseClock:
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


def graph_unsupported(model: Any) -> str:
    """Return why the graph decode cannot run `model` ("" when it can)."""
    config = model.config
    kind = str(getattr(config, "model_type", ""))
    if kind not in _GRAPH_MODEL_TYPES:
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
    rotary = _rotary(model, first)
    if rotary is None or _rope_function(first) is None:
        return "no rotary embedding"
    rope = str(getattr(rotary, "rope_type", "default"))
    if "dynamic" in rope or "longrope" in rope:
        # Their frequencies change with the sequence length; a graph would freeze them.
        return f"rope type {rope}"
    return ""


def _rotary(model: Any, attn: Any) -> Any:
    """Return the rotary embedding module (per attention in newer transformers, else per model)."""
    return getattr(attn, "rotary_emb", None) or getattr(model.model, "rotary_emb", None)


def _rope_function(attn: Any) -> Any:
    """Return the `apply_rotary_pos_emb` of the module that defines the attention class."""
    import sys

    module = sys.modules.get(type(attn).__module__)
    return getattr(module, "apply_rotary_pos_emb", None)


def _take_layer(cache: Any, index: int) -> tuple[Any, Any]:
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


def _fixed_copy(torch: Any, tensor: Any, capacity: int) -> Any:
    """Return `tensor` (batch, heads, length, dim) copied into a zeroed buffer of `capacity`.

    The slots past the prompt must hold finite numbers: a masked score is -inf, but garbage
    (NaN) in keys or values would still turn the softmax or the value product into NaN.
    """
    batch, heads, length, dim = tensor.shape
    fixed = torch.empty(batch, heads, capacity, dim, dtype=tensor.dtype, device=tensor.device)
    fixed[:, :, :length].copy_(tensor)
    fixed[:, :, length:].zero_()
    return fixed


def _choose(torch: Any, logits: Any, samplers: list[_Sampler]) -> Any:
    """Return one token per row; greedy rows in one argmax, sampled rows with their generators."""
    if all(s.generator is None for s in samplers):
        return logits.argmax(dim=-1)
    rows = [s.pick(torch, logits[i]) for i, s in enumerate(samplers)]
    return torch.cat(rows).view(-1)


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
    """Return a context that keeps prefill attention off cuDNN unless `_attention` asks for it.

    torch 2.11 on Hopper tries cuDNN first, and cuDNN builds a graph for every new shape: 100-750
    ms measured on an H200 (BENCHMARKS.md), paid again by every document whose last chunk has a
    new length. `_attention` picks cuDNN itself for shapes that recur (`_recurring`).
    """
    return _kernel_order(cudnn_first=False)


def _kernel_order(cudnn_first: bool) -> Any:
    import contextlib

    from torch.nn.attention import SDPBackend, sdpa_kernel

    order = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    if cudnn_first:
        order.insert(0, SDPBackend.CUDNN_ATTENTION)
    try:
        return sdpa_kernel(order, set_priority=True)
    except TypeError:  # torch without set_priority: the listed kernels, in torch's order
        return sdpa_kernel(order) if cudnn_first else contextlib.nullcontext()


CUDNN_SPLIT_MIN_QUERIES = 256
"""Chunks of fewer queries keep the flash path: a short suffix does not earn back cuDNN's setup."""
SHAPE_QUANTUM = CHUNK_QUANTUM
"""cuDNN takes only lengths in whole quanta: full prefill chunks at whole-chunk offsets recur
from document to document, so their graphs are built once per process, not once per document."""
cudnn_split: dict[str, Any] = {"enabled": True, "gqa": True, "used": 0, "error": ""}
"""Whether prefill may use cuDNN attention (and with grouped KV heads unrepeated); how many
chunks ran as two cuDNN calls; the last error that turned an option off."""


def _recurring(*lengths: int) -> bool:
    return all(n % SHAPE_QUANTUM == 0 for n in lengths)


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


def _release(torch: Any) -> None:
    """Hand the blocks a rebuild freed back to the device: they are smaller than what the next
    rebuild allocates, and `free_bytes` would count them as free."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _skipped(member: _Member, reason: str) -> Generation:
    return Generation(text="", status="skipped", prompt_tokens=len(member.ids), error=reason)


def _shared_prefix(members: list[_Member]) -> int:
    """Return the tokens a batch prefills once: the members' common prefix, leaving each member
    at least its last token to prefill as a batch (its logits start the decode)."""
    return min(_common_prefix([m.ids for m in members]), min(len(m.ids) for m in members) - 1)


def _common_prefix(sequences: list[list[int]]) -> int:
    """Return the length of the longest common prefix of token id lists."""
    first = sequences[0]
    length = len(first)
    for other in sequences[1:]:
        limit = min(length, len(other))
        same = 0
        while same < limit and first[same] == other[same]:
            same += 1
        length = same
    return length


def _max_positions(config: Any) -> int:
    text = getattr(config, "text_config", None) or config
    return int(getattr(text, "max_position_embeddings", 0) or 0)


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), model.config, tokenizer):
        value = getattr(source, "eos_token_id", None)
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list | tuple):
            ids.update(int(v) for v in value)
    return frozenset(ids)


def _torch_dtype(torch: Any, name: str) -> Any:
    key = name.removeprefix("torch.").lower()
    table = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16}
    table.update({"fp16": torch.float16, "float32": torch.float32, "fp32": torch.float32})
    if key not in table:
        raise UsageError(f"bad dtype {name!r}: use bfloat16, float16 or float32")
    return table[key]


def _import_torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise UsageError(
            "the hf backend needs torch and transformers: pip install 'longscope[gpu]'"
        ) from exc
    return torch, transformers


_registered = False


def _register_attention(requested: str | None) -> str:
    """Return the attention implementation to load with, registering ours on first use.

    flash-attn when installed; otherwise SDPA with a lower-right causal bias for chunks that
    follow a cached prefix, which keeps the flash kernel without building a mask.
    """
    global _registered
    if requested:
        return requested
    if importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    if not _registered:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

        AttentionInterface.register(ATTENTION, _attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, _padding_mask)
        _registered = True
    return ATTENTION


def _padding_mask(*args: Any, **kwargs: Any) -> Any:
    """Return transformers' SDPA mask only when the batch has padding; causal is implied otherwise."""
    if kwargs.get("attention_mask") is None:
        return None
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(*args, **kwargs)


def _attention(
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
    elif q_len == kv_len:
        # Measured on an H200: cuDNN 66-69% of the matmul peak at 32K-128K in one call, flash
        # 48-56%; equal at 8K.
        cudnn = (
            cudnn_split["enabled"]
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
            cudnn_split["enabled"]
            and q_len >= CUDNN_SPLIT_MIN_QUERIES
            and query.is_cuda
            and query.dtype in (torch.bfloat16, torch.float16)
            and _recurring(q_len, kv_len)
        ):
            out = _cudnn_split_any(query, key, value, scaling, groups)
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
    query: Any, key: Any, value: Any, scaling: float | None, groups: int
) -> Any | None:
    """Return `_cudnn_after_prefix`, with grouped KV heads as they are where cuDNN takes them
    (no repeated copy of the prefix's keys and values), else repeated; None if cuDNN fails."""
    if groups > 1 and cudnn_split["gqa"]:
        try:
            out = _cudnn_after_prefix(query, key, value, scaling)
            cudnn_split["used"] += 1
            return out
        except RuntimeError as exc:
            cudnn_split["gqa"], cudnn_split["error"] = False, str(exc)[:300]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    try:
        out = _cudnn_after_prefix(query, key, value, scaling)
    except RuntimeError as exc:
        # No cuDNN attention for this build or shape: the flash path is exact too.
        cudnn_split["enabled"], cudnn_split["error"] = False, str(exc)[:300]
        return None
    cudnn_split["used"] += 1
    return out


def _cudnn_after_prefix(query: Any, key: Any, value: Any, scaling: float | None) -> Any:
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
