"""The openai backend's transport policy, driven by a local fault-injecting server."""

import time

import pytest

from longscope.models.base import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.types import GenerationConfig, Message, Request

from .fault_server import FaultServer, completion_body


def _backend(server: FaultServer, **kwargs) -> OpenAIBackend:
    defaults = {
        "base_url": server.url,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "request_timeout_s": 5.0,
    }
    return OpenAIBackend("m", **{**defaults, **kwargs})


def _request(prompt_tokens: int = 0, timeout_s: float | None = None) -> Request:
    return Request(
        "s1",
        0,
        "chat",
        messages=(Message("user", "hi"),),
        config=GenerationConfig(max_tokens=5),
        prompt_tokens=prompt_tokens,
        timeout_s=timeout_s,
    )


async def test_500_is_retried_then_succeeds() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (500, "boom", {})), ("ok", "fine")])
        backend = _backend(server)
        gen = await backend.generate(_request())
        assert (gen.status, gen.text, backend.retries_done) == ("ok", "fine", 1)
        assert len(server.requests) == 2


async def test_429_waits_for_retry_after() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (429, "slow down", {"Retry-After": "0.5"})), ("ok", "x")])
        started = time.perf_counter()
        gen = await _backend(server).generate(_request())
        assert gen.status == "ok"
        assert time.perf_counter() - started >= 0.5


async def test_dropped_connection_is_retried() -> None:
    with FaultServer() as server:
        server.script.extend([("drop", None), ("ok", "after drop")])
        gen = await _backend(server).generate(_request())
        assert (gen.status, gen.text) == ("ok", "after drop")


async def test_slow_answer_becomes_timeout_status() -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 1.0), ("sleep", 1.0)])
        gen = await _backend(server, max_retries=1).generate(_request(timeout_s=0.2))
        assert gen.status == "timeout" and "2 attempt" in gen.error


async def test_persistent_5xx_gives_error_with_message() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (503, "overloaded", {}))] * 4)
        gen = await _backend(server, max_retries=3).generate(_request())
        assert gen.status == "error" and "overloaded" in gen.error and "4 attempts" in gen.error


async def test_context_length_400_is_overflow_not_text_and_not_retried() -> None:
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    )
    with FaultServer() as server:
        server.script.append(("status", (400, message, {})))
        gen = await _backend(server).generate(_request())
        assert gen.status == "context_overflow" and gen.text == ""
        assert len(server.requests) == 1


async def test_other_400_is_an_error_not_retried() -> None:
    with FaultServer() as server:
        server.script.append(("status", (400, "temperature must be <= 2", {})))
        gen = await _backend(server).generate(_request())
        assert gen.status == "error" and len(server.requests) == 1


async def test_reasoning_content_and_think_tags_are_split_from_the_answer() -> None:
    with FaultServer() as server:
        server.script.extend(
            [
                ("ok", completion_body("42", reasoning="let me think")),
                ("ok", completion_body("<think>hmm</think>The answer is 7.")),
                ("ok", completion_body("<think>never finished", finish="length")),
            ]
        )
        backend = _backend(server)
        first = await backend.generate(_request())
        second = await backend.generate(_request())
        third = await backend.generate(_request())
    assert (first.text, first.reasoning) == ("42", "let me think")
    assert (second.text, second.reasoning) == ("The answer is 7.", "hmm")
    assert (third.text, third.reasoning, third.status) == ("", "never finished", "length")


async def test_silent_truncation_is_detected() -> None:
    with FaultServer() as server:
        server.script.append(("ok", completion_body("x", prompt_tokens=1000)))
        gen = await _backend(server).generate(_request(prompt_tokens=4000))
        assert gen.status == "context_overflow" and "silent truncation" in gen.error


async def test_context_length_from_user_then_server() -> None:
    with FaultServer(max_model_len=32768) as server:
        served = await _backend(server).info()
        stated = await _backend(server, context_length=4096).info()
    assert (served.context_length, served.context_source) == (32768, "server")
    assert (stated.context_length, stated.context_source) == (4096, "user")


async def test_unreachable_server_is_a_usage_error() -> None:
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UsageError, match=r"cannot reach server at http://127\.0\.0\.1:9/v1"):
        await backend.info()


async def test_api_key_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test-secret-value")
    with FaultServer() as server:
        backend = OpenAIBackend.from_options("m", {"api_key_env": "MY_KEY"}, base_url=server.url)
        await backend.generate(_request())
        assert server.requests[0]["auth"] == "Bearer sk-test-secret-value"
        assert "sk-test" not in repr(vars(backend))
