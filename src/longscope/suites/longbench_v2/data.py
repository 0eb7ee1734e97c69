"""LongBench v2's rows: `data.json` (a JSON list, or JSONL) from a local file, or the Hub's file at a
pinned revision, checked by sha256.

A row (the repository's README): `_id`, `domain`, `sub_domain`, `difficulty` (`easy`/`hard`),
`length` (`short`/`medium`/`long`: under 32K, 32K-128K, over 128K words), `question`, `choice_A`
... `choice_D`, `answer` (A-D) and `context`. Rows come from a file we did not write: each is
validated, and a bad one is named with its file and row.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longscope.download import fetch, suite_cache
from longscope.errors import UsageError, describe_error
from longscope.files import sha256_of
from longscope.jsonl import iter_jsonl
from longscope.sources import FileSource, Sources

REPO = "THUDM/LongBench-v2"
"""The Hub dataset (now also `zai-org/LongBench-v2`; the old name resolves to it)."""
REVISION = "2b48e494f2c7a2f0af81aae178e05c7e1dde0fe9"
SHA256 = "15d61c22d92c96900b3c4948b6aeea218d3214b676a65df48e7b8555604c7fe2"
"""`data.json` at REVISION (465,490,535 bytes), as public harnesses pin it (not recomputed here:
no network where this was written; a mismatch is refused with one line)."""
FILE = "data.json"
SPLITS = ("short", "medium", "long")
DIFFICULTIES = ("easy", "hard")


class Row(BaseModel):
    """One LongBench v2 question, validated."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    id: str = Field(alias="_id", min_length=1)
    domain: str = ""
    sub_domain: str = ""
    difficulty: Literal["easy", "hard"]
    length: Literal["short", "medium", "long"]
    question: str
    choice_A: str
    choice_B: str
    choice_C: str
    choice_D: str
    answer: Literal["A", "B", "C", "D"]
    context: str

    @property
    def choices(self) -> tuple[str, str, str, str]:
        return (self.choice_A, self.choice_B, self.choice_C, self.choice_D)


@dataclass(frozen=True)
class Dataset:
    rows: tuple[Row, ...]
    identity: str
    """`THUDM/LongBench-v2@REVISION` for the pinned file, else the file's digest (run identity)."""


def endpoint() -> str:
    """Return the Hub's address: `$HF_ENDPOINT` (as huggingface_hub reads it), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def sources() -> Sources:
    """Return LongBench v2's download: `data.json` at the pinned revision, by sha256."""
    url = f"{endpoint()}/datasets/{REPO}/resolve/{REVISION}/{FILE}"
    return Sources(
        "longbench-v2", (FileSource(FILE, url, SHA256, f"{REPO}'s {FILE} at {REVISION[:8]}"),)
    )


def _raw(path: Path) -> list[tuple[int, Any]]:
    if path.suffix.lower() == ".jsonl":
        return list(iter_jsonl(path, "LongBench v2 data file"))
    try:
        with path.open(encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(
            f"{path}: not a readable JSON file ({type(exc).__name__}): give data.json"
        ) from None
    if not isinstance(value, list):
        raise UsageError(f"{path}: expected a JSON list of questions (LongBench v2's data.json)")
    return list(enumerate(value, start=1))


def read_rows(path: Path) -> tuple[Row, ...]:
    """Return every row of a data.json (or .jsonl) file, validated, in file order."""
    out, seen = [], set()
    for number, raw in _raw(path):
        if not isinstance(raw, dict):
            raise UsageError(f"{path}: row {number}: expected an object with LongBench v2's fields")
        try:
            row = Row.model_validate(raw)
        except ValidationError as exc:
            raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
        if row.id in seen:
            raise UsageError(f"{path}: row {number}: _id {row.id[:40]!r} appears twice")
        seen.add(row.id)
        out.append(row)
    if not out:
        raise UsageError(f"{path} holds no question")
    return tuple(out)


def load_local(path: str | Path) -> Dataset:
    """Load `-S data=FILE`; the pinned file is known by its sha256, any other by its digest."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"LongBench v2 data {path} is not a file: give data.json (or a .jsonl)")
    digest = sha256_of(path)
    identity = f"{REPO}@{REVISION}" if digest == SHA256 else f"file:{path.name}:{digest[:16]}"
    return Dataset(read_rows(path), identity)


def load_hub() -> Dataset:
    """Load `-S data=hub`: the pinned data.json from the cache, downloaded there when missing."""
    folder = suite_cache("longbench-v2")
    fetch(sources(), folder)  # verifies what is cached, downloads what is not
    return Dataset(read_rows(folder / FILE), f"{REPO}@{REVISION}")


__all__ = [
    "DIFFICULTIES",
    "FILE",
    "REPO",
    "REVISION",
    "SHA256",
    "SPLITS",
    "Dataset",
    "Row",
    "load_hub",
    "load_local",
    "read_rows",
    "sources",
]
