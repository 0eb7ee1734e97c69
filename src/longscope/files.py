"""Files longscope writes and reads: atomic writes, and reading files we did not write.

Every file longscope writes (summaries, reports, profiles, labels, caches) goes through
`write_atomic`: a reader, or a process killed half-way, sees the old file or the new one, never an
empty or half-written one. Every text file a user hands us goes through `read_user_text` or
`parse_json`, which turn missing, binary, non-UTF-8, huge or too deeply nested files into one-line
`UsageError`s naming the file.

No file longscope writes follows a symbolic link: `write_atomic` renames over the path (a link
there is replaced, its target untouched) and files written in place are opened with `O_NOFOLLOW`
(`open_nofollow`). A write that finds the disk (or quota) full raises `DiskFull`: one line naming
the device, its free space and the fix.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from longscope.errors import DiskFull, UsageError

MAX_LINE_BYTES = 256 << 20
"""A JSONL row longer than this (256 MiB) is refused rather than read whole into memory."""


def write_atomic(path: str | Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write `data` to `path` through a temp file in the same directory, fsync and rename; return path.

    Raises `UsageError` (one line naming the path) when the directory cannot be written.
    """
    path = Path(path)
    payload = data.encode(encoding) if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates the file 0600; a report or summary is as readable as any other file.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if is_disk_full(exc):
            raise disk_full(path) from exc
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _fsync_dir(path.parent)
    return path


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""No space on the device, the user's quota spent, or a file past the size this process may
write (`ulimit -f`): each one a disk that takes no more of what longscope writes."""


def is_disk_full(exc: BaseException | None) -> bool:
    """Return whether `exc`, or an exception it was raised from, says the disk or quota is full."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return True
        # SQLite reports a failed write as SQLITE_FULL ("database or disk is full").
        if isinstance(exc, sqlite3.Error) and (
            getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "disk is full" in str(exc)
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def device_of(path: str | Path) -> str:
    """Return the filesystem holding `path` as `/dev/sda1 (ext4) mounted on /data`, from the
    mount table; `the filesystem holding PATH` where the table does not say."""
    where = Path(path).absolute()
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        dev = os.stat(where).st_dev
        lines = Path("/proc/self/mountinfo").read_text("utf-8", "replace").splitlines()
    except OSError:
        return f"the filesystem holding {where}"
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    best: tuple[int, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 7 or fields[2] != wanted or "-" not in fields[6:]:
            continue
        mount = _unescape(fields[4])
        tail = fields[fields.index("-", 6) + 1 :]
        fstype, source = [*tail, "?", "?"][:2]
        inside = where == Path(mount) or Path(mount) in where.parents
        if inside and (best is None or len(mount) > best[0]):
            best = (len(mount), f"{_unescape(source)} ({fstype}) mounted on {mount}")
    return best[1] if best else f"the filesystem holding {where}"


def _unescape(text: str) -> str:
    # The mount table writes a space, tab, newline or backslash in a path as an octal escape.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def disk_full(path: str | Path, *, exit_code: int = 2, done: str = "") -> DiskFull:
    """Return the one-line `DiskFull` for a write to `path` that found no space; `done` says
    what was kept (`12 answers stored`)."""
    where = Path(path)
    try:
        free = shutil.disk_usage(next(p for p in (where, *where.parents) if p.exists())).free
        room = f", {free / 2**20:,.1f} MiB free"
    except (OSError, StopIteration):
        room = ""
    kept = f": {done}" if done else ""
    return DiskFull(
        f"disk full: no space left on {device_of(where)}{room} to write {where}{kept}; free "
        "space there (or write elsewhere with -o) and run the same command again",
        exit_code,
    )


def open_nofollow(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """Return a descriptor of `path` opened with `O_NOFOLLOW`: a symbolic link planted there is
    refused (one-line `UsageError`), never written through."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"{path} is a symbolic link: longscope writes no file through a link; remove it "
                "and run again"
            ) from exc
        if is_disk_full(exc):
            raise disk_full(path) from exc
        raise


def resolved(path: str | Path, what: str = "directory") -> Path:
    """Return `path` made absolute with its links resolved; a symbolic link loop is one line."""
    try:
        return Path(path).resolve()
    except RuntimeError as exc:  # Python 3.11 and 3.12 say RuntimeError for a loop
        raise _loop(path, what) from exc
    except OSError as exc:  # 3.13 says ELOOP
        if exc.errno == errno.ELOOP:
            raise _loop(path, what) from exc
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from exc


def _loop(path: str | Path, what: str) -> UsageError:
    return UsageError(
        f"{what} {path} is a symbolic link loop (a link that leads back to itself): give a path "
        "without a loop"
    )


def write_json(path: str | Path, obj: Any) -> Path:
    """Write `obj` as indented JSON (UTF-8, trailing newline) atomically; return path."""
    return write_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    # The rename itself is durable only once the directory entry is on disk.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_user_text(path: str | Path, what: str = "file") -> str:
    """Return a user-given file's text; one-line `UsageError` if missing, empty, binary or not UTF-8."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{what} {path} does not exist")
    if not path.is_file():
        raise UsageError(f"{what} {path} is not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    return decode_text(data, path, what)


def decode_text(data: bytes, path: str | Path, what: str = "file") -> str:
    """Return `data` decoded as UTF-8 text; one-line `UsageError` if empty, binary or not UTF-8."""
    if not data.strip():
        raise UsageError(f"{what} {path} is empty")
    if b"\x00" in data:
        raise UsageError(f"{what} {path} is binary, not text (expected UTF-8 JSON or JSONL)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what} {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from exc


def parse_json(text: str, where: str) -> Any:
    """Return parsed JSON; one-line `UsageError` naming `where` if malformed or nested too deeply."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError as exc:  # the C decoder refuses nesting past the recursion limit
        raise UsageError(f"{where}: JSON nested too deeply to read") from exc


def default_cache_dir() -> Path:
    """Return where longscope keeps derived, recomputable data (token counts)."""
    root = os.environ.get("LONGSCOPE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "longscope"
    )
    return Path(root)


def sha256_of(path: str | Path) -> str:
    """Return the hex sha256 of a file, read in 1 MiB blocks (never whole into memory)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
