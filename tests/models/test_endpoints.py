"""Fast checks of models/endpoints.py: the model check, the URL file, what counts as an endpoint's
failure, the per-endpoint summary lines, the backend's construction, and (over fault servers on
127.0.0.1) dispatch, failover and the combined model description. No model; a few seconds."""

from __future__ import annotations

import pytest

from longscope.errors import UsageError
from longscope.models.endpoints import (
    QUEUE_DEPTH,
    MultiEndpointBackend,
    check_same_model,
    describe_endpoints,
    endpoint_failed,
    read_url_file,
)
from longscope.models.openai_api import create_multi_backend
from longscope.types import Generation

from ..factories import request

# -- check_same_model ----------------------------------------------------------------------------


def _refusal(requested: str | None, listings: dict) -> str:
    with pytest.raises(UsageError) as caught:
        check_same_model(requested, listings)
    return str(caught.value)


def test_no_requested_model_accepts_anything() -> None:
    assert check_same_model(None, {"a": ["x", "y"], "b": ["z"]}) is None


def test_endpoints_that_list_the_model_or_one_same_model_pass() -> None:
    assert check_same_model("m", {"a": ["m", "n"], "b": ["n", "m"]}) is None
    assert check_same_model("m", {"a": ["q"], "b": ["q"]}) is None
    assert check_same_model("m", {"a": ["m"]}) is None
    # ids are compared as text
    assert check_same_model("7", {"a": [7, 8]}) is None


def test_an_endpoint_listing_other_models_is_refused_by_name() -> None:
    line = _refusal("m", {"a": ["m"], "b\n": ["x", "y"]})
    assert line == (
        "endpoint b\\n does not serve m (its /v1/models lists x, y): "
        "every --base-url must serve the model named in --model"
    )


def test_the_listing_shown_is_at_most_five_ids_or_no_model() -> None:
    line = _refusal("m", {"a": ["1", "2", "3", "4", "5", "6"]})
    assert "(its /v1/models lists 1, 2, 3, 4, 5): " in line
    assert "(its /v1/models lists no model): " in _refusal("m", {"a": []})
    assert "(its /v1/models lists no model): " in _refusal("m", {"a": None})


def test_single_model_servers_must_agree_and_not_sit_beside_a_naming_one() -> None:
    line = _refusal("m", {"a": ["p"], "b": ["q"]})
    assert line == (
        "the endpoints serve different models (a serves p, b serves q): every --base-url must "
        "serve the same model; stop the others or leave them out"
    )
    line = _refusal("m", {"a": ["m", "z"], "b": ["q"], "c": ["m"]})
    assert line == (
        "the endpoints serve different models (b serves q; 2 endpoint(s) list m): every "
        "--base-url must serve the same model; stop the others or leave them out"
    )


def test_names_in_refusals_are_shown_escaped() -> None:
    line = _refusal("m\x1b", {"a\x1b": ["p\x1b"], "b": ["q"]})
    assert "a\\x1b serves p\\x1b" in line
    line = _refusal("m\x1b", {"a": ["m\x1b"], "b": ["q"]})
    assert "1 endpoint(s) list m\\x1b" in line
    line = _refusal("m\x1b", {"a": ["p\x1b", "q"]})
    assert line.startswith("endpoint a does not serve m\\x1b (its /v1/models lists p\\x1b, q)")


# -- read_url_file -------------------------------------------------------------------------------


def test_url_file_lines_comments_and_blanks() -> None:
    text = "# endpoints\n\n  http://A:8000/v1/  # first # of two\nhttps://b.example/v1\n   \n#x\n"
    assert read_url_file(text) == ["http://a:8000/v1", "https://b.example/v1"]
    assert read_url_file("") == []


def test_url_file_bad_line_names_the_file() -> None:
    with pytest.raises(UsageError) as caught:
        read_url_file("http://a:1/v1\nftp://b/v1\n")
    assert "bad endpoint in the URL file 'ftp://b/v1'" in str(caught.value)


