"""A document's requests through the openai backend: repeats as one request with `n`, the other
prompts after the first answer, and a server that ignores or refuses `n` asked once per repeat.

The fault server plays the protocol (what vLLM answers to `n`, what llama.cpp's server answers);
the end-to-end test (tests/run/test_runner_e2e.py) runs llama.cpp's real server, which ignores `n`.
"""

from __future__ import annotations

from dataclasses import replace

from longscope.models.openai_api import OpenAIBackend
from longscope.types import GenerationConfig, Message, Request

from .fault_server import FaultServer, completion_body


def _backend(server: FaultServer) -> OpenAIBackend:
    return OpenAIBackend(
        "m", base_url=server.url, max_retries=2, backoff_base_s=0.01, request_timeout_s=5.0
    )


def _repeats(count: int, text: str = "the document. question?") -> list[Request]:
    first = Request(
        "s1", 0, "chat", messages=(Message("user", text),), config=GenerationConfig(max_tokens=5)
    )
    return [
        replace(first, repeat=r, config=replace(first.config, seed=first.config.seed + r))
        for r in range(count)
    ]


def _choices(*texts: str, order: tuple[int, ...] | None = None) -> dict:
    body = completion_body(texts[0], prompt_tokens=40)
    choices = [
        {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
        for i, t in enumerate(texts)
    ]
    body["choices"] = [choices[i] for i in (order or range(len(texts)))]
    body["usage"] = {"prompt_tokens": 40, "completion_tokens": 3 * len(texts)}
    return body


async def test_repeats_go_as_one_request_with_n_and_other_prompts_after_it() -> None:
    with FaultServer() as server:
        # Choices arrive out of order: each repeat takes the choice of its index.
        server.script.extend([("ok", _choices("a", "b", "c", order=(2, 0, 1))), ("ok", "other")])
        backend = _backend(server)
        other = replace(_repeats(1, "the document. another question?")[0], sample_id="s2")
        made = await backend.generate_group([*_repeats(3), other])
    assert [g.text for g in made] == ["a", "b", "c", "other"]
    assert all(g.status == "ok" and g.prompt_tokens == 40 for g in made[:3])
    assert [g.completion_tokens for g in made[:3]] == [3, 3, 3]  # the total of 9, shared out
    bodies = [r["body"] for r in server.requests]
    assert len(bodies) == 2 and bodies[0]["n"] == 3 and "n" not in bodies[1]
    assert bodies[1]["messages"][0]["content"] == "the document. another question?"
    assert backend.supports_n is True


async def test_a_server_that_ignores_n_is_asked_once_per_repeat_from_then_on() -> None:
    with FaultServer() as server:
        server.script.extend([("ok", "a"), ("ok", "b"), ("ok", "c"), ("ok", "d"), ("ok", "e")])
        backend = _backend(server)
        made = await backend.generate_group(_repeats(3))
        assert sorted(g.text for g in made) == ["a", "b", "c"]
        assert backend.supports_n is False
        again = await backend.generate_group(_repeats(2))
    assert sorted(g.text for g in again) == ["d", "e"]
    sent_n = [r["body"].get("n") for r in server.requests]
    assert sent_n == [3, None, None, None, None]  # asked once with n, never again


async def test_a_refused_n_is_no_failure_the_repeats_are_asked_one_by_one() -> None:
    with FaultServer() as server:
        server.script.extend(
            [("status", (400, "n > 1 is not supported", {})), ("ok", "a"), ("ok", "b")]
        )
        backend = _backend(server)
        made = await backend.generate_group(_repeats(2))
    assert sorted((g.status, g.text) for g in made) == [("ok", "a"), ("ok", "b")]
    assert backend.supports_n is False


async def test_an_overflow_answered_to_n_is_recorded_for_each_repeat_without_resending() -> None:
    message = "This model's maximum context length is 8192 tokens"
    with FaultServer() as server:
        server.script.extend([("status", (400, message, {}))])
        backend = _backend(server)
        made = await backend.generate_group(_repeats(3))
    assert [g.status for g in made] == ["context_overflow"] * 3
    assert all(message in g.error for g in made)
    assert len(server.requests) == 1 and backend.supports_n is None


async def test_a_transient_failure_of_the_n_request_is_retried_with_n() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (503, "busy", {})), ("ok", _choices("a", "b"))])
        backend = _backend(server)
        made = await backend.generate_group(_repeats(2))
    assert [g.text for g in made] == ["a", "b"]
    assert [r["body"].get("n") for r in server.requests] == [2, 2]


async def test_a_groups_requests_stay_within_the_backends_concurrency() -> None:
    import time

    # llama.cpp-like: one choice whatever `n` says, so two repeats follow the first one by one.
    with FaultServer(latency_s=0.3) as server:
        backend = OpenAIBackend(
            "m", base_url=server.url, concurrency=1, max_retries=0, request_timeout_s=5.0
        )
        started = time.perf_counter()
        made = await backend.generate_group(_repeats(3))
        elapsed = time.perf_counter() - started
    assert [g.status for g in made] == ["ok"] * 3 and backend.supports_n is False
    # Three answers of 0.3 s one at a time; with the two repeats side by side it would be 0.6 s.
    assert elapsed >= 0.85, elapsed
