"""Answers lost to kill -9: requests a server answered before the kill that the store does not hold.

A grouped run (a document's repeats travel as one group, `run/groups.py`) goes to a local server
that ignores `n`, as llama.cpp's does, so each repeat is its own request and the members of a group
finish at different moments. The server (its own process) answers after a seeded random delay and
logs when each answer was written, and which request it was (prompt hash and seed). The run is
killed with SIGKILL at a random moment; the store is then read and every answer the server wrote
before the kill but the store lacks is counted as lost. Answers written within the last moments
before a kill may still be on their way (in the socket, being parsed, in the batch that commits
every 50 ms): losing those is by design, so losses are also counted for answers written more than
0.2 s before the kill, which the store must hold.

Everything but the server is the product: LongCtx samples, the `openai` backend (official SDK
client), the runner's grouping and scheduling at `--concurrency 8`, the SQLite store.

    .venv/bin/python benchmarks/bench_kill_loss.py            # 20 kills of a 160-request grid
    .venv/bin/python benchmarks/bench_kill_loss.py --smoke    # 6 kills of a 48-request grid
    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/bench_kill_loss.py   # another version

Prints one JSON object: kills, answered before the kills, lost (all, and written > 0.2 s before).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

EARLY_S = 0.2
"""An answer written this long before the kill has had time to be stored."""


# --- the server (run as `--serve LOG`) ----------------------------------------------------------


def _prompt(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def serve(log_path: str, low_s: float, high_s: float) -> None:
    """Answer chat completions after a delay drawn from the request; log each answer written."""
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (lives as long as the server)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            prompt = _prompt(body)
            key = f"{hashlib.sha256(prompt.encode()).hexdigest()[:12]} seed {body.get('seed')}"
            time.sleep(random.Random(key).uniform(low_s, high_s))
            tokens = len(prompt.encode())  # UTF-8 bytes, never fewer than tokens
            message = {"role": "assistant", "content": f"answer {key}"}
            self._send(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    # One choice whatever `n` asks, as llama.cpp's server answers.
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": tokens, "completion_tokens": 3},
                }
            )
            with lock:
                log.write(f"{time.time():.6f} {key}\n")

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a killed client leaves a broken pipe: expected here

    httpd = Server(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{httpd.server_address[1]}/v1", flush=True)
    httpd.serve_forever()


# --- the runs -----------------------------------------------------------------------------------


def _run(url: str, out: Path, depths: int, repeats: int) -> None:
    from longscope.models.openai_api import OpenAIBackend
    from longscope.run.runner import RunOptions, run
    from longscope.suites import create_suite

    grid = [round((i + 0.5) / depths, 4) for i in range(depths)]
    suite = create_suite("longctx", {"lengths": [1024], "depths": grid, "types": ["needle"]})
    backend = OpenAIBackend("m", base_url=url, context_length=8192, concurrency=8)
    run(suite, backend, RunOptions(output=out, repeats=repeats, quiet=True))


def _child(url: str, out: str, depths: int, repeats: int) -> None:
    _run(url, Path(out), depths, repeats)
    os._exit(0)


def _stored(run_dir: Path) -> set[str]:
    """Return the requests (prompt hash and seed, from the answer text) the store holds."""
    import sqlite3

    path = run_dir / "longscope.sqlite"
    if not path.exists():
        return set()
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT text FROM generations").fetchall()
    except sqlite3.Error:
        rows = []  # killed before the tables were made
    db.close()
    return {text.removeprefix("answer ") for (text,) in rows}


def _answered(log: Path, since: float, until: float) -> dict[str, float]:
    out = {}
    for line in log.read_text().splitlines():
        when, key = line.split(" ", 1)
        if since <= float(when) < until:
            out[key] = float(when)
    return out


def measure(
    kills: int,
    depths: int,
    repeats: int,
    seed: int,
    low_s: float,
    high_s: float,
    early_s: float = EARLY_S,
) -> dict[str, Any]:
    """Kill `kills` grouped runs at random moments; return the answers lost, in all and early."""
    work = Path(tempfile.mkdtemp(prefix="kill-loss-"))
    log = work / "answers.log"
    log.touch()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(log), "--low", str(low_s), "--high", str(high_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        _run(url, work / "clean", depths, repeats)  # also imports and loads the tokenizer
        # The kills are timed on a run as the forked ones go, past the first run's imports: timed
        # on the first, the later moments of a fast machine fell after the killed run had ended.
        started = time.perf_counter()
        _run(url, work / "warm", depths, repeats)
        duration = time.perf_counter() - started
        rng = random.Random(seed)
        fork = multiprocessing.get_context("fork")
        per_kill = []
        for index in range(kills):
            out = work / f"killed{index}"
            begin = time.time()
            child = fork.Process(target=_child, args=(url, str(out), depths, repeats))
            child.start()
            child.join(rng.uniform(0.1 * duration, 0.9 * duration))
            if not child.is_alive():
                continue  # finished before the kill: nothing to count
            killed_at = time.time()
            os.kill(child.pid, signal.SIGKILL)
            child.join()
            time.sleep(high_s + 0.1)  # requests in flight at the kill finish (and are logged)
            answered = _answered(log, begin, killed_at)
            stored = _stored(out)
            lost = set(answered) - stored
            early = {k for k in lost if answered[k] < killed_at - early_s}
            per_kill.append(
                {
                    "answered": len(answered),
                    "stored": len(stored & set(answered)),
                    "lost": len(lost),
                    "lost_early": len(early),
                }
            )
    finally:
        server.kill()
        server.wait()
    # The counts are returned and the runs not read again; a failure above leaves them to look at.
    shutil.rmtree(work, ignore_errors=True)
    import longscope

    return {
        "longscope": str(Path(longscope.__file__).parent),
        "requests_per_run": depths * repeats,
        "concurrency": 8,
        "repeats": repeats,
        "server_delay_s": [low_s, high_s],
        "run_s": round(duration, 2),
        "kills": len(per_kill),
        "answered_before_kills": sum(k["answered"] for k in per_kill),
        "lost": sum(k["lost"] for k in per_kill),
        "lost_per_kill_max": max((k["lost"] for k in per_kill), default=0),
        "early_s": early_s,
        "lost_early": sum(k["lost_early"] for k in per_kill),
        "lost_early_per_kill_max": max((k["lost_early"] for k in per_kill), default=0),
        "per_kill": per_kill,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="6 kills of a 48-request grid")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--depths", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--low", type=float, default=0.05, help="shortest server delay, s")
    parser.add_argument("--high", type=float, default=0.4, help="longest server delay, s")
    parser.add_argument("--early", type=float, default=EARLY_S, help="'early' answers: written "
                        "at least this long before the kill, s")  # fmt: skip
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.low, args.high)
        return
    if args.smoke:
        # 6 tries: a killed run can still finish before its random moment (the server's delays
        # are drawn per request), and the test needs 3 kills that landed while sending.
        args.kills, args.depths = 6, 12
    made = measure(
        args.kills, args.depths, args.repeats, args.seed, args.low, args.high, args.early
    )
    print(json.dumps(made))


if __name__ == "__main__":
    main()
