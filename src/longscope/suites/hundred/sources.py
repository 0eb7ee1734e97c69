"""QA and summary sources for 100-LongBench: LongBench v1 rows or plain JSONL, validated at the edge."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longscope.jsonl import iter_jsonl
from longscope.models.base import UsageError
from longscope.suites.longbench_pro.schema import describe_error

QA_TASKS = ("single_doc_qa", "multi_doc_qa")
SUM_TASKS = ("single_doc_sum", "multi_doc_sum")
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


def load_source(path: str | Path) -> Source:
    """Load a JSONL source; a bad row fails with file, row and field."""
    rows = []
    for number, raw in iter_jsonl(path, "source file"):
        if isinstance(raw, dict) and "_id" not in raw and "id" in raw:
            raw["_id"] = str(raw["id"])
        try:
            rows.append(SourceRow.model_validate(raw))
        except ValidationError as exc:
            raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
    if not rows:
        raise UsageError(f"{path}: holds no rows")
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return Source(tuple(rows), f"file:{digest}")


def split_documents(context: str) -> list[str]:
    """Split a multi-document context on its `Passage N:` / `Document N:` marks."""
    parts = [p.strip() for p in _DOC_MARK.split(context)]
    return [p for p in parts if p]
