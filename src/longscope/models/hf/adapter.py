"""The hf backend's face: options, loading, model description, and requests handed to the engine."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from longscope.errors import UsageError
from longscope.models.base import CHAT_PROBE, Backend, ModelInfo, OnResult
from longscope.models.hf.build_ahead import BuildAhead
from longscope.models.hf.checks import check_tokenizer
from longscope.models.hf.engine import Engine
from longscope.models.hf.kernels import import_torch, register_attention
from longscope.models.hf.loading import move_to_device
from longscope.models.hf.members import Member
from longscope.models.hf.prefill import prefill_context, prefill_ids
from longscope.models.memory_plan import GIB, PREFILL_CHUNK_MAX
from longscope.models.registry import option
from longscope.models.thinking import (
    THINKING_OPTION,
    ThinkingFormat,
    TokenBudget,
    opened_by,
    thinking_format,
)
from longscope.types import Generation, Message, PromptMode, Request

if TYPE_CHECKING:
    from longscope.models.hf.devices import DeviceSet

_BUILDING = threading.Lock()

HF_OPTIONS = (
    option("context_length", "tokens", None, "tokens the model holds; unset: its config", low=1),
    option("prompt_mode", "choice", "chat", "chat (instruct) or completion (base)",
           choices=("chat", "completion")),
    option("dtype", "str", "bfloat16", "weights' dtype: bfloat16, float16 or float32"),
    option("attn_implementation", "str", None, "transformers' attention; unset: flash-attn "
           "where installed, else longscope's SDPA"),
    option("device", "str", None, "torch device; unset: cuda where available, else cpu"),
    option("prefill_chunk", "tokens", None, "tokens per prefill chunk; unset: the largest "
           "multiple of 1024 the memory plan fits", low=1),
    option("max_batch", "int", 32, "rows decoding together at most", low=1),
    option("vram_gib", "float", None, "device memory longscope may hold, weights included; "
           "unset: the card's", low=0),
    option("cuda_graph", "bool", True, "decode Llama-family models with the CUDA-graph step"),
    option("devices", "str", None, "one engine per device: all, or CUDA indices such as 0,1 "
           "(cpu: a CPU engine); documents are spread by prefill cost"),
    THINKING_OPTION,
)  # fmt: skip
"""The hf backend's `-M` options (typed and checked by the registry before `from_options`)."""


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


def hf_tokenizer(name: str) -> HFTokenizerAdapter:
    """Return the tokenizer of the Hub model or folder `name` alone (no weights loaded)."""
    _torch, transformers = import_torch()
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
        kind = str(getattr(transformers.AutoConfig.from_pretrained(name), "model_type", ""))
    except OSError as exc:
        raise UsageError(f"cannot load {name!r}: {exc}") from exc
    check_tokenizer(tokenizer, name, kind)
    return HFTokenizerAdapter(tokenizer, name)


