"""One device's engine in a process of its own: the worker, and the parent's handle on it.

Why a process per device: engines on several devices inside one Python process share its GIL (each
prefill is some hundreds of kernel launches per chunk) and torch's process-wide switches; on
4 x H200 one engine answered a RULER request in 6.0 s alone and in 7.9-8.4 s beside another.

Workers start from multiprocessing's fork server: a fresh interpreter (never the parent) that
imports torch and transformers once and never initializes CUDA; each worker is forked from it, so
the workers load their weights in parallel without each importing torch again, and no CUDA state
is ever forked (CUDA cannot be; the parent may have initialized it).

What crosses the pipe is our own: `Request`s in, `ModelInfo` and `Generation`s out, wrapped in the
frozen messages below. A worker whose pipe closes (killed, segfault, its process gone) is noticed
by the reader thread at once, and every job it held fails as a `DeviceFailure`. A worker ends when
its parent does: its pipe reaches end-of-file, and a watchdog thread sees its parent change
(the parent killed with SIGKILL); it ignores Ctrl-C, which the parent handles.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import ModelInfo
from longscope.types import Generation, Request

START_METHOD = "forkserver"
PRELOAD = [
    "__main__",
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "longscope.models.hf",
]
"""What the fork server imports once for every worker (transformers' modeling code alone takes
seconds; `__main__` as multiprocessing's own default: the parent's main module, guarded)."""
CLOSE_GRACE_S = 120.0
"""How long a closing worker may finish its running batch before it is killed."""
END_GRACE_S = 10.0
"""How long a worker may take to stop at the run's end, or once its device failed."""
WATCH_PARENT_S = 0.5
_DEVICE_ERRORS = ("CUDA error", "CUBLAS_STATUS", "cuDNN error", "device-side assert", "NCCL error")


class DeviceFailure(RuntimeError):
    """The device failed, not the request: a CUDA error, or its worker process ended."""


def is_device_error(exc: BaseException) -> bool:
    """Return whether `exc` says the device itself failed (a CUDA error, its worker gone), not
    the request."""
    if isinstance(exc, DeviceFailure):
        return True
    accelerator = _accelerator_error()
    if accelerator is not None and isinstance(exc, accelerator):
        return True
    return any(mark in str(exc) for mark in _DEVICE_ERRORS)


def _accelerator_error() -> type[BaseException] | None:
    torch = sys.modules.get("torch")
    return getattr(torch, "AcceleratorError", None) if torch is not None else None


# -- messages (parent -> worker: RunJob, CLOSE; worker -> parent: the others) --------------------


@dataclass(frozen=True)
class Ready:
    """The worker's backend is loaded."""

    info: ModelInfo
    free_bytes: int
    pid: int


@dataclass(frozen=True)
class LoadFailed:
    """The worker could not load its backend (`usage`: the user's mistake, one clear line)."""

    message: str
    usage: bool


@dataclass(frozen=True)
class RunJob:
    """One group of requests, to run as one engine job."""

    job: int
    requests: tuple[Request, ...]


@dataclass(frozen=True)
class JobDone:
    """A job's end: a generation per request where one finished, and the failure if it failed."""

    job: int
    results: tuple[Generation | None, ...]
    error: str = ""
    kind: str = ""
    """"device" (a CUDA error), "usage" (the user's mistake), or "" (the request's own error)."""
    last_decode: dict[str, Any] = field(default_factory=dict)


CLOSE = "close"


# -- the worker process --------------------------------------------------------------------------


def worker_main(conn: Any, build: Callable[[], Any]) -> None:
    """Build the backend (`build()`, an `HFBackend`), report it, and run jobs until closed or
    until the parent is gone (the worker process's entry point)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _watch_parent(os.getppid())
    lock = threading.Lock()

    def send(message: object) -> None:
        with lock, contextlib.suppress(OSError, BrokenPipeError):
            conn.send(message)

    try:
        backend = build()
        info = asyncio.run(backend.info())
    except UsageError as exc:
        send(LoadFailed(str(exc), usage=True))
        _exit(conn, 0)
    except Exception as exc:  # reported to the parent, which names the device
        send(LoadFailed(f"{type(exc).__name__}: {exc}", usage=False))
        _exit(conn, 1)
    send(Ready(info, backend.free_bytes(), os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            _exit(conn, 0)  # the parent is gone
        if message == CLOSE:
            break
        _start(backend, message, send)
    # Once the running batch is done; the queued jobs fail (their messages go out first).
    backend.engine.close()
    _exit(conn, 0)


def _start(backend: Any, message: RunJob, send: Callable[[object], None]) -> None:
    empty: tuple[Generation | None, ...] = (None,) * len(message.requests)
    try:
        members = [backend._member(r) for r in message.requests]
        job = backend.engine.submit(members)
    except Exception as exc:  # the request's own (a bad template), or the engine closed
        send(JobDone(message.job, empty, _text(exc), _kind(exc)))
        return

    def done(future: concurrent.futures.Future[list[Generation]]) -> None:
        exc = future.exception()
        last = dict(backend.engine.last_decode)
        if exc is None:
            send(JobDone(message.job, tuple(job.results), last_decode=last))
        else:
            send(JobDone(message.job, tuple(job.results), _text(exc), _kind(exc), last))

    job.future.add_done_callback(done)


def _kind(exc: BaseException) -> str:
    if isinstance(exc, UsageError):
        return "usage"
    return "device" if is_device_error(exc) else ""


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _watch_parent(parent: int) -> None:
    """End this process when its parent is gone (the parent killed: no end-of-file may come
    while the main thread is busy loading)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_PARENT_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _exit(conn: Any, code: int) -> None:
    # No interpreter teardown: a device in a failed state can hang in CUDA's exit handlers. The
    # semaphores this process made (tqdm's lock while loading) are released, or the resource
    # tracker warns about them at the run's end.
    with contextlib.suppress(OSError):
        conn.close()
    with contextlib.suppress(Exception):
        multiprocessing.util._run_finalizers(0)  # type: ignore[attr-defined]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# -- the parent's handle -------------------------------------------------------------------------


