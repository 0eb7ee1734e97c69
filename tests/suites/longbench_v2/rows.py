"""LongBench v2 questions built by the tests in data.json's schema (never copied from the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def question(
    n: int = 0,
    *,
    answer: str = "B",
    difficulty: str = "easy",
    length: str = "short",
    words: int = 60,
    domain: str = "Single-Document QA",
) -> dict[str, Any]:
    """Return one question over a made-up report whose key fact is in its middle."""
    filler = " ".join(
        f"The ledger of year {n}-{i} lists grain, salt and rope." for i in range(words)
    )
    context = f"{filler} The lighthouse keeper of Varn was named Oskel. {filler}"
    return {
        "_id": f"q{n:04d}",
        "domain": domain,
        "sub_domain": "Detective",
        "difficulty": difficulty,
        "length": length,
        "question": "Who kept the lighthouse of Varn?",
        "choice_A": "Marit",
        "choice_B": "Oskel",
        "choice_C": "Tavi",
        "choice_D": "Runa",
        "answer": answer,
        "context": context,
    }


def write_json(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rows), "utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path
