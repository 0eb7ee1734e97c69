"""Document pools for 100-LongBench contexts, with per-document token counts cached on disk."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from longscope.jsonl import iter_jsonl
from longscope.models.base import UsageError
from longscope.text.haystack import default_cache_dir
from longscope.text.tokenizers import Tokenizer
from longscope.types import stable_hash

DEFAULT_POOL = "pydoc"
"""Real English prose that ships with every CPython: the Python reference manual's topics."""
CHUNK_WORDS = 400
WRAP = "Passage {index}:\n{text}\n\n"


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
    digest = (
        hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if Path(source).is_file() else ""
    )
    return jsonl_pool(source), f"file:{digest}"


class CountedPool:
    """Documents with their token counts (wrapped as passages), counted once per tokenizer."""

    def __init__(self, documents: Sequence[Document], source_id: str, tokenizer: Tokenizer) -> None:
        self.documents = list(documents)
        self.tokenizer = tokenizer
        fingerprint = stable_hash(tokenizer.encode("Passage 12:\nThe value of x is y.\n\n"))
        key = stable_hash([source_id, tokenizer.name, fingerprint, WRAP])
        path = default_cache_dir() / f"docs-{key}.json"
        counts: list[int] | None = None
        if path.is_file():
            try:
                counts = [int(n) for n in json.loads(path.read_text())]
            except (ValueError, TypeError):
                counts = None
        if counts is None or len(counts) != len(self.documents):
            # The wrapper's index varies; counting with a 3-digit index keeps the count an upper bound.
            counts = [
                len(tokenizer.encode(WRAP.format(index=999, text=d.text))) for d in self.documents
            ]
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(counts))
            except OSError:
                pass
        self.counts = counts

    @property
    def total_tokens(self) -> int:
        return sum(self.counts)
