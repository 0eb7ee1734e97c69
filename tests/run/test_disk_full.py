"""A disk that fills during `run` or `merge`: one line naming the device, nothing received lost.

The realistic cases write to a real small tmpfs, mounted in a private mount namespace of the
child process (`unshare --mount`, root only): SQLite and every file write meet ENOSPC from the
kernel, as on a full disk. They are skipped, with the reason, where no namespace can be made.
The requests go to the fault server (no faults), which records each one it answered: every answer
the run received must be in the store, and a resumed run on a larger disk sends only the rest.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from longscope.errors import DiskFull
from longscope.files import disk_full, is_disk_full
from longscope.run.store import RESERVE_NAME, RunStore
from longscope.types import Generation
from tests.models.fault_server import FaultServer, answer_for, prompt_of

DEPTHS = ",".join(str(round(0.01 * i, 2)) for i in range(1, 61))
RUN_ARGS = [
    "run", "longctx", "-m", "openai/m", "-M", "context_length=8192", "-S", "lengths=4096",
    "-S", "types=needle", "-S", f"depths={DEPTHS}", "-q",
]  # fmt: skip
TOTAL = 60
RESERVE = 256 << 10


def _namespaces() -> str:
    """Return why a private tmpfs cannot be mounted here ("" when it can)."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
        capture_output=True, text=True,
    )  # fmt: skip
    return "" if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr.strip()}"


NO_TMPFS = _namespaces()
needs_tmpfs = pytest.mark.skipif(bool(NO_TMPFS), reason=NO_TMPFS)


