"""Loading LongBench Pro rows from the Hub or from local .json / .jsonl / .parquet files."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longscope.errors import UsageError
from longscope.files import parse_json, read_user_text, sha256_of
from longscope.hub import load_hub_rows
from longscope.jsonl import iter_jsonl, iter_parquet
from longscope.suites.longbench_pro.schema import (
    DIFFICULTIES,
    LENGTHS,
    PRIMARY_TASKS,
    REQUIREMENTS,
    SECONDARY_TASKS,
    Row,
    describe_error,
)

HUB_DATASET = "caskcsg/LongBench-Pro"


@dataclass(frozen=True)
class Dataset:
    rows: tuple[Row, ...]
    source: str
    revision: str
    """Hub commit, or sha256 prefix of the local file: part of the run identity."""


def _file_digest(path: Path) -> str:
    return sha256_of(path)[:16]


def _raw_rows(path: Path) -> Iterator[tuple[int, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from iter_jsonl(path, "data file")
    elif suffix == ".json":
        data = parse_json(read_user_text(path, "data file"), str(path))
        if not isinstance(data, list):
            raise UsageError(f"{path}: expected a JSON array of samples")
        yield from enumerate(data, start=1)
    elif suffix == ".parquet":
        yield from iter_parquet(path)
    else:
        raise UsageError(f"{path}: unknown data format {suffix!r}: use .json, .jsonl or .parquet")


def load_file(path: str | Path) -> Dataset:
    """Load and validate a local file; a bad row fails with file, row, field and expectation."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"data file {path} does not exist")
    if not path.is_file():
        raise UsageError(f"data file {path} is not a file")
    rows: list[Row] = []
    seen: set[str] = set()
    for number, raw in _raw_rows(path):
        if not isinstance(raw, dict):
            raise UsageError(
                f"{path}: row {number}: expected an object with the LongBench Pro fields"
            )
        try:
            row = Row.model_validate(raw)
        except ValidationError as exc:
            raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
        if row.id in seen:
            raise UsageError(f"{path}: row {number}: field 'id': duplicate id {row.id!r}")
        seen.add(row.id)
        rows.append(row)
    if not rows:
        raise UsageError(f"{path}: holds no samples")
    return Dataset(tuple(rows), str(path), f"file:{_file_digest(path)}")


def load_hub(revision: str | None = None) -> Dataset:
    """Load the Hub dataset (needs `datasets` and network access)."""
    hub = load_hub_rows(
        HUB_DATASET,
        revision=revision,
        instead="download longbench_pro.json elsewhere and pass -S data=FILE",
    )
    rows = []
    for number, raw in enumerate(hub.rows, start=1):
        try:
            rows.append(Row.model_validate(raw))
        except ValidationError as exc:
            raise UsageError(f"{HUB_DATASET}: row {number}: {describe_error(exc)}") from exc
    return Dataset(tuple(rows), HUB_DATASET, hub.identity)


def load(source: str) -> Dataset:
    """Load `source`: `hub` (or the dataset name) or a local file path."""
    if source in ("hub", HUB_DATASET):
        return load_hub()
    return load_file(source)


def _match_task(row: Row, wanted: Sequence[str]) -> bool:
    for want in wanted:
        key = want.strip().lower()
        for name in (row.primary_task, row.secondary_task):
            code = name.split(" ", 1)[0].rstrip(".").lower()
            if key in (name.lower(), code):
                return True
    return False


def _bucket_index(bucket: str) -> int:
    return LENGTHS.index(bucket)


def select(
    rows: Sequence[Row],
    *,
    language: Sequence[str] = (),
    length: Sequence[str] = (),
    max_length: str | None = None,
    task: Sequence[str] = (),
    difficulty: Sequence[str] = (),
    requirement: Sequence[str] = (),
) -> list[Row]:
    """Return the rows that pass every given filter (an empty filter passes all)."""
    languages = {_language(x) for x in language}
    for values, allowed, what in (
        (length, LENGTHS, "length"),
        (difficulty, DIFFICULTIES, "difficulty"),
        (requirement, REQUIREMENTS, "requirement"),
    ):
        bad = [v for v in values if v not in allowed]
        if bad:
            raise UsageError(f"unknown {what} {bad[0]!r}: use one of {', '.join(allowed)}")
    if max_length is not None and max_length not in LENGTHS:
        raise UsageError(f"unknown length {max_length!r}: use one of {', '.join(LENGTHS)}")
    known_codes = {
        n.split(" ", 1)[0].rstrip(".").lower() for n in (*PRIMARY_TASKS, *SECONDARY_TASKS)
    }
    known_names = {n.lower() for n in (*PRIMARY_TASKS, *SECONDARY_TASKS)}
    for want in task:
        if want.strip().lower() not in known_codes | known_names:
            raise UsageError(
                f"unknown task {want!r}: use a code like T3 or T3.1, or a full task name"
            )
    return [
        row
        for row in rows
        if (not languages or row.language in languages)
        and (not length or row.token_length in length)
        and (max_length is None or _bucket_index(row.token_length) <= _bucket_index(max_length))
        and (not task or _match_task(row, task))
        and (not difficulty or row.difficulty in difficulty)
        and (not requirement or row.contextual_requirement in requirement)
    ]


def _language(value: str) -> str:
    aliases = {"en": "English", "english": "English", "zh": "Chinese", "chinese": "Chinese"}
    try:
        return aliases[value.strip().lower()]
    except KeyError as exc:
        raise UsageError(f"unknown language {value!r}: use English/en or Chinese/zh") from exc
