"""A tiny OpenAI-compatible server that fails or answers with hostile text, for CLI tests only.

It injects faults (HTTP 503 with a hostile error body) and hostile answers; it never stands in
for a model's quality: what it answers is fixed text, and the tests assert how longscope shows it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.serving import serving_thread

HOSTILE = (
    "[/] [bold]loud[/bold] \x1b]0;pwned\x07\x1b[2J \u202eevil\u202c "
    "<script>alert(1)</script> <img src=x onerror=alert(1)> [link](javascript:alert(1)) $\\x{$"
)
"""Rich markup, an OSC window title, clear screen, a bidi override, HTML, a javascript: link and
matplotlib mathtext, all in one string."""


def prompt_of(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def fails_always(prompt: str) -> bool:
    return True


def fails_never(prompt: str) -> bool:
    return False


def fails_by_hash(prompt: str) -> bool:
    """Fail about half of the prompts, the same ones every time (so retries fail too)."""
    return hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0


class HostileServer:
    """Serves `model` in /v1/models; POSTs fail with 503 where `fails(prompt)`, else answer."""

    def __init__(
        self,
        model: str = "m",
        *,
        fails: Callable[[str], bool] = fails_always,
        answer: str = HOSTILE,
        error: str = HOSTILE,
        max_model_len: int | None = None,
    ) -> None:
        self.model, self.fails, self.answer, self.error = model, fails, answer, error
        self.max_model_len = max_model_len
        self.posts = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                extra = {"max_model_len": server.max_model_len} if server.max_model_len else {}
                item = {"id": server.model, "object": "model", "owned_by": "me", **extra}
                self._send(200, {"object": "list", "data": [item]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.posts += 1
                prompt = prompt_of(body)
                if server.fails(prompt):
                    # Retry-After 0: the client's retries cost no time in tests.
                    error = {"error": {"message": server.error, "type": "overloaded"}}
                    self._send(503, error, {"Retry-After": "0"})
                    return
                # UTF-8 bytes are never fewer than tokens: no false "silent truncation".
                sent = len(prompt.encode())
                usage = {"prompt_tokens": sent, "completion_tokens": 3, "total_tokens": sent + 3}
                if "messages" in body:
                    message = {"role": "assistant", "content": server.answer}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    kind = "chat.completion"
                else:
                    choice = {"index": 0, "text": server.answer, "finish_reason": "stop"}
                    kind = "text_completion"
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": kind,
                        "created": 0,
                        "model": server.model,
                        "choices": [choice],
                        "usage": usage,
                    },
                )

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = serving_thread(self._httpd)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
