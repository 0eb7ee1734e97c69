"""Tokenizers whose counts are known by hand, and small pools written as the user would give them."""

from __future__ import annotations

import json
from pathlib import Path


class CharTokenizer:
    """One token per character: every count in a prompt can be checked with `len`."""

    exact = True

    def __init__(self, name: str = "chars") -> None:
        self.name = name

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


class SeamTokenizer(CharTokenizer):
    """One token per character, except `\\nQ`, one token: a passage opening with "Q" does not add
    up (its header and body, counted apart, are one token more than the two joined)."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text.replace("\nQ", "\x01")]


def write_pool(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)
