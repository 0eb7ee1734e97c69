"""The openai backend's transport policy, driven by a local fault-injecting server."""

import time

import pytest

from longscope.errors import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.types import GenerationConfig, Message, Request

from ..factories import request
from .fault_server import MALFORMED, FaultServer, completion_body


def _backend(server: FaultServer, **kwargs) -> OpenAIBackend:
    defaults = {
        "base_url": server.url,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "request_timeout_s": 5.0,
    }
    return OpenAIBackend("m", **{**defaults, **kwargs})


def _request(prompt_tokens: int = 0, timeout_s: float | None = None) -> Request:
    return request(
        "s1",
        messages=(Message("user", "hi"),),
        max_tokens=5,
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


async def test_slow_answer_becomes_timeout_status_after_each_attempt_timed_out() -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 30.0), ("sleep", 30.0)])
        started = time.perf_counter()
        gen = await _backend(server, max_retries=1, request_timeout_s=0.2).generate(_request())
        assert gen.status == "timeout" and "gave up after 2 attempts" in gen.error
        # Two 0.2 s attempts and a short backoff; unbounded, the two answers would take 60 s. The
        # wrong outcome lies far off so that a slow or loaded machine cannot fail the right one.
        assert time.perf_counter() - started < 10


async def test_request_timeout_bounds_each_attempt_and_the_next_attempt_succeeds() -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 30.0), ("ok", "second try")])
        started = time.perf_counter()
        gen = await _backend(server, request_timeout_s=0.3).generate(_request(timeout_s=120.0))
        elapsed = time.perf_counter() - started
    assert (gen.status, gen.text) == ("ok", "second try")
    assert 0.3 <= elapsed < 10, elapsed  # unbounded: >= 30 s


async def test_trickling_answer_is_cut_at_the_request_timeout() -> None:
    # httpx's read timeout is per read: 16 bytes every 0.2 s never trips it; the attempt bound does.
    with FaultServer() as server:
        server.script.extend([("trickle", ("slow " * 300, 0.2)), ("ok", "fast")])
        started = time.perf_counter()
        gen = await _backend(server, request_timeout_s=0.5).generate(_request())
        elapsed = time.perf_counter() - started
    assert (gen.status, gen.text) == ("ok", "fast")
    assert 0.5 <= elapsed < 6, elapsed  # the whole trickle: over 100 reads, 20 s and more


async def test_suite_limit_bounds_the_whole_request_with_its_retries() -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 30.0)] * 21)
        started = time.perf_counter()
        gen = await _backend(server, request_timeout_s=0.3, max_retries=20).generate(
            _request(timeout_s=0.8)
        )
        elapsed = time.perf_counter() - started
    assert gen.status == "timeout" and "task limit of 0.8s reached" in gen.error
    # 21 attempts of 0.3 s would take 6.3 s and more; the 0.8 s limit ends the request across
    # its retries, with slack for a slow or loaded machine.
    assert 0.8 <= elapsed < 4.0, elapsed
    assert len(server.requests) >= 2  # it did retry within the limit


@pytest.mark.parametrize("kind", MALFORMED)
async def test_unusable_200_answer_is_retried_then_recorded_with_its_reason(kind: str) -> None:
    with FaultServer() as server:
        server.script.extend([("fault", kind), ("ok", "recovered")])
        backend = _backend(server)
        gen = await backend.generate(_request())
        assert (gen.status, gen.text, backend.retries_done) == ("ok", "recovered", 1)
        server.script.extend([("fault", kind)] * 2)
        failed = await _backend(server, max_retries=1).generate(_request())
    assert failed.status == "error" and failed.text == ""
    assert failed.error.startswith("gave up after 2 attempts: unusable answer: ")
    assert len(failed.error) < 300


async def test_unusable_answer_reason_quotes_the_body_start_as_plain_text() -> None:
    page = b"<html><body>" + b"x" * 1000 + b"</body></html>"
    with FaultServer() as server:
        server.script.append(("raw", (200, "text/html", page)))
        gen = await _backend(server, max_retries=0).generate(_request())
    reason = gen.error.split("body is not JSON: ", 1)[1]
    assert reason == page.decode()[:200]


async def test_missing_usage_is_not_an_error_tokens_are_unknown() -> None:
    with FaultServer() as server:
        server.script.extend([("fault", "null_usage"), ("fault", "partial_usage")])
        backend = _backend(server)
        first = await backend.generate(_request(prompt_tokens=4000))
        second = await backend.generate(_request(prompt_tokens=4000))
    for gen in (first, second):
        # no count to compare with: the silent-truncation check cannot run, the answer stands
        assert gen.status == "ok" and gen.text.startswith("answer ")
        assert (gen.prompt_tokens, gen.completion_tokens) == (0, 0)
    assert backend.retries_done == 0


async def test_null_content_is_an_empty_answer_but_missing_content_is_unusable() -> None:
    null_content = completion_body("x")
    null_content["choices"][0]["message"]["content"] = None
    no_content = completion_body("x")
    del no_content["choices"][0]["message"]["content"]
    with FaultServer() as server:
        server.script.extend([("ok", null_content), ("ok", no_content)])
        backend = _backend(server, max_retries=0)
        empty = await backend.generate(_request())
        missing = await backend.generate(_request())
    assert (empty.status, empty.text) == ("ok", "")
    assert missing.status == "error" and "no content in the answer's message" in missing.error


async def test_completion_mode_without_text_is_unusable() -> None:
    body = {"choices": [{"index": 0, "finish_reason": "stop"}], "usage": None}
    with FaultServer() as server:
        server.script.append(("ok", body))
        request = Request("s1", 0, "completion", prompt="hi", config=GenerationConfig(max_tokens=5))
        gen = await _backend(server, max_retries=0).generate(request)
    assert gen.status == "error" and "no text in the answer's choice" in gen.error


async def test_html_5xx_error_keeps_200_characters_of_the_body() -> None:
    page = "<html>" + "bad gateway " * 100 + "</html>"
    with FaultServer() as server:
        server.script.extend([("raw", (502, "text/html", page.encode()))] * 2)
        gen = await _backend(server, max_retries=1).generate(_request())
    assert gen.status == "error" and gen.error.startswith("gave up after 2 attempts: HTTP 502: ")
    assert gen.error.split("HTTP 502: ", 1)[1] == " ".join(page.split())[:200]


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
