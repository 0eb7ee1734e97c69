"""A tiny OpenAI-compatible HTTP server that plays a script of faults, for transport tests only.

It never stands in for a model in a benchmark: the end-to-end tests use llama.cpp's real server.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion_body(
    text: str, *, reasoning: str | None = None, prompt_tokens: int = 10, finish: str = "stop"
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": prompt_tokens + 3,
        },
    }


def text_completion_body(text: str) -> dict[str, Any]:
    """A `/v1/completions` reply (completion mode), stopped normally."""
    return {
        "id": "x",
        "object": "text_completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }


class FaultServer:
    """Answers each POST with the next scripted action; GET /v1/models lists one model."""

    def __init__(self, max_model_len: int | None = None) -> None:
        self.script: deque[tuple[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.max_model_len = max_model_len
        server = self

        class Handler(BaseHTTPRequestHandler):
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
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": "m", "object": "model", "created": 0, "owned_by": "me", **extra}
                        ],
                    },
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                kind, arg = server.script.popleft() if server.script else ("ok", "default")
                if kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if kind == "sleep":
                    time.sleep(arg)
                    kind, arg = "ok", "late"
                if kind == "ok":
                    arg = completion_body(arg) if isinstance(arg, str) else arg
                    self._send(200, arg)
                else:  # ("status", (code, message, headers))
                    code, message, headers = arg
                    self._send(
                        code, {"error": {"message": message, "type": "x", "code": code}}, headers
                    )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