def test_url_file_lines_are_cut_at_2000_characters() -> None:
    long = "http://a:1/" + "p" * 3000
    (url,) = read_url_file(long)
    assert url == long[:2000]


# -- endpoint_failed -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "moved"),
    [
        ("timeout", "", True),
        ("timeout", "anything", True),
        ("error", "gave up after 2 attempts: HTTP 503", True),
        ("error", "connection error: refused", True),
        ("error", "task limit reached", True),
        ("error", "HTTP 400: bad request", False),
        ("error", "x gave up after", False),
        ("error", "", False),
        ("ok", "gave up after", False),
        ("length", "connection error", False),
        ("insufficient_context", "task limit", False),
    ],
)
def test_endpoint_failed(status: str, error: str, moved: bool) -> None:
    assert endpoint_failed(Generation(text="", status=status, error=error)) is moved


# -- describe_endpoints --------------------------------------------------------------------------


def _stat(**over) -> dict:
    base = {
        "endpoint": "http://a:1/v1",
        "requests": 1234,
        "failures": 5,
        "prompt_tokens": 1234567,
        "completion_tokens": 8901,
        "mean_latency_s": 1.23456,
        "max_tokens_in_flight": 65536,
        "token_cap": 131072,
        "benched": 0,
        "down": False,
    }
    return {**base, **over}


def test_describe_endpoints_lines() -> None:
    assert describe_endpoints([]) == ""
    text = describe_endpoints(
        [
            _stat(),
            _stat(endpoint="b", mean_latency_s=None, benched=2, requests=0, failures=0),
            _stat(endpoint="c", down=True, benched=3),
            _stat(endpoint="d", busy_share=0.876, idle_tail_s=12.345),
        ]
    )
    assert text.split("\n") == [
        "http://a:1/v1: 1234 requests (5 failed), 1,234,567 prompt + 8,901 output tokens, "
        "mean 1.23s, most in flight 65,536/131,072 tokens, ok",
        "b: 0 requests (0 failed), 1,234,567 prompt + 8,901 output tokens, "
        "mean -, most in flight 65,536/131,072 tokens, benched 2x",
        "c: 1234 requests (5 failed), 1,234,567 prompt + 8,901 output tokens, "
        "mean 1.23s, most in flight 65,536/131,072 tokens, down",
        "d: 1234 requests (5 failed), 1,234,567 prompt + 8,901 output tokens, "
        "mean 1.23s, most in flight 65,536/131,072 tokens, ok, busy 88% (idle 12.3s at the end)",
    ]


def test_describe_endpoints_zero_latency_is_shown() -> None:
    assert "mean 0.00s," in describe_endpoints([_stat(mean_latency_s=0.0)])


# -- construction --------------------------------------------------------------------------------


def test_no_endpoint_is_refused() -> None:
    with pytest.raises(UsageError, match=r"^no endpoint given: pass --base-url at least once$"):
        MultiEndpointBackend([])


def test_create_multi_backend_builds_one_endpoint_per_url() -> None:
    backend = create_multi_backend(
        "qwen",
        {"prompt_mode": "completion"},
        ["http://A:1/v1/", "http://user:secret@b:2/v1"],
        concurrency=3,
        request_timeout_s=7.5,
        token_cap=1000,
        prefill_tps=100.0,
        decode_tps=10.0,
        bench_after=4,
        down_after=9,
    )
    assert backend.labels == ["http://a:1/v1", "http://***@b:2/v1"]
    assert [e.base_url for e in backend.endpoints] == ["http://a:1/v1", "http://user:secret@b:2/v1"]
    assert backend.name == backend.endpoints[0].name
    assert backend.max_concurrency == QUEUE_DEPTH == 65536
    assert backend.token_cap == 1000
    assert backend.max_attempts == 4
    assert backend.deadlines.prefill_tps == 100.0
    assert backend.deadlines.decode_tps == 10.0
    assert backend._policy == {
        "bench_after": 4,
        "bench_base_s": 2.0,
        "bench_cap_s": 60.0,
        "down_after": 9,
    }
    for endpoint in backend.endpoints:
        assert endpoint.prompt_mode == "completion"
        assert endpoint.max_concurrency == 3
        assert endpoint.max_retries == 1
        assert endpoint.retry_policy.backoff_base_s == 0.5
        assert endpoint.request_timeout_s == 7.5
    assert backend.dispatcher is None and backend.served == {} and backend.stats() == []
    assert backend.bounds_own_deadline is True and backend.retries_itself is True


