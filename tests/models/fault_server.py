"""A tiny OpenAI-compatible HTTP server that plays faults, for transport and robustness tests only.

Two ways to drive it:
- a script: each POST takes the next scripted action (`("ok", text)`, `("status", (code, message,
  headers))`, `("drop", None)`, `("sleep", seconds)`, `("trickle", (text, seconds_per_chunk))`,
  `("raw", (code, content_type, body_bytes))`, `("endless", chunk_bytes)` (a chunked 200 body that
  never ends), or `("fault", kind)` for any kind in `FAULTS`);
- a seeded fault rate: when the script is empty, each POST fails with one of `faults` with
  probability `rate`, and otherwise answers `answer_for(prompt)`, a deterministic function of the
  prompt, so the stored answers of a faulty run can be compared with a clean run's.

It never stands in for a model in a benchmark: the end-to-end tests use llama.cpp's real server.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.serving import serving_thread

# Answers the harness cannot use: each must become a recorded error, retried like a 5xx.
MALFORMED = (
    "not_json",
    "html_200",
    "error_200",
    "empty_choices",
    "no_choices",
    "no_message",
    "deep_json",
)
# Answers that are fine without usage counts: recorded as ok with 0 (unknown) tokens.
USAGE_FAULTS = ("null_usage", "partial_usage")
TRANSPORT = ("500", "503", "429", "drop", "hang", "trickle")
FAULTS = MALFORMED + USAGE_FAULTS + TRANSPORT


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


def text_completion_body(text: str, *, prompt_tokens: int = 10) -> dict[str, Any]:
    """A `/v1/completions` reply (completion mode), stopped normally."""
    return {
        "id": "x",
        "object": "text_completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": prompt_tokens + 3,
        },
    }


def prompt_of(body: dict[str, Any]) -> str:
    """Return the prompt text of a chat or completion request body."""
    if "prompt" in body:
        return str(body["prompt"])
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def answer_for(prompt: str) -> str:
    """The fault server's deterministic answer to a prompt (the same in every run)."""
    return "answer " + hashlib.sha256(prompt.encode()).hexdigest()[:12]


def answer_body(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A normal answer to `body`; the prompt count is its UTF-8 bytes, never below the tokens sent."""
    prompt = prompt_of(body)
    tokens = len(prompt.encode())
    if path.endswith("/completions") and "chat" not in path:
        return text_completion_body(answer_for(prompt), prompt_tokens=tokens)
    return completion_body(answer_for(prompt), prompt_tokens=tokens)


class FaultServer:
    """Answers each POST with the next scripted action or a seeded fault; GET lists one model."""

    def __init__(
        self,
        max_model_len: int | None = None,
        *,
        faults: tuple[str, ...] = (),
        rate: float = 0.0,
        seed: int = 0,
        latency_s: float = 0.0,
        hang_s: float = 5.0,
        trickle_s: float = 0.2,
    ) -> None:
        unknown = set(faults) - set(FAULTS)
        assert not unknown, f"unknown fault kinds {unknown}"
        self.script: deque[tuple[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.max_model_len = max_model_len
        self.faults, self.rate, self.latency_s = faults, rate, latency_s
        self.hang_s, self.trickle_s = hang_s, trickle_s
        self.injected: list[str] = []
        self.get_redirect = ""
        """Where a GET (the model listing) is redirected, when set."""
        self.written = 0
        """Body bytes an `endless` answer wrote before the client hung up."""
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send_bytes(
                self, code: int, data: bytes, content_type: str, headers: dict[str, str] | None
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
                self._send_bytes(code, json.dumps(body).encode(), "application/json", headers)

            def do_GET(self) -> None:
                if server.get_redirect:
                    self._send(307, {}, {"Location": server.get_redirect})
                    return
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
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                    if server.script:
                        kind, arg = server.script.popleft()
                    elif server.faults and server._rng.random() < server.rate:
                        kind, arg = "fault", server._rng.choice(server.faults)
                    else:
                        kind, arg = "ok", answer_body(self.path, body) if server.faults else None
                    if kind == "fault":
                        server.injected.append(arg)
                if server.latency_s:
                    time.sleep(server.latency_s)
                if kind == "fault":
                    kind, arg = server._fault(arg, self.path, body)
                self._act(kind, arg)

            def _act(self, kind: str, arg: Any) -> None:
                if kind == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if kind == "sleep":
                    time.sleep(arg)
                    kind, arg = "ok", "late"
                if kind == "ok":
                    arg = completion_body(arg) if isinstance(arg, str) else arg
                    self._send(200, arg if arg is not None else completion_body("default"))
                elif kind == "endless":  # a 200 whose body never ends (chunked, no length)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"[" * arg
                    try:
                        while True:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            with server._lock:
                                server.written += len(chunk)
                    except OSError:  # the client stopped reading and closed
                        self.close_connection = True
                elif kind == "raw":
                    code, content_type, data = arg
                    self._send_bytes(code, data, content_type, None)
                elif kind == "trickle":
                    text, pause = arg
                    answer = text if isinstance(text, dict) else completion_body(text)
                    data = json.dumps(answer).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for start in range(0, len(data), 16):
                        self.wfile.write(data[start : start + 16])
                        self.wfile.flush()
                        time.sleep(pause)
                else:  # ("status", (code, message, headers))
                    code, message, headers = arg
                    self._send(
                        code, {"error": {"message": message, "type": "x", "code": code}}, headers
                    )

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that gave up (timeout, kill -9) leaves a broken pipe: expected here.
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = serving_thread(self.httpd)

    def _fault(self, kind: str, path: str, body: dict[str, Any]) -> tuple[str, Any]:
        """Return the scripted action that plays fault `kind` for a request."""
        good = answer_body(path, body)
        if kind == "not_json":
            return "raw", (200, "application/json", b'{"choices": [ <truncated')
        if kind == "html_200":
            page = b"<html><body><h1>Welcome to nginx</h1>[/] \x1b[2J</body></html>"
            return "raw", (200, "text/html", page)
        if kind == "error_200":
            return "ok", {"error": {"message": "upstream model crashed [bold]", "code": 500}}
        if kind == "empty_choices":
            return "ok", {**good, "choices": []}
        if kind == "no_choices":
            return "ok", {"id": "x", "object": "chat.completion", "usage": good["usage"]}
        if kind == "no_message":
            choice = {"index": 0, "finish_reason": "stop"}
            return "ok", {**good, "choices": [choice]}
        if kind == "deep_json":
            return "raw", (200, "application/json", b"[" * 100_000 + b"]" * 100_000)
        if kind == "null_usage":
            return "ok", {**good, "usage": None}
        if kind == "partial_usage":
            return "ok", {**good, "usage": {"total_tokens": "many"}}
        if kind in ("500", "503"):
            return "status", (int(kind), f"server error {kind}", {})
        if kind == "429":
            return "status", (429, "rate limited", {"Retry-After": "0.05"})
        if kind == "drop":
            return "drop", None
        if kind == "hang":
            time.sleep(self.hang_s)
            return "ok", good
        if kind == "trickle":
            return "trickle", (good, self.trickle_s)
        raise AssertionError(kind)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    """Serve until killed, printing the URL first: `python -m tests.models.fault_server --rate 0.3`."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--faults", default="")
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    faults = tuple(f for f in args.faults.split(",") if f)
    server = FaultServer(faults=faults or ("500",), rate=args.rate if faults else 0.0)
    server._rng.seed(args.seed)
    server.latency_s = args.latency
    with server:
        print(server.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
