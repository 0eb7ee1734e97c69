"""Reading JSONL files we did not write: numbered rows, one-line errors naming file and row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longscope.models.base import UsageError


def iter_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed object) for every non-blank line of a JSONL file."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{what} {path} does not exist")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}: row {number}: not valid JSON ({exc.msg})") from exc
