"""Start and stop real `llama_cpp.server` processes on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from longscope.cpu_check import usable_cpus

from .conftest import free_port


def start_server(
    model_path: Path, log_path: Path, *, n_ctx: int, alias: str, threads: int | None = None
) -> tuple[subprocess.Popen, str]:
    """Start a server (its log in a file: a pipe fills and blocks it); return it and its URL."""
    port = free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
                "--flash_attn", "true", "--n_threads", str(threads or usable_cpus()),
                "--model_alias", alias,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}/v1"


def wait_ready(proc: subprocess.Popen, url: str, log_path: Path, timeout_s: float = 180) -> None:
    """Return once the server answers `/models`; raise with its log's tail if it dies or hangs."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"llama_cpp.server did not start within {timeout_s:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    """Terminate a server, killing it if it does not exit within 20 s."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