def test_create_multi_backend_defaults() -> None:
    backend = create_multi_backend("qwen", {}, ["http://a:1/v1"])
    assert backend.token_cap is None
    assert backend.max_attempts == 3
    assert backend.deadlines.prefill_tps is None and backend.deadlines.decode_tps is None
    assert backend._policy == {
        "bench_after": 3,
        "bench_base_s": 2.0,
        "bench_cap_s": 60.0,
        "down_after": 5,
    }
    assert backend.retries_done == 0


def test_the_same_endpoint_twice_is_refused() -> None:
    with pytest.raises(UsageError) as caught:
        create_multi_backend(
            "q", {}, ["http://a:1/v1", "http://u:pw@b:2/v1", "http://c:3", "http://u:pw@B:2/v1/"]
        )
    assert str(caught.value) == (
        "the same endpoint is given twice (http://***@b:2/v1, however written): "
        "give each endpoint once"
    )


def test_bad_model_options_are_refused() -> None:
    with pytest.raises(UsageError):
        create_multi_backend("q", {"no_such_option": 1}, ["http://a:1/v1"])


# -- over fault servers (real HTTP on 127.0.0.1) --------------------------------------------------

import asyncio  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402

from longscope.types import GenerationConfig, Request  # noqa: E402

from .fault_server import FaultServer, text_completion_body  # noqa: E402


def _closed_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _request(sample: str = "s", prompt: str = "hello there", tokens: int = 0) -> Request:
    return request(sample, prompt=prompt, max_tokens=4, prompt_tokens=tokens, timeout_s=5.0)


def _run(backend: MultiEndpointBackend, coro_fn):
    async def main():
        try:
            return await coro_fn()
        finally:
            await backend.aclose()

    return asyncio.run(main())


def test_info_takes_the_smallest_context_and_sums_the_caps() -> None:
    with FaultServer(8192) as a, FaultServer(4096) as b, FaultServer() as c:
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [a.url, b.url, c.url])
        info = _run(backend, backend.info)
        again = asyncio.run(backend.info())
    assert again is info
    assert info.context_length == 4096
    assert info.model_id == "openai:m"
    assert info.details["endpoints"] == [a.url, b.url, c.url]
    assert info.details["unreachable"] == []
    assert info.details["token_cap"] == 2 * 8192 + 2 * 4096 + 2 * 32768
    assert [s.token_cap for s in backend.dispatcher.endpoints] == [16384, 8192, 65536]
    assert [s.name for s in backend.dispatcher.endpoints] == [a.url, b.url, c.url]
    assert [s.down for s in backend.dispatcher.endpoints] == [False] * 3
    assert backend.stats()[0]["endpoint"] == a.url


def test_a_user_cap_is_split_over_the_endpoints_and_no_context_stays_unknown() -> None:
    with FaultServer() as a, FaultServer() as b:
        backend = create_multi_backend(
            "m", {"prompt_mode": "completion"}, [a.url, b.url], token_cap=1001, concurrency=1
        )
        info = _run(backend, backend.info)
    assert info.context_length is None
    assert info.details["token_cap"] == 1001
    assert [s.token_cap for s in backend.dispatcher.endpoints] == [501, 500]
    assert [s.max_requests for s in backend.dispatcher.endpoints] == [1, 1]


