"""Hand-made NoLiMa rows in the dataset's schema (invented text, never the authors' data)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def experiment(**overrides: Any) -> dict[str, Any]:
    """Return one needle-set entry with a `{CHAR}` needle, two question types and two tests."""
    row: dict[str, Any] = {
        "id": "0137",
        "reasoning_type": "invented",
        "system_prompt": "",
        "needle": "Long ago, {CHAR} painted a mural beside {1}.",
        "questions": {
            "onehop": "Which painter worked in {2}?",
            "twohop": "Which painter worked in {3}?",
        },
        "character_set": ["Orla", "Bram", "Tamsin", "Idris"],
        "tests": {
            "T01": {"input_args": ["the Glass Harbour", "Vellmar", "the Eastern March"]},
            "T02": {"input_args": ["the Salt Bridge", "Kessrow", "the Low Fens"]},
        },
    }
    row.update(overrides)
    return row


def plain_experiment(**overrides: Any) -> dict[str, Any]:
    """Return an entry whose needle has no `{CHAR}`: its tests carry gold answers."""
    row: dict[str, Any] = {
        "id": "0902",
        "system_prompt": "Answer briefly.",
        "task_template": "Read this:\n{haystack}\nNow answer: {question}",
        "needle": "The lantern maker kept {1} in the cellar.",
        "questions": {"onehop": "What did the lantern maker hide below ground?"},
        "tests": {"A1": {"input_args": ["a brass owl"], "gold_answers": ["brass owl", "owl"]}},
    }
    row.update(overrides)
    return row


def book(lines: int = 60, width: int = 20) -> str:
    """Return a book of `lines` lines, each exactly `width` characters with its newline."""
    return "".join(f"Line {i:03d} ".ljust(width - 1, "x") + "\n" for i in range(lines))


class CharTokenizer:
    """One token per character: token positions are character offsets (easy to check by hand)."""

    name = "chars"
    exact = True

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


class WordTokenizer:
    """Words with their trailing space or newlines as one token (`end.\\n` is one token)."""

    name = "words"
    exact = True

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, text: str) -> list[int]:
        ids = []
        for piece in re.findall(r"[^ \n]*\n+|[^ \n]+ ?| ", text):
            if piece not in self.vocab:
                self.vocab[piece] = len(self.words)
                self.words.append(piece)
            ids.append(self.vocab[piece])
        return ids

    def decode(self, ids: list[int]) -> str:
        return "".join(self.words[i] for i in ids)


def write_dataset(folder: Path, needle_set: list[dict[str, Any]], books: dict[str, str]) -> Path:
    """Write a dataset folder in NoLiMa's layout: needlesets/ and haystack/rand_shuffle/."""
    (folder / "needlesets").mkdir(parents=True, exist_ok=True)
    (folder / "needlesets" / "needle_set.json").write_text(json.dumps(needle_set), "utf-8")
    shelf = folder / "haystack" / "rand_shuffle"
    shelf.mkdir(parents=True, exist_ok=True)
    for name, text in books.items():
        (shelf / name).write_text(text, "utf-8")
    return folder


_TEXT = (
    "the river kept its old promise while lanterns swung over quiet roads and a cart of apples "
    "rolled past the mill where two sisters argued about the weather and the price of wool"
)
WORDS = tuple(_TEXT.split(" "))


def prose(lines: int, words: int = 12, offset: int = 0) -> str:
    """Return invented prose: `lines` lines of `words` words each, every line ending in a period."""
    out = []
    for i in range(lines):
        start = (offset + i * 7) % len(WORDS)
        picked = [WORDS[(start + j * 3) % len(WORDS)] for j in range(words)]
        out.append(" ".join(picked).capitalize() + ".\n")
    return "".join(out)


def fixture_dataset(folder: Path, books: int = 1, lines: int = 400) -> Path:
    """Write a small NoLiMa dataset folder: one experiment, `books` books of invented prose."""
    return write_dataset(
        folder,
        [experiment()],
        {f"rand_book_{i + 1}.txt": prose(lines, offset=i) for i in range(books)},
    )
