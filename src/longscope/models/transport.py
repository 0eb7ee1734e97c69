"""The HTTP client under every request to an OpenAI-compatible server: what it reads and where it
follows.

- **Bounded bodies.** A server's answer is read up to a bound set from the request: `max_tokens`
  per choice at `BODY_BYTES_PER_TOKEN` bytes (room for JSON escapes of non-Latin text, long
  whitespace tokens, and reasoning returned twice, in `reasoning_content` and `reasoning`) plus
  `BODY_BASE_BYTES` for the envelope. A declared `Content-Length` past the bound is refused before
  reading; a longer or endless body stops at the bound. Either raises `BodyTooLarge`, which the
  backend records as the request's `error` with the reason (the run goes on). Requests that are
  not generations (the model listing, embeddings) read at most `OTHER_BODY_BYTES`.
- **Same-origin redirects only.** httpx follows redirects and re-sends the body on 307/308; to
  another origin (scheme, host or port) that would hand the prompts to a host the user did not
  name (httpx strips the key, not the prompts). A redirect to another origin raises
  `CrossOriginRedirect` instead of being followed; one within the origin is followed as before.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator

from longscope.urls import shown

try:  # the HTTP library the `openai` SDK itself uses: httpx2 from SDK 3 on (faster), else httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an SDK before 3
    import httpx  # type: ignore[no-redef]

BODY_BASE_BYTES = 1 << 20
"""What an answer may hold beyond its tokens: the JSON envelope, usage, ids (1 MiB)."""
BODY_BYTES_PER_TOKEN = 256
"""Bytes one generated token may take in the body, per choice."""
OTHER_BODY_BYTES = 32 << 20
"""The bound on any body that is not a generation (a model listing, an embedding batch)."""
# The connection pool the SDK's default client keeps (openai._constants).
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)

_limit: contextvars.ContextVar[int] = contextvars.ContextVar("body_limit", default=OTHER_BODY_BYTES)


class BodyTooLarge(Exception):
    """A response body past the bound set for its request (not read further)."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        self.limit = limit
        what = f"declares {declared:,} bytes" if declared is not None else "runs past it"
        super().__init__(
            f"answer body over the bound of {limit:,} bytes ({what}): not read further"
        )


class CrossOriginRedirect(Exception):
    """A redirect to another origin, not followed (the prompts go only to the host named)."""

    def __init__(self, status: int, source: httpx.URL, target: httpx.URL) -> None:
        super().__init__(
            f"HTTP {status} redirect from {_origin(source)} to another origin, "
            f"{_origin(target)}: not followed (longscope sends prompts only to the host you "
            "name); give the final URL"
        )


def body_limit(max_tokens: int, choices: int = 1) -> int:
    """Return the bytes an answer of `choices` x `max_tokens` tokens may take."""
    return BODY_BASE_BYTES + max(1, choices) * max(0, max_tokens) * BODY_BYTES_PER_TOKEN


@contextlib.contextmanager
def bounded(limit: int) -> Iterator[None]:
    """Read the bodies of requests sent within this block (same task) up to `limit` bytes."""
    token = _limit.set(limit)
    try:
        yield
    finally:
        _limit.reset(token)


def _origin(url: httpx.URL) -> str:
    return shown(f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}")


def _redirect_target(response: httpx.Response) -> httpx.URL | None:
    """Return where a redirect leads when it leaves the request's origin, else None."""
    if not response.has_redirect_location:
        return None
    source = response.request.url
    try:
        target = source.join(response.headers["location"])
    except httpx.InvalidURL:
        return None  # httpx refuses it itself when it tries to follow
    same = (target.scheme, target.host, target.port) == (source.scheme, source.host, source.port)
    return None if same or not target.host else target


def _check_redirect(response: httpx.Response) -> None:
    target = _redirect_target(response)
    if target is not None:
        raise CrossOriginRedirect(response.status_code, response.request.url, target)


async def _check_redirect_async(response: httpx.Response) -> None:
    _check_redirect(response)


class _BoundedStream(httpx.AsyncByteStream, httpx.SyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream | httpx.SyncByteStream, limit: int) -> None:
        self._inner, self._limit, self._read = inner, limit, 0

    def _take(self, chunk: bytes) -> bytes:
        self._read += len(chunk)
        if self._read > self._limit:
            raise BodyTooLarge(self._limit)
        return chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:  # type: ignore[union-attr]
            yield self._take(chunk)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:  # type: ignore[union-attr]
            yield self._take(chunk)

    async def aclose(self) -> None:
        await self._inner.aclose()  # type: ignore[union-attr]

    def close(self) -> None:
        self._inner.close()  # type: ignore[union-attr]


def _declared(response: httpx.Response) -> int | None:
    try:
        return int(response.headers.get("content-length", ""))
    except ValueError:
        return None


def _bounded_response(response: httpx.Response, limit: int) -> httpx.Response:
    response.stream = _BoundedStream(response.stream, limit)
    return response


class _BoundedAsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        limit, declared = _limit.get(), _declared(response)
        if declared is not None and declared > limit:
            await response.aclose()
            raise BodyTooLarge(limit, declared)
        return _bounded_response(response, limit)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        limit, declared = _limit.get(), _declared(response)
        if declared is not None and declared > limit:
            response.close()
            raise BodyTooLarge(limit, declared)
        return _bounded_response(response, limit)

    def close(self) -> None:
        self._inner.close()


def async_client(timeout_s: float, connect_s: float) -> httpx.AsyncClient:
    """Return an async client that bounds bodies and follows same-origin redirects only."""
    return httpx.AsyncClient(
        transport=_BoundedAsyncTransport(httpx.AsyncHTTPTransport(limits=_LIMITS)),
        timeout=httpx.Timeout(timeout_s, connect=connect_s),
        follow_redirects=True,
        event_hooks={"response": [_check_redirect_async]},
    )


def sync_client(timeout_s: float, connect_s: float) -> httpx.Client:
    """Return a client that bounds bodies and follows same-origin redirects only."""
    return httpx.Client(
        transport=_BoundedTransport(httpx.HTTPTransport(limits=_LIMITS)),
        timeout=httpx.Timeout(timeout_s, connect=connect_s),
        follow_redirects=True,
        event_hooks={"response": [_check_redirect]},
    )


def refused(exc: BaseException) -> BodyTooLarge | CrossOriginRedirect | None:
    """Return the bound or redirect refusal behind `exc` (the SDK may wrap it), else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BodyTooLarge | CrossOriginRedirect):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


__all__ = [
    "BODY_BASE_BYTES",
    "BODY_BYTES_PER_TOKEN",
    "OTHER_BODY_BYTES",
    "BodyTooLarge",
    "CrossOriginRedirect",
    "async_client",
    "body_limit",
    "bounded",
    "refused",
    "sync_client",
]