def test_an_unreachable_endpoint_is_down_and_listed() -> None:
    dead = _closed_url()
    with FaultServer(4096) as a:
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [dead, a.url])
        info = _run(backend, backend.info)
    assert info.details["unreachable"] == [dead]
    assert info.context_length == 4096
    # the unreachable one counts as a 32K context for its cap
    assert info.details["token_cap"] == 2 * 32768 + 2 * 4096
    down = backend.dispatcher.endpoints[0]
    assert down.down is True and f"cannot reach server at {dead}" in down.last_error
    assert backend.dispatcher.endpoints[1].down is False


def test_no_reachable_endpoint_raises_the_first_reason() -> None:
    dead = [_closed_url(), _closed_url()]
    backend = create_multi_backend("m", {}, dead)
    with pytest.raises(UsageError, match=f"cannot reach server at {dead[0]}"):
        _run(backend, backend.info)


def test_endpoints_that_serve_other_models_are_refused() -> None:
    from longscope.models.openai_api import OpenAIBackend

    with FaultServer() as a, FaultServer() as b:
        ends = [OpenAIBackend("m", base_url=a.url), OpenAIBackend("z", base_url=b.url)]
        backend = MultiEndpointBackend(ends)
        with pytest.raises(UsageError) as caught:
            _run(backend, backend.info)
    assert str(caught.value) == (
        "the endpoints serve different models (openai:m, openai:z): "
        "every --base-url must serve the same model"
    )
    assert backend.labels == [a.url, b.url]


def test_a_request_is_answered_and_recorded() -> None:
    with FaultServer() as a, FaultServer() as b:
        a.script.append(("ok", text_completion_body("from a", prompt_tokens=300)))
        b.script.append(("ok", text_completion_body("from b", prompt_tokens=300)))
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [a.url, b.url])
        gen = _run(backend, lambda: backend.generate(_request(tokens=8)))
        assert gen.status == "ok" and gen.text in ("from a", "from b")
        where = a.url if gen.text == "from a" else b.url
        assert backend.served == {("s", 0): [where]}
        # the bound catches a clock reading, not a loaded VM
        assert gen.latency_s == round(gen.latency_s, 6) and 0 < gen.latency_s < 60
        assert backend.deadlines.measured_prefill_tps == pytest.approx(300 / gen.latency_s, rel=0.2)
        stats = {s["endpoint"]: s for s in backend.stats()}
        assert stats[where]["requests"] == 1 and stats[where]["failures"] == 0
        assert stats[where]["prompt_tokens"] == 300 and stats[where]["completion_tokens"] == 3
        assert sum(s["requests"] for s in stats.values()) == 1
        assert backend.retries_done == 0


def test_a_failing_endpoint_passes_the_request_on() -> None:
    with FaultServer() as a, FaultServer() as b:
        a.script.extend([("status", (503, "busy", None))] * 2)
        b.script.append(("ok", text_completion_body("from b")))
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [a.url, b.url])
        gen = _run(backend, lambda: backend.generate(_request()))
    assert gen.status == "ok" and gen.text == "from b", gen.error
    assert backend.served[("s", 0)] == [a.url, b.url]
    assert backend.retries_done == 2  # the retry on a, then the move to b
    assert sum(s["failures"] for s in backend.stats()) == 1


def test_when_every_endpoint_fails_the_reason_names_them() -> None:
    with FaultServer() as a, FaultServer() as b:
        for server in (a, b):
            server.script.extend([("status", (503, "busy", None))] * 10)
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [a.url, b.url])
        gen = _run(backend, lambda: backend.generate(_request()))
        assert len(a.requests) == len(b.requests) == 4  # 2 + 2 attempts, each retried once
    assert gen.status == "error"
    assert gen.text == ""
    assert gen.error == (
        f"failed after 4 attempt(s) on endpoint(s) {a.url}, {b.url}: "
        "gave up after 2 attempts: HTTP 503: busy"
    )
    assert backend.served[("s", 0)] == [a.url, b.url, a.url, b.url]
    assert 0.1 < gen.latency_s < 30  # the whole time, every attempt and backoff


