"""Document pools for 100-LongBench contexts, with per-document token counts cached on disk."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import default_cache_dir, sha256_of, write_atomic
from longscope.jsonl import iter_jsonl
from longscope.text.tokenizers import Tokenizer
from longscope.types import stable_hash

DEFAULT_POOL = "pydoc"
"""Real English prose that ships with every CPython: the Python reference manual's topics."""
CHUNK_WORDS = 400
WRAP = "Passage {index}:\n{text}\n\n"
_HEADER, _TAIL = WRAP.split("{text}")
_COUNT_VERSION = 2


@dataclass(frozen=True)
class Document:
    id: str
    text: str


def pydoc_pool() -> list[Document]:
    """The reference manual's topics, split on paragraph boundaries into chunks of ~400 words."""
    from pydoc_data.topics import topics

    documents = []
    for name in sorted(topics):
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", topics[name]) if p.strip()]
        chunk: list[str] = []
        words = 0
        for paragraph in paragraphs:
            chunk.append(paragraph)
            words += len(paragraph.split())
            if words >= CHUNK_WORDS:
                documents.append(Document(f"{name}/{len(documents)}", "\n\n".join(chunk)))
                chunk, words = [], 0
        if chunk:
            documents.append(Document(f"{name}/{len(documents)}", "\n\n".join(chunk)))
    return documents


def jsonl_pool(path: str | Path) -> list[Document]:
    """Documents from JSONL: plain `{id, context}` rows or LongBench v1 rows (`_id`, `context`)."""
    documents = []
    for number, row in iter_jsonl(path, "pool file"):
        if not isinstance(row, dict) or not isinstance(row.get("context"), str):
            raise UsageError(f"{path}: row {number}: field 'context': expected a string")
        documents.append(Document(str(row.get("id", row.get("_id", number))), row["context"]))
    if not documents:
        raise UsageError(f"{path}: holds no documents")
    return documents


def load_pool(source: str) -> tuple[list[Document], str]:
    """Return (documents, source identity) for `pydoc` or a JSONL file."""
    if source == DEFAULT_POOL:
        import sys

        return pydoc_pool(), f"pydoc:{sys.version_info.major}.{sys.version_info.minor}"
    digest = sha256_of(source)[:16] if Path(source).is_file() else ""
    return jsonl_pool(source), f"file:{digest}"


class CountedPool:
    """Documents with their token counts, counted once per (source, tokenizer) and cached on disk.

    `counts` are upper bounds of a wrapped passage (a 3-digit index), used to choose documents.
    `bodies` count a document's text with its trailing blank line alone. When the whole pool,
    wrapped with real indices and concatenated, counts exactly the sum of its headers and bodies
    (`additive`, checked once), a finished context is counted from these parts without tokenizing
    it again; otherwise every prompt is counted whole.
    """

    def __init__(self, documents: Sequence[Document], source_id: str, tokenizer: Tokenizer) -> None:
        self.documents = list(documents)
        self.tokenizer = tokenizer
        self._headers: dict[int, int] = {}
        fingerprint = stable_hash(tokenizer.encode("Passage 12:\nThe value of x is y.\n\n"))
        key = stable_hash([_COUNT_VERSION, source_id, tokenizer.name, fingerprint, WRAP])
        path = default_cache_dir() / f"docs-{key}.json"
        cached = _read_counts(path, len(self.documents))
        if cached is None:
            cached = self._count_all()
            with contextlib.suppress(UsageError):  # a read-only cache only costs time
                write_atomic(path, json.dumps(cached))
        self.counts: list[int] = cached["counts"]
        self.bodies: list[int] = cached["bodies"]
        self.additive: bool = cached["additive"]

    def _count_all(self) -> dict[str, Any]:
        encode = self.tokenizer.encode
        counts = [len(encode(WRAP.format(index=999, text=d.text))) for d in self.documents]
        bodies = [len(encode(d.text + _TAIL)) for d in self.documents]
        whole = "".join(WRAP.format(index=i + 1, text=d.text) for i, d in enumerate(self.documents))
        parts = sum(bodies) + sum(self.header(i + 1) for i in range(len(self.documents)))
        return {"counts": counts, "bodies": bodies, "additive": len(encode(whole)) == parts}

    def header(self, index: int) -> int:
        """Tokens of the `Passage {index}:` line that opens a wrapped passage."""
        if index not in self._headers:
            self._headers[index] = len(self.tokenizer.encode(_HEADER.format(index=index)))
        return self._headers[index]

    @property
    def total_tokens(self) -> int:
        return sum(self.counts)


def _read_counts(path: Path, documents: int) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        counts = [int(n) for n in data["counts"]]
        bodies = [int(n) for n in data["bodies"]]
        additive = bool(data["additive"])
    except (ValueError, TypeError, KeyError):
        return None
    if len(counts) != documents or len(bodies) != documents:
        return None
    return {"counts": counts, "bodies": bodies, "additive": additive}
