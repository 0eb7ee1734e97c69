"""The openai backend, value by value: the request it sends, the generation it records, its
retries and their pauses, its one-line errors, the token counts and the silent-truncation rule.

The fault server (tests/models/fault_server.py) or a small observing server answers; they inject
faults and record what was sent, nothing more (the real llama.cpp server is tested elsewhere).
`clock` is the backend's own view of time: its pauses are recorded and advance that clock instead
of being slept, so latencies and the deadline rule are exact, and the retry policy's jitter is at
its ceiling (the policy's draw itself is tested in test_retry.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from longscope.errors import UsageError
from longscope.models import openai_api
from longscope.models.openai_api import OpenAIBackend, UnusableAnswer, parse_choices
from longscope.models.thinking import THINKING_FORMATS
from longscope.types import SANITIZED, GenerationConfig, Message, Request, sanitized_note
from tests.serving import serving_thread

from .fault_server import FaultServer, completion_body, text_completion_body

THINK = THINKING_FORMATS["think"]
_real_sleep = asyncio.sleep


class Clock:
    """`perf_counter` for the backend: starts at `now`, moves by `step` a reading and by each
    pause the backend takes (recorded in `pauses`, never slept)."""

    def __init__(self, now: float = 1000.0, step: float = 0.0) -> None:
        self.now, self.step = now, step
        self.pauses: list[float] = []

    def perf_counter(self) -> float:
        value = self.now
        self.now += self.step
        return value

    async def sleep(self, delay: float) -> None:
        self.pauses.append(delay)
        self.now += delay
        await _real_sleep(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    watch = Clock()
    monkeypatch.setattr(openai_api, "time", SimpleNamespace(perf_counter=watch.perf_counter))
    fake = SimpleNamespace(**{**vars(asyncio), "sleep": watch.sleep})
    monkeypatch.setattr(openai_api, "asyncio", fake)
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    return watch


@pytest.fixture(scope="module")
def words(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An exact tokenizer (a tokenizer.json) of one token per word or run of punctuation."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def _backend(server: Any, **kwargs: Any) -> OpenAIBackend:
    defaults = {"base_url": server.url, "max_retries": 0, "backoff_base_s": 0.5}
    return OpenAIBackend("m", **{**defaults, **kwargs})


def _chat(text: str = "hi", prompt_tokens: int = 0, timeout_s: float | None = None, **config: Any):
    return Request(
        "s1", 0, "chat", messages=(Message("user", text),),
        config=GenerationConfig(**{"max_tokens": 5, **config}),
        prompt_tokens=prompt_tokens, timeout_s=timeout_s,
    )  # fmt: skip


def _raw(body: dict[str, Any]) -> tuple[str, Any]:
    return ("raw", (200, "application/json", json.dumps(body).encode()))


def _usage(body: dict[str, Any], prompt: int, completion: int) -> dict[str, Any]:
    body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
    return body


# --- the request sent -----------------------------------------------------------------------


async def test_a_chat_request_sends_exactly_the_messages_and_settings() -> None:
    request = Request(
        "s1", 3, "chat",
        messages=(Message("system", "be brief"), Message("user", "what is 2+2?")),
        config=GenerationConfig(max_tokens=7, temperature=0.7, top_p=0.9, seed=11,
                                stop=("\n\n", "END")),
    )  # fmt: skip
    with FaultServer() as server:
        gen = await _backend(server).generate(request)
    (sent,) = server.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == {
        "model": "m", "max_tokens": 7, "temperature": 0.7, "top_p": 0.9, "seed": 11,
        "stop": ["\n\n", "END"],
        "messages": [{"role": "system", "content": "be brief"},
                     {"role": "user", "content": "what is 2+2?"}],
    }  # fmt: skip
    assert (gen.text, gen.status, gen.budget) == ("default", "ok", None)


async def test_a_completion_request_sends_the_prompt_and_no_stop_when_none_is_set() -> None:
    request = Request("s1", 0, "completion", prompt="Q: 2+2?\nA:",
                      config=GenerationConfig(max_tokens=3))  # fmt: skip
    with FaultServer() as server:
        server.script.append(("ok", text_completion_body(" 4")))
        gen = await _backend(server, prompt_mode="completion").generate(request)
    (sent,) = server.requests
    assert sent["path"] == "/v1/completions"
    assert sent["body"] == {
        "model": "m", "max_tokens": 3, "temperature": 0.0, "top_p": 1.0, "seed": 0,
        "prompt": "Q: 2+2?\nA:",
    }  # fmt: skip
    assert (gen.text, gen.status, gen.prompt_tokens, gen.completion_tokens) == (" 4", "ok", 10, 3)


async def test_without_a_key_in_the_environment_the_key_sent_is_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LONGSCOPE_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default-variable")
    with FaultServer() as server:
        await _backend(server, api_key_env="LONGSCOPE_NO_SUCH_KEY").generate(_chat())
        await OpenAIBackend.from_options("m", {}, base_url=server.url).generate(_chat())
    assert [r["auth"] for r in server.requests] == ["Bearer EMPTY", "Bearer sk-default-variable"]


async def test_repeats_are_one_request_with_n_carrying_the_first_repeats_seed() -> None:
    requests = [_chat(seed=seed) for seed in (7, 8, 9)]
    body = completion_body("a")
    body["choices"] = [
        {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "length"}
        for i, t in enumerate("abc")
    ]
    with FaultServer() as server:
        server.script.append(("ok", body))
        backend = _backend(server)
        made = await backend.generate_group(requests)
    (sent,) = server.requests
    assert (sent["body"]["n"], sent["body"]["seed"]) == (3, 7)
    # Every choice cut at max_tokens is still an answer: the server does take `n`.
    assert [(g.text, g.status) for g in made] == [("a", "length"), ("b", "length"), ("c", "length")]
    assert backend.supports_n is True


async def test_a_server_ignoring_n_keeps_its_one_choice_even_when_cut_and_asks_the_rest() -> None:
    requests = [_chat(seed=seed) for seed in (7, 8)]
    with FaultServer() as server:
        server.script.extend([("ok", completion_body("a", finish="length")), ("ok", "b")])
        backend = _backend(server)
        made = await backend.generate_group(requests)
    assert [r["body"].get("n") for r in server.requests] == [2, None]
    assert [(g.text, g.status) for g in made] == [("a", "length"), ("b", "ok")]
    assert backend.supports_n is False


async def test_a_failed_n_request_is_one_failure_per_repeat_not_resent_one_by_one() -> None:
    with FaultServer() as server:
        server.script.append(("status", (500, "boom", {})))
        made = await _backend(server).generate_group([_chat(seed=1), _chat(seed=2)])
    assert len(server.requests) == 1
    assert [(g.status, g.error) for g in made] == [
        ("error", "gave up after 1 attempts: HTTP 500: boom")
    ] * 2


async def test_a_refused_n_of_two_is_asked_again_one_by_one() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (400, "n must be 1", {})), ("ok", "x"), ("ok", "y")])
        backend = _backend(server)
        made = await backend.generate_group([_chat(seed=1), _chat(seed=2)])
    assert [r["body"].get("n") for r in server.requests] == [2, None, None]
    assert sorted(g.text for g in made) == ["x", "y"] and backend.supports_n is False


# --- defaults and options -------------------------------------------------------------------


def test_the_defaults_a_user_gets() -> None:
    backend = OpenAIBackend("org/model-7b", base_url="http://127.0.0.1:9/v1")
    assert (backend.name, backend.model, backend.base_url) == (
        "openai/org/model-7b", "org/model-7b", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert (backend.prompt_mode, backend.stated_context_length, backend.tokenizer_spec) == (
        "chat", None, "qwen2.5",
    )  # fmt: skip
    assert (backend.max_concurrency, backend.max_retries, backend.request_timeout_s) == (8, 5, 600)
    policy = backend.retry_policy
    assert (policy.max_retries, policy.backoff_base_s, policy.backoff_cap_s) == (5, 1.0, 30.0)
    assert (backend.retries_done, backend.supports_n) == (0, None)
    assert (backend.thinking.name, backend.thinking_via, backend.thinking_opened) == (
        "think", "continue", False,
    )  # fmt: skip
    # One HTTP client per 8 connections (httpx scans its pool per request: see __init__).
    assert len(backend._clients) == 1
    client = backend._clients[0]
    assert (str(client.base_url), client.max_retries) == ("http://127.0.0.1:9/v1/", 0)
    assert (client.timeout.read, client.timeout.connect) == (600.0, 10.0)


@pytest.mark.parametrize(("concurrency", "clients"), [(1, 1), (8, 1), (9, 2), (17, 3), (0, 1)])
def test_one_client_per_eight_connections(concurrency: int, clients: int) -> None:
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", concurrency=concurrency)
    assert len(backend._clients) == clients
    assert backend._client is backend._clients[0]


def test_options_and_transport_reach_the_backend() -> None:
    options = {
        "prompt_mode": "completion", "context_length": 4096, "tokenizer": "qwen2",
        "api_key_env": "MY_KEY", "thinking_format": "qwen3", "thinking_budget_via": "vllm",
        "thinking_opened": True,
    }  # fmt: skip
    backend = OpenAIBackend.from_options(
        "m", options, base_url="http://127.0.0.1:9/v1", concurrency=None, request_timeout_s=30.0
    )
    assert (backend.prompt_mode, backend.stated_context_length, backend.tokenizer_spec) == (
        "completion", 4096, "qwen2",
    )  # fmt: skip
    assert (backend.thinking.name, backend.thinking_via, backend.thinking_opened) == (
        "qwen3", "vllm", True,
    )  # fmt: skip
    # A transport value left unset (None) keeps the backend's own default.
    assert (backend.max_concurrency, backend.request_timeout_s) == (8, 30.0)
    plain = OpenAIBackend.from_options("m", {}, base_url="http://127.0.0.1:9/v1")
    assert (plain.prompt_mode, plain.stated_context_length, plain.tokenizer_spec) == (
        "chat", None, "qwen2.5",
    )  # fmt: skip
    assert (plain.thinking.name, plain.thinking_via, plain.thinking_opened) == (
        "think", "continue", False,
    )  # fmt: skip


def test_a_bad_tokenizer_is_one_usage_error_naming_it() -> None:
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", tokenizer="no-such-tok")
    with pytest.raises(UsageError) as caught:
        backend.tokenizer()
    assert str(caught.value).startswith(
        "unknown tokenizer 'no-such-tok': use 'qwen2.5', a named model ("
    )


# --- what the server serves (info) ---------------------------------------------------------


class _Observer:
    """A server that answers GET /models with `get_status` (or a listing) and each POST after
    `pause_s`, noting the most POSTs it held at once."""

    def __init__(self, get_status: int = 200, pause_s: float = 0.0, listing: Any = None) -> None:
        self.active = self.most = 0
        self.lock = threading.Lock()
        observer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if get_status != 200:
                    self._send(get_status, {"error": {"message": "no", "code": get_status}})
                else:
                    self._send(200, listing)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with observer.lock:
                    observer.active += 1
                    observer.most = max(observer.most, observer.active)
                time.sleep(pause_s)
                with observer.lock:
                    observer.active -= 1
                self._send(200, completion_body("ok"))

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        serving_thread(self.httpd).start()

    def __enter__(self) -> _Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


async def test_info_reports_the_server_and_its_listing() -> None:
    listing = {"object": "list", "data": [
        {"id": "m", "object": "model", "owned_by": "vllm", "max_model_len": 32768},
        {"id": "a-draft", "object": "model", "owned_by": "someone"},
    ]}  # fmt: skip
    with _Observer(listing=listing) as server:
        backend = _backend(server, tokenizer="qwen2")
        info = await backend.info()
        assert await backend.info() is info  # asked once
    assert (info.model_id, info.context_length, info.context_source) == (
        "openai:m",
        32768,
        "server",
    )
    assert (info.prompt_mode, info.tokenizer) == ("chat", "qwen2")
    assert info.details == {
        "served_models": ["a-draft", "m"],
        "server_max_model_len": 32768,
        "owned_by": "vllm",
        "batching": "the server's own (continuous batching on vLLM and SGLang); "
        "not reported over the API",
        "prefix_cache": "the server's own; not reported over the API",
        "warnings": [],
    }


def test_a_name_the_server_does_not_list_gets_one_warning_line() -> None:
    from longscope.models.openai_api import unlisted_model_warning

    url = "http://gpu1:8000/v1"
    assert unlisted_model_warning("m", ["a", "m"], url) == []
    assert unlisted_model_warning("m", [], url) == []  # a server that lists nothing: no verdict
    many = [f"model-{i}" for i in range(7)]
    (line,) = unlisted_model_warning("Qwen/Qwen2.5-7B", many, "http://u:pw@gpu1:8000/v1")
    assert line == (
        "the server at http://***@gpu1:8000/v1 lists model-0, model-1, model-2, model-3, model-4 "
        "..., not Qwen/Qwen2.5-7B: a server that checks the name (vLLM, SGLang) refuses every "
        "request; pass --model openai/NAME with a listed NAME"
    )
    (hostile,) = unlisted_model_warning("m", ["evil\n[red]x"], url)
    assert "\n" not in hostile and "evil\\n[red]x" in hostile and "openai/evil" in hostile


async def test_info_without_a_length_anywhere_says_unknown() -> None:
    listing = {"object": "list", "data": [{"id": "m", "object": "model"}]}
    with _Observer(listing=listing) as server:
        info = await _backend(server).info()
        stated = await _backend(server, context_length=2048).info()
    assert (info.context_length, info.context_source) == (None, "unknown")
    assert (info.details["server_max_model_len"], info.details["owned_by"]) == (None, None)
    assert (stated.context_length, stated.context_source) == (2048, "user")


async def test_a_refused_model_listing_is_one_line_without_the_credentials() -> None:
    with _Observer(get_status=401) as server:
        url = f"http://user:secret@127.0.0.1:{server.port}/v1"
        with pytest.raises(UsageError) as caught:
            await OpenAIBackend("m", base_url=url).info()
    assert str(caught.value) == (
        f"server at http://***@127.0.0.1:{server.port}/v1 answered /models with HTTP 401: "
        "check --base-url and the API key variable"
    )


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_requests_in_flight_never_exceed_the_concurrency(concurrency: int) -> None:
    with _Observer(pause_s=0.3) as server:
        backend = _backend(server, concurrency=concurrency)
        made = await asyncio.gather(*(backend.generate(_chat()) for _ in range(3)))
    assert [g.status for g in made] == ["ok"] * 3
    assert server.most == concurrency


# --- retries, pauses, deadlines and their one-line errors -----------------------------------


async def test_each_retry_pauses_by_the_policy_and_the_failure_says_how_often(
    clock: Clock,
) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (500, "boom", {}))] * 4)
        backend = _backend(server, max_retries=3, backoff_cap_s=1.5)
        gen = await backend.generate(_chat())
    # Base 0.5 s doubled per retry up to the 1.5 s cap (the jitter at its ceiling); the latency
    # is the time spent.
    assert clock.pauses == [0.5, 1.0, 1.5]
    assert (backend.retries_done, len(server.requests)) == (3, 4)
    assert (gen.text, gen.status, gen.error) == (
        "",
        "error",
        "gave up after 4 attempts: HTTP 500: boom",
    )
    assert (gen.reasoning, gen.prompt_tokens, gen.completion_tokens) == ("", 0, 0)
    assert gen.latency_s == 3.0


async def test_the_sdk_itself_never_retries() -> None:
    with FaultServer() as server:
        server.script.extend([("status", (503, "busy", {}))] * 3)
        gen = await _backend(server).generate(_chat())
    assert len(server.requests) == 1
    assert (gen.status, gen.error) == ("error", "gave up after 1 attempts: HTTP 503: busy")


@pytest.mark.parametrize(
    ("header", "pause"), [("2.5", 2.5), ("-3", 0.0), ("0", 0.0), ("soon", 0.5), ("500", 120.0)]
)
async def test_a_429_waits_as_retry_after_says(clock: Clock, header: str, pause: float) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (429, "slow down", {"Retry-After": header})), ("ok", "x")])
        backend = _backend(server, max_retries=1)
        gen = await backend.generate(_chat())
    # A number is honoured (never below 0, at most 4 x the 30 s cap); anything else: the policy.
    assert clock.pauses == [pause]
    assert (gen.status, gen.text, gen.latency_s, backend.retries_done) == ("ok", "x", pause, 1)


@pytest.mark.parametrize(("ahead", "pause"), [(45, 45.0), (-60, 0.0), (600, 120.0)])
async def test_a_429_waits_until_a_retry_after_date(clock: Clock, ahead: int, pause: float) -> None:
    import email.utils
    from datetime import UTC, datetime, timedelta

    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=ahead), usegmt=True)
    with FaultServer() as server:
        server.script.extend([("status", (429, "slow down", {"Retry-After": when})), ("ok", "x")])
        gen = await _backend(server, max_retries=1).generate(_chat())
    # The date's whole seconds, read a moment after it was written (at most 4 x the 30 s cap).
    (taken,) = clock.pauses
    assert pause - 2 <= taken <= pause and gen.status == "ok"


async def test_a_pause_that_would_reach_the_task_limit_ends_the_request(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (429, "slow down", {"Retry-After": "2"})), ("ok", "x")])
        backend = _backend(server, max_retries=3)
        gen = await backend.generate(_chat(timeout_s=2.0))
    assert clock.pauses == [] and backend.retries_done == 0 and len(server.requests) == 1
    assert (gen.status, gen.error) == (
        "timeout",
        "task limit of 2s reached after 1 attempt(s); last: HTTP 429: slow down",
    )
    assert gen.latency_s == 0.0


async def test_a_pause_that_ends_before_the_task_limit_is_taken(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (429, "slow down", {"Retry-After": "1.5"})), ("ok", "x")])
        gen = await _backend(server, max_retries=3).generate(_chat(timeout_s=2.0))
    assert clock.pauses == [1.5] and (gen.status, gen.text, gen.latency_s) == ("ok", "x", 1.5)


@pytest.mark.parametrize("limit", [0.5, 1.0])
async def test_a_limit_spent_before_the_first_attempt_sends_nothing(
    clock: Clock, limit: float
) -> None:
    clock.step = 1.0  # each reading of the clock is a second later: the limit is spent at once
    with FaultServer() as server:
        gen = await _backend(server, max_retries=2).generate(_chat(timeout_s=limit))
    assert server.requests == []
    assert (gen.text, gen.status, gen.error) == (
        "", "timeout", f"task limit of {limit:g}s reached after 0 attempt(s); last: none",
    )  # fmt: skip


async def test_each_attempt_is_bounded_by_what_is_left_of_the_task_limit(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 1.0), ("sleep", 1.0)])
        backend = _backend(server, request_timeout_s=5.0)
        gen = await backend.generate(_chat(timeout_s=0.3))
    assert len(server.requests) == 1
    assert (gen.status, gen.error) == ("timeout", "gave up after 1 attempts: no answer within 0.3s")


async def test_an_attempt_without_a_task_limit_is_bounded_by_the_request_timeout() -> None:
    with FaultServer() as server:
        server.script.extend([("sleep", 1.0)])
        gen = await _backend(server, request_timeout_s=0.2).generate(_chat())
    assert (gen.status, gen.error) == ("timeout", "gave up after 1 attempts: no answer within 0.2s")


async def test_a_trickling_answer_is_cut_at_the_attempts_budget() -> None:
    # 16 bytes every 0.2 s never trips httpx's read timeout; the attempt's own bound does.
    with FaultServer() as server:
        server.script.append(("trickle", ("slow", 0.2)))
        gen = await _backend(server, request_timeout_s=0.3).generate(_chat())
    assert (gen.status, gen.error) == ("timeout", "gave up after 1 attempts: no answer within 0.3s")


async def test_a_dropped_connection_is_retried_and_named() -> None:
    with FaultServer() as server:
        server.script.extend([("drop", None), ("drop", None)])
        backend = _backend(server, max_retries=1, backoff_base_s=0.0)
        gen = await backend.generate(_chat())
    assert len(server.requests) == 2 and backend.retries_done == 1
    assert (gen.status, gen.error) == (
        "error", "gave up after 2 attempts: connection error: Connection error.",
    )  # fmt: skip


async def test_an_unusable_answer_is_retried_and_quoted() -> None:
    with FaultServer() as server:
        server.script.extend([("ok", {"id": "x", "choices": []})] * 2)
        backend = _backend(server, max_retries=1, backoff_base_s=0.0)
        gen = await backend.generate(_chat())
    assert len(server.requests) == 2
    assert (gen.text, gen.status, gen.error) == (
        "", "error",
        'gave up after 2 attempts: unusable answer: no choices in the answer: {"id": "x", '
        '"choices": []}',
    )  # fmt: skip


@pytest.mark.parametrize(
    ("code", "message", "status"),
    [
        (404, "The model `m` does not exist.", "error"),
        (401, "Incorrect API key provided", "error"),
        (413, "the request exceeds the available context size, try increasing it",
         "context_overflow"),
        (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096",
         "context_overflow"),
        (400, "This model's maximum context length is 8192 tokens. However, you requested 9000 "
              "tokens.", "context_overflow"),
        (400, "temperature must be <= 2", "error"),
    ],
)  # fmt: skip
async def test_a_client_error_is_final_sent_once_and_quoted(
    code: int, message: str, status: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (code, message, {}))] * 2)
        backend = _backend(server, max_retries=3)
        gen = await backend.generate(_chat())
    assert len(server.requests) == 1 and clock.pauses == [] and backend.retries_done == 0
    assert (gen.text, gen.status, gen.error) == ("", status, f"HTTP {code}: {message}")


@pytest.mark.parametrize("code", [500, 502, 429])
async def test_a_server_error_or_429_is_retried(code: int, clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([("status", (code, "try later", {})), ("ok", "fine")])
        gen = await _backend(server, max_retries=1).generate(_chat())
    assert len(server.requests) == 2 and clock.pauses == [0.5]
    assert (gen.status, gen.text) == ("ok", "fine")


@pytest.mark.parametrize("code", [400, 413])
async def test_an_overflow_said_only_by_its_code_is_final(code: int) -> None:
    # OpenAI's and Groq's `context_length_exceeded`: the message need not say it.
    body = {"error": {"message": "request rejected", "type": "invalid_request_error",
                      "code": "context_length_exceeded"}}  # fmt: skip
    with FaultServer() as server:
        server.script.append(("raw", (code, "application/json", json.dumps(body).encode())))
        gen = await _backend(server, max_retries=2).generate(_chat())
    assert len(server.requests) == 1
    assert (gen.status, gen.error) == ("context_overflow", f"HTTP {code}: request rejected")


@pytest.mark.parametrize("code", [400, 413])
async def test_an_overflow_worded_outside_the_message_field_is_found_in_the_body(code: int) -> None:
    # A FastAPI-style `{"detail": ...}`: no `message` member; the wording is in the body's text.
    wording = "This model's maximum context length is 4096 tokens. However, you requested 5000."
    body = json.dumps({"detail": wording}).encode()
    with FaultServer() as server:
        server.script.append(("raw", (code, "application/json", body)))
        gen = await _backend(server, max_retries=2).generate(_chat())
    assert (gen.status, gen.error) == ("context_overflow", f"HTTP {code}: {body.decode()}")


async def test_a_backend_set_for_a_server_budget_sends_none_without_a_budget() -> None:
    with FaultServer() as server:
        await _backend(server, thinking_via="sglang").generate(_chat())
        await _backend(server, thinking_via="vllm").generate(_chat())
    assert [
        set(r["body"]) & {"custom_params", "thinking_token_budget"} for r in server.requests
    ] == [
        set(),
        set(),
    ]


async def test_an_error_whose_body_is_a_bare_string_is_quoted_as_the_string() -> None:
    tgi = {"error": "Input validation error: `temperature` must be strictly positive",
           "error_type": "validation"}  # fmt: skip
    with FaultServer() as server:
        server.script.append(("raw", (400, "application/json", json.dumps(tgi).encode())))
        gen = await _backend(server).generate(_chat())
    assert (gen.status, gen.error) == (
        "error", "HTTP 400: Input validation error: `temperature` must be strictly positive",
    )  # fmt: skip


async def test_an_error_without_a_message_quotes_its_body_on_one_line() -> None:
    body = b'{"detail":\n  "Not Found"}'
    with FaultServer() as server:
        server.script.append(("raw", (404, "application/json", body)))
        empty = ("raw", (404, "text/plain", b""))
        server.script.append(empty)
        gen = await _backend(server).generate(_chat())
        bare = await _backend(server).generate(_chat())
    assert gen.error == 'HTTP 404: {"detail": "Not Found"}'
    assert bare.error == "HTTP 404: (empty body, Error code: 404)"


# --- what is recorded from an answer ---------------------------------------------------------


@pytest.mark.parametrize(("sent", "seen", "status"), [
    (400, 392, "ok"), (400, 391, "context_overflow"),  # 8 tokens of slack below 800 sent
    (5000, 4950, "ok"), (5000, 4949, "context_overflow"),  # 1% above
])  # fmt: skip
async def test_silent_truncation_with_the_models_own_tokenizer_at_its_threshold(
    sent: int, seen: int, status: str, words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(("ok", completion_body("x", prompt_tokens=seen)))
        gen = await _backend(server, tokenizer=words).generate(_chat(prompt_tokens=sent))
    assert (gen.status, gen.prompt_tokens, gen.completion_tokens, gen.text) == (
        status,
        seen,
        3,
        "x",
    )
    expected = f"silent truncation: server counted {seen} prompt tokens, harness sent {sent}"
    assert gen.error == (expected if status != "ok" else "")
    assert gen.latency_s == 0.0


async def test_the_latency_recorded_is_the_whole_request_with_its_retries(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend(
            [("status", (500, "x", {})), ("ok", completion_body("y", reasoning="r"))]
        )
        gen = await _backend(server, max_retries=1).generate(_chat(prompt_tokens=10))
    assert (gen.text, gen.reasoning, gen.status, gen.latency_s) == ("y", "r", "ok", 0.5)


def _body(*choices: dict[str, Any], usage: Any = None) -> bytes:
    return json.dumps({"choices": list(choices), "usage": usage}).encode()


def _message(content: Any = "x", index: Any = None, finish: str = "stop", **extra: Any) -> dict:
    choice: dict[str, Any] = {"message": {"role": "assistant", "content": content, **extra},
                              "finish_reason": finish}  # fmt: skip
    if index is not None:
        choice["index"] = index
    return choice


def test_choices_come_in_index_order_with_the_output_shared_out() -> None:
    body = _body(_message("b", 1), _message("a"), _message("c", 2, "length"),
                 usage={"prompt_tokens": 50, "completion_tokens": 7})  # fmt: skip
    made = parse_choices(body, "chat")
    assert [(g.text, g.status, g.prompt_tokens, g.completion_tokens) for g in made] == [
        ("a", "ok", 50, 2), ("b", "ok", 50, 2), ("c", "length", 50, 2),
    ]  # fmt: skip


def test_think_markers_are_split_unless_the_text_is_asked_raw() -> None:
    body = _body(_message("<think>hmm</think>42"))
    (split,) = parse_choices(body, "chat")
    (raw,) = parse_choices(body, "chat", raw=True)
    (opened,) = parse_choices(_body(_message("still thinking")), "chat", opened="<think>")
    assert (split.text, split.reasoning) == ("42", "hmm")
    assert (raw.text, raw.reasoning) == ("<think>hmm</think>42", "")
    assert (opened.text, opened.reasoning) == ("", "still thinking")
    (plain,) = parse_choices(_body(_message("just this")), "chat")
    assert (plain.text, plain.reasoning, plain.error) == ("just this", "", "")


def test_a_completion_choice_has_no_reasoning_field() -> None:
    body = json.dumps({"choices": [{"text": " 4", "finish_reason": "stop"}]}).encode()
    (gen,) = parse_choices(body, "completion")
    assert (gen.text, gen.reasoning, gen.status, gen.prompt_tokens) == (" 4", "", "ok", 0)


@pytest.mark.parametrize(
    ("extra", "reasoning"),
    [({"reasoning": "via reasoning"}, "via reasoning"),
     ({"reasoning_content": "rc", "reasoning": "r"}, "rc"),
     ({"reasoning_content": {"not": "text"}}, ""), ({"reasoning": 42}, "")],
)  # fmt: skip
def test_the_servers_reasoning_field_is_kept_when_it_is_text(extra: dict, reasoning: str) -> None:
    (gen,) = parse_choices(_body(_message("a", **extra)), "chat")
    assert (gen.text, gen.reasoning) == ("a", reasoning)


@pytest.mark.parametrize(("content", "reasoning", "count"), [
    ("a\ud800b", "", 1), ("a\ud800b", "\udc00", 2), ("ok", "\ud800 r", 1),
])  # fmt: skip
def test_lone_surrogates_are_replaced_and_counted(content: str, reasoning: str, count: int) -> None:
    body = json.dumps({"choices": [_message(content, reasoning_content=reasoning)]}).encode()
    (gen,) = parse_choices(body, "chat")
    assert "\ud800" not in gen.text + gen.reasoning
    assert gen.error == sanitized_note(count) and gen.error.startswith(SANITIZED)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[1, 2]", "body is not a JSON object: [1, 2]"),
        (b'{"error": {"message": "oom"}}',
         'server answered 200 with an error: {"error": {"message": "oom"}}'),
        (b'{"choices": []}', 'no choices in the answer: {"choices": []}'),
        (b'{"choices": [{"index": 0}]}', 'no message in the answer\'s choice: {"choices": '
         '[{"index": 0}]}'),
        (b"", "body is not JSON: (empty body)"),
        (b"\xff oops", "body is not JSON: \ufffd oops"),
    ],
)  # fmt: skip
def test_an_unusable_answer_says_why_in_one_line(body: bytes, reason: str) -> None:
    with pytest.raises(UnusableAnswer) as caught:
        parse_choices(body, "chat")
    assert str(caught.value) == reason


def test_an_unusable_body_is_quoted_at_most_200_characters() -> None:
    long = b"<" + b"x" * 500
    with pytest.raises(UnusableAnswer) as caught:
        parse_choices(long, "chat")
    assert str(caught.value) == "body is not JSON: " + ("<" + "x" * 199)


def test_spaces_in_a_quoted_reason_are_folded_within_the_first_400_characters() -> None:
    text = "a" + " " * 398 + "b" + " " * 100 + "c"
    assert openai_api._snippet(text) == "a b"
    assert openai_api._snippet("x" * 250) == "x" * 200


# --- a thinking budget (two requests) -----------------------------------------------------------


def _said(content: str, finish: str, tokens: int, reasoning: str | None = None) -> tuple[str, Any]:
    body = completion_body(content, reasoning=reasoning, finish=finish)
    return _raw(_usage(body, 10, tokens))


def _text(text: str, finish: str, tokens: int) -> tuple[str, Any]:
    body = text_completion_body(text)
    body["choices"][0]["finish_reason"] = finish
    return _raw(_usage(body, 10, tokens))


async def test_a_forced_close_sends_the_thought_and_cue_and_counts_every_token(
    clock: Clock,
) -> None:
    with FaultServer() as server:
        server.script.extend([_said("<think>still going", "length", 32),
                              _said("42", "stop", 2)])  # fmt: skip
        gen = await _backend(server).generate(_chat(prompt_tokens=10, max_tokens=8,
                                                    thinking_budget=32))  # fmt: skip
    first, second = (r["body"] for r in server.requests)
    assert (first["max_tokens"], second["max_tokens"]) == (32, 8)
    assert first["messages"] == [{"role": "user", "content": "hi"}]
    assert second["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>still going" + THINK.forced},
    ]
    assert (second["continue_final_message"], second["add_generation_prompt"]) == (True, False)
    assert not {"thinking_token_budget", "custom_params", "n"} & (set(first) | set(second))
    assert (gen.text, gen.reasoning, gen.status, gen.error) == ("42", "still going", "ok", "")
    assert (gen.prompt_tokens, gen.completion_tokens, gen.latency_s) == (10, 34, 0.0)
    assert gen.budget == openai_api.BudgetUse(32, 32, True, 2, False)


async def test_a_forced_close_counts_the_text_when_the_server_gives_no_usage(
    words: str, clock: Clock
) -> None:
    first = completion_body("<think>one two three", finish="length")
    second = completion_body("four five")
    del first["usage"], second["usage"]
    with FaultServer() as server:
        server.script.extend([_raw(first), _raw(second)])
        gen = await _backend(server, tokenizer=words).generate(_chat(max_tokens=8,
                                                                     thinking_budget=4))  # fmt: skip
    # "<think>one two three": < think > one two three = 6 tokens; "four five" = 2.
    assert gen.budget == openai_api.BudgetUse(4, 6, True, 2, False)
    assert (gen.text, gen.completion_tokens) == ("four five", 8)


async def test_an_answer_within_the_thinking_budget_is_counted_from_its_text(
    words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(_said("<think>a b c</think>the answer", "stop", 9))
        gen = await _backend(server, tokenizer=words).generate(_chat(thinking_budget=64))
    assert len(server.requests) == 1 and server.requests[0]["body"]["max_tokens"] == 64
    assert (gen.text, gen.reasoning, gen.status) == ("the answer", "a b c", "ok")
    # 9 tokens written, 2 of them the answer ("the answer"): 7 were thinking.
    assert gen.budget == openai_api.BudgetUse(64, 7, False, 2, False)
    assert gen.completion_tokens == 9


async def test_an_answer_without_thinking_within_the_budget_spent_nothing_thinking(
    words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(_said("just 4", "stop", 2))
        gen = await _backend(server, tokenizer=words).generate(_chat(thinking_budget=64))
    assert (gen.text, gen.reasoning, gen.completion_tokens) == ("just 4", "", 2)
    assert gen.budget == openai_api.BudgetUse(64, 0, False, 2, False)


async def test_an_answer_within_the_budget_keeps_the_servers_reasoning(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.append(_said("<think>b</think>c", "stop", 5, reasoning="a"))
        gen = await _backend(server).generate(_chat(thinking_budget=64))
    assert (gen.text, gen.reasoning, gen.status) == ("c", "a\nb", "ok")


async def test_an_answer_within_the_budget_without_usage_counts_its_whole_text(
    words: str, clock: Clock
) -> None:
    body = completion_body("<think>a b</think>c")
    del body["usage"]
    with FaultServer() as server:
        server.script.append(_raw(body))
        gen = await _backend(server, tokenizer=words).generate(_chat(thinking_budget=64))
    # The whole text "<think>a b</think>c" is 9 tokens; the answer "c" is 1.
    assert gen.budget == openai_api.BudgetUse(64, 8, False, 1, False)


async def test_a_failed_first_request_is_the_answer_as_it_failed(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.append(("status", (400, "bad thinking", {})))
        gen = await _backend(server).generate(_chat(thinking_budget=16))
    assert (gen.status, gen.error, gen.budget) == ("error", "HTTP 400: bad thinking", None)


async def test_a_failed_continuation_is_the_answer_with_the_whole_latency(clock: Clock) -> None:
    with FaultServer() as server:
        down = ("status", (500, "down", {}))
        server.script.extend([down, _said("<think>x", "length", 16), down, down])
        gen = await _backend(server, max_retries=1).generate(_chat(thinking_budget=16))
    assert len(server.requests) == 4 and clock.pauses == [0.5, 0.5]
    # Both requests' time: the first's retry and the continuation's.
    assert (gen.status, gen.error, gen.latency_s) == (
        "error", "gave up after 2 attempts: HTTP 500: down", 1.0,
    )  # fmt: skip


async def test_a_continuation_cut_at_max_tokens_is_length_and_keeps_its_note(
    clock: Clock,
) -> None:
    with FaultServer() as server:
        server.script.extend([_said("<think>x", "length", 16), _said("ab\ud800", "length", 8)])
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=16))
    assert (gen.text, gen.status, gen.error) == ("ab\ufffd", "length", sanitized_note(1))
    assert gen.budget == openai_api.BudgetUse(16, 16, True, 8, True)
    assert gen.completion_tokens == 24


async def test_a_first_answers_note_is_kept_when_the_continuation_has_none(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_said("<think>x\ud800", "length", 16), _said("y", "stop", 1)])
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=16))
    assert (gen.text, gen.error) == ("y", sanitized_note(1))


async def test_an_answer_begun_within_the_budget_goes_on_with_what_is_left(
    words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.extend([
            _text("<think>ok</think>The ans", "length", 12), _text("wer is", "stop", 0)
        ])  # fmt: skip
        backend = _backend(server, prompt_mode="completion", tokenizer=words)
        request = Request("s", 0, "completion", prompt="Q: x\nA:", prompt_tokens=6,
                          config=GenerationConfig(max_tokens=8, thinking_budget=12))  # fmt: skip
        gen = await backend.generate(request)
    first, second = (r["body"] for r in server.requests)
    assert (first["prompt"], first["max_tokens"]) == ("Q: x\nA:", 12)
    # The answer so far ("The ans") is 2 tokens of the 8: 6 are left.
    assert (second["prompt"], second["max_tokens"]) == ("Q: x\nA:<think>ok</think>The ans", 6)
    assert (gen.text, gen.reasoning, gen.status) == ("The answer is", "ok", "ok")
    # 12 written, 2 of them answer: 10 thinking; the continuation's "wer is" counted: 2.
    assert gen.budget == openai_api.BudgetUse(12, 10, False, 4, False)
    assert (gen.completion_tokens, gen.prompt_tokens) == (14, 10)


async def test_an_answer_that_used_all_its_budget_is_not_continued(
    words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(_text("<think>ok</think>a b c d", "length", 12))
        backend = _backend(server, prompt_mode="completion", tokenizer=words)
        request = Request("s", 0, "completion", prompt="Q:",
                          config=GenerationConfig(max_tokens=4, thinking_budget=12))  # fmt: skip
        gen = await backend.generate(request)
    assert len(server.requests) == 1
    assert (gen.text, gen.status, gen.error) == ("a b c d", "length", "")
    assert gen.budget == openai_api.BudgetUse(12, 8, False, 4, True)


async def test_a_model_that_does_not_think_answers_within_both_budgets(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_said("Once upon", "length", 12), _said(" a time", "length", 8)])
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=12))
    second = server.requests[1]["body"]
    assert (second["messages"][-1], second["max_tokens"]) == (
        {"role": "assistant", "content": "Once upon"}, 8,
    )  # fmt: skip
    assert (gen.text, gen.reasoning, gen.status) == ("Once upon a time", "", "length")
    assert gen.budget == openai_api.BudgetUse(12, 0, False, 20, True)
    assert gen.completion_tokens == 20


async def test_a_model_that_does_not_think_and_used_both_budgets_is_not_continued(
    clock: Clock,
) -> None:
    with FaultServer() as server:
        server.script.append(_said("Once upon a time", "length", 20))
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=20))
    # 20 of the 28 written: 8 left, so the answer goes on.
    assert server.requests[-1]["body"]["max_tokens"] == 8
    with FaultServer() as server:
        server.script.append(_said("Once upon a time", "length", 28))
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=20))
    assert len(server.requests) == 1
    assert (gen.text, gen.status) == ("Once upon a time", "length")
    assert gen.budget == openai_api.BudgetUse(20, 0, False, 28, True)


async def test_one_token_left_for_the_answer_is_still_asked_for(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_said("Once upon", "length", 12), _said(" a", "length", 1)])
        gen = await _backend(server).generate(_chat(max_tokens=1, thinking_budget=12))
    assert [r["body"]["max_tokens"] for r in server.requests] == [12, 1]
    assert (gen.text, gen.budget) == ("Once upon a", openai_api.BudgetUse(12, 0, False, 13, True))


async def test_the_continuation_after_a_forced_close_is_all_answer(clock: Clock) -> None:
    # What the model writes after the forced close is its answer, markers and all (raw).
    with FaultServer() as server:
        server.script.extend([_said("<think>a", "length", 16), _said("b</think>42", "stop", 3)])
        gen = await _backend(server).generate(_chat(max_tokens=8, thinking_budget=16))
    assert (gen.text, gen.reasoning) == ("b</think>42", "a")


async def test_a_completion_prompt_that_opened_the_thinking_is_forced_closed(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_text("step one", "length", 16), _text("9", "stop", 1)])
        backend = _backend(server, prompt_mode="completion")
        request = Request("s", 0, "completion", prompt="Q?<think>",
                          config=GenerationConfig(max_tokens=8, thinking_budget=16))  # fmt: skip
        gen = await backend.generate(request)
    second = server.requests[1]["body"]
    assert second["prompt"] == "Q?<think>step one" + THINK.forced
    assert (gen.text, gen.reasoning) == ("9", "step one")
    assert gen.budget == openai_api.BudgetUse(16, 16, True, 1, False)


async def test_without_a_budget_a_thought_a_completion_prompt_opened_is_split_off() -> None:
    with FaultServer() as server:
        body = text_completion_body("still thinking")
        body["choices"][0]["finish_reason"] = "length"
        server.script.extend([_raw(body), ("ok", text_completion_body("a</think>b")), _raw(body)])
        backend = _backend(server, prompt_mode="completion")
        opened = Request("s", 0, "completion", prompt="Q?<think>\n")
        plain = Request("s", 0, "completion", prompt="Q? <think> is a tag")
        unclosed, closed = await backend.generate(opened), await backend.generate(opened)
        as_text = await backend.generate(plain)
    assert (unclosed.text, unclosed.reasoning, unclosed.status) == ("", "still thinking", "length")
    assert (closed.text, closed.reasoning) == ("b", "a")
    # A prompt that only mentions the tag opened nothing: the text is the answer.
    assert (as_text.text, as_text.reasoning) == ("still thinking", "")


async def test_a_chat_template_that_opens_the_thinking_is_said_by_the_option(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_said("step one", "length", 16), _said("9", "stop", 1)])
        backend = _backend(server, thinking_opened=True)
        gen = await backend.generate(_chat(max_tokens=8, thinking_budget=16))
    assert server.requests[1]["body"]["messages"][-1]["content"] == "step one" + THINK.forced
    assert (gen.text, gen.reasoning, gen.budget.forced) == ("9", "step one", True)


async def test_a_server_parser_that_closed_the_thinking_is_continued_from_the_answer(
    words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.extend([_said("The ans", "length", 12, reasoning="short"),
                              _said("wer", "stop", 1)])  # fmt: skip
        gen = await _backend(server, tokenizer=words).generate(_chat(max_tokens=8,
                                                                     thinking_budget=12))  # fmt: skip
    second = server.requests[1]["body"]
    assert second["messages"][-1]["content"] == "<think>\nshort\n</think>\n\nThe ans"
    assert second["max_tokens"] == 6
    assert (gen.text, gen.reasoning) == ("The answer", "short")
    assert gen.budget == openai_api.BudgetUse(12, 10, False, 3, False)


@pytest.mark.parametrize(
    ("via", "field", "value"),
    [("vllm", "thinking_token_budget", 24), ("sglang", "custom_params", {"thinking_budget": 24})],
)
async def test_a_server_budget_is_one_request_and_its_use_is_read_back(
    via: str, field: str, value: Any, words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(_said("forty two", "stop", 30, reasoning="x " * 23))
        backend = _backend(server, thinking_via=via, tokenizer=words)
        gen = await backend.generate(_chat(max_tokens=8, thinking_budget=24))
    (sent,) = (r["body"] for r in server.requests)
    other = {"thinking_token_budget", "custom_params"} - {field}
    assert sent[field] == value and sent["max_tokens"] == 32 and not other & set(sent)
    # 23 thinking tokens of 24: within max(2, 1%) of the budget, so the server closed it.
    assert (gen.text, gen.reasoning) == ("forty two", ("x " * 23).strip())
    assert gen.budget == openai_api.BudgetUse(24, 23, True, 7, False)


@pytest.mark.parametrize(
    ("budget", "thought", "forced"),
    [(24, 22, True), (24, 21, False), (400, 396, True), (400, 395, False)],
)  # fmt: skip
async def test_a_server_closed_thinking_at_its_budget_exactly(
    budget: int, thought: int, forced: bool, words: str, clock: Clock
) -> None:
    with FaultServer() as server:
        server.script.append(_said("a", "length", thought + 1, reasoning="x " * thought))
        backend = _backend(server, thinking_via="vllm", tokenizer=words)
        gen = await backend.generate(_chat(max_tokens=8, thinking_budget=budget))
    assert gen.budget == openai_api.BudgetUse(budget, thought, forced, 1, True)


async def test_a_server_budget_answer_without_usage_is_counted_from_its_text(
    words: str, clock: Clock
) -> None:
    body = completion_body("one two three")
    del body["usage"]
    with FaultServer() as server:
        server.script.extend([_raw(body), ("status", (404, "gone", {}))])
        backend = _backend(server, thinking_via="sglang", tokenizer=words)
        gen = await backend.generate(_chat(max_tokens=8, thinking_budget=24))
        failed = await backend.generate(_chat(max_tokens=8, thinking_budget=24))
    assert gen.budget == openai_api.BudgetUse(24, 0, False, 3, False)
    assert (failed.status, failed.error, failed.budget) == ("error", "HTTP 404: gone", None)


async def test_repeats_with_a_thinking_budget_go_one_by_one(clock: Clock) -> None:
    with FaultServer() as server:
        server.script.extend([_said("<think>a</think>b", "stop", 5)] * 2)
        made = await _backend(server, thinking_via="vllm").generate_group(
            [_chat(thinking_budget=64, seed=1), _chat(thinking_budget=64, seed=2)]
        )
    assert [g.text for g in made] == ["b", "b"]
    # Sent side by side: in either order.
    assert sorted((r["body"].get("n") or 0, r["body"]["seed"]) for r in server.requests) == [
        (0, 1),
        (0, 2),
    ]


def test_counting_nothing_is_zero_tokens(words: str) -> None:
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", tokenizer=words)
    assert (backend._count(""), backend._count("a b")) == (0, 2)


def test_the_repeat_key_ignores_only_the_seed() -> None:
    key = openai_api._prompt_key
    assert key(_chat(seed=1)) == key(_chat(seed=2))
    assert key(_chat(stop=("x",))) != key(_chat())
    assert json.loads(key(_chat()))[-1] == []


async def test_a_key_variable_named_but_unset_is_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LONGSCOPE_UNSET_KEY", raising=False)
    monkeypatch.setattr(openai_api, "_SAID", set())
    with FaultServer() as server:
        for _ in range(2):  # two endpoints of one run: one line
            await _backend(server, api_key_env="LONGSCOPE_UNSET_KEY").generate(_chat())
    assert [r["auth"] for r in server.requests] == ["Bearer EMPTY"] * 2
    assert capsys.readouterr().err == (
        "warning: -M api_key_env=LONGSCOPE_UNSET_KEY: that variable is not set, so no API key is "
        "sent (`Authorization: Bearer EMPTY`); set it, or leave api_key_env out for a server "
        "without keys\n"
    )
    monkeypatch.setenv("LONGSCOPE_UNSET_KEY", "")
    assert openai_api.auth_notes("http://h/v1", "LONGSCOPE_UNSET_KEY", False)[0].startswith(
        "warning: -M api_key_env=LONGSCOPE_UNSET_KEY: that variable is empty"
    )
    # The default variable unset (a local server without keys) is no surprise: nothing said.
    assert openai_api.auth_notes("http://h/v1", openai_api.DEFAULT_API_KEY_ENV, False) == []


async def test_a_url_with_credentials_says_basic_auth_is_sent_never_the_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set")
    monkeypatch.setattr(openai_api, "_SAID", set())
    with FaultServer() as server:
        port = server.httpd.server_address[1]
        url = f"http://alice:s3cret@127.0.0.1:{port}/v1"
        await _backend(server, base_url=url).generate(_chat())
    # What the note says is what went: Basic auth with the URL's credentials, not the key.
    (sent,) = [r["auth"] for r in server.requests]
    assert sent == "Basic " + base64.b64encode(b"alice:s3cret").decode()
    err = capsys.readouterr().err
    assert err == (
        f"warning: http://***@127.0.0.1:{port}/v1 holds a user name and password: the "
        "server gets HTTP Basic auth as user 'alice', not a Bearer key ($OPENAI_API_KEY is not "
        "sent)\n"
    )
    assert "s3cret" not in err