class RemoteJob:
    """A job running in a worker: the engine's `Job` as the parent sees it."""

    def __init__(self, size: int) -> None:
        self.results: list[Generation | None] = [None] * size
        self.future: concurrent.futures.Future[list[Generation]] = concurrent.futures.Future()


def _context() -> Any:
    context = multiprocessing.get_context(START_METHOD)
    context.set_forkserver_preload(PRELOAD)
    return context


def start_server() -> None:
    """Start the fork server now, so that it imports torch while this process goes on."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


class WorkerDevice:
    """The parent's handle on one device's worker process: start it, send it jobs, close it."""

    max_concurrency = 8
    """Groups queued on the device at once (as one `HFBackend`: it prefills the next while the
    running batch decodes)."""
    retries_done = 0
    base_url: str | None = None
    """A device, not a server: no URL (an endpoint's identity, as `Backend` declares it)."""

    def requested_model(self) -> str | None:
        """Return None: a device asks no server for a model by name."""
        return None

    def __init__(self, build: Callable[[], Any], label: str, *, name: str = "hf") -> None:
        self.build = build
        """What the worker calls to build its backend (picklable: a module-level function)."""
        self.label = label
        self.name = name
        self.pid: int | None = None
        self.last_decode: dict[str, Any] = {}
        """How the device's last batch decoded (its engine's `last_decode`)."""
        self._free = 0
        self._process: Any = None
        self._conn: Any = None
        self._send_lock = threading.Lock()
        self._jobs: dict[int, RemoteJob] = {}
        self._ids = itertools.count()
        self._ready: concurrent.futures.Future[ModelInfo] = concurrent.futures.Future()
        self._gone: str = ""

    def start(self) -> None:
        """Start the worker process (it loads the weights on its own; `info` waits for it)."""
        if self._process is not None:
            return
        context = _context()
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=worker_main,
            args=(child, self.build),
            name=f"longscope-{self.label}",
            daemon=True,  # ended by multiprocessing when the parent exits
        )
        self._process.start()
        child.close()  # the worker's end: only the worker holds it, so its death is end-of-file
        threading.Thread(target=self._read, name=f"worker-{self.label}", daemon=True).start()

    async def info(self) -> ModelInfo:
        """Return the model's description once the worker has loaded it."""
        self.start()
        return await asyncio.wrap_future(self._ready)

    @property
    def ready(self) -> bool:
        return self._ready.done() and self._ready.exception() is None and not self._gone

    def free_bytes(self) -> int:
        """Return the device bytes the worker found free after loading."""
        return self._free

    def submit(self, requests: Sequence[Request]) -> RemoteJob:
        """Send one group to the worker as one job; raise `DeviceFailure` if it is gone."""
        job = RemoteJob(len(requests))
        with self._send_lock:
            if self._gone:
                raise DeviceFailure(self._gone)
            key = next(self._ids)
            self._jobs[key] = job
            try:
                self._conn.send(RunJob(key, tuple(requests)))
            except (OSError, ValueError) as exc:
                self._jobs.pop(key, None)
                raise DeviceFailure(f"{self.label}: cannot reach its worker ({exc})") from exc
        return job

    def _read(self) -> None:
        """Hand the worker's messages to their futures; fail everything when it is gone."""
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            if isinstance(message, Ready):
                self._free, self.pid = message.free_bytes, message.pid
                self._ready.set_result(message.info)
            elif isinstance(message, LoadFailed):
                error = UsageError if message.usage else DeviceFailure
                self._ready.set_exception(error(message.message))
            elif isinstance(message, JobDone):
                self._finish(message)
        self._fail_all(self._why_gone())

    def _finish(self, message: JobDone) -> None:
        with self._send_lock:
            job = self._jobs.pop(message.job, None)
        if job is None:
            return
        job.results[:] = message.results
        self.last_decode = message.last_decode or self.last_decode
        if not message.error:
            job.future.set_result([g for g in message.results if g is not None])
        elif message.kind == "device":
            job.future.set_exception(DeviceFailure(message.error))
        elif message.kind == "usage":
            job.future.set_exception(UsageError(message.error.removeprefix("UsageError: ")))
        else:
            job.future.set_exception(RuntimeError(message.error))

    def _why_gone(self) -> str:
        process = self._process
        process.join(timeout=5)
        code = process.exitcode
        if code is None:
            how = "its pipe closed"
        elif code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exit code {code}"
        return f"{self.label}: its worker process ended ({how})"

    def _fail_all(self, why: str) -> None:
        with self._send_lock:
            self._gone = why
            jobs, self._jobs = list(self._jobs.values()), {}
        if not self._ready.done():
            self._ready.set_exception(DeviceFailure(why))
        for job in jobs:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                job.future.set_exception(DeviceFailure(why))

    def close(self, grace_s: float = CLOSE_GRACE_S) -> None:
        """Stop the worker once its running batch is done (its queued jobs fail); kill it after
        `grace_s`. Blocks: call it from a thread."""
        process = self._process
        if process is None:
            return
        with self._send_lock, contextlib.suppress(OSError, ValueError):
            if not self._gone:
                self._conn.send(CLOSE)
        process.join(timeout=grace_s)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)

    async def aclose(self) -> None:
        """Stop the worker at the run's end (anything still running then was given up on: a
        cancelled run, Ctrl-C), killing it after `END_GRACE_S`."""
        await asyncio.to_thread(self.close, END_GRACE_S)
