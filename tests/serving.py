"""The thread that serves a test's HTTP server."""

import threading
from socketserver import BaseServer

SHUTDOWN_POLL_S = 0.01
"""How often a serving thread checks for `shutdown()`: `shutdown()` waits for the next check, and
serve_forever's default (0.5 s) made stopping each of the suite's servers take up to half a
second (about 80 s over the default run)."""


def serving_thread(httpd: BaseServer) -> threading.Thread:
    """Return a daemon thread (not started) that serves `httpd` until its `shutdown()`."""
    return threading.Thread(target=httpd.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)
