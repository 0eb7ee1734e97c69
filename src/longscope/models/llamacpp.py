"""GGUF models on the local machine through llama-cpp-python."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.catalogue import KNOWN_MODELS, resolve_model_path
from longscope.cpu_check import check_library, engine_log, usable_cpus
from longscope.errors import UsageError
from longscope.models.base import (
    CHAT_PROBE,
    Backend,
    ModelInfo,
    available_host_bytes,
    split_reasoning,
)
from longscope.models.memory_plan import (
    GIB,
    HOST_CONTEXT_QUANTUM,
    gguf_kv_bytes_per_token,
    host_context,
)
from longscope.models.registry import option
from longscope.models.thinking import (
    THINKING_OPTION,
    ThinkingFormat,
    ThinkingTracker,
    answer_after_close,
    opened_by,
    reasoning_of,
    thinking_format,
)
from longscope.text.tokenizers import LlamaTokenizer, Tokenizer
from longscope.types import (
    BudgetUse,
    Generation,
    GenerationConfig,
    Message,
    PromptMode,
    Request,
)

MODEL_LOAD_TIMEOUT_S = 300.0
_ENGINE_OPTIONS = (
    "n_threads",
    "n_threads_batch",
    "n_batch",
    "n_ubatch",
    "n_gpu_layers",
    "flash_attn",
    "seed",
)
"""`-M` options handed to llama-cpp-python's `Llama` as they are."""
LLAMACPP_OPTIONS = (
    option("context_length", "tokens", None, "context to allocate; unset: the model's, lowered "
           "to what host memory holds", low=1),
    option("n_ctx", "tokens", None, "the same as context_length (llama.cpp's name)", low=1),
    option("prompt_mode", "choice", None, "chat or completion; unset: the named model's, "
           "else chat", choices=("chat", "completion")),
    option("chat_format", "str", None, "llama-cpp-python chat format; unset: the GGUF's "
           "template"),
    option("chat_template", "str", None, "a Jinja chat template file to use instead of the "
           "GGUF's (e.g. one that opens a think block)"),
    THINKING_OPTION,
    option("ram_gib", "float", None, "free host memory to plan against; unset: measured",
           low=0),
    option("n_threads", "int", None, "threads for decode; unset: every usable CPU", low=1),
    option("n_threads_batch", "int", None, "threads for prefill; unset: every usable CPU", low=1),
    option("n_batch", "tokens", None, "llama.cpp's logical batch", low=1),
    option("n_ubatch", "tokens", None, "llama.cpp's physical batch", low=1),
    option("n_gpu_layers", "int", None, "layers offloaded to a GPU (-1: all)", low=-1),
    option("flash_attn", "bool", True, "llama.cpp's flash attention"),
    option("seed", "int", None, "llama.cpp's sampling seed"),
)  # fmt: skip


