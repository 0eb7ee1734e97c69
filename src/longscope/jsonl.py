"""Reading JSONL and Parquet files we did not write: numbered rows, one-line errors naming the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import MAX_LINE_BYTES, parse_json


def iter_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed object) for every non-blank line of a JSONL file.

    Missing, empty, binary, non-UTF-8 files, huge lines and malformed or too deeply nested rows
    end in one `UsageError` naming the file (and the row).
    """
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{what} {path} does not exist")
    if not path.is_file():
        raise UsageError(f"{what} {path} is not a file")
    rows = 0
    try:
        with path.open("rb") as handle:
            number = 0
            while True:
                raw = handle.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                number += 1
                if len(raw) > MAX_LINE_BYTES:
                    limit = (
                        f"{MAX_LINE_BYTES >> 20} MiB"
                        if MAX_LINE_BYTES >= 1 << 20
                        else f"{MAX_LINE_BYTES} bytes"
                    )
                    raise UsageError(f"{path}: row {number}: longer than {limit}")
                if b"\x00" in raw:
                    raise UsageError(f"{what} {path} is binary, not JSONL text (row {number})")
                try:
                    line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise UsageError(
                        f"{path}: row {number}: not UTF-8 text (byte {exc.start}): save it as UTF-8"
                    ) from exc
                if not line.strip():
                    continue
                rows += 1
                yield number, parse_json(line, f"{path}: row {number}")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if rows == 0:
        raise UsageError(f"{what} {path} is empty: expected one JSON object per line")


def iter_parquet(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (row number, row as a dict) for every row of a Parquet file.

    pyarrow is optional (`longscope[parquet]`): without it, and for a file it cannot read, one
    `UsageError` naming the file and what to do.
    """
    path = Path(path)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise UsageError(
            f"{path}: reading Parquet needs pyarrow (pip install 'longscope[parquet]'), or "
            "convert it to JSONL"
        ) from exc
    try:
        table = pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        # pyarrow's messages can span lines; the first one names what is wrong.
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"{path}: not a readable Parquet file ({reason})") from exc
    yield from enumerate(table.to_pylist(), start=1)
