"""`make test`'s pytest command: two pytest-xdist workers by default, one process on request
(`TEST_WORKERS`, docs/development.md), whole files to a worker."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pytest_lines(*variables: str) -> list[str]:
    # `make -n` prints the recipes without running them (the install steps included).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "-n", "test", *variables], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "/pytest " in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_runs_two_workers_unless_told_otherwise() -> None:
    assert _pytest_lines() == [".venv/bin/pytest -q --durations=25 -n 2 --dist loadfile"]
    assert _pytest_lines("TEST_WORKERS=0") == [
        ".venv/bin/pytest -q --durations=25 -n 0 --dist loadfile"
    ]


def test_the_workers_come_with_the_test_tools() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    assert any(requirement.startswith("pytest-xdist") for requirement in dev), dev


def test_each_worker_keeps_to_its_own_cpus() -> None:
    from tests.conftest import ORIGINAL_CPUS, worker_cpus

    assert worker_cpus({0, 1}, "gw0", 2) == {0} and worker_cpus({0, 1}, "gw1", 2) == {1}
    assert worker_cpus({0, 1, 2, 3, 4}, "gw1", 2) == {1, 3}
    assert worker_cpus({4, 6, 9}, "gw2", 3) == {9}
    assert worker_cpus({0, 1, 2, 3}, "gw2", 2) == {0, 2}  # restarted: takes up gw0's share
    assert worker_cpus({0}, "gw0", 2) is None  # fewer CPUs than workers: left as they are
    assert worker_cpus({0, 1}, "main", 2) is None
    worker, count = (
        os.environ.get("PYTEST_XDIST_WORKER"),
        os.environ.get("PYTEST_XDIST_WORKER_COUNT"),
    )
    if ORIGINAL_CPUS and worker and count:  # this session's worker: pinned to its share
        assert os.sched_getaffinity(0) == worker_cpus(ORIGINAL_CPUS[0], worker, int(count))
        assert os.sched_getaffinity(0) < ORIGINAL_CPUS[0]
