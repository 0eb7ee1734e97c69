"""The llama.cpp backend on the real embedded model (small contexts: fast)."""

import pytest

from longscope.errors import UsageError
from longscope.models.llamacpp import LlamaCppBackend
from longscope.models.registry import create_backend
from longscope.types import GenerationConfig, Message, Request

from ..factories import request

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def small_backend():
    backend = create_backend("llamacpp/gemma3-270m", {"context_length": 512})
    yield backend


def _request(prompt: str, max_tokens: int = 8, timeout_s: float | None = None) -> Request:
    config = GenerationConfig(max_tokens=max_tokens, stop=("\n",))
    return request(prompt=prompt, config=config, timeout_s=timeout_s)


async def test_info_reports_the_context_it_holds(small_backend) -> None:
    info = await small_backend.info()
    assert (info.context_length, info.context_source, info.prompt_mode) == (
        512,
        "user",
        "completion",
    )
    assert info.model_id.startswith("gguf:gemma-3-270m-q4_k_m.gguf:")
    assert info.details["n_ctx_train"] == 32768


async def test_completion_answers_with_usage(small_backend) -> None:
    gen = await small_backend.generate(_request("The capital of France is the city of"))
    assert gen.status in ("ok", "length") and gen.text.strip()
    assert gen.prompt_tokens > 5 and 0 < gen.completion_tokens <= 8 and gen.latency_s > 0


async def test_a_completion_prompt_is_tokenized_once(small_backend, monkeypatch) -> None:
    """The tokens counted for the context check are the ones sent (a 128K prompt was tokenized
    twice: once to check it fits, once more by llama.cpp), and they give the same answer."""
    prompt = "The capital of France is the city of"
    first = await small_backend.generate(_request(prompt))
    llama = small_backend._load()
    tokenized = []
    real = llama.tokenize

    def counted(text, *args, **kwargs):  # type: ignore[no-untyped-def]
        tokenized.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(llama, "tokenize", counted)
    again = await small_backend.generate(_request(prompt))
    assert tokenized.count(prompt.encode("utf-8")) == 1
    assert again.prompt_tokens == len(real(prompt.encode("utf-8"), add_bos=True, special=True))
    assert (again.text, again.completion_tokens) == (first.text, first.completion_tokens)


async def test_prompt_that_cannot_fit_is_overflow_not_text(small_backend) -> None:
    gen = await small_backend.generate(_request("word " * 600))
    assert gen.status == "context_overflow" and gen.text == ""
    assert "exceed context window" in gen.error


async def test_deadline_is_recorded_as_timeout(small_backend) -> None:
    gen = await small_backend.generate(
        _request("Count: one, two, three,", max_tokens=64, timeout_s=1e-6)
    )
    assert gen.status == "timeout" and "exceeded" in gen.error


async def test_chat_mode_without_template_is_refused() -> None:
    backend = create_backend("llamacpp/gemma3-270m", {"prompt_mode": "chat", "context_length": 256})
    with pytest.raises(UsageError, match="has no chat template"):
        await backend.generate(Request("s", 0, "chat", messages=(Message("user", "hi"),)))


def test_unknown_options_and_paths_are_usage_errors(tmp_path) -> None:
    with pytest.raises(UsageError, match="unknown llamacpp option"):
        create_backend("llamacpp/gemma3-270m", {"colour": "red"})
    with pytest.raises(UsageError, match="unknown local model"):
        LlamaCppBackend.from_options(str(tmp_path / "missing.gguf"), {})


async def test_closing_waits_for_a_generation_abandoned_at_its_deadline() -> None:
    import asyncio

    # The runner abandons a request at its deadline; the worker thread still decodes. Closing must
    # wait for it (freeing the model under it crashed the process with SIGSEGV).
    backend = create_backend("llamacpp/gemma3-270m", {"context_length": 1024})
    await backend.info()
    task = asyncio.ensure_future(backend.generate(_request("word " * 400, max_tokens=32)))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), 0.05)
    await backend.aclose()
    assert task.done() and backend._llama is None


async def test_context_is_lowered_to_what_host_memory_holds() -> None:
    """The seed's cascade on the CPU: with 0.6 GiB free, Gemma's 32K context (1.1 GiB with its
    weights) is lowered before loading; a 4K sample runs, a 16K one is skipped naming memory."""
    from longscope.models.memory_plan import HOST_CONTEXT_QUANTUM, host_context
    from longscope.run.prepared import skip_reason
    from longscope.types import Sample

    backend = create_backend("llamacpp/gemma3-270m", {"ram_gib": 0.6})
    try:
        info = await backend.info()
        weights = backend.model_path.stat().st_size
        # Gemma 3 270M: 18 layers x 1 KV head x (256 + 256) x 2 bytes, and a 512-token
        # micro-batch's f16 mask per token of context (flash attention is on).
        per_token = 18 * 1 * 512 * 2
        expected, reason = host_context(
            weight_bytes=weights,
            kv_per_token=per_token,
            scratch_per_token=512 * 2,
            free_bytes=int(0.6 * (1 << 30)),
            tokens=32768,
        )
        assert info.context_length == expected == 6144
        assert expected % HOST_CONTEXT_QUANTUM == 0
        assert (
            info.context_source
            == reason
            == ("host memory: needs 1.1 GiB for 32768 tokens, 0.6 GiB free")
        )
        assert info.limit == "host_memory"
        short = Sample("a", "t", "en", "", "", (), length=4096)
        long = Sample("b", "t", "en", "", "", (), length=16384)
        assert skip_reason(short, info) == ""
        assert skip_reason(long, info) == (
            "insufficient_memory: needs 16384 tokens (prompt and answer), backend holds 6144 "
            "(host memory: needs 1.1 GiB for 32768 tokens, 0.6 GiB free)"
        )
        answer = await backend.generate(_request("The capital of France is", max_tokens=4))
        assert answer.status in ("ok", "length")
    finally:
        await backend.aclose()


async def test_context_memory_plenty_or_too_little() -> None:
    roomy = create_backend("llamacpp/gemma3-270m", {"ram_gib": 64, "context_length": 2048})
    try:
        info = await roomy.info()
        assert (info.context_length, info.context_source, info.limit) == (2048, "user", "context")
    finally:
        await roomy.aclose()
    # The weights (0.24 GiB) and the margin leave no 256 tokens in 0.45 GiB.
    starved = create_backend("llamacpp/gemma3-270m", {"ram_gib": 0.45})
    with pytest.raises(UsageError, match=r"does not fit host memory \(host memory: needs 1\.1 GiB"):
        await starved.info()
    with pytest.raises(UsageError, match=r"^bad -M ram_gib=lots: expected a number of at least 0$"):
        create_backend("llamacpp/gemma3-270m", {"ram_gib": "lots"})