def test_a_request_error_is_not_sent_elsewhere() -> None:
    with FaultServer() as a, FaultServer() as b:
        for server in (a, b):
            server.script.append(("status", (400, "bad prompt", None)))
        backend = create_multi_backend("m", {"prompt_mode": "completion"}, [a.url, b.url])
        gen = _run(backend, lambda: backend.generate(_request()))
    assert gen.status == "error" and "bad prompt" in gen.error
    assert len(backend.served[("s", 0)]) == 1
    assert len(a.requests) + len(b.requests) == 1
    assert sum(s["failures"] for s in backend.stats()) == 0


# -- in process: the scripted backend behind each endpoint ---------------------------------------

from longscope.models.flow import DeadlinePolicy  # noqa: E402
from longscope.models.scripted import ScriptedBackend  # noqa: E402


def test_defaults_of_a_backend_built_directly() -> None:
    ends = [ScriptedBackend("a", max_concurrency=2), ScriptedBackend("b")]
    backend = MultiEndpointBackend(ends, token_cap=77)
    assert backend.labels == ["scripted/a", "scripted/b"]
    assert backend.name == "scripted/a"
    assert backend.token_cap == 77
    assert backend.max_attempts == 4
    assert backend.deadlines == DeadlinePolicy()
    assert backend._policy == {
        "bench_after": 3,
        "bench_base_s": 2.0,
        "bench_cap_s": 60.0,
        "down_after": 5,
    }
    assert backend.dispatcher is None and backend._info is None and backend._timer is None
    assert backend._futures == {} and backend._pump_soon is False and backend.served == {}
    assert backend.stats() == [] and backend.retries_done == 0


def test_given_labels_deadlines_and_attempts_are_kept() -> None:
    policy = DeadlinePolicy(prefill_tps=5.0)
    backend = MultiEndpointBackend(
        [ScriptedBackend("a")],
        labels=["first"],
        deadlines=policy,
        max_attempts=9,
        bench_after=1,
        bench_base_s=0.5,
        bench_cap_s=4.0,
        down_after=2,
    )
    assert backend.labels == ["first"]
    assert backend.deadlines is policy
    assert backend.max_attempts == 9
    info = _go(backend.info())
    assert info.details["endpoints"] == ["first"]
    d = backend.dispatcher
    assert (d.bench_after, d.bench_base_s, d.bench_cap_s, d.down_after) == (1, 0.5, 4.0, 2)
    assert d.endpoints[0].max_requests == 8


def _go(coro):
    """Run `coro` with a bound: a request that is never granted fails in 5 s, not hangs."""

    async def bounded():
        return await asyncio.wait_for(coro, 5)

    return asyncio.run(bounded())


def _scripted(n: int = 1, **kw) -> list[ScriptedBackend]:
    return [ScriptedBackend(answer="yes", **kw) for _ in range(n)]


def _chat(sample: str, text: str, tokens: int = 0, timeout_s: float | None = None) -> Request:
    from longscope.types import Message

    return Request(
        sample,
        0,
        "chat",
        messages=(Message("user", text),),
        config=GenerationConfig(max_tokens=4),
        prompt_tokens=tokens,
        timeout_s=timeout_s,
    )


def test_cost_is_the_counted_tokens_else_a_quarter_of_the_characters() -> None:
    backend = MultiEndpointBackend(_scripted(1))

    async def main():
        await backend.generate(_chat("b", "xyz"))
        tiny = backend.stats()[0]["max_tokens_in_flight"]
        await backend.generate(_chat("a", "x" * 401))
        first = backend.stats()[0]["max_tokens_in_flight"]
        await backend.generate(_chat("c", "y" * 9000, tokens=7))
        return tiny, first

    assert _go(main()) == (1, 100)
    stats = backend.stats()[0]
    assert stats["max_tokens_in_flight"] == 100 and stats["requests"] == 3
    assert backend.dispatcher.in_flight_tokens() == 0


