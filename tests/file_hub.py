"""A real HTTP server on 127.0.0.1 that serves files by path, for the data tests of suites that
download from the Hugging Face Hub (`resolve/REVISION/FILE` URLs); it records every path asked."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from tests.serving import serving_thread


class FileHub(http.server.BaseHTTPRequestHandler):
    """Answers GET with `files[path]` (404 when absent) and appends each path to `seen`."""

    files: ClassVar[dict[str, bytes]] = {}
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving() -> Iterator[str]:
    """Serve `FileHub` (its files and record emptied) and yield its base URL."""
    FileHub.files, FileHub.seen = {}, []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FileHub)
    serving_thread(httpd).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
