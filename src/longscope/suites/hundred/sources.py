"""QA and summary sources for 100-LongBench: LongBench v1 rows or plain JSONL, validated at the edge."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longscope.errors import UsageError, describe_error
from longscope.files import sha256_of
from longscope.hub import load_hub_rows
from longscope.jsonl import iter_jsonl

QA_TASKS = ("single_doc_qa", "multi_doc_qa")
SUM_TASKS = ("single_doc_sum", "multi_doc_sum")
HUB_PREFIX = "hub:"
# LongBench v1 multi-document contexts mark their documents like this.
_DOC_MARK = re.compile(r"(?:^|\n)\s*(?:Passage|Document)\s+\d+\s*:\s*\n?", re.IGNORECASE)


class SourceRow(BaseModel):
    """A LongBench v1 row (`input`, `context`, `answers`, `_id`, ...) or plain `{id, context, ...}`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str = Field(default="", validation_alias="_id")
    input: str = ""
    context: str
    answers: list[str] = Field(min_length=1)


@dataclass(frozen=True)
class Source:
    rows: tuple[SourceRow, ...]
    identity: str


def load_source(spec: str | Path) -> Source:
    """Load a source: a JSONL file, or `hub:NAME[:CONFIG]` (a Hub dataset or a local dataset folder).

    A bad row fails with file, row and field.
    """
    text = str(spec)
    if text.startswith(HUB_PREFIX):
        name, _, config = text[len(HUB_PREFIX) :].partition(":")
        hub = load_hub_rows(
            name,
            config or None,
            instead="download the LongBench v1 JSONL files and pass -S source=TASK=FILE.jsonl",
        )
        rows = _validated(text, enumerate(hub.rows, start=1))
        return Source(rows, hub.identity)
    rows = _validated(text, iter_jsonl(spec, "source file"))
    digest = sha256_of(spec)[:16]
    return Source(rows, f"file:{digest}")


def _validated(where: str, numbered: Iterable[tuple[int, Any]]) -> tuple[SourceRow, ...]:
    rows = []
    for number, raw in numbered:
        if isinstance(raw, dict) and "_id" not in raw and "id" in raw:
            raw["_id"] = str(raw["id"])
        try:
            rows.append(SourceRow.model_validate(raw))
        except ValidationError as exc:
            raise UsageError(f"{where}: row {number}: {describe_error(exc)}") from exc
    if not rows:
        raise UsageError(f"{where}: holds no rows")
    return tuple(rows)


def split_documents(context: str) -> list[str]:
    """Split a multi-document context on its `Passage N:` / `Document N:` marks."""
    parts = [p.strip() for p in _DOC_MARK.split(context)]
    return [p for p in parts if p]
