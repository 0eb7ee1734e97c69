"""Several endpoints serving one run: three real llama.cpp servers, and counting servers for the cap.

The llama.cpp servers serve the embedded model (every score comes from it). The counting servers
only count what arrives (prompt tokens in flight, in the model's own tokenizer) and answer at once:
they check flow control, never a score.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from longscope.errors import UsageError
from longscope.models.endpoints import MultiEndpointBackend, read_url_file
from longscope.models.openai_api import create_multi_backend
from longscope.run.merge import endpoint_history, record_endpoints
from longscope.run.plan import Rates, actual_figures, make_plan
from longscope.run.runner import RunOptions, run_async
from longscope.run.store import RunStore
from longscope.suites import create_suite
from tests.serving import serving_thread

from ..llama_server import start_server, stop, wait_ready

pytestmark = pytest.mark.model

OPTIONS = {"prompt_mode": "completion", "context_length": 4096, "tokenizer": "gemma3-270m"}
GRID = {"lengths": [512], "depths": [0.1, 0.5, 0.9], "types": ["needle"]}
MAX_TOKENS = 16  # short answers: the machine is shared, and scores are not what is checked here


def _start(model_path: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    return start_server(model_path, log_path, n_ctx=4096, alias="gemma3-270m", threads=1)


@pytest.fixture(scope="module")
def servers(model_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """Three llama.cpp servers of the embedded model (the last test kills one)."""
    logs = tmp_path_factory.mktemp("servers")
    started = [_start(model_path, logs / f"server{i}.log") for i in range(3)]
    try:
        for i, (proc, url) in enumerate(started):
            wait_ready(proc, url, logs / f"server{i}.log")
        yield started
    finally:
        for proc, _ in started:
            stop(proc)


def _backend(urls: list[str], **kw: Any) -> MultiEndpointBackend:
    return create_multi_backend("gemma3-270m", dict(OPTIONS), urls, **kw)


def _run(suite_params: dict, backend: MultiEndpointBackend, out: Path, repeats: int = 1):
    async def main():
        try:
            return await run_async(
                create_suite("longctx", suite_params),
                backend,
                RunOptions(output=out, quiet=True, repeats=repeats, max_tokens=MAX_TOKENS),
            )
        finally:
            await backend.aclose()

    return asyncio.run(main())


def _plan(params: dict, urls: list[str], options: RunOptions, **kw: Any):
    backend = _backend(urls)

    async def main():
        try:
            return await make_plan(create_suite("longctx", params), backend, options, **kw)
        finally:
            await backend.aclose()

    return asyncio.run(main())


def test_three_servers_serve_one_run_with_affinity_and_plan_counts(servers, tmp_path: Path) -> None:
    urls = [url for _, url in servers]
    plan = _plan(
        GRID,
        urls,
        RunOptions(output=tmp_path, repeats=2, max_tokens=MAX_TOKENS),
        rates=Rates(prefill_tps=1000.0, decode_tps=20.0, source="stated"),
        price_in=1.0,
        price_out=2.0,
    )
    backend = _backend(urls)
    result = _run(GRID, backend, tmp_path, repeats=2)
    with RunStore.open_readonly(tmp_path) as store:
        rows = store.generations(result.run_id)
    assert len(rows) == len({(s, r) for s, r, _ in rows}) == 6
    assert all(g.status in ("ok", "length") for _, _, g in rows)
    assert result.scores.to_dict()["completeness"]["complete"] is True
    # a document's two repeats went to one endpoint (its prefix cache), the work to all three
    for sample in {s for s, _, _ in rows}:
        assert backend.served[(sample, 0)] == backend.served[(sample, 1)]
    stats = backend.stats()
    assert sum(e["requests"] for e in stats) == 6 and all(e["failures"] == 0 for e in stats)
    assert sum(1 for e in stats if e["requests"]) >= 2
    assert sum(e["prompt_tokens"] for e in stats) == sum(g.prompt_tokens for _, _, g in rows)
    record_endpoints(tmp_path, result.run_id, stats)
    assert endpoint_history(tmp_path, result.run_id) == [stats]
    # the plan counted what the server counted (its own tokenizer: within 2 tokens a request)
    assert plan.requests == 6 and plan.skipped == 0 and plan.already_done == 0
    assert abs(plan.prompt_tokens - sum(g.prompt_tokens for _, _, g in rows)) <= 2 * 6
    assert plan.output_tokens == 6 * MAX_TOKENS
    assert plan.eta_s == pytest.approx((plan.prompt_tokens / 1000 + 6 * MAX_TOKENS / 20) / 3)
    assert plan.cost == pytest.approx((plan.prompt_tokens * 1.0 + 6 * MAX_TOKENS * 2.0) / 1e6)
    assert "6 requests" in plan.forecast() and "ETA" in plan.forecast()
    line = actual_figures(tmp_path, result.run_id, 65.0, 1.0, 2.0)
    assert line.startswith("actual: 6 requests") and "1m 05s" in line
    # once stored, the plan of the same run has nothing left to send
    again = _plan(GRID, urls, RunOptions(output=tmp_path, repeats=2, max_tokens=MAX_TOKENS))
    assert (again.requests, again.already_done) == (0, 6)


def test_probe_measures_rates(servers) -> None:
    backend = _backend([servers[0][1]])

    async def main():
        try:
            return await make_plan(
                create_suite("longctx", {**GRID, "depths": [0.5]}),
                backend,
                RunOptions(max_tokens=MAX_TOKENS),
                probe=True,
                probe_tokens=512,
            )
        finally:
            await backend.aclose()

    plan = asyncio.run(main())
    assert plan.rates is not None and plan.rates.source == "probe"
    assert plan.rates.prefill_tps > 10 and plan.rates.decode_tps > 0.5
    assert plan.eta_s is not None and plan.eta_s > 0


def test_bad_endpoint_lists_are_refused() -> None:
    with pytest.raises(UsageError, match="twice"):
        create_multi_backend("m", {}, ["http://a/v1", "http://a/v1"])
    with pytest.raises(UsageError, match="expected http"):
        read_url_file("http://a/v1\nftp://b\n")
    assert read_url_file("# servers\nhttp://a/v1  # one\n\nhttps://b/v1\n") == [
        "http://a/v1",
        "https://b/v1",
    ]


class CountingServer:
    """Counts prompt tokens in flight (the model's tokenizer) and answers after `delay_s`."""

    def __init__(self, tokenizer: Any, delay_s: float = 0.15) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.total = 0
        self.arrivals: list[int] = []
        self.requests: dict[tuple[str, int], int] = {}
        """(prompt, seed) -> tokens: what was asked, once however often it was sent."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "gemma3-270m", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                tokens = len(tokenizer.encode(body["prompt"]))
                with server.lock:
                    server.in_flight += tokens
                    server.total += tokens
                    server.arrivals.append(tokens)
                    server.requests[(body["prompt"], body.get("seed", 0))] = tokens
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(delay_s)
                with server.lock:
                    server.in_flight -= tokens
                usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens}
                choice = {"index": 0, "text": " x", "finish_reason": "stop"}
                self._send(
                    {"id": "c", "object": "text_completion", "choices": [choice], "usage": usage}
                )

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (the timeout test) closed its connection

        self._httpd = Quiet(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        serving_thread(self._httpd).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_token_cap_is_never_exceeded_and_longest_go_first(gemma_tokenizer, tmp_path: Path) -> None:
    counters = [CountingServer(gemma_tokenizer) for _ in range(2)]
    params = {"lengths": [1024, 2048], "depths": [0.1, 0.3, 0.5, 0.7, 0.9], "types": ["needle"]}
    try:
        cap = 6000  # 3,000 per endpoint: three 1K prompts (2,997) fit, a 2K and a 1K (3,019) do not
        urls = [c.base_url for c in counters]
        plan = _plan(params, urls, RunOptions(repeats=2, max_tokens=MAX_TOKENS))
        backend = _backend(urls, token_cap=cap)
        result = _run(params, backend, tmp_path, repeats=2)
    finally:
        for counter in counters:
            counter.close()
    assert result.sent == 20
    for counter, stats in zip(counters, backend.stats(), strict=True):
        assert 0 < counter.max_in_flight <= cap // 2
        assert stats["max_tokens_in_flight"] <= stats["token_cap"] == cap // 2
        # the runner hands over the 1K samples first; the first each endpoint got was a 2K one
        assert counter.arrivals[0] > 1500
    # more than one request at a time was in flight somewhere (the cap, not a count, limited it)
    assert max(c.max_in_flight for c in counters) > 2048
    # what the plan counted is exactly what the servers were asked (a retry sends a prompt twice)
    asked = {k: v for c in counters for k, v in c.requests.items()}
    assert len(asked) == 20 and plan.prompt_tokens == sum(asked.values())


def test_long_prompts_get_longer_deadlines(gemma_tokenizer) -> None:
    """A server that takes 1.5 s: a 1 s suite limit times a long prompt out unless a prefill rate
    says a prompt that long needs longer (30 s + 3 x 4,000 / 100 tok/s here)."""
    from longscope.models.flow import DeadlinePolicy
    from longscope.types import GenerationConfig, Request

    server = CountingServer(gemma_tokenizer, delay_s=1.5)
    prompt = "word " * 4_000
    request = Request(
        "s",
        0,
        "completion",
        prompt=prompt,
        config=GenerationConfig(max_tokens=4),
        prompt_tokens=len(gemma_tokenizer.encode(prompt)),
        timeout_s=1.0,
    )

    async def ask(deadlines: DeadlinePolicy):
        backend = _backend([server.base_url])
        backend.deadlines = deadlines
        backend.max_attempts = 1
        try:
            return await backend.generate(request)
        finally:
            await backend.aclose()

    try:
        scaled = asyncio.run(ask(DeadlinePolicy(prefill_tps=100.0)))
        flat = asyncio.run(ask(DeadlinePolicy()))
    finally:
        server.close()
    assert scaled.status == "ok"
    assert flat.status == "timeout" and "1.0s" in flat.error


def test_time_queued_behind_the_cap_does_not_count_against_a_deadline(
    gemma_tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five requests, one at a time under the cap, 0.4 s each, a 1.5 s limit: the fifth has queued
    1.6 s when it is sent, and is still answered (its deadline starts when it is sent). Each has
    1.1 s over its answer's time for HTTP on a slow or loaded machine."""
    from longscope.run import runner
    from longscope.types import GenerationConfig, Request

    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.1)
    server = CountingServer(gemma_tokenizer, delay_s=0.4)
    prompts = [f"{word} " * 300 for word in ("alpha", "beta", "gamma", "delta", "omega")]
    requests = [
        Request(
            f"s{i}",
            0,
            "completion",
            prompt=p,
            config=GenerationConfig(max_tokens=4),
            prompt_tokens=len(gemma_tokenizer.encode(p)),
            timeout_s=1.5,
        )
        for i, p in enumerate(prompts)
    ]

    async def main():
        backend = _backend([server.base_url], token_cap=400)  # one request at a time
        try:
            return await asyncio.gather(
                *(runner._generate_with_deadline(backend, r) for r in requests)
            )
        finally:
            await backend.aclose()

    try:
        generations = asyncio.run(main())
    finally:
        server.close()
    assert [g.status for g in generations] == ["ok"] * 5, [g.error for g in generations]
    assert server.max_in_flight <= 400


