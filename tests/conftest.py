"""Shared fixtures: the embedded model's file and tokenizer, an isolated cache, free ports."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

_PYCACHE: list[str] = []


ORIGINAL_CPUS: list[set[int]] = []
"""The CPUs this process had before a pytest-xdist worker kept to its share (empty: not pinned)."""


def worker_cpus(cpus: set[int], worker: str, workers: int) -> set[int] | None:
    """Return the CPUs pytest-xdist's worker `worker` ("gw1") of `workers` keeps to: every
    `workers`-th of `cpus` from its index on (a worker restarted after a crash gets the next id:
    gw2 of 2 takes gw0's share); None where there are fewer CPUs than workers or the id is not
    xdist's."""
    number = worker.removeprefix("gw")
    if not number.isdigit() or workers < 1 or len(cpus) < workers:
        return None
    return set(sorted(cpus)[int(number) % workers :: workers])


def _pin_xdist_worker() -> None:
    # Each worker and the processes its tests start (llama.cpp servers, the CLI) keep to their
    # own CPUs, and llama.cpp sizes its threads to them (`usable_cpus`): two workers on 2 cores
    # ran 2 + 2 spinning threads before. make test took 585.7 s so against 696.0 s (BENCHMARKS.md).
    worker, count = (
        os.environ.get("PYTEST_XDIST_WORKER"),
        os.environ.get("PYTEST_XDIST_WORKER_COUNT"),
    )
    if not (worker and count and count.isdigit() and hasattr(os, "sched_setaffinity")):
        return
    before = os.sched_getaffinity(0)
    mine = worker_cpus(before, worker, int(count))
    if mine:
        os.sched_setaffinity(0, mine)
        ORIGINAL_CPUS.append(before)


def pytest_configure(config: pytest.Config) -> None:
    _pin_xdist_worker()
    # Hundreds of tests start `longscope` (or a benchmark script) in a child process, as a user
    # would. Where the environment sets PYTHONDONTWRITEBYTECODE (CI images often do), each child
    # compiled every longscope module from source again; children of this session now share
    # compiled files in a scratch folder instead, and the checkout stays free of __pycache__.
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        _PYCACHE.append(tempfile.mkdtemp(prefix="longscope-test-pycache-"))
        _PYCACHE.append(os.environ.pop("PYTHONDONTWRITEBYTECODE"))
        os.environ["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    # The environment as it was: a caller that runs pytest again in this process (mutmut) starts
    # from the same place.
    if _PYCACHE:
        folder, value = _PYCACHE
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        os.environ["PYTHONDONTWRITEBYTECODE"] = value
        shutil.rmtree(folder, ignore_errors=True)
        _PYCACHE.clear()


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One cache per test session: token counts are computed once, never shared with the user's.
    monkeypatch.setenv("LONGSCOPE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _no_cached_embeddings_under_mutation() -> None:
    # mutmut forks each mutant's test run from the process that ran the clean tests: vectors cached
    # there would answer every embedding and hide the mutants of the embedding code.
    if os.environ.get("MUTANT_UNDER_TEST"):
        from longscope.metrics import similarity

        similarity._CACHE.clear()


@pytest.fixture(scope="session")
def model_path() -> Path:
    from longscope.models.registry import resolve_model_path

    return resolve_model_path("gemma3-270m")


@pytest.fixture(scope="session")
def gemma_tokenizer(model_path: Path):
    from longscope.text.tokenizers import GGUFTokenizer

    return GGUFTokenizer(model_path, name="gemma3-270m")


@pytest.fixture(scope="session")
def qwen_tokenizer():
    from longscope.text.tokenizers import QwenTokenizer

    return QwenTokenizer()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