def _on_tmpfs(
    size: str, mount: Path, command: list[str], keep: Path | None, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run `longscope COMMAND` with a tmpfs of `size` at `mount`; copy `mount/run` to `keep`."""
    cli = " ".join([sys.executable, "-m", "longscope.cli", *map(_quote, command)])
    copy = f"cp -a {mount}/run {keep}" if keep is not None else "true"
    script = f"mount -t tmpfs -o size={size} tmpfs {mount} && {cli}; rc=$?; {copy}; exit $rc"
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def _stored(run_dir: Path) -> dict[str, Generation]:
    with RunStore.open_readonly(run_dir) as store:
        run_id = store.run()["run_id"]
        return {sid: gen for sid, _, gen in store.generations(run_id)}


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("plan:")]


@needs_tmpfs
def test_a_run_that_fills_the_disk_stores_every_answer_it_received(tmp_path: Path) -> None:
    mount, kept = tmp_path / "disk", tmp_path / "kept"
    mount.mkdir()
    env = {"LONGSCOPE_RESERVE_BYTES": str(RESERVE)}
    with FaultServer(faults=("500",), rate=0.0) as server:  # rate 0: answers, no faults
        args = [*RUN_ARGS, "--base-url", server.url, "-o", str(mount / "run")]
        proc = _on_tmpfs("900k", mount, args, kept, env)
        received = {answer_for(prompt_of(r["body"])) for r in server.requests}
        assert proc.returncode == 3, proc.stderr[-3000:]
        lines = _error_lines(proc.stderr)
        assert len(lines) == 1, proc.stderr[-3000:]
        assert lines[0].startswith(
            f"error: disk full: no space left on tmpfs (tmpfs) mounted on {mount}"
        ), lines[0]
        stored = _stored(kept)
        answered = {sid: g for sid, g in stored.items() if g.status == "ok"}
        # The disk filled part-way: some answers came, the rest were never sent.
        assert 0 < len(server.requests) < TOTAL
        assert len(answered) == len(stored) == len(server.requests)
        assert {g.text for g in answered.values()} == received
        assert f"{len(answered)} answer(s) received this time are stored" in lines[0]
        assert f"{TOTAL - len(answered)} request(s) not sent" in lines[0]
        assert not (kept / RESERVE_NAME).exists()  # given back, and a closed store holds none
        # Resumed on a disk with room: only what was never answered is sent.
        before = len(server.requests)
        room = tmp_path / "room"
        shutil.copytree(kept, room)
        done = subprocess.run(
            [sys.executable, "-m", "longscope.cli", *RUN_ARGS, "--base-url", server.url,
             "-o", str(room)],
            capture_output=True, text=True, timeout=300, env={**os.environ, **env},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) - before == TOTAL - before
        final = _stored(room)
        assert len(final) == TOTAL and all(g.status == "ok" for g in final.values())
        assert all(final[sid].text == g.text for sid, g in answered.items())


@needs_tmpfs
def test_a_disk_too_full_to_start_refuses_before_sending(tmp_path: Path) -> None:
    mount = tmp_path / "disk"
    mount.mkdir()
    with FaultServer() as server:
        args = [*RUN_ARGS, "--base-url", server.url, "-o", str(mount / "run")]
        # The reserve alone does not fit: nothing may be sent that could not be stored.
        proc = _on_tmpfs("64k", mount, args, None, {"LONGSCOPE_RESERVE_BYTES": str(RESERVE)})
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert server.requests == []
    (line,) = _error_lines(proc.stderr)
    assert line.startswith(f"error: disk full: no space left on tmpfs (tmpfs) mounted on {mount}")
    assert "nothing was sent" in line


@needs_tmpfs
def test_a_merge_onto_a_full_disk_is_one_line_and_changes_no_input(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    with FaultServer(faults=("500",), rate=0.0) as server:
        done = subprocess.run(
            [sys.executable, "-m", "longscope.cli", *RUN_ARGS, "--base-url", server.url,
             "-o", str(shard)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    before = _stored(shard)
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = _on_tmpfs(
        "600k", mount, ["merge", str(mount / "run"), str(shard)], None,
        {"LONGSCOPE_RESERVE_BYTES": str(RESERVE)},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = _error_lines(proc.stderr)
    assert line.startswith(f"error: disk full: no space left on tmpfs (tmpfs) mounted on {mount}")
    assert _stored(shard) == before


@needs_tmpfs
@pytest.mark.parametrize(
    "fmt",
    # mlflow in make test-slow: the same refusal path, and [inspect] stays in make test
    ["inspect", pytest.param("mlflow", marks=pytest.mark.slow)],
)
def test_an_export_onto_a_full_disk_is_one_line(tmp_path: Path, fmt: str) -> None:
    pytest.importorskip("inspect_ai" if fmt == "inspect" else "mlflow")
    run = tmp_path / "run"
    with FaultServer(faults=("500",), rate=0.0) as server:
        done = subprocess.run(
            [sys.executable, "-m", "longscope.cli", *RUN_ARGS[:-3], "-S", "depths=0.5", "-q",
             "--base-url", server.url, "-o", str(run)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    mount = tmp_path / "disk"
    mount.mkdir()
    command = ["export", str(run), "--format", fmt, "-o", str(mount / "out")]
    proc = _on_tmpfs("4k", mount, command, None, {})
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = _error_lines(proc.stderr)
    assert line == (
        f"error: disk full: no space left on tmpfs (tmpfs) mounted on {mount}, 0.0 MiB free to "
        f"write {mount / 'out'}; free space there (or write elsewhere with -o) and run the same "
        "command again"
    )


class _FillingDisk:
    """A connection whose writes find the disk full `fails` times, then write (space freed)."""

    def __init__(self, db: sqlite3.Connection, fails: int) -> None:
        self.db, self.fails = db, fails

    def __enter__(self) -> Any:
        return self.db.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.db.__exit__(*exc)

    def executemany(self, *args: Any) -> Any:
        if self.fails:
            self.fails -= 1
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.executemany(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def _answers(count: int) -> list[tuple[str, int, Generation]]:
    return [(f"s{i}", 0, Generation(text=f"answer {i}", status="ok")) for i in range(count)]


def test_the_reserve_is_given_back_so_the_answers_in_hand_are_stored(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        assert (tmp_path / RESERVE_NAME).stat().st_size >= 1 << 20
        store.put_run("r", "longctx", {})
        real = store._db
        store._db = _FillingDisk(real, fails=1)  # type: ignore[assignment]
        store.put_generations("r", _answers(3))
        assert store.low_on_space
        assert not (tmp_path / RESERVE_NAME).exists()
        # With no reserve left, a full disk is one line naming where, and the batch is kept
        # by its caller (the transaction rolled back, nothing half-stored).
        store._db = _FillingDisk(real, fails=2)  # type: ignore[assignment]
        with pytest.raises(DiskFull, match=r"^disk full: no space left on .* to write "):
            store.put_generations("r", [("s9", 0, Generation(text="late", status="ok"))])
        store._db = real
        stored = {sid: g.text for sid, _, g in store.generations("r")}
    assert stored == {"s0": "answer 0", "s1": "answer 1", "s2": "answer 2"}
    assert not (tmp_path / RESERVE_NAME).exists()


def test_disk_full_is_told_from_other_write_errors() -> None:
    assert is_disk_full(OSError(28, "No space left on device"))
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    wrapped = RuntimeError("export failed")
    wrapped.__cause__ = OSError(122, "Disk quota exceeded")
    assert is_disk_full(wrapped)
    assert not is_disk_full(OSError(13, "Permission denied"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    error = disk_full("/proc/nowhere/x.db", exit_code=3, done="4 answers stored")
    assert error.exit_code == 3
    assert str(error).startswith("disk full: no space left on proc (proc) mounted on /proc")
    assert "4 answers stored" in str(error) and "\n" not in str(error)
