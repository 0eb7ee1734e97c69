"""What the HTTP client under the `openai` backend reads and where it follows (issue 39.6, 39.10):
bodies bounded from the request's max tokens, redirects followed within the origin only. The
servers are the fault server (tests/models/fault_server.py) playing the fault; the backend and
its client are the product."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from longscope.errors import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.models.transport import BODY_BASE_BYTES, BODY_BYTES_PER_TOKEN, body_limit
from longscope.types import GenerationConfig, Message, Request

from .fault_server import FaultServer, completion_body


def _backend(url: str, **kwargs: Any) -> OpenAIBackend:
    defaults = {"base_url": url, "max_retries": 2, "backoff_base_s": 0.01}
    return OpenAIBackend("m", **{**defaults, **kwargs})


def _chat(max_tokens: int = 8, n: int = 0) -> Request:
    return Request(
        "s", n, "chat", messages=(Message("user", f"hi {n}"),),
        config=GenerationConfig(max_tokens=max_tokens),
    )  # fmt: skip


def _sized(size: int) -> tuple[str, Any]:
    """A well-formed answer of exactly `size` bytes (padded in its `id`)."""
    body = completion_body("fine")
    bare = len(json.dumps(body).encode())
    body["id"] = "x" * (size - bare + 1)
    data = json.dumps(body).encode()
    assert len(data) == size
    return ("raw", (200, "application/json", data))


def test_the_bound_follows_max_tokens_and_choices() -> None:
    assert body_limit(200) == BODY_BASE_BYTES + 200 * BODY_BYTES_PER_TOKEN == 1_099_776
    assert body_limit(200, 4) == BODY_BASE_BYTES + 4 * 200 * BODY_BYTES_PER_TOKEN


async def test_an_answer_at_the_bound_is_read_and_one_byte_over_is_an_error() -> None:
    limit = body_limit(8)
    with FaultServer() as server:
        server.script.extend([_sized(limit), _sized(limit + 1), ("ok", "after")])
        backend = _backend(server.url)
        at, over, after = [await backend.generate(_chat(n=i)) for i in range(3)]
        await backend.aclose()
    assert (at.status, at.text) == ("ok", "fine")
    assert over.status == "error" and over.text == ""
    assert over.error == (
        f"answer body over the bound of {limit:,} bytes (declares {limit + 1:,} bytes): not read "
        "further (bound set by max_tokens 8)"
    )
    # Not retried (the same request meets the same bound), and the run goes on.
    assert len(server.requests) == 3 and (after.status, after.text) == ("ok", "after")


async def test_an_endless_body_stops_at_the_bound() -> None:
    limit = body_limit(8)
    with FaultServer() as server:
        server.script.extend([("endless", 64 * 1024), ("ok", "after")])
        backend = _backend(server.url, request_timeout_s=60)
        started = time.perf_counter()
        endless = await backend.generate(_chat())
        took = time.perf_counter() - started
        after = await backend.generate(_chat(n=1))
        await backend.aclose()
        time.sleep(0.2)
        written = server.written
    assert endless.status == "error"
    assert endless.error.startswith(f"answer body over the bound of {limit:,} bytes (runs past it)")
    # Read up to the bound, then hung up: the server wrote little more than that (socket buffers).
    assert limit < written < limit + 16 * 1024 * 1024 and took < 20
    assert (after.status, after.text) == ("ok", "after")


async def test_an_oversized_error_body_is_bounded_too() -> None:
    limit = body_limit(8)
    big = b'{"error": {"message": "' + b"x" * limit + b'"}}'
    with FaultServer() as server:
        server.script.append(("raw", (503, "application/json", big)))
        gen = await _backend(server.url).generate(_chat())
    assert gen.status == "error" and "answer body over the bound" in gen.error
    assert len(server.requests) == 1


def _moved(location: str, code: int = 307) -> tuple[str, Any]:
    return ("status", (code, "moved", {"Location": location}))


@pytest.mark.parametrize("code", [307, 308])
async def test_a_redirect_to_another_origin_is_not_followed(code: int) -> None:
    with FaultServer() as named, FaultServer() as other:
        named.script.append(_moved(f"{other.url}/chat/completions", code))
        gen = await _backend(named.url).generate(_chat())
    assert other.requests == [] and len(named.requests) == 1
    here, there = named.url.removesuffix("/v1"), other.url.removesuffix("/v1")
    assert gen.status == "error"
    assert gen.error == (
        f"HTTP {code} redirect from {here} to another origin, {there}: not followed (longscope "
        "sends prompts only to the host you name); give the final URL"
    )


async def test_a_redirect_within_the_origin_is_followed() -> None:
    with FaultServer() as server:
        server.script.extend([_moved("/v1/chat/completions?moved=1", 308), ("ok", "fine")])
        gen = await _backend(server.url).generate(_chat())
    assert (gen.status, gen.text) == ("ok", "fine")
    assert [r["path"] for r in server.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions?moved=1",
    ]
    # The prompt went to the same host both times.
    assert server.requests[1]["body"] == server.requests[0]["body"]


async def test_a_scheme_change_is_another_origin() -> None:
    with FaultServer() as server:
        https = server.url.replace("http://", "https://")
        server.script.append(_moved(f"{https}/chat/completions"))
        gen = await _backend(server.url).generate(_chat())
    assert gen.status == "error" and "to another origin, https://127.0.0.1:" in gen.error
    assert len(server.requests) == 1


async def test_a_model_listing_redirected_elsewhere_is_one_line() -> None:
    with FaultServer() as named, FaultServer() as other:
        named.get_redirect = f"{other.url}/models"
        backend = _backend(named.url)
        with pytest.raises(UsageError) as refused:
            await backend.info()
        await backend.aclose()
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"server at {named.url}: HTTP 307 redirect")
    assert "not followed" in message