class HFBackend(Backend):
    """One transformers causal LM on one device, driven by one engine thread (`engine`).

    Groups queue; the engine prefills each (one prefill per shared prefix) and decodes its
    members in one batch with the groups already decoding, where the memory plan and the bytes a
    step reads allow (continuous batching over a fixed-capacity cache, one decode slot per row).
    """

    DESCRIPTION = "Hugging Face transformers on a GPU (hf/HUB_NAME or hf/FOLDER)"
    OPTIONS = HF_OPTIONS
    max_concurrency = 8
    """Groups the runner hands over at once: the engine queues them and prefills the next while
    the running batch decodes."""
    shares_prefill = True
    """A group's shared prefix is prefilled once and its members decode in one batch."""
    group_results_as_they_come = False
    bounds_own_deadline = True
    """The engine queues groups and times each member from its admission to the device (a
    deadline from the hand-over would count the time spent queued behind other groups)."""

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
        thinking: str | None = None,
    ) -> None:
        self.name = f"hf/{name}"
        self.model_name = name
        self.prompt_mode = prompt_mode
        self.requested_context = context_length
        self.dtype_name = dtype
        self.attn_implementation = attn_implementation
        self.device_name = device
        self.engine = Engine(
            self.name,
            prefill_chunk=prefill_chunk,
            max_batch=max_batch,
            vram_gib=vram_gib,
            cuda_graph=cuda_graph,
        )
        """The scheduler that owns the device: its settings, kernel switches and statistics."""
        self._model = model
        self._tok = tokenizer
        self.weights_moved = "given" if model is not None else ""
        """How the weights reached the device (`loading.move_to_device`; "given": built by the
        caller)."""
        self._ahead: BuildAhead | None = None
        self.thinking: ThinkingFormat = thinking_format(thinking)
        self._lock = threading.Lock()
        if model is not None:
            self._prepare_model(model)

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> HFBackend | DeviceSet:
        """Build from a Hub model name or local folder and typed `-M` options (`OPTIONS`); with
        `devices`, one backend per device (`DeviceSet`)."""
        if options.get("devices"):
            from longscope.models.hf.devices import DeviceSet

            return DeviceSet.from_options(
                name, options, options["devices"], cls.from_options, hf_tokenizer
            )
        return cls(
            name,
            prompt_mode=options.get("prompt_mode", "chat"),
            context_length=options.get("context_length") or 0,
            dtype=options.get("dtype", "bfloat16"),
            attn_implementation=options.get("attn_implementation"),
            device=options.get("device"),
            prefill_chunk=options.get("prefill_chunk"),
            max_batch=options.get("max_batch", 32),
            vram_gib=options.get("vram_gib"),
            cuda_graph=options.get("cuda_graph", True),
            thinking=options.get("thinking_format"),
        )

    # -- loading -----------------------------------------------------------------------------

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                torch, transformers = import_torch()
                try:
                    # One model built at a time in the process: transformers sets torch's
                    # default dtype process-wide while it builds one (engines on several
                    # devices load in parallel threads); the copies to the devices overlap.
                    with _BUILDING:
                        tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name)
                        config = transformers.AutoConfig.from_pretrained(self.model_name)
                        # Before the weights: a wrong tokenizer fails in a second, not after a load.
                        kind = str(getattr(config, "model_type", ""))
                        check_tokenizer(tokenizer, self.model_name, kind, self.prompt_mode)
                        dtype = _torch_dtype(torch, self.dtype_name)
                        attention = register_attention(self.attn_implementation)
                        self._ahead = ahead = BuildAhead.start(
                            torch, transformers, config, dtype, self._device(torch),
                            self.engine.kernels, self.engine.max_batch, attention,
                            decode=self.engine.cuda_graph,
                        )  # fmt: skip
                        try:
                            model = transformers.AutoModelForCausalLM.from_pretrained(
                                self.model_name, dtype=dtype, attn_implementation=attention
                            )
                        except BaseException:
                            ahead.stop()
                            ahead.join()
                            raise
                except OSError as exc:
                    raise UsageError(f"cannot load {self.model_name!r}: {exc}") from exc
                try:
                    self.weights_moved = move_to_device(torch, model, self._device(torch))
                finally:
                    ahead.join()
                self._tok = tokenizer
                self._prepare_model(model)
                self._model = model
            if self.prompt_mode == "chat" and not getattr(self._tok, "chat_template", None):
                raise UsageError(
                    f"{self.model_name} has no chat template: use -M prompt_mode=completion "
                    "(base model)"
                )
        return self._model

    @property
    def kernels_built_ahead(self) -> str:
        """What the load's build ahead of the run's Triton kernels did, as far as it has
        (`BuildAhead.summary`; "" for a model the caller built)."""
        return self._ahead.summary if self._ahead is not None else ""

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
            config._attn_implementation = register_attention(None)
        self._eos = _eos_ids(model, self._tok)
        self.engine.attach(model, self._tok, self._eos)

    async def _ensure_loaded(self) -> Any:
        if self._model is not None:
            return self._model
        return await asyncio.to_thread(self._load)

    async def info(self) -> ModelInfo:
        model = await self._ensure_loaded()
        config = model.config
        trained = _max_positions(config)
        length, source = self._held(config), "user" if self.requested_context else "config"
        digest = hashlib.sha256(config.to_json_string().encode()).hexdigest()[:12]
        assert self.engine.shape is not None
        return ModelInfo(
            model_id=f"hf:{self.model_name}:{digest}",
            context_length=length,
            context_source=source if length else "unknown",
            prompt_mode=self.prompt_mode,
            tokenizer=self.model_name,
            chat_overhead=await asyncio.to_thread(self.chat_overhead),
            details={
                "dtype": str(model.dtype),
                "attention": config._attn_implementation,
                "device": str(model.device),
                "max_position_embeddings": trained,
                "prefill_chunk": self.engine.prefill_chunk or f"auto (at most {PREFILL_CHUNK_MAX})",
                "kv_bytes_per_token": self.engine.shape.kv_bytes_per_token,
                "free_gib": round(self.free_bytes() / GIB, 2),
                "weights_moved": self.weights_moved,
                "kernels_built_ahead": self.kernels_built_ahead,
            },
        )

    def _held(self, config: Any) -> int:
        """Return the context this backend declares: the one asked for, else the trained one."""
        return self.requested_context or _max_positions(config)

    def chat_overhead(self) -> int:
        """Return the tokens the chat template adds around one user message (0 in completion mode).

        Counted from the tokenizer's template: a probe message as `encode_request` sends it minus
        the probe's own tokens, so chat prompts are sized exactly rather than with a margin.
        """
        if self.prompt_mode != "chat":
            return 0
        if self._tok is None:
            self._load()
        probe = Request("probe", 0, "chat", messages=(Message("user", CHAT_PROBE),))
        sent = self.encode_request(probe)
        return len(sent) - len(self._tok.encode(CHAT_PROBE, add_special_tokens=False))

    def tokenizer(self) -> HFTokenizerAdapter:
        self._load()
        return HFTokenizerAdapter(self._tok, self.model_name)

    def free_bytes(self) -> int:
        """Return the device bytes free for a new request (what torch has cached counts as free)."""
        return self.engine.free_bytes()

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: Request) -> Generation:
        return (await self.generate_group([request]))[0]

    async def generate_group(
        self, requests: Sequence[Request], on_result: OnResult | None = None
    ) -> list[Generation]:
        """Return one generation per request, prefilling the requests' shared prefix once.

        The group joins the engine's queue; the engine decodes it in one batch with the groups
        already running where memory and the bytes a step reads allow. The members come back
        together (`on_result` is not called: the engine thread answers the whole job).
        """
        model = await self._ensure_loaded()
        members = await asyncio.to_thread(lambda: [self._member(r) for r in requests])
        held = self._held(model.config)
        # As vLLM refuses prompt + max_tokens over max_model_len: never decoded past the context
        # the backend declares (a request past it is the harness's sizing, not the model's answer).
        over = {
            i: Generation("", "context_overflow", prompt_tokens=len(m.ids), error=(
                f"context_overflow: {len(m.ids)} prompt + {m.request.config.max_tokens} answer "
                f"tokens exceed the context of {held} tokens"))
            for i, m in enumerate(members)
            if held and len(m.ids) + m.request.config.max_tokens > held
        }  # fmt: skip
        fitting = [m for i, m in enumerate(members) if i not in over]
        made = iter(
            await asyncio.wrap_future(self.engine.submit(fitting).future) if fitting else ()
        )
        return [over[i] if i in over else next(made) for i in range(len(members))]

    def _member(self, request: Request) -> Member:
        """Return the engine's member for `request`; with a thinking budget (models/thinking.py)
        it decodes up to thinking, forced close and answer, and the budget tracks each token."""
        config = request.config
        if config.thinking_budget is None:
            opened = opened_by(self._prompt_text(request), self.thinking)
            return Member(
                request, self.encode_request(request), opened=self.thinking.open if opened else ""
            )
        forced = list(self._tok.encode(self.thinking.forced, add_special_tokens=False))
        ceiling = config.thinking_budget + len(forced) + config.max_tokens
        inner = replace(request, config=replace(config, max_tokens=ceiling))
        budget = TokenBudget(
            self.thinking,
            config.thinking_budget,
            config.max_tokens,
            forced,
            lambda ids: self._tok.decode(ids, skip_special_tokens=False),
            opened=opened_by(self._prompt_text(request), self.thinking),
        )
        return Member(inner, self.encode_request(request), budget=budget)

    def _prompt_text(self, request: Request) -> str:
        if request.mode == "completion":
            return request.prompt
        if not getattr(self._tok, "chat_template", None):
            raise UsageError(f"{self.model_name} has no chat template: use prompt_mode=completion")
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return self._tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def encode_request(self, request: Request) -> list[int]:
        """Return the prompt token ids exactly as the model receives them."""
        if request.mode == "completion":
            return list(self._tok.encode(request.prompt, add_special_tokens=True))
        text = self._prompt_text(request)
        # The template already holds the special tokens (BOS, role markers).
        return list(self._tok.encode(text, add_special_tokens=False))

    @contextlib.contextmanager
    def prefill_context(self) -> Iterator[None]:
        """Run a prefill inside as the engine does: its kernel switches, attention kernel order,
        fused RMSNorm, rotary embedding and SiLU-gated product (benchmarks, profiles)."""
        with prefill_context(self._model, self.engine.kernels):
            yield

    def prefill_ids(self, ids: Any, cache: Any, chunk: int) -> Any:
        """Prefill one sequence's token ids (a 1D tensor on the device) into `cache`, in chunks;
        return the last chunk's output (its last logits only)."""
        return prefill_ids(self._model, self.engine._cache_kw, ids, cache, chunk)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self.engine.close()
        if self._ahead is not None:
            self._ahead.stop()
        with self._lock:
            if self._model is not None:
                self._model = None
                self.engine.model = None
                gc.collect()
                torch, _ = import_torch()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()


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
