"""Symbolic links planted where longscope writes: never written through, and a loop is one line.

A `longscope.lock` (or store file) that is a link to another file would have that file overwritten
by the lock's holder record or by SQLite; files written whole (`summary.json`) replace a link
rather than follow it. Each case runs the real CLI against the fault server (no faults).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.files import open_nofollow, resolved, write_atomic
from longscope.run.store import RunLock, RunStore, StoreError
from tests.models.fault_server import FaultServer

ARGS = [
    "run", "longctx", "-m", "openai/m", "-M", "context_length=8192", "-S", "lengths=1024",
    "-S", "types=needle", "-S", "depths=0.5", "-q",
]  # fmt: skip
PRECIOUS = "a file the user keeps\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", *args], capture_output=True, text=True, timeout=120
    )


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error", "Traceback"))]


@pytest.fixture(scope="module")
def server() -> FaultServer:
    with FaultServer() as running:
        yield running


@pytest.mark.parametrize("name", ["longscope.lock", "longscope.sqlite", "longscope.sqlite-wal"])
def test_a_planted_link_in_the_run_directory_is_refused_and_its_target_kept(
    tmp_path: Path, server: FaultServer, name: str
) -> None:
    target = tmp_path / "target"
    target.write_text(PRECIOUS)
    if name == "longscope.sqlite":  # another run's store: readable, so only a write can refuse
        with RunStore(tmp_path / "other") as other:
            other.put_run("r", "longctx", {})
        target = other.path
    kept = target.read_bytes()
    run = tmp_path / "run"
    run.mkdir()
    (run / name).symlink_to(target)
    proc = _cli(*ARGS, "--base-url", server.url, "-o", str(run))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert _errors(proc.stderr) == [
        f"error: {run / name} is a symbolic link: longscope writes no file through a link; "
        + (
            "remove it and run again"
            if name.endswith("lock")
            else "remove it (or choose another run directory) and run again"
        )
    ]
    assert target.read_bytes() == kept
    assert (run / name).is_symlink()


def test_a_link_where_a_whole_file_is_written_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text(PRECIOUS)
    link = tmp_path / "summary.json"
    link.symlink_to(target)
    write_atomic(link, "{}\n")
    assert target.read_text() == PRECIOUS
    assert not link.is_symlink() and link.read_text() == "{}\n"
    other = tmp_path / "partial.part"
    other.symlink_to(target)
    with pytest.raises(UsageError, match=r"partial\.part is a symbolic link"):
        open_nofollow(other, os.O_WRONLY | os.O_APPEND)
    assert target.read_text() == PRECIOUS


def test_the_lock_is_taken_without_following_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text(PRECIOUS)
    (tmp_path / "longscope.lock").symlink_to(target)
    with pytest.raises(UsageError, match=r"longscope\.lock is a symbolic link"):
        RunLock(tmp_path).acquire()
    with pytest.raises((UsageError, StoreError), match="symbolic link"):
        RunStore(tmp_path)
    assert target.read_text() == PRECIOUS


def test_a_link_loop_as_the_output_is_one_line(tmp_path: Path, server: FaultServer) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    loop = tmp_path / "a"
    with pytest.raises(UsageError, match="is a symbolic link loop"):
        resolved(loop)
    expected = (
        f"error: run directory {loop} is a symbolic link loop (a link that leads back to "
        "itself): give a path without a loop"
    )
    proc = _cli(*ARGS, "--base-url", server.url, "-o", str(loop))
    assert proc.returncode == 2 and _errors(proc.stderr) == [expected], proc.stderr[-2000:]
    good = tmp_path / "good"
    assert _cli(*ARGS, "--base-url", server.url, "-o", str(good)).returncode == 0
    merged = _cli("merge", str(loop), str(good))
    assert merged.returncode == 2, merged.stderr[-2000:]
    assert _errors(merged.stderr) == [expected.replace("run directory", "merge output")]
