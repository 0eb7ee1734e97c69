"""BABILong's rows, tasks and lengths, as the authors publish them on the Hugging Face hub.

Two evaluation sets (README of booydar/babilong): `RMT-team/babilong` (100 samples per task and
length) and `RMT-team/babilong-1k-samples` (1000, some splits 999). On both, a *config* is a length
(`0k` ... `10M`) and a *split* is a task (`qa1` ... `qa20`). A row has three strings: `input` (the
bAbI facts hidden in PG-19 text; at `0k` the facts alone), `question` and `target` (the gold
answer: one word, `apple,milk` for a set in qa8, `n,w` for a path in qa19).

A length name counts GPT-2 tokens in thousands (decimal): `data/create_tasks.py` builds `1k` from
1000 tokens less 300 kept for the prompt, `1M` from 1,000,000.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.errors import UsageError, describe_error

TASKS: tuple[str, ...] = tuple(f"qa{n}" for n in range(1, 21))
"""The 20 bAbI tasks, in order."""

TASK_NAMES: dict[str, str] = {
    "qa1": "single supporting fact",
    "qa2": "two supporting facts",
    "qa3": "three supporting facts",
    "qa4": "two arg relations",
    "qa5": "three arg relations",
    "qa6": "yes-no questions",
    "qa7": "counting",
    "qa8": "lists-sets",
    "qa9": "simple negation",
    "qa10": "indefinite knowledge",
    "qa11": "basic coreference",
    "qa12": "conjunction",
    "qa13": "compound coreference",
    "qa14": "time reasoning",
    "qa15": "basic deduction",
    "qa16": "basic induction",
    "qa17": "positional reasoning",
    "qa18": "size reasoning",
    "qa19": "path finding",
    "qa20": "agents motivations",
}
"""bAbI's task names (data/README.md of booydar/babilong)."""

LENGTHS: dict[str, int] = {
    "0k": 0,
    "1k": 1_000,
    "2k": 2_000,
    "4k": 4_000,
    "8k": 8_000,
    "16k": 16_000,
    "32k": 32_000,
    "64k": 64_000,
    "128k": 128_000,
    "256k": 256_000,
    "512k": 512_000,
    "1M": 1_000_000,
    "10M": 10_000_000,
}
"""Each length's name and the GPT-2 tokens it stands for (prompt included), shortest first."""

HEADLINE_TASKS: tuple[str, ...] = ("qa1", "qa2", "qa3", "qa4", "qa5")
"""The tasks the authors average for their headline (README: "average accuracy over QA1-QA5")."""


class Row(BaseModel):
    """One BABILong row, validated: the three strings every config and split carries."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    input: str
    """The context: bAbI facts hidden in PG-19 text (the facts alone at `0k`)."""
    question: str
    target: str
    """The gold answer, as the authors' metric reads it (lower-cased there)."""


def parse_row(raw: Any, where: str) -> Row:
    """Return `raw` as a Row, or raise one line naming `where` (file and row) and the field."""
    try:
        return Row.model_validate(raw)
    except ValidationError as error:
        raise UsageError(
            f"BABILong data {where}: {describe_error(error)}; expected input, question, target "
            "strings as on RMT-team/babilong"
        ) from None


def check_task(task: str) -> str:
    """Return `task` if it is one of qa1-qa20, else raise one line naming it."""
    if task not in TASKS:
        raise UsageError(f"unknown BABILong task {task!r}: use qa1 ... qa20")
    return task


def check_length(length: str) -> str:
    """Return `length` if it is one of the dataset's length names, else raise one line naming it."""
    if length not in LENGTHS:
        raise UsageError(f"unknown BABILong length {length!r}: use one of {', '.join(LENGTHS)}")
    return length