def test_the_longest_waiting_request_goes_first() -> None:
    ends = _scripted(1, max_concurrency=1)
    backend = MultiEndpointBackend(ends)

    async def main():
        await backend.info()
        return await asyncio.gather(
            *(backend.generate(_chat(s, s, tokens=t)) for s, t in [("s", 10), ("l", 30), ("m", 20)])
        )

    gens = _go(main())
    assert [g.status for g in gens] == ["ok"] * 3
    assert [r.sample_id for r in ends[0].requests] == ["l", "m", "s"]
    assert backend._futures == {} and backend._pump_soon is False


def test_the_deadline_sent_grows_with_the_prompt() -> None:
    ends = _scripted(1)
    backend = MultiEndpointBackend(ends, deadlines=DeadlinePolicy(prefill_tps=100.0))
    _go(backend.generate(_chat("s", "q", tokens=6000, timeout_s=1.0)))
    assert ends[0].requests[0].timeout_s == pytest.approx(30.0 + 3.0 * (6000 / 100.0))


def test_two_timeouts_stop_the_request() -> None:
    from longscope.models.scripted import every

    ends = [ScriptedBackend(fault=every(1, "timeout", "timed out")) for _ in "abc"]
    backend = MultiEndpointBackend(ends, labels=["a", "b", "c"], max_attempts=6)
    gen = _go(backend.generate(_chat("s", "q")))
    assert gen.status == "timeout"
    assert sum(len(e.requests) for e in ends) == 2
    assert gen.error == ("failed after 2 attempt(s) on endpoint(s) a, b: timed out")


def test_endpoints_down_fail_the_request_and_later_ones() -> None:
    from longscope.models.scripted import every

    ends = [ScriptedBackend(fault=every(1, "error", "connection error: x")) for _ in "ab"]
    backend = MultiEndpointBackend(ends, labels=["a", "b"], bench_after=1, down_after=0)

    async def main():
        first = await backend.generate(_chat("s", "q"))
        second = await backend.generate(_chat("t", "q"))
        return first, second

    first, second = _go(main())
    assert first.status == "error" and first.text == ""
    assert first.error == (
        "failed after 2 attempt(s) on endpoint(s) a, b: connection error: x; every endpoint is down"
    )
    assert second.status == "error" and second.text == ""
    assert second.error == (
        "failed after 0 attempt(s) on endpoint(s) none: no endpoint left; every endpoint is down"
    )
    assert backend.served == {("s", 0): ["a", "b"]}
    assert [s["down"] for s in backend.stats()] == [True, True]
    assert backend.retries_done == 2


def test_a_benched_endpoint_is_woken_when_its_pause_ends() -> None:
    from longscope.models.scripted import Failure

    calls: list[float] = []

    def once(_r, number):
        calls.append(time.perf_counter())
        return Failure("error", "gave up after 1 attempt") if number == 1 else None

    ends = [ScriptedBackend(answer="yes", fault=once)]
    backend = MultiEndpointBackend(ends, bench_after=1, bench_base_s=0.2)

    async def main():
        return await asyncio.wait_for(backend.generate(_chat("s", "q")), 5)

    gen = _go(main())
    assert gen.status == "ok" and gen.text == "yes"
    # Woken by its own 0.2 s pause's end: not before it, and well before the default pause (2 s).
    assert 0.19 < calls[1] - calls[0] < 1.5
    assert backend._timer is None
    assert backend.served == {("s", 0): ["scripted/scripted", "scripted/scripted"]}


def test_a_cancelled_request_gives_its_place_back() -> None:
    ends = _scripted(1, max_concurrency=1, latency_s=0.2)
    backend = MultiEndpointBackend(ends)

    async def main():
        await backend.info()
        running = asyncio.create_task(backend.generate(_chat("r", "q", tokens=50)))
        waiting = asyncio.create_task(backend.generate(_chat("w", "q", tokens=40)))
        await asyncio.sleep(0.05)
        waiting.cancel()
        await asyncio.sleep(0)
        assert backend.dispatcher.waiting == 0 and backend._futures == {}
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert backend.dispatcher.in_flight_tokens() == 0
        return await asyncio.wait_for(backend.generate(_chat("n", "q", tokens=30)), 2)

    gen = _go(main())
    assert gen.status == "ok"
    assert [r.sample_id for r in ends[0].requests] == ["r", "n"]
    assert backend.stats()[0]["requests"] == 2 and backend.stats()[0]["failures"] == 0


