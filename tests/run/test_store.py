import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.run.store import RunLock, RunStore, StoreError
from longscope.types import Generation, Sample, Score

from ..factories import sample


def _sample(i: int, context: str = "shared context") -> Sample:
    return sample(
        f"s{i}", task="needle", context=context, question="q?", length=4096,
        meta={"task_id": "LCB-001"},
    )  # fmt: skip


def test_generations_are_final_once_ok_and_retryable_otherwise(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_samples("r1", [_sample(1), _sample(2)])
        store.put_generation("r1", "s1", 0, Generation("first", "ok"))
        store.put_generation("r1", "s1", 0, Generation("second", "ok"))  # must not overwrite
        store.put_generation("r1", "s2", 0, Generation("", "error", error="HTTP 500"))
        assert store.done_keys("r1") == {("s1", 0)}
        store.put_generation("r1", "s2", 0, Generation("retried", "ok"))
        gens = {sid: g for sid, _, g in store.generations("r1")}
        assert gens["s1"].text == "first" and gens["s2"].text == "retried"
        assert store.count_generations("r1") == 2
        assert store.done_keys("r1") == {("s1", 0), ("s2", 0)}


def test_contexts_are_stored_once(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_samples("r1", [_sample(i) for i in range(5)])
        assert store.context("r1", "s3") == "shared context"
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    assert db.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 1
    assert (
        "shared context" not in db.execute("SELECT group_concat(data) FROM samples").fetchone()[0]
    )


def test_scores_are_replaced_not_appended(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_scores("r1", [("s1", 0, Score(5, 5, {"rule": "x"}))])
        store.put_scores("r1", [("s1", 0, Score(4, 5, {"rule": "y"}))])
        assert store.scores("r1") == {("s1", 0): Score(4, 5)}


def test_judgements_as_stored_through_the_public_api(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_judgement("r1", "s1", 0, "judge/x", 0.5, "half", 2, "")
        store.put_judgement("r1", "s2", 1, "judge/x", None, "", 3, "timeout")
    with RunStore.open_readonly(tmp_path) as store:
        assert store.judgement_records("r1") == [
            ("s1", 0, "judge/x", 0.5, "half", 2, ""),
            ("s2", 1, "judge/x", None, "", 3, "timeout"),
        ]


def test_latest_run_and_prefix_lookup(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("aaaa1111", "longctx", {"params": {}})
        store.put_run("bbbb2222", "longctx", {"params": {}})
        assert store.run()["run_id"] == "bbbb2222"
        assert store.run("aaaa")["run_id"] == "aaaa1111"
        with pytest.raises(StoreError, match="no run 'cccc'"):
            store.run("cccc")


def test_missing_or_foreign_store_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(StoreError, match="no longscope run in"):
        RunStore(tmp_path / "nothing", create=False)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "longscope.sqlite").write_text("not a database at all" * 100)
    with pytest.raises(StoreError, match="is not a longscope store"):
        RunStore(tmp_path / "bad", create=False)


def _filled_store(run_dir: Path) -> Path:
    with RunStore(run_dir) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_samples("r1", [_sample(i, context=f"context {i} " * 500) for i in range(20)])
        store.put_generations(
            "r1", [(f"s{i}", 0, Generation(f"answer {i}", "ok")) for i in range(20)]
        )
    return run_dir / "longscope.sqlite"


def _corrupt_a_table_root(path: Path, table: str) -> None:
    db = sqlite3.connect(path)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (table,)).fetchone()
    db.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\xff" * 8)  # no valid b-tree page starts like this


@pytest.mark.parametrize("readonly", [False, True])
def test_damaged_store_is_refused_in_one_line_and_left_byte_identical(
    tmp_path: Path, readonly: bool
) -> None:
    path = _filled_store(tmp_path)
    _corrupt_a_table_root(path, "samples")
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        if readonly:
            RunStore.open_readonly(tmp_path)
        else:
            RunStore(tmp_path, create=False)
    message = str(caught.value)
    assert "is damaged" in message and "it was not changed" in message and "\n" not in message
    assert path.read_bytes() == before
    assert not (tmp_path / "longscope.sqlite-wal").exists() or readonly
    # the lock of the refused writer was released: a later writer is not told it is in use
    with pytest.raises(StoreError, match="is damaged"):
        RunStore(tmp_path)


def test_readonly_store_reads_and_refuses_to_write(tmp_path: Path) -> None:
    path = _filled_store(tmp_path)
    before = path.read_bytes()
    with RunStore.open_readonly(tmp_path) as store:
        assert len(store.generations("r1")) == 20 and store.run()["run_id"] == "r1"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.put_generation("r1", "s1", 0, Generation("changed", "ok"))
    assert path.read_bytes() == before
    with pytest.raises(StoreError, match="no longscope run in"):
        RunStore.open_readonly(tmp_path / "missing")


def test_readonly_open_works_on_a_read_only_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "archived"
    _filled_store(run_dir)
    (run_dir / "longscope.sqlite").chmod(0o444)
    run_dir.chmod(0o555)
    tmp_path.chmod(0o755)
    code = (
        "import sys; from longscope.run.store import RunStore, StoreError\n"
        f"store = RunStore.open_readonly({str(run_dir)!r})\n"
        "print(len(store.generations('r1')))\n"
        "try:\n"
        f"    RunStore({str(run_dir)!r})\n"
        "except StoreError as exc:\n"
        "    print('refused:', exc)\n"
    )
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        # root ignores permissions: drop the capabilities that let it, so the directory really is
        # read-only for the reader
        caps = "-dac_override,-dac_read_search,-fowner"
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a directory read-only")
        command = ["setpriv", "--bounding-set", caps, "--inh-caps", caps, *command]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "LONGSCOPE_CACHE": str(tmp_path / "cache")},
        )
    finally:
        run_dir.chmod(0o755)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "20"
    assert lines[1].startswith("refused: ") and str(run_dir) in lines[1], lines


def _hold_lock(run_dir: Path) -> subprocess.Popen:
    code = (
        "import sys; from longscope.run.store import RunLock\n"
        f"RunLock({str(run_dir)!r}).acquire(); print('held', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_second_writer_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    _filled_store(tmp_path)
    holder = _hold_lock(tmp_path)
    try:
        with pytest.raises(StoreError) as caught:
            RunStore(tmp_path, create=False)
        message = str(caught.value)
        assert f"pid {holder.pid} on {socket.gethostname()}" in message
        assert "in use by another longscope writer" in message
        # readers are never blocked by a writer
        with RunStore.open_readonly(tmp_path) as store:
            assert store.count_generations("r1") == 20
    finally:
        holder.kill()  # SIGKILL: the holder cannot clean up; the kernel drops its flock
        holder.wait()
    with RunStore(tmp_path, create=False) as store:
        assert store.count_generations("r1") == 20
        record = json.loads((tmp_path / "longscope.lock").read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
    # released: the next writer takes it without waiting
    with RunStore(tmp_path, create=False):
        pass


def test_lock_is_reentrant_within_one_process(tmp_path: Path) -> None:
    with RunLock(tmp_path), RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        with RunStore(tmp_path, create=False) as again:
            assert again.run()["run_id"] == "r1"
        assert json.loads((tmp_path / "longscope.lock").read_text())["pid"] == os.getpid()
        assert RunLock._held  # held once, at depth 2 while the inner store was open
    assert not RunLock._held


def test_batched_generations_keep_final_rows(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_generations(
            "r1",
            [("s1", 0, Generation("first", "ok")), ("s2", 0, Generation("", "timeout", error="t"))],
        )
        store.put_generations(
            "r1",
            [("s1", 0, Generation("second", "ok")), ("s2", 0, Generation("late", "ok"))],
        )
        assert {sid: g.text for sid, _, g in store.generations("r1")} == {
            "s1": "first",
            "s2": "late",
        }
