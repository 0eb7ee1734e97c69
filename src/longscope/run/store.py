"""The run store: one SQLite file (WAL) per run directory, the single source of truth.

Generations are committed in small batches as they arrive (`put_generations`), keyed by (run,
sample, repeat), so a run killed at any point resumes without duplicating anything: at worst the
requests of the last uncommitted batch are sent again. Contexts are stored once by hash.

Opening checks the file (`PRAGMA quick_check`) and refuses a damaged store before writing anything.
A writable store holds the run directory's lock (`RunLock`): one writer per run directory. A store
opened with `RunStore.open_readonly` takes no lock, writes nothing, and works on a read-only
directory or file.

No file of the store is reached through a symbolic link (a planted `longscope.lock` or
`longscope.sqlite` link is refused, its target untouched). A writable store keeps a reserve of disk
space (`longscope.reserve`, `RESERVE_BYTES`) while it is open: a write that finds the disk full
gives the reserve back and is tried again, so what was received before the disk filled is stored;
the store then says it is `low_on_space` and the runner stops sending. A write that fails even
then raises `DiskFull`, one line naming the device.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from longscope.errors import DiskFull
from longscope.files import disk_full, is_disk_full, open_nofollow, resolved
from longscope.types import (
    RETRYABLE,
    SANITIZED,
    BudgetUse,
    Generation,
    Judgement,
    Sample,
    Score,
    sanitized_note,
    stable_hash,
    storable_text,
)

STORE_NAME = "longscope.sqlite"
LOCK_NAME = "longscope.lock"
RESERVE_NAME = "longscope.reserve"
RESERVE_BYTES = int(os.environ.get("LONGSCOPE_RESERVE_BYTES") or 8 << 20)
"""Disk space held back while a store is written, given back when the disk fills so that the
answers in hand can still be committed (a batch of 256 long answers and SQLite's pages for them)."""
_STORE_FILES = (STORE_NAME, f"{STORE_NAME}-wal", f"{STORE_NAME}-shm", f"{STORE_NAME}-journal")
SCHEMA_VERSION = 1
SHARD_KEY = "shard:"
"""Meta key (+ run id) of a shard's record: which shard, and every sample id of the whole run."""

# SQL text inside functions is marked `# pragma: no mutate`: SQLite reads keywords and
# identifiers in any case, so mutmut's mutants that only change the case of a statement cannot
# change what it does (docs/mutation-survivors.md).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    suite TEXT NOT NULL,
    header TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS contexts (hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    data TEXT NOT NULL,
    context_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS generations (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL,
    text TEXT NOT NULL,
    reasoning TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
CREATE TABLE IF NOT EXISTS judgements (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    judge TEXT NOT NULL,
    value REAL,
    text TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat, judge)
);
CREATE TABLE IF NOT EXISTS routes (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    plan TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
CREATE TABLE IF NOT EXISTS budgets (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    thinking_budget INTEGER NOT NULL,
    thinking_tokens INTEGER NOT NULL,
    forced INTEGER NOT NULL,
    answer_tokens INTEGER NOT NULL,
    answer_cut INTEGER NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    value REAL NOT NULL,
    max REAL NOT NULL,
    evidence TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
"""


_SCHEMA_RECORD = f"INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA_VERSION}');"
_RETRYABLE_SORTED = tuple(sorted(RETRYABLE))
_PUT_GENERATION = (
    "INSERT INTO generations VALUES (?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (run_id, sample_id, repeat) DO UPDATE SET "
    "status=excluded.status, text=excluded.text, reasoning=excluded.reasoning, "
    "prompt_tokens=excluded.prompt_tokens, completion_tokens=excluded.completion_tokens, "
    "latency_s=excluded.latency_s, error=excluded.error, created=excluded.created "
    f"WHERE generations.status IN ({','.join('?' * len(_RETRYABLE_SORTED))})"
)


_ROW_REFUSED = (
    sqlite3.InterfaceError,
    sqlite3.DataError,
    sqlite3.ProgrammingError,
    sqlite3.IntegrityError,
    OverflowError,
    ValueError,
)
"""What SQLite raises for one row it cannot store: a value it cannot bind (ProgrammingError since
Python 3.11, InterfaceError before), an integer past 64 bits, a missing value in a NOT NULL column."""


def _text(data: bytes) -> str:
    """Decode a stored TEXT value; bytes that are not UTF-8 (a store another tool wrote) become
    U+FFFD instead of an exception in whatever reads the row."""
    return data.decode("utf-8", "replace")


def _connect_readonly(path: Path) -> sqlite3.Connection:
    db = _open_readonly(path)
    db.text_factory = _text
    return db


def _open_readonly(path: Path) -> sqlite3.Connection:
    """Return a connection that never writes, even on a read-only directory or file.

    `mode=ro` still reads a WAL a killed writer left behind; where SQLite cannot open its shared
    memory file (a read-only directory without one), the file is opened `immutable`, which is
    exact for a store whose last writer closed cleanly (its WAL was folded into the file).
    """
    uri = path.resolve().as_uri()
    if not Path(f"{path}-wal").exists():
        # No WAL: no connection is open and the last writer closed cleanly, so the file alone is
        # the whole store. `immutable` then reads it without creating -wal/-shm files: a report
        # leaves the run directory exactly as it was (bytes and mtimes), even as root.
        try:
            return sqlite3.connect(f"{uri}?immutable=1", uri=True)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {path} ({exc}): check permissions") from exc
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0)
        db.execute(
            "SELECT COUNT(*) FROM sqlite_master"  # pragma: no mutate
        ).fetchone()
        return db
    except sqlite3.OperationalError as exc:
        # Only a store SQLite may not touch (no shared-memory file to write) is read immutable:
        # anything else (a writer's lock held past the timeout) must not be read past.
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise StoreError(f"cannot read {path} ({exc}): try again") from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a longscope store ({exc})") from exc
    try:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path} ({exc}): check permissions") from exc


class StoreError(ValueError):
    """The store is missing, foreign, damaged, from an incompatible version, or in use."""


class RunLock:
    """The one-writer lock of a run directory: `longscope.lock`, held through `flock`.

    The kernel drops an flock when its holder dies, so the lock of a killed (kill -9) process is
    taken over at once, with no stale-pid guessing. The file names the holder (pid, host, start
    time, command) for the message a second writer gets. Re-entrant within one process: the runner
    holds it for a whole run while the stores it opens take it again.
    """

    _held: ClassVar[dict[Path, tuple[int, int]]] = {}
    """Lock path -> (file descriptor, depth) for the locks this process holds."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = resolved(run_dir, "run directory") / LOCK_NAME

    def acquire(self) -> None:
        """Take the lock or raise StoreError naming its holder."""
        held = RunLock._held.get(self.path)
        if held is not None:
            RunLock._held[self.path] = (held[0], held[1] + 1)
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Never through a link: a planted `longscope.lock` link would have its target
            # overwritten by the holder record.
            fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except DiskFull:
            raise
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(self.path) from exc
            raise StoreError(
                f"cannot write in {self.path.parent} ({exc.strerror}): "
                "choose a writable output directory (a read-only run can be reported, not extended)"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise StoreError(
                f"{self.path.parent} is in use by another longscope writer ({holder}): "
                "wait for it to finish or stop it, then run again"
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": " ".join(sys.argv[:3]),
        }
        # The record is written over the last holder's, then cut to its length: the file is
        # empty only between its creation and this write. A reader that races the write sees a
        # mixed record, says the holder is not recorded yet, and never takes the lock.
        record = json.dumps(holder).encode()
        try:
            os.pwrite(fd, record, 0)
            os.ftruncate(fd, len(record))
        except OSError as exc:
            os.close(fd)  # the flock goes with it
            if is_disk_full(exc):
                raise disk_full(self.path) from exc
            raise StoreError(f"cannot write {self.path} ({exc.strerror}): check the disk") from exc
        RunLock._held[self.path] = (fd, 1)

    def release(self) -> None:
        """Drop one level of the lock; the last one unlocks it (the file keeps the last holder)."""
        fd, depth = RunLock._held[self.path]
        if depth > 1:
            RunLock._held[self.path] = (fd, depth - 1)
            return
        del RunLock._held[self.path]
        # The record stays: it is read only while the flock is taken, and names the last writer.
        # The file itself stays too: unlinking it would let two writers lock two different files.
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or "pid" not in data:
        return "holder not yet recorded"
    return (
        f"pid {data.get('pid')} on {data.get('host', '?')}, since {data.get('started', '?')}, "
        f"`{data.get('command', '?')}`"
    )


class RunStore:
    """Read and write one run directory's SQLite store."""

    def __init__(self, run_dir: str | Path, *, create: bool = True, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_NAME
        self.readonly = readonly
        if (readonly or not create) and not self.path.is_file():
            raise StoreError(f"no longscope run in {self.run_dir}: expected {STORE_NAME} there")
        self._lock: RunLock | None = None
        self.low_on_space = False
        """Whether the disk filled while this store was written (its reserve was given back)."""
        self._reserve: Path | None = None
        if readonly:
            self._db = _connect_readonly(self.path)
            row = self._check()
            if row is None:
                raise StoreError(f"{self.path} is not a longscope store (no schema record)")
            self._check_version(row)
            return
        self._lock = RunLock(self.run_dir)  # creates the directory
        self._lock.acquire()
        try:
            self._refuse_links()
            self._hold_reserve()
            self._open_writable()
        except BaseException:
            self._give_back_reserve()
            self._lock.release()
            raise

    @classmethod
    def open_readonly(cls, run_dir: str | Path) -> RunStore:
        """Return the store of an existing run opened for reading only.

        Takes no lock and never writes (no scores, no schema record, no WAL checkpoint), so it works
        on a read-only directory or file and beside a running writer. Raises StoreError (one line)
        when the directory holds no store or the store is damaged.
        """
        return cls(run_dir, create=False, readonly=True)

    def _refuse_links(self) -> None:
        """Refuse a store file that is a symbolic link: writing it would write its target."""
        for name in _STORE_FILES:
            if (self.run_dir / name).is_symlink():
                raise StoreError(
                    f"{self.run_dir / name} is a symbolic link: longscope writes no file through "
                    "a link; remove it (or choose another run directory) and run again"
                )

    def _hold_reserve(self) -> None:
        """Set disk space aside for the answers in hand when the disk fills (`RESERVE_BYTES`)."""
        if RESERVE_BYTES <= 0:
            return
        path = self.run_dir / RESERVE_NAME
        try:
            fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot write {path} ({exc.strerror}): check the directory") from exc
        self._reserve = path
        try:
            if os.fstat(fd).st_size < RESERVE_BYTES:
                _allocate(fd, RESERVE_BYTES)
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full(path, done="nothing was sent") from exc
            raise StoreError(f"cannot write {path} ({exc.strerror}): check the disk") from exc
        finally:
            os.close(fd)

    def _give_back_reserve(self) -> bool:
        """Delete the reserve; return whether there was one to give back."""
        if self._reserve is None:
            return False
        path, self._reserve = self._reserve, None
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError:
            return False
        return True

    def _write(self, body: Callable[[], None]) -> None:
        """Run `body` in one transaction; on a full disk give the reserve back and try once more,
        then raise `DiskFull` (the transaction rolled back: the caller still holds its rows)."""
        for attempt in (1, 2):
            try:
                with self._db:
                    body()
                return
            except sqlite3.OperationalError as exc:
                if not is_disk_full(exc):
                    raise
                if attempt == 1 and self._give_back_reserve():
                    self.low_on_space = True
                    continue
                self.low_on_space = True
                raise disk_full(self.path) from exc

    def _open_writable(self) -> None:
        try:
            if not self.path.exists() or self.path.stat().st_size == 0:
                self._create()
            # `nofollow`: SQLite itself refuses a link put in place after the check above.
            uri = f"{self.path.absolute().as_uri()}?nofollow=1"
            self._db = sqlite3.connect(uri, uri=True, timeout=30.0)
            self._db.text_factory = _text
        except (OSError, sqlite3.Error) as exc:
            if is_disk_full(exc):
                raise disk_full(self.path, done="nothing was sent") from exc
            raise StoreError(f"cannot create {self.path} ({exc}): check the directory") from exc
        # Checked before any statement that writes: a damaged store is refused untouched.
        row = self._check()
        try:
            self._db.execute("PRAGMA journal_mode=WAL")  # pragma: no mutate
            self._db.execute("PRAGMA synchronous=NORMAL")  # pragma: no mutate
            # Tables a newer longscope added, and the schema record of a foreign SQLite file, in one
            # transaction: a kill leaves the file as it was or complete.
            self._db.executescript(f"BEGIN; {_SCHEMA} {_SCHEMA_RECORD} COMMIT;")
            row = self._db.execute(
                "SELECT value FROM meta WHERE key='schema'"  # pragma: no mutate
            ).fetchone()
        except sqlite3.OperationalError as exc:
            self._db.close()
            if is_disk_full(exc):
                raise disk_full(self.path, done="nothing was sent") from exc
            raise StoreError(f"cannot write to {self.path} ({exc}): check permissions") from exc
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StoreError(f"{self.path} is not a longscope store ({exc})") from exc
        self._check_version(row)

    def _create(self) -> None:
        """Build a new store under a temporary name and rename it into place (kill -9 safe)."""
        # Under the run lock: a temporary file left here belongs to a killed writer.
        for stale in self.run_dir.glob(f"{STORE_NAME}.new-*"):
            stale.unlink()
        temporary = self.path.with_name(f"{STORE_NAME}.new-{os.getpid()}")
        db = sqlite3.connect(temporary)
        try:
            db.execute("PRAGMA journal_mode=WAL")  # pragma: no mutate
            db.executescript(f"BEGIN; {_SCHEMA} {_SCHEMA_RECORD} COMMIT;")
        finally:
            db.close()  # the last connection folds the WAL into the file and removes it
        os.replace(temporary, self.path)

    def _check(self) -> tuple[str] | None:
        """Run SQLite's quick check; return the schema row (None in a new or foreign file)."""
        try:
            check = self._db.execute("PRAGMA quick_check")  # pragma: no mutate
            problems = [r[0] for r in check.fetchall()]
            if problems == ["ok"]:
                has_meta = self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"  # pragma: no mutate
                ).fetchone()
                if not has_meta:
                    self._refuse_foreign_tables()
                    return None
                # A foreign file's `meta` of another shape fails the schema record's read or
                # write with an SQL error that reads like a permission problem: name it instead.
                shape = self._db.execute("PRAGMA table_info(meta)")  # pragma: no mutate
                columns = [r[1] for r in shape]
                if columns != ["key", "value"]:
                    self._db.close()
                    raise StoreError(
                        f"{self.path} is not a longscope store (its table meta has columns "
                        f"{', '.join(columns)}, not key, value); it was not changed: "
                        "choose another run directory"
                    )
                return self._db.execute(
                    "SELECT value FROM meta WHERE key='schema'"  # pragma: no mutate
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                self._db.close()
                raise StoreError(f"{self.path} is not a longscope store ({exc})") from exc
            problems = [str(exc)]
        self._db.close()
        raise StoreError(
            f"{self.path} is damaged ({' '.join(problems[0].split())}; {len(problems)} problem(s)); "
            "it was not changed: restore it from a copy or start a new run directory"
        )

    def _refuse_foreign_tables(self) -> None:
        """A file without our schema record is adopted only if every table it shares a name with
        has the store's columns: a foreign `generations` would otherwise take the first answer's
        write (and fail there, after the run had started)."""
        # SQL text and SQLite's in-memory name are not mutated: a keyword's case is no change to
        # SQLite, and another name only puts the scratch database in a file.
        ours = sqlite3.connect(":memory:")  # pragma: no mutate
        ours.executescript(_SCHEMA)
        tables = "SELECT name FROM sqlite_master WHERE type='table'"  # pragma: no mutate
        columns = "PRAGMA table_info({})"  # pragma: no mutate
        for (table,) in ours.execute(tables):
            want = [r[1] for r in ours.execute(columns.format(table))]
            have = [r[1] for r in self._db.execute(columns.format(table))]
            if have and have != want:
                ours.close()
                self._db.close()
                raise StoreError(
                    f"{self.path} is not a longscope store (its table {table} has columns "
                    f"{', '.join(have)}, not {', '.join(want)}); it was not changed: "
                    "choose another run directory"
                )
        ours.close()

    def _check_version(self, row: tuple[str]) -> None:
        if str(row[0]) != str(SCHEMA_VERSION):
            self._db.close()
            raise StoreError(
                f"{self.path} has store schema {row[0]}, this longscope reads {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        """Close the database, then release the run directory's lock if this store held it."""
        try:
            self._db.close()
        finally:
            self._give_back_reserve()  # a closed store holds no space
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # meta ---------------------------------------------------------------------------------------
    def put_meta(self, key: str, value: Any) -> None:
        """Store a JSON value under `key` in the meta table (replacing an older one)."""
        self._write(
            lambda: self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",  # pragma: no mutate
                (key, json.dumps(value, sort_keys=True)),
            )
        )

    def delete_meta(self, key: str) -> None:
        """Remove the value stored under `key` (nothing when there is none)."""
        self._write(
            lambda: self._db.execute(
                "DELETE FROM meta WHERE key=?",  # pragma: no mutate
                (key,),
            )
        )

    def get_meta(self, key: str) -> Any:
        """Return the JSON value stored under `key`, or None."""
        row = self._db.execute(
            "SELECT value FROM meta WHERE key=?",  # pragma: no mutate
            (key,),
        ).fetchone()
        return json.loads(row[0]) if row else None

    # runs ---------------------------------------------------------------------------------------
    def put_run(self, run_id: str, suite: str, header: dict[str, Any]) -> None:
        """Record a run's header once; a resumed run keeps its first header."""
        self._write(
            lambda: self._db.execute(
                "INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?)",  # pragma: no mutate
                (run_id, suite, json.dumps(header, sort_keys=True), time.time()),
            )
        )

    def runs(self) -> list[dict[str, Any]]:
        """Return every run in this store, oldest first, with its header."""
        rows = self._db.execute(
            "SELECT run_id, suite, header, created FROM runs ORDER BY created"  # pragma: no mutate
        )
        return [
            {"run_id": r, "suite": s, "header": json.loads(h), "created": c} for r, s, h, c in rows
        ]

    def run(self, run_id: str | None = None) -> dict[str, Any]:
        """Return one run (the latest when `run_id` is None)."""
        runs = self.runs()
        if not runs:
            raise StoreError(f"{self.path} holds no run yet")
        if run_id is None:
            return runs[-1]
        for run in runs:
            if run["run_id"].startswith(run_id):
                return run
        raise StoreError(f"no run {run_id!r} in {self.path}")

    # samples ------------------------------------------------------------------------------------
    def put_samples(
        self, run_id: str, samples: Iterable[Sample], positions: Iterable[int] | None = None
    ) -> None:
        """Store samples at `positions` in the build order (default: 0, 1, ... in turn)."""
        places = positions if positions is not None else itertools.count()
        pairs = list(zip(places, samples, strict=False))

        def body() -> None:
            for position, sample in pairs:
                context_hash = stable_hash(sample.context, 32)
                self._db.execute(
                    "INSERT OR IGNORE INTO contexts VALUES (?, ?)",  # pragma: no mutate
                    (context_hash, storable_text(sample.context)[0]),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?)",  # pragma: no mutate
                    (run_id, sample.id, position, json.dumps(sample.public()), context_hash),
                )

        self._write(body)

    def samples(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Return the stored samples (without contexts) by id, in build order."""
        rows = self._db.execute(
            "SELECT sample_id, data FROM samples WHERE run_id=? ORDER BY position",  # pragma: no mutate
            (run_id,),
        )
        return {sid: json.loads(data) for sid, data in rows}

    def context_hashes(self, run_id: str) -> dict[str, str]:
        """Return each sample's context hash: samples reading the same document share one."""
        rows = self._db.execute(
            "SELECT sample_id, context_hash FROM samples WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return dict(rows.fetchall())

    def answered_between(self, run_id: str) -> tuple[float, float] | None:
        """Return when the run's first and last stored answers arrived (Unix time), or None."""
        first, last = self._db.execute(
            "SELECT MIN(created), MAX(created) FROM generations WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        ).fetchone()
        return None if first is None else (float(first), float(last))

    def answer_times(self, run_id: str) -> dict[tuple[str, int], float]:
        """Return when each stored answer was committed (Unix time), by (sample, repeat)."""
        rows = self._db.execute(
            "SELECT sample_id, repeat, created FROM generations WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return {(sid, rep): float(created) for sid, rep, created in rows}

    def context(self, run_id: str, sample_id: str) -> str:
        row = self._db.execute(
            "SELECT c.text FROM samples s JOIN contexts c ON c.hash = s.context_hash "  # pragma: no mutate
            "WHERE s.run_id=? AND s.sample_id=?",  # pragma: no mutate
            (run_id, sample_id),
        ).fetchone()
        return row[0] if row else ""

    # generations --------------------------------------------------------------------------------
    def done_keys(self, run_id: str) -> set[tuple[str, int]]:
        """Return (sample, repeat) pairs that hold a final generation (not to be redone)."""
        placeholders = ",".join("?" * len(RETRYABLE))
        rows = self._db.execute(
            f"SELECT sample_id, repeat FROM generations WHERE run_id=? "
            f"AND status NOT IN ({placeholders})",
            (run_id, *sorted(RETRYABLE)),
        )
        return {(sid, rep) for sid, rep in rows}

    def put_generation(self, run_id: str, sample_id: str, repeat: int, gen: Generation) -> None:
        """Store one generation now; a final one is never overwritten, a retryable one may be."""
        self.put_generations(run_id, [(sample_id, repeat, gen)])

    def put_generations(self, run_id: str, rows: Sequence[tuple[str, int, Generation]]) -> None:
        """Store generations in one transaction; final ones are never overwritten.

        One commit per batch is what makes 64 requests in flight cheap; a kill before the commit
        loses only the batch, whose requests a resumed run sends again. Text UTF-8 cannot encode
        (lone surrogates) is replaced and the answer flagged (`sanitized:` in its `error`); a row
        SQLite still refuses is stored as `error` with the reason, and the rest of the batch with
        it: one answer never costs a batch.
        """
        now = time.time()
        values = [_generation_row(run_id, sid, rep, gen, now) for sid, rep, gen in rows]
        routes = [(run_id, sid, rep, _json_text(gen.route)) for sid, rep, gen in rows if gen.route]
        budgets = [_budget_row(run_id, sid, rep, gen) for sid, rep, gen in rows if gen.budget]

        def whole() -> None:
            self._db.executemany(_PUT_GENERATION, values)
            if routes:
                self._db.executemany(_PUT_ROUTE, routes)
            if budgets:
                self._db.executemany(_PUT_BUDGET, budgets)

        try:
            self._write(whole)
            return
        except DiskFull:
            raise  # a ValueError too, but no row's fault: the caller keeps the batch
        except _ROW_REFUSED:
            pass  # one row SQLite refuses: find it below, store the others as they are

        def one_by_one() -> None:
            for value in values:
                try:
                    self._db.execute(_PUT_GENERATION, value)
                except _ROW_REFUSED as exc:
                    self._db.execute(_PUT_GENERATION, _unstorable_row(value, exc))
            for route in routes:
                try:
                    self._db.execute(_PUT_ROUTE, route)
                except _ROW_REFUSED:
                    continue  # a route is a note beside the answer, never worth the answer
            for budget in budgets:
                try:
                    self._db.execute(_PUT_BUDGET, budget)
                except _ROW_REFUSED:
                    continue  # as a route: a note beside the answer

        self._write(one_by_one)

    def routes(self, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
        """Return what a router decided per (sample, repeat), for routed runs."""
        rows = self._db.execute(
            "SELECT sample_id, repeat, plan FROM routes WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return {(sid, rep): json.loads(plan) for sid, rep, plan in rows}

    def budgets(self, run_id: str) -> dict[tuple[str, int], BudgetUse]:
        """Return what the thinking budget did per (sample, repeat), for runs that had one."""
        has = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='budgets'"  # pragma: no mutate
        ).fetchone()
        if not has:  # a store written before budgets were kept, opened read-only
            return {}
        rows = self._db.execute(
            "SELECT sample_id, repeat, thinking_budget, thinking_tokens, forced, answer_tokens, "  # pragma: no mutate
            "answer_cut FROM budgets WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return {
            (sid, rep): BudgetUse(tb, tt, bool(forced), at, bool(cut))
            for sid, rep, tb, tt, forced, at, cut in rows
        }

    def generations(self, run_id: str) -> list[tuple[str, int, Generation]]:
        budgets = self.budgets(run_id)
        rows = self._db.execute(
            "SELECT sample_id, repeat, status, text, reasoning, prompt_tokens, completion_tokens, "  # pragma: no mutate
            "latency_s, error FROM generations WHERE run_id=? ORDER BY sample_id, repeat",  # pragma: no mutate
            (run_id,),
        )
        return [
            (
                sid,
                rep,
                Generation(
                    text=t,
                    status=st,
                    reasoning=r,
                    prompt_tokens=pt,
                    completion_tokens=ct,
                    latency_s=lat,
                    error=err,
                    budget=budgets.get((sid, rep)),
                ),
            )
            for sid, rep, st, t, r, pt, ct, lat, err in rows
        ]

    def count_generations(self, run_id: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM generations WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return int(row.fetchone()[0])

    # judgements ---------------------------------------------------------------------------------
    def judged_keys(self, run_id: str, judge: str) -> set[tuple[str, int]]:
        """Return (sample, repeat) pairs this judge has already ruled on (failures included)."""
        rows = self._db.execute(
            "SELECT sample_id, repeat FROM judgements WHERE run_id=? AND judge=?",  # pragma: no mutate
            (run_id, judge),
        )
        return {(sid, rep) for sid, rep in rows}

    def put_judgement(
        self,
        run_id: str,
        sample_id: str,
        repeat: int,
        judge: str,
        value: float | None,
        text: str,
        attempts: int,
        error: str,
    ) -> None:
        self._write(
            lambda: self._db.execute(
                "INSERT OR REPLACE INTO judgements VALUES (?,?,?,?,?,?,?,?)",  # pragma: no mutate
                (
                    run_id,
                    sample_id,
                    repeat,
                    storable_text(judge)[0],
                    value,
                    storable_text(text)[0],
                    attempts,
                    storable_text(error)[0],
                ),
            )
        )

    def judgements(self, run_id: str) -> dict[tuple[str, int], Judgement]:
        """Return {(sample, repeat): Judgement} (value or None, judge, error; the latest judge
        wins)."""
        rows = self._db.execute(
            "SELECT sample_id, repeat, value, judge, error FROM judgements WHERE run_id=? "  # pragma: no mutate
            "ORDER BY rowid",  # pragma: no mutate
            (run_id,),
        )
        return {
            (sid, rep): Judgement(value, judge, error) for sid, rep, value, judge, error in rows
        }

    def judgement_records(
        self, run_id: str
    ) -> list[tuple[str, int, str, float | None, str, int, str]]:
        """Return every judgement as stored, oldest first: (sample, repeat, judge, value, text,
        attempts, error), as `put_judgement` takes them (merging copies them)."""
        return self._db.execute(
            "SELECT sample_id, repeat, judge, value, text, attempts, error FROM judgements "  # pragma: no mutate
            "WHERE run_id=? ORDER BY rowid",  # pragma: no mutate
            (run_id,),
        ).fetchall()

    # scores -------------------------------------------------------------------------------------
    def put_scores(self, run_id: str, scores: Iterable[tuple[str, int, Score]]) -> None:
        """Replace the run's scores (scores are always recomputable from generations)."""
        rows = [
            (run_id, sid, rep, s.value, s.max, _json_text(s.evidence)) for sid, rep, s in scores
        ]

        def body() -> None:
            self._db.execute(
                "DELETE FROM scores WHERE run_id=?",  # pragma: no mutate
                (run_id,),
            )
            self._db.executemany(
                "INSERT INTO scores VALUES (?,?,?,?,?,?)",  # pragma: no mutate
                rows,
            )

        self._write(body)

    def scores(self, run_id: str) -> dict[tuple[str, int], Score]:
        rows = self._db.execute(
            "SELECT sample_id, repeat, value, max, evidence FROM scores WHERE run_id=?",  # pragma: no mutate
            (run_id,),
        )
        return {(sid, rep): Score(v, m, json.loads(ev)) for sid, rep, v, m, ev in rows}


def _allocate(fd: int, size: int) -> None:
    """Give the file `size` bytes of real disk blocks (a sparse file would reserve nothing)."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    block = b"\0" * (1 << 20)
    written = 0
    while written < size:
        written += os.pwrite(fd, block[: size - written], written)
    os.fsync(fd)


def _json_text(value: Any) -> str:
    """Return `value` as JSON text SQLite can store (unencodable code points replaced)."""
    return storable_text(json.dumps(value, ensure_ascii=False))[0]


def _generation_row(
    run_id: str, sample_id: str, repeat: int, gen: Generation, now: float
) -> tuple[Any, ...]:
    """Return the generations row of `gen`, its text made storable and flagged when it was not."""
    text, bad_text = storable_text(gen.text)
    reasoning, bad_reasoning = storable_text(gen.reasoning)
    error, _ = storable_text(gen.error)
    replaced = bad_text + bad_reasoning
    if replaced and not error.startswith(SANITIZED):
        error = "; ".join(x for x in (sanitized_note(replaced), error) if x)
    return (
        run_id,
        sample_id,
        repeat,
        gen.status,
        text,
        reasoning,
        gen.prompt_tokens,
        gen.completion_tokens,
        gen.latency_s,
        error,
        now,
        *_RETRYABLE_SORTED,
    )


_PUT_BUDGET = "INSERT OR REPLACE INTO budgets VALUES (?,?,?,?,?,?,?,?)"
_PUT_ROUTE = "INSERT OR REPLACE INTO routes VALUES (?,?,?,?)"


def _budget_row(run_id: str, sample_id: str, repeat: int, gen: Generation) -> tuple[Any, ...]:
    use = gen.budget
    assert use is not None
    return (
        run_id,
        sample_id,
        repeat,
        use.thinking_budget,
        use.thinking_tokens,
        int(use.forced),
        use.answer_tokens,
        int(use.answer_cut),
    )


def _unstorable_row(value: tuple[Any, ...], exc: BaseException) -> tuple[Any, ...]:
    """Return the row stored instead of one SQLite refused: an `error` with the reason (retried
    by a resumed run, like any error)."""
    reason = f"unstorable answer ({exc.__class__.__name__}: {' '.join(str(exc).split())[:160]})"
    run_id, sample_id, repeat, _status, _text, _reasoning, *_, now = value[:11]
    return (run_id, sample_id, repeat, "error", "", "", 0, 0, 0.0, reason, now, *_RETRYABLE_SORTED)