def test_the_tokenizer_is_the_first_endpoints() -> None:
    ends = _scripted(2)
    backend = MultiEndpointBackend(ends)
    assert backend.tokenizer() is ends[0].tokenizer()


def test_an_unexpected_failure_of_one_endpoint_is_raised() -> None:
    ends = _scripted(2)

    async def broken() -> None:
        raise RuntimeError("injected: the listing could not be read")

    ends[1].info = broken  # a fault injected into one endpoint
    backend = MultiEndpointBackend(ends, labels=["a", "b"])
    with pytest.raises(RuntimeError, match="injected"):
        _go(backend.info())


def test_labels_must_match_the_endpoints() -> None:
    backend = MultiEndpointBackend(_scripted(2), labels=["a", "b", "c"])
    with pytest.raises(ValueError):
        _go(backend.info())


def test_a_request_cancelled_just_as_it_is_granted_gives_its_tokens_back() -> None:
    ends = _scripted(1)
    backend = MultiEndpointBackend(ends)

    async def main():
        await backend.info()
        task = asyncio.create_task(backend.generate(_chat("c", "q", tokens=50)))
        await asyncio.sleep(0)  # the task queues its ticket
        await asyncio.sleep(0)  # the pump grants it; the task has not resumed yet
        assert backend.dispatcher.in_flight_tokens() == 50
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert backend.dispatcher.in_flight_tokens() == 0
        assert backend._futures == {}
        return await asyncio.wait_for(backend.generate(_chat("n", "q", tokens=30)), 2)

    gen = _go(main())
    assert gen.status == "ok"
    assert [r.sample_id for r in ends[0].requests] == ["n"]
    assert backend.stats()[0]["requests"] == 2 and backend.stats()[0]["failures"] == 0


def test_a_waiting_request_cancelled_as_the_slot_frees_gives_it_back() -> None:
    """The waiting request's task is cancelled in the same turn as the pump that grants it."""
    tasks: dict[str, asyncio.Task] = {}

    def answer(request: Request) -> str:
        if request.sample_id == "r":
            tasks["w"].cancel()  # W's future is cancelled; its task has not run its handler yet
        return "yes"

    ends = [ScriptedBackend(answer=answer, max_concurrency=1, latency_s=0.05)]
    backend = MultiEndpointBackend(ends)

    async def main():
        await backend.info()
        running = asyncio.create_task(backend.generate(_chat("r", "q", tokens=50)))
        tasks["w"] = asyncio.create_task(backend.generate(_chat("w", "q", tokens=40)))
        first = await running
        with pytest.raises(asyncio.CancelledError):
            await tasks["w"]
        assert backend.dispatcher.in_flight_tokens() == 0 and backend.dispatcher.waiting == 0
        return first, await asyncio.wait_for(backend.generate(_chat("n", "q", tokens=30)), 2)

    first, last = _go(main())
    assert first.status == "ok" and last.status == "ok"
    assert [r.sample_id for r in ends[0].requests] == ["r", "n"]
    assert backend.stats()[0]["failures"] == 0


