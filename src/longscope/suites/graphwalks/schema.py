"""GraphWalks' rows and bins, as OpenAI publishes them (huggingface.co/datasets/openai/graphwalks).

A row: `prompt` (the instructions, worked examples, the edge list and the operation: one user
message), `answer_nodes` (the gold node ids; the card's schema table calls it `answer`, which is
read too), `prompt_chars`, `problem_type` (`bfs` or `parents`) and `date_added` (on the rows of the
2026-02-27 revision). Rows come from files we did not write: each is validated here and a bad one
is named with its file and row.

Bins: the card publishes no finer bins than its two files, `graphwalks_128k_and_shorter` and
`graphwalks_256k_to_1mil`, which model cards report as `<128k` and `>128k` (GPT-4.1), or `0-128K`
and `256K-1M`: each row's `set`. For a length curve (effective length, AUC) rows are also binned by
their prompt tokens with MRCR's power-of-two edges (0, 8K], (8K, 16K] ... (512K, 1M], named by the
upper edge; a row over 1M stays in the last bin.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PROBLEM_TYPES: tuple[str, ...] = ("bfs", "parents")
BINS: tuple[int, ...] = (8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)
"""The length bins by upper edge (tokens); the first is (0, 8192]."""
SHORT, LONG = "<128k", ">128k"
SETS: tuple[str, ...] = (SHORT, LONG)
SET_EDGE = 131072
"""A row of a file that is not one of OpenAI's two is in `<128k` when its prompt holds at most
this many tokens (the short file's name)."""


def bin_of(tokens: int) -> int:
    """Return the bin (its upper edge) holding a prompt of `tokens` tokens."""
    for upper in BINS:
        if tokens <= upper:
            return upper
    return BINS[-1]


def bin_label(upper: int) -> str:
    """Return a bin's name: `8k` ... `512k`, `1M`."""
    return "1M" if upper == BINS[-1] else f"{upper // 1024}k"


def bins_of_lengths(lengths: tuple[int, ...]) -> tuple[int, ...]:
    """Return the bins holding each length (`--lengths 5000` names the 8k bin)."""
    return tuple(sorted({bin_of(length) for length in lengths}))


class Row(BaseModel):
    """One GraphWalks row, validated."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt: str = Field(min_length=1)
    answer_nodes: tuple[str, ...]
    problem_type: str
    prompt_chars: int | None = None
    date_added: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _answer_alias(cls, value: Any) -> Any:
        # The card's schema table names the gold `answer`; the files name it `answer_nodes`.
        if isinstance(value, dict) and "answer_nodes" not in value and "answer" in value:
            return {**value, "answer_nodes": value["answer"]}
        return value

    @field_validator("answer_nodes", mode="before")
    @classmethod
    def _nodes(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("expected a list of node ids, not one string")
        return value

    @field_validator("problem_type")
    @classmethod
    def _type(cls, value: str) -> str:
        lowered = value.strip().lower()
        if lowered not in PROBLEM_TYPES:
            raise ValueError(f"expected bfs or parents, not {value[:40]!r}")
        return lowered

    @field_validator("date_added", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        # Parquet may give a date; JSONL a string: kept as text either way.
        return None if value is None else str(value)


__all__ = [
    "BINS",
    "LONG",
    "PROBLEM_TYPES",
    "SETS",
    "SET_EDGE",
    "SHORT",
    "Row",
    "bin_label",
    "bin_of",
    "bins_of_lengths",
]
