"""A pass-through proxy in front of a real llama.cpp server that returns one model output in the two
shapes servers use: thinking inline in `content`, or split out by a reasoning parser.

llama-cpp-python's server has no reasoning parser (checked in 0.3.36: no `reasoning_content`, no
`--reasoning-format`), so the parser's shape is made here from the same upstream answer, the way
vLLM's `BaseThinkingReasoningParser.extract_reasoning` does it (vllm/reasoning/basic_parsers.py):
the text before `<think>` is dropped, the reasoning is what lies before the first `</think>`, the
content is everything after it, unstripped (`null` when empty); without `</think>` all of it is
reasoning. The proxy may also add a GBNF `grammar` (llama.cpp's own request field) so that the
small model writes a think block and an answer. What the model writes is never changed: each
request body is sent upstream once and its answer replayed for the other shape.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from tests.serving import serving_thread


def parsed_like_vllm(content: str) -> tuple[str | None, str | None]:
    """Return (reasoning, content) as vLLM's `<think>` reasoning parsers split `content`."""
    before, start, after = content.partition("<think>")
    text = after if start else before
    if "</think>" not in text:
        return text, None
    reasoning, _, rest = text.partition("</think>")
    return reasoning, rest or None


class ParserProxy:
    """Forwards POSTs to `upstream` (adding `grammar`); `shape` is `inline` or `parser`."""

    def __init__(self, upstream: str, grammar: str | None = None) -> None:
        self.upstream, self.grammar = upstream.rstrip("/"), grammar
        self.shape = "inline"
        self.answers: dict[str, dict[str, Any]] = {}
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                got = httpx.get(proxy.upstream + self.path.removeprefix("/v1"), timeout=30)
                self._send(got.status_code, got.content)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                key = json.dumps([self.path, body], sort_keys=True)
                if key not in proxy.answers:
                    sent = {**body, "grammar": proxy.grammar} if proxy.grammar else body
                    url = proxy.upstream + self.path.removeprefix("/v1")
                    got = httpx.post(url, json=sent, timeout=600)
                    if got.status_code != 200:
                        self._send(got.status_code, got.content)
                        return
                    proxy.answers[key] = got.json()
                answer = json.loads(json.dumps(proxy.answers[key]))
                if proxy.shape == "parser":
                    for choice in answer["choices"]:
                        message = choice["message"]
                        reasoning, content = parsed_like_vllm(message.get("content") or "")
                        message["reasoning_content"], message["content"] = reasoning, content
                self._send(200, json.dumps(answer).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = serving_thread(self.httpd)

    def __enter__(self) -> ParserProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