def test_each_endpoints_latency_and_last_error_are_recorded() -> None:
    from longscope.models.scripted import every

    failing = ScriptedBackend(latency_s=0.05, fault=every(1, "error", "connection error: x"))
    answering = ScriptedBackend(answer="yes", latency_s=0.05)
    backend = MultiEndpointBackend([failing, answering], labels=["a", "b"])
    gen = _go(backend.generate(_chat("s", "q")))
    assert (gen.status, gen.text) == ("ok", "yes") and backend.served == {("s", 0): ["a", "b"]}
    a, b = backend.stats()
    assert (a["failures"], a["last_error"], b["failures"], b["last_error"]) == (
        1,
        "connection error: x",
        0,
        "",
    )
    # each endpoint's mean latency is the time its one request took (0.05 s asleep, and more)
    # (the upper bound only catches a clock reading taken for a duration; a loaded VM is slow)
    assert 0.05 <= a["mean_latency_s"] < 60 and 0.05 <= b["mean_latency_s"] < 60


def test_a_failed_requests_latency_is_the_time_spent_on_it() -> None:
    from longscope.models.scripted import every

    ends = [
        ScriptedBackend(latency_s=0.05, fault=every(1, "error", "connection error: x"))
        for _ in "ab"
    ]
    backend = MultiEndpointBackend(ends, labels=["a", "b"])
    gen = _go(backend.generate(_chat("s", "q")))
    assert gen.status == "error" and gen.error.startswith("failed after 4 attempt(s)")
    # four attempts of 0.05 s each (no bench yet: three failures in a row bench an endpoint)
    assert isinstance(gen.latency_s, float) and 0.2 <= gen.latency_s < 60


def test_the_deadline_sent_is_the_suites_own_when_it_is_longer() -> None:
    ends = _scripted(1)
    policy = DeadlinePolicy(prefill_tps=100.0, decode_tps=2.0)
    backend = MultiEndpointBackend(ends, deadlines=policy)
    _go(backend.generate(_chat("s", "q", tokens=6000, timeout_s=1.0)))
    _go(backend.generate(_chat("t", "q", tokens=6000, timeout_s=500.0)))
    # prefill 6000 / 100 plus the answer's 4 tokens / 2 a second, times the slack of 3, plus 30 s
    sent = [r.timeout_s for r in ends[0].requests]
    assert sent == [pytest.approx(30.0 + 3.0 * (6000 / 100.0 + 4 / 2.0)), 500.0]


def test_requests_with_different_prompts_do_not_wait_for_each_other() -> None:
    # one slot an endpoint: two prompts that share nothing start together, one on each endpoint
    # (prompts sharing a prefix would wait for the first to fill the cache, then follow it)
    ends = [ScriptedBackend(answer="yes", latency_s=0.2, max_concurrency=1) for _ in "ab"]
    backend = MultiEndpointBackend(ends, labels=["a", "b"])

    async def main():
        await backend.info()
        return await asyncio.gather(
            backend.generate(_chat("s", "first prompt")), backend.generate(_chat("t", "other"))
        )

    gens = _go(main())
    assert [g.status for g in gens] == ["ok", "ok"]
    assert [len(e.requests) for e in ends] == [1, 1]
    assert sorted(backend.served.values()) == [["a"], ["b"]]


def test_an_answer_cut_at_its_length_still_measures_the_prefill_rate() -> None:
    ends = [ScriptedBackend(answer="yes " * 40, latency_s=0.05)]
    backend = MultiEndpointBackend(ends)
    gen = _go(backend.generate(_chat("s", "q", tokens=600)))
    assert gen.status == "length" and gen.completion_tokens == 4
    # 600 prompt tokens in the request's time: the slowest rate seen, the deadlines' basis
    assert backend.deadlines.measured_prefill_tps == pytest.approx(600 / gen.latency_s, rel=1e-3)


def test_the_latency_returned_is_rounded_to_the_microsecond(monkeypatch) -> None:
    import itertools
    import time

    # a clock stepping 0.1234567891 s a reading: the latency has digits past the microsecond
    ticks = itertools.count(1)
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks) * 0.1234567891)
    gen = _go(MultiEndpointBackend(_scripted(1)).generate(_chat("s", "q")))
    assert gen.status == "ok" and gen.latency_s > 0
    assert len(repr(gen.latency_s).split(".")[1]) <= 6 and gen.latency_s == round(gen.latency_s, 6)