class LlamaCppBackend(Backend):
    """One llama.cpp model in this process. Requests run one at a time (the engine is not reentrant)."""

    DESCRIPTION = "GGUF models on this machine through llama-cpp-python (llamacpp/NAME or PATH)"
    OPTIONS = LLAMACPP_OPTIONS
    max_concurrency = 1

    def __init__(
        self,
        model_path: Path,
        *,
        name: str,
        prompt_mode: PromptMode,
        n_ctx: int = 0,
        engine_options: dict[str, Any] | None = None,
        chat_format: str | None = None,
        ram_gib: float | None = None,
        chat_template: str | None = None,
        thinking: str | None = None,
    ) -> None:
        self.name = f"llamacpp/{name}"
        self.model_path = model_path
        self.prompt_mode = prompt_mode
        self.requested_n_ctx = n_ctx
        self.chat_format = chat_format
        self.chat_template = chat_template
        """A Jinja chat template (its text) used instead of the GGUF's."""
        self.thinking: ThinkingFormat = thinking_format(thinking)
        # llama-cpp-python defaults to half the cores; prefill is compute-bound, so use them all:
        # those this process may run on, not the host's (a container's quota, a taskset).
        cores = usable_cpus()
        self.engine_options = {
            "flash_attn": True,
            "n_threads": cores,
            "n_threads_batch": cores,
            **(engine_options or {}),
        }
        self.ram_gib = ram_gib
        """Free host memory to plan against, instead of measuring it (tests, shared machines)."""
        self.memory_limit = ""
        """Why the context was lowered to what host memory holds ("" when it was not)."""
        self._llama: Any = None
        self._lock = threading.Lock()
        self._known_sha = None
        self._formatter: Any = None

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> LlamaCppBackend:
        """Build from a model name (registry) or a `.gguf` path and complete typed `-M` options."""
        # Unset here means "the model's own" (its context, its prompt mode, llama.cpp's defaults).
        options = {k: v for k, v in options.items() if v is not None}
        if name in KNOWN_MODELS:
            path = resolve_model_path(name)
            default_mode = KNOWN_MODELS[name].prompt_mode
        else:
            path = Path(name).expanduser()
            if path.suffix != ".gguf" or not path.is_file():
                raise UsageError(
                    f"unknown local model {name!r}: give a named model "
                    f"({', '.join(sorted(KNOWN_MODELS))}) or the path of an existing .gguf file"
                )
            default_mode = "chat"
        mode = options.pop("prompt_mode", default_mode)
        n_ctx = int(options.pop("context_length", options.pop("n_ctx", 0)))
        chat_format = options.pop("chat_format", None)
        template_path = options.pop("chat_template", None)
        chat_template = None
        if template_path is not None:
            try:
                chat_template = Path(template_path).expanduser().read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(
                    f"-M chat_template={template_path}: cannot read it as a UTF-8 Jinja template "
                    f"({exc.__class__.__name__}); give the path of a template file"
                ) from None
        thinking = options.pop("thinking_format", None)
        ram_gib = options.pop("ram_gib", None)
        engine = {k: options.pop(k) for k in _ENGINE_OPTIONS if k in options}
        return cls(
            path,
            name=name,
            prompt_mode=mode,
            n_ctx=n_ctx,
            engine_options=engine,
            chat_format=chat_format,
            ram_gib=ram_gib,
            chat_template=chat_template,
            thinking=thinking,
        )

    def _load(self) -> Any:
        with self._lock:
            if self._llama is None:
                # A library built for another CPU dies by a signal at the first matrix kernel:
                # ask a child process first (cached per build), so the user gets one line, not a
                # bare "Illegal instruction".
                check_library(self.model_path)
                from llama_cpp import Llama

                n_ctx = self._planned_context(Llama)
                with engine_log() as log:
                    try:
                        llama = Llama(
                            model_path=str(self.model_path),
                            n_ctx=n_ctx,
                            chat_format=self.chat_format,
                            verbose=False,
                            **self.engine_options,
                        )
                    except ValueError as exc:
                        log.seek(0)
                        said = [line for line in log.read().splitlines() if line.strip()]
                        detail = f" (llama.cpp: {said[-1].strip()})" if said else ""
                        raise UsageError(
                            f"cannot load {self.model_path} as a GGUF model{detail}"
                        ) from exc
                # Without a template llama-cpp-python silently falls back to a generic format and
                # base models echo the prompt: refuse rather than guess.
                has_template = "tokenizer.chat_template" in llama.metadata or self.chat_template
                if self.prompt_mode == "chat" and not self.chat_format and not has_template:
                    llama.close()
                    raise UsageError(
                        f"{self.model_path.name} has no chat template: use "
                        "-M prompt_mode=completion (base model) or -M chat_format=NAME"
                    )
                self._llama = llama
        return self._llama

    def _planned_context(self, llama_class: Any) -> int:
        """Return the n_ctx to load with: the one asked for (0: the trained one), lowered to what
        host memory holds (`memory_plan.host_context`), so that samples past it are skipped with
        the reason instead of the process being killed for memory."""
        if int(self.engine_options.get("n_gpu_layers", 0) or 0) != 0:
            return self.requested_n_ctx  # weights and cache live on the GPU: not host memory
        with engine_log():
            try:
                probe = llama_class(model_path=str(self.model_path), vocab_only=True, verbose=False)
            except ValueError:
                return self.requested_n_ctx  # the real load names what is wrong with the file
        try:
            metadata = {str(k): str(v) for k, v in probe.metadata.items()}
        finally:
            probe.close()
        arch = metadata.get("general.architecture", "")
        tokens = self.requested_n_ctx or int(metadata.get(f"{arch}.context_length", 0) or 0)
        kv = gguf_kv_bytes_per_token(metadata)
        if not tokens or not kv:
            return self.requested_n_ctx
        ubatch = int(self.engine_options.get("n_ubatch", 512) or 512)
        heads = int(metadata.get(f"{arch}.attention.head_count", 1) or 1)
        # The attention mask of a micro-batch (f16); without flash attention also its scores.
        scratch = ubatch * 2 + (0 if self.engine_options.get("flash_attn") else ubatch * heads * 4)
        fits, reason = host_context(
            weight_bytes=self.model_path.stat().st_size,
            kv_per_token=kv,
            scratch_per_token=scratch,
            free_bytes=self.free_bytes(),
            tokens=tokens,
        )
        if not reason:
            return self.requested_n_ctx
        if fits < HOST_CONTEXT_QUANTUM:
            raise UsageError(
                f"{self.name} does not fit host memory ({reason}; not even "
                f"{HOST_CONTEXT_QUANTUM} tokens of context do): free memory or use a smaller model"
            )
        self.memory_limit = reason
        return fits

    def free_bytes(self) -> int:
        """Return the host memory available for a new allocation (`ram_gib` when stated)."""
        if self.ram_gib is not None:
            return int(self.ram_gib * GIB)
        return available_host_bytes()

    async def _ensure_loaded(self) -> Any:
        if self._llama is not None:
            return self._llama
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._load), MODEL_LOAD_TIMEOUT_S)
        except TimeoutError as exc:
            raise UsageError(
                f"loading {self.model_path} took over {MODEL_LOAD_TIMEOUT_S:.0f}s"
            ) from exc

    async def info(self) -> ModelInfo:
        llama = await self._ensure_loaded()
        return ModelInfo(
            model_id=f"gguf:{self.model_path.name}:{self._file_digest()}",
            context_length=llama.n_ctx(),
            context_source=self.memory_limit or ("user" if self.requested_n_ctx else "n_ctx"),
            limit="host_memory" if self.memory_limit else "context",
            prompt_mode=self.prompt_mode,
            tokenizer=self.name.split("/", 1)[1],
            chat_overhead=await asyncio.to_thread(self.chat_overhead),
            details={
                "path": str(self.model_path),
                "n_ctx_train": llama._model.n_ctx_train(),
                "engine": dict(self.engine_options),
                # The determinism record of exports (longscope.export): what ran the model.
                "engine_version": f"llama-cpp-python {_library_version()}",
                "build": _system_info(),
                "batching": "none: one request at a time, one sequence",
                "prefix_cache": "llama-cpp-python reuses the KV cache of the prefix a prompt "
                "shares with the previous one",
            },
        )

    def _file_digest(self) -> str:
        if self._known_sha is None:
            # Size plus the first and last MiB: enough to tell files apart, cheap for 100 GB models.
            digest = hashlib.sha256(str(self.model_path.stat().st_size).encode())
            with self.model_path.open("rb") as handle:
                digest.update(handle.read(1 << 20))
                handle.seek(max(0, self.model_path.stat().st_size - (1 << 20)))
                digest.update(handle.read(1 << 20))
            self._known_sha = digest.hexdigest()[:16]
        return self._known_sha

    def tokenizer(self) -> Tokenizer:
        return LlamaTokenizer(self._load(), name=self.name.split("/", 1)[1])

    async def generate(self, request: Request) -> Generation:
        await self._ensure_loaded()
        return await asyncio.to_thread(self._generate_sync, request)

    def _generate_sync(self, request: Request) -> Generation:
        llama = self._llama
        config = request.config
        started = time.perf_counter()
        deadline = started + request.timeout_s if request.timeout_s else None

        def past_deadline(_ids: Any, _logits: Any) -> bool:
            return deadline is not None and time.perf_counter() > deadline

        with self._lock:
            try:
                from llama_cpp import StoppingCriteriaList

                criteria = [past_deadline]
                stop = list(config.stop)
                if request.mode == "completion":
                    prompt: str | list[int] = request.prompt
                    shown = request.prompt
                else:
                    # Chat mode renders the GGUF's own template here and generates as a completion:
                    # llama-cpp-python's chat call takes no stopping criteria, so the deadline
                    # (and cancellation) could not reach it.
                    chat = self._chat_prompt(llama, request)
                    prompt, shown = chat.tokens, chat.text
                    stop += [s for s in chat.stop if s and s not in stop]
                    criteria += list(chat.stopping_criteria or [])
                tokens = prompt if isinstance(prompt, list) else _prompt_tokens(llama, prompt)
                if (
                    config.thinking_budget is None
                    and len(tokens) + config.max_tokens > llama.n_ctx()
                ):
                    # llama-cpp-python fails past n_ctx with a broadcast error, not a length stop.
                    raise ValueError(
                        f"Requested tokens ({len(tokens)} prompt + {config.max_tokens} answer) "
                        f"exceed context window of {llama.n_ctx()}"
                    )
                if config.thinking_budget is not None:
                    return self._think_then_answer(
                        llama, request, tokens, opened_by(shown, self.thinking), stop, criteria,
                        started, deadline,
                    )  # fmt: skip
                out = llama.create_completion(
                    **completion_kwargs(
                        tokens,  # as tokenized for the n_ctx check: llama.cpp would again
                        config,
                        stop=stop or None,
                        stopping_criteria=StoppingCriteriaList(criteria),
                    )
                )
                choice = out["choices"][0]
                text, reasoning = choice["text"], ""
            except ValueError as exc:
                # llama-cpp-python raises ValueError("Requested tokens (...) exceed context window")
                if "context window" in str(exc):
                    return Generation(text="", status="context_overflow", error=str(exc))
                raise
        latency = time.perf_counter() - started
        usage = out.get("usage", {})
        if opened_by(shown, self.thinking):
            # The template opened the thinking: without the marker in the text, a thought the
            # model never closed would be read as its answer.
            text = self.thinking.open + text
        text, reasoning = split_reasoning(text, reasoning)
        if deadline is not None and time.perf_counter() > deadline:
            status, error = "timeout", f"exceeded {request.timeout_s:.0f}s"
        elif choice.get("finish_reason") == "length":
            status, error = "length", ""
        else:
            status, error = "ok", ""
        return Generation(
            text=text,
            reasoning=reasoning,
            status=status,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            latency_s=latency,
            error=error,
        )

    def _think_then_answer(
        self,
        llama: Any,
        request: Request,
        prompt: list[int],
        opened: bool,
        stop: list[str],
        criteria: list[Any],
        started: float,
        deadline: float | None,
    ) -> Generation:
        """Generate with a thinking budget (models/thinking.py): think for at most
        `thinking_budget` tokens, closing the thinking with the family's forced text when the model
        does not, then answer within `max_tokens`.

        Both steps run on one cache: the answer's prompt is the thinking's prompt plus what was
        thought, so llama.cpp's prefix match evaluates only the new tokens (no second prefill).
        """
        from llama_cpp import StoppingCriteriaList, llama_vocab_is_eog

        config = request.config
        budget = config.thinking_budget or 0
        if len(prompt) + budget + config.max_tokens > llama.n_ctx():
            raise ValueError(
                f"Requested tokens ({len(prompt)} prompt + {budget} thinking + "
                f"{config.max_tokens} answer) exceed context window of {llama.n_ctx()}"
            )
        tracker = ThinkingTracker(self.thinking, opened=opened)
        thought: list[int] = []
        ended = False
        if config.seed is not None:
            llama.set_seed(config.seed)
        steps = llama.generate(
            prompt,
            temp=config.temperature,
            top_p=config.top_p,
            stopping_criteria=StoppingCriteriaList(criteria[:1]),
        )
        for token in steps:
            if llama_vocab_is_eog(llama._model.vocab, token):
                ended = True
                break
            previous = prompt + thought
            thought.append(token)
            # special=True: a family's markers may be special tokens (Qwen3's `</think>`).
            piece = llama.detokenize([token], prev_tokens=previous, special=True)
            if tracker.feed(piece.decode("utf-8", "ignore")) in ("closed", "answer"):
                break
            if len(thought) >= budget:
                break
        steps.close()
        timed_out = deadline is not None and time.perf_counter() > deadline
        state = tracker.state
        answered = state == "answer"
        # Thinking that reaches its budget, or ends the generation, without closing is closed
        # for the model; a model that wrote nothing at all has no thinking to close.
        blank = ended and state == "undecided"
        forced = state in ("thinking", "undecided") and not timed_out and not blank
        if answered:  # the model did not think: what it wrote is the answer's start
            lead, reasoning, thinking_tokens = tracker.text, "", 0
        else:
            lead = tracker.after_close
            reasoning, thinking_tokens = reasoning_of(tracker.text, self.thinking), len(thought)
        follow = thought
        if forced:
            follow = thought + _prompt_tokens(llama, self.thinking.forced, bos=False)
        # A model that does not think may answer with the whole output budget (models/thinking.py).
        left = config.max_tokens + budget - len(thought) if answered else config.max_tokens
        text, finish, answer_tokens = "", "stop", len(thought) if answered else 0
        if left > 0 and not timed_out and not (ended and not forced):
            out = llama.create_completion(
                **completion_kwargs(
                    prompt + follow,
                    replace(config, max_tokens=left),
                    stop=stop or None,
                    stopping_criteria=StoppingCriteriaList(criteria),
                )
            )
            choice = out["choices"][0]
            text, finish = choice["text"], choice.get("finish_reason") or "stop"
            answer_tokens += out.get("usage", {}).get("completion_tokens", 0)
        elif left <= 0:
            finish = "length"
        # A thinking block the model opens again after the close is thinking, closed or not.
        answer, again = answer_after_close(lead + text, self.thinking)
        reasoning = "\n".join(x for x in (reasoning, again) if x)
        for marker in stop:  # a stop string the model wrote while it seemed to be thinking
            answer = answer.split(marker, 1)[0] if marker else answer
        cut = finish == "length"
        if deadline is not None and time.perf_counter() > deadline:
            status, error = "timeout", f"exceeded {request.timeout_s:.0f}s"
        else:
            status, error = ("length" if cut else "ok"), ""
        return Generation(
            text=answer,
            reasoning=reasoning,
            status=status,
            prompt_tokens=len(prompt),
            completion_tokens=thinking_tokens + answer_tokens,
            latency_s=time.perf_counter() - started,
            error=error,
            budget=BudgetUse(
                thinking_budget=budget,
                thinking_tokens=thinking_tokens,
                forced=forced,
                answer_tokens=answer_tokens,
                answer_cut=cut,
            ),
        )

    def _chat_formatter(self, llama: Any) -> Any:
        """Return the formatter of this model's chat template (the GGUF's own, or `chat_format`)."""
        if self._formatter is None:
            from llama_cpp import llama_chat_format

            if self.chat_format:
                name = "format_" + self.chat_format.replace("-", "_")
                formatter = getattr(llama_chat_format, name, None) or getattr(
                    llama_chat_format, name.replace("_", ""), None
                )
                if formatter is None:
                    raise UsageError(
                        f"unknown chat_format {self.chat_format!r}: name one of llama-cpp-python's "
                        "formats (e.g. chatml, llama-2, llama-3, mistral-instruct, gemma) or leave "
                        "it out to use the GGUF's own template"
                    )
            else:
                eos, bos = llama.token_eos(), llama.token_bos()
                formatter = llama_chat_format.Jinja2ChatFormatter(
                    template=self.chat_template or llama.metadata["tokenizer.chat_template"],
                    eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                    bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                    stop_token_ids=[eos] if eos != -1 else None,
                )
            self._formatter = formatter
        return self._formatter

    def _chat_prompt(self, llama: Any, request: Request) -> ChatPrompt:
        """Return the request's messages rendered by the chat template, as the tokens sent."""
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        result = self._chat_formatter(llama)(messages=messages)
        tokens = llama.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )
        stop = [result.stop] if isinstance(result.stop, str) else list(result.stop or [])
        return ChatPrompt(tokens, tuple(stop), result.stopping_criteria, result.prompt)

    def chat_overhead(self) -> int:
        """Return the tokens the chat template adds around one user message (0 in completion mode).

        Counted from the template itself: the templated prompt of a probe message minus the
        probe's own tokens, so prompts are sized exactly rather than with a fixed margin.
        """
        if self.prompt_mode != "chat":
            return 0
        llama = self._load()
        probe = Request("probe", 0, "chat", messages=(Message("user", CHAT_PROBE),))
        with self._lock:
            sent = self._chat_prompt(llama, probe).tokens
        return len(sent) - len(llama.tokenize(CHAT_PROBE.encode("utf-8"), add_bos=False))

    async def aclose(self) -> None:
        # A generation abandoned at its deadline may still run in a worker thread: wait for it,
        # or the model is freed under it.
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None


@dataclass(frozen=True)
class ChatPrompt:
    """A chat request as llama.cpp will read it: template applied, tokenized, with its stops."""

    tokens: list[int]
    stop: tuple[str, ...]
    stopping_criteria: Any
    text: str = ""
    """The rendered prompt (to see whether the template opened a think block)."""


def _prompt_tokens(llama: Any, text: str, *, bos: bool = True) -> list[int]:
    """Return `text` as llama.cpp reads a completion prompt (BOS first, special tokens parsed)."""
    return list(llama.tokenize(text.encode("utf-8"), add_bos=bos, special=True))


def completion_kwargs(
    prompt: str | list[int], config: GenerationConfig, **extra: Any
) -> dict[str, Any]:
    """Return the keyword arguments of `Llama.create_completion` for one request.

    One place builds them, so a test can check every name against the installed library's
    signature (an upgrade that renames one fails that test, not a user's run).
    """
    return {
        "prompt": prompt,
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed,
        **extra,
    }


def _library_version() -> str:
    import llama_cpp

    return str(getattr(llama_cpp, "__version__", "unknown"))


def _system_info() -> str:
    """Return llama.cpp's build features (`AVX2 = 1 | FMA = 1 | ...`): they change the numbers."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    return (info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)).strip()
