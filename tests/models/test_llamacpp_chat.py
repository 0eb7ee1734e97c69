"""Chat mode on the llama.cpp backend with a real instruct model (SmolLM2 135M, its GGUF template)."""

from __future__ import annotations

import inspect
import time

import pytest

from longscope.models.llamacpp import _ENGINE_OPTIONS, LlamaCppBackend, completion_kwargs
from longscope.models.registry import KNOWN_MODELS, create_backend, resolve_model_path
from longscope.types import GenerationConfig, Message, Request

pytestmark = pytest.mark.model


def test_every_option_we_pass_is_accepted_by_the_installed_library() -> None:
    """An upgrade of llama-cpp-python that drops or renames an argument fails here, not in a run."""
    from llama_cpp import Llama, StoppingCriteriaList

    create = inspect.signature(Llama.create_completion)
    kwargs = completion_kwargs(
        [1, 2, 3],
        GenerationConfig(max_tokens=4, stop=("\n",)),
        stop=["\n"],
        stopping_criteria=StoppingCriteriaList([]),
    )
    create.bind(None, **kwargs)  # raises TypeError on an unknown name
    init = inspect.signature(Llama.__init__).parameters
    assert set(_ENGINE_OPTIONS) <= set(init), set(_ENGINE_OPTIONS) - set(init)
    for name in ("model_path", "n_ctx", "chat_format", "verbose", "vocab_only"):
        assert name in init


def test_named_instruct_model_is_listed_in_chat_mode() -> None:
    known = KNOWN_MODELS["smollm2-135m"]
    assert known.prompt_mode == "chat" and "8K context" in known.description
    assert resolve_model_path("smollm2-135m").name == "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def smol() -> LlamaCppBackend:
    return create_backend("llamacpp/smollm2-135m", {"context_length": 2048})


def _chat(text: str, **config: object) -> Request:
    return Request(
        "s",
        0,
        "chat",
        messages=(Message("user", text),),
        config=GenerationConfig(**{"max_tokens": 24, "temperature": 0.0, **config}),
    )


async def test_chat_answer_uses_the_gguf_template(smol: LlamaCppBackend) -> None:
    info = await smol.info()
    assert (info.prompt_mode, info.context_length) == ("chat", 2048)
    question = "What is the capital of France? Answer in one word."
    gen = await smol.generate(_chat(question))
    assert gen.status == "ok", gen
    assert "paris" in gen.text.lower()
    # The prompt the engine read is the message plus exactly the template's overhead.
    llama = smol._load()
    own = len(llama.tokenize(question.encode(), add_bos=False))
    assert info.chat_overhead is not None and info.chat_overhead > 5
    assert gen.prompt_tokens == own + info.chat_overhead


async def test_chat_stop_strings_and_max_tokens(smol: LlamaCppBackend) -> None:
    stopped = await smol.generate(
        _chat("What is the capital of France? Answer in one word.", stop=("Paris",))
    )
    assert "Paris" not in stopped.text and stopped.status == "ok"
    capped = await smol.generate(_chat("Write a long story about a cat.", max_tokens=5))
    assert capped.status == "length" and capped.completion_tokens == 5


async def test_chat_deadline_ends_a_long_generation(smol: LlamaCppBackend) -> None:
    # A budget the 2,048-token context holds (past it the request is context_overflow).
    request = _chat("Write a very long story about a cat.", max_tokens=1900)
    request = Request(
        request.sample_id, 0, "chat", messages=request.messages, config=request.config, timeout_s=1
    )
    started = time.perf_counter()
    gen = await smol.generate(request)
    elapsed = time.perf_counter() - started
    assert gen.status == "timeout" and gen.error == "exceeded 1s"
    assert elapsed < 3, elapsed


async def test_unknown_chat_format_is_a_usage_error() -> None:
    from longscope.errors import UsageError

    backend = create_backend(
        "llamacpp/smollm2-135m", {"context_length": 512, "chat_format": "no-such-format"}
    )
    with pytest.raises(UsageError, match="unknown chat_format 'no-such-format'"):
        await backend.generate(_chat("hi"))
    await backend.aclose()


async def test_a_ruler_chat_prompt_fits_its_length_with_the_gguf_templates_tokens(
    smol: LlamaCppBackend,
) -> None:
    """The template's tokens the backend counts reach the suite through the prepared run, and a
    RULER chat sample at L is what the engine reads: prompt + answer budget within L."""
    from pathlib import Path

    from longscope.run.prepared import PreparedRun, RunOptions
    from longscope.suites import create_suite

    fixtures = Path(__file__).parents[1] / "suites" / "ruler" / "fixtures"
    suite = create_suite(
        "ruler", {"tasks": "qa_1", "lengths": "2k", "squad": str(fixtures / "squad.json")}
    )
    prepared = await PreparedRun.create(suite, smol, RunOptions(quiet=True))
    overhead = prepared.source.ctx.chat_overhead
    assert overhead == (await smol.info()).chat_overhead and overhead is not None and overhead > 5
    (cell,) = prepared.source.cells
    sample = next(iter(prepared.source.samples(cell, 1)))
    _, messages = suite.template.render(sample, "chat")
    read = smol._chat_prompt(smol._load(), Request("s", 0, "chat", messages=messages)).tokens
    # Within the one or two a tokenizer may merge where message and template meet.
    assert abs(len(read) - sample.prompt_tokens) <= 2
    assert len(read) + sample.max_tokens <= 2048
    assert sample.prompt_tokens + sample.max_tokens <= 2048


async def test_a_request_past_n_ctx_is_context_overflow_not_a_crash(smol: LlamaCppBackend) -> None:
    """Prompt + answer budget over n_ctx: `context_overflow` naming the numbers, as the hf backend
    and vLLM refuse it (llama-cpp-python failed such a completion with a broadcast ValueError and
    the run exited with a traceback); the same prompt with a budget that fits is answered."""
    prompt = "alpha beta gamma delta " * 5
    tokens = len(smol.tokenizer().encode(prompt))  # as llama.cpp reads it
    room = 2048 - tokens
    over = Request(
        "s", 0, "completion", prompt=prompt, config=GenerationConfig(max_tokens=room + 1)
    )
    gen = await smol.generate(over)
    assert gen.status == "context_overflow", gen
    assert f"({tokens} prompt + {room + 1} answer) exceed context window of 2048" in gen.error
    fits = Request("s", 0, "completion", prompt=prompt, config=GenerationConfig(max_tokens=4))
    assert (await smol.generate(fits)).status in ("ok", "length")
