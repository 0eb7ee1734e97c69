"""Hugging Face transformers models on a GPU: one prefill per shared prefix, VRAM-aware skipping.

torch and transformers are imported lazily (the optional `gpu` extra), so longscope imports and its
CI runs without them. The decode loop is a plain loop of forward calls over a KV cache, not
`generate`: it prefills a group's shared prefix once in chunks (bounded activation memory at 128K
and beyond), copies the cache per member, and decodes the members as one batch. Each member samples
with its own seeded generator, so a request gives the same tokens alone or in a batch.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import importlib.util
import inspect
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from longscope.models.base import ModelInfo, UsageError, split_reasoning
from longscope.models.memory_plan import GIB, ModelShape, insufficient_vram, plan_memory
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
)


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


class HFBackend:
    """One transformers causal LM on one device. Requests run one group at a time."""

    max_concurrency = 1

    def __init__(
        self,
        name: str,
        *,
        prompt_mode: PromptMode = "chat",
        context_length: int = 0,
        dtype: str = "bfloat16",
        attn_implementation: str | None = None,
        device: str | None = None,
        prefill_chunk: int = 8192,
        max_batch: int = 16,
        vram_gib: float | None = None,
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
        self.prefill_chunk = max(1, prefill_chunk)
        self.max_batch = max(1, max_batch)
        self.vram_gib = vram_gib
        """Free device memory to plan against, instead of measuring it (tests, shared cards)."""
        self._model = model
        self._tok = tokenizer
        self._lock = threading.Lock()
        self.last_plan: Any = None
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
            prefill_chunk=int(options.pop("prefill_chunk", 8192)),
            max_batch=int(options.pop("max_batch", 16)),
            vram_gib=float(vram) if vram is not None else None,
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
                "prefill_chunk": self.prefill_chunk,
                "kv_bytes_per_token": self.shape.kv_bytes_per_token,
                "free_gib": round(self.free_bytes() / GIB, 2),
            },
        )

    def tokenizer(self) -> HFTokenizerAdapter:
        self._load()
        return HFTokenizerAdapter(self._tok, self.model_name)

    # -- memory ------------------------------------------------------------------------------

    def free_bytes(self) -> int:
        """Return the device bytes free for a new request (what torch has cached counts as free)."""
        if self.vram_gib is not None:
            return int(self.vram_gib * GIB)
        torch, _ = _import_torch()
        device = self._model.device
        if device.type != "cuda":
            import os

            pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            return int(pages)
        free, _total = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + cached)

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: Request) -> Generation:
        await self._ensure_loaded()
        return (await asyncio.to_thread(self._generate_group_sync, [request]))[0]

    async def generate_group(self, requests: Sequence[Request]) -> list[Generation]:
        """Return one generation per request, prefilling the requests' shared prefix once."""
        await self._ensure_loaded()
        return await asyncio.to_thread(self._generate_group_sync, list(requests))

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

    def _generate_group_sync(self, requests: list[Request]) -> list[Generation]:
        with self._lock:
            started = time.perf_counter()
            members = [_Member(r, self.encode_request(r)) for r in requests]
            results: list[Generation | None] = [None] * len(members)
            pending = list(range(len(members)))
            while pending:
                batch_idx, reason = self._next_batch(members, pending)
                if not batch_idx:
                    for i in pending:
                        results[i] = _skipped(members[i], reason)
                    break
                pending = [i for i in pending if i not in batch_idx]
                batch = [members[i] for i in batch_idx]
                for i, gen in zip(batch_idx, self._run_batch_safely(batch, started), strict=True):
                    results[i] = gen
            return [r for r in results if r is not None]

    def _tokens_needed(self, member: _Member) -> int:
        return len(member.ids) + member.request.config.max_tokens

    def _next_batch(self, members: list[_Member], pending: list[int]) -> tuple[list[int], str]:
        """Return the largest prefix of `pending` whose plan fits (or none, with the reason)."""
        free = self.free_bytes()
        take = pending[: self.max_batch]
        while take:
            batch = [members[i] for i in take]
            tokens = max(self._tokens_needed(m) for m in batch)
            prefix = _common_prefix([m.ids for m in batch])
            prefix = min(prefix, min(len(m.ids) for m in batch) - 1)
            suffix = max(len(m.ids) for m in batch) - prefix
            plan = plan_memory(
                self.shape,
                tokens,
                len(batch),
                free,
                chunk=self.prefill_chunk,
                prefix=prefix,
                suffix=suffix,
            )
            self.last_plan = plan
            if plan.fits:
                return take, ""
            if len(take) == 1:
                return [], plan.reason
            take = take[: len(take) // 2]
        return [], "no request"

    def _run_batch_safely(self, batch: list[_Member], started: float) -> list[Generation]:
        torch, _ = _import_torch()
        try:
            return self._run_batch(batch, started)
        except torch.OutOfMemoryError:
            # The plan under-counted (fragmentation, another process): record it, free, go on.
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            tokens = max(self._tokens_needed(m) for m in batch)
            plan = self.last_plan
            needed = plan.needed_bytes if plan is not None else 0
            reason = (
                insufficient_vram(needed, tokens, len(batch), self.free_bytes())
                + " (out of memory while running; the plan said it fits)"
            )
            return [_skipped(m, reason) for m in batch]

    def _run_batch(self, batch: list[_Member], started: float) -> list[Generation]:
        torch, transformers = _import_torch()
        model = self._model
        device = model.device
        count = len(batch)
        for member in batch:
            timeout = member.request.timeout_s
            member.deadline = started + timeout if timeout else None
        prefix = min(_common_prefix([m.ids for m in batch]), min(len(m.ids) for m in batch) - 1)
        cache = transformers.DynamicCache(config=model.config)
        with torch.inference_mode():
            ids = torch.tensor(batch[0].ids[:prefix], device=device)
            for start in range(0, prefix, self.prefill_chunk):
                chunk = ids[start : start + self.prefill_chunk][None]
                model(input_ids=chunk, **{self._cache_kw: cache}, use_cache=True, logits_to_keep=1)
            if count > 1 and prefix:
                cache.batch_repeat_interleave(count)
            logits, mask, positions = self._prefill_suffixes(batch, prefix, cache)
            with decode_kernels():
                self._decode(batch, cache, logits, mask, positions)
            del cache, logits
        latency = time.perf_counter() - started
        return [self._finish(m, latency) for m in batch]

    def _prefill_suffixes(self, batch: list[_Member], prefix: int, cache: Any) -> tuple:
        """Prefill each member's tokens after the prefix, left-padded to one length; return the
        last logits, the 2D attention mask (None without padding) and next positions."""
        torch, _ = _import_torch()
        model = self._model
        device = model.device
        suffixes = [m.ids[prefix:] for m in batch]
        longest = max(len(s) for s in suffixes)
        padded = any(len(s) != longest for s in suffixes)
        rows = [[self._pad] * (longest - len(s)) + s for s in suffixes]
        input_ids = torch.tensor(rows, device=device)
        mask = positions = None
        if padded:
            # Padding sits between the shared prefix and each suffix: masked out, and positions
            # count only real tokens, so every member computes what it would alone.
            mask = torch.ones(len(batch), prefix + longest, dtype=torch.long, device=device)
            pos = torch.zeros(len(batch), longest, dtype=torch.long, device=device)
            for row, suffix in enumerate(suffixes):
                pad = longest - len(suffix)
                mask[row, prefix : prefix + pad] = 0
                pos[row, pad:] = torch.arange(prefix, prefix + len(suffix), device=device)
                pos[row, :pad] = prefix
            positions = pos
        step = max(1, self.prefill_chunk // len(batch))
        logits = None
        for start in range(0, longest, step):
            end = min(longest, start + step)
            kwargs: dict[str, Any] = {}
            if padded:
                kwargs["attention_mask"] = mask[:, : prefix + end]
                kwargs["position_ids"] = positions[:, start:end]
            out = model(
                input_ids=input_ids[:, start:end],
                **{self._cache_kw: cache},
                use_cache=True,
                logits_to_keep=1,
                **kwargs,
            )
            logits = out.logits[:, -1, :]
        next_positions = torch.tensor([len(m.ids) for m in batch], device=device)
        return logits, mask, next_positions

    def _decode(
        self, batch: list[_Member], cache: Any, logits: Any, mask: Any, positions: Any
    ) -> None:
        torch, _ = _import_torch()
        model = self._model
        device = model.device
        samplers = [_Sampler(torch, m.request, device) for m in batch]
        longest = max(m.request.config.max_tokens for m in batch)
        on_gpu = device.type == "cuda"
        tokens = _choose(torch, logits, samplers)
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


def _skipped(member: _Member, reason: str) -> Generation:
    return Generation(text="", status="skipped", prompt_tokens=len(member.ids), error=reason)


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
        out = F.scaled_dot_product_attention(
            query, key, value, is_causal=True, scale=scaling, enable_gqa=groups > 1
        )
    else:
        from torch.nn.attention.bias import causal_lower_right

        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=causal_lower_right(q_len, kv_len), scale=scaling
        )
        del key, value
    return out.transpose(1, 2).contiguous(), None