def test_when_every_endpoint_fails_every_request_is_stored_with_its_reason(tmp_path: Path) -> None:
    from tests.hostile_server import HostileServer, fails_always

    with (
        HostileServer("gemma3-270m", fails=fails_always, error="overloaded") as a,
        HostileServer("gemma3-270m", fails=fails_always, error="overloaded") as b,
    ):
        backend = _backend([a.base_url, b.base_url], bench_after=1, bench_base_s=0.05, down_after=1)
        result = _run(GRID, backend, tmp_path, repeats=2)
    with RunStore.open_readonly(tmp_path) as store:
        rows = store.generations(result.run_id)
    assert len(rows) == 6 and all(g.status == "error" for _, _, g in rows)
    assert all("endpoint" in g.error for _, _, g in rows)
    assert all("HTTP 503: overloaded" in g.error for _, _, g in rows)
    assert any(g.error.endswith("every endpoint is down") for _, _, g in rows)
    assert all(e["down"] for e in backend.stats())
    assert result.scores.to_dict()["completeness"]["complete"] is False


def test_nothing_lost_when_one_server_is_killed_mid_run(servers, tmp_path: Path) -> None:
    urls = [url for _, url in servers]
    victim_proc, victim_url = servers[2]
    backend = _backend(urls)
    backend.max_attempts = 4
    killed = threading.Event()

    def killer() -> None:
        deadline = time.time() + 300
        while time.time() < deadline:
            dispatcher = backend.dispatcher
            if dispatcher is not None:
                victim = dispatcher.endpoints[2]
                if victim.outstanding_requests and sum(e.requests for e in dispatcher.endpoints):
                    os.kill(victim_proc.pid, signal.SIGKILL)
                    killed.set()
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    result = _run(GRID, backend, tmp_path, repeats=2)
    thread.join(timeout=5)
    assert killed.is_set(), "the kill must land mid-run"
    with RunStore.open_readonly(tmp_path) as store:
        rows = store.generations(result.run_id)
    assert len(rows) == len({(s, r) for s, r, _ in rows}) == 6
    assert all(g.status in ("ok", "length") for _, _, g in rows), [g.error for _, _, g in rows]
    victim = backend.stats()[2]
    assert victim["failures"] >= 1
    moved = [tried for tried in backend.served.values() if len(tried) > 1]
    assert moved and all(t[0] == victim_url and t[-1] != victim_url for t in moved)
