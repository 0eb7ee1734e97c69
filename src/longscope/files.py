"""Files longscope writes and reads: atomic writes, and reading files we did not write.

Every file longscope writes (summaries, reports, profiles, labels, caches) goes through
`write_atomic`: a reader, or a process killed half-way, sees the old file or the new one, never an
empty or half-written one. Every text file a user hands us goes through `read_user_text` or
`parse_json`, which turn missing, binary, non-UTF-8, huge or too deeply nested files into one-line
`UsageError`s naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from longscope.errors import UsageError

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
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _fsync_dir(path.parent)
    return path


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
