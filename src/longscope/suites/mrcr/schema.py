"""MRCR's rows and bins, as OpenAI publishes them (huggingface.co/datasets/openai/mrcr).

A row: `prompt` (a JSON-encoded chat, a list of `{"role", "content"}` messages ending with the
user's request), `answer` (the gold, which starts with the random string), `random_string_to_prepend`,
`n_needles` (2, 4 or 8), and the card's bookkeeping fields (`desired_msg_index`, `total_messages`,
`n_chars`; `date_added` on rows the 2025-12-05 fix replaced). Rows come from files we did not
write: each is validated here and a bad one is named with its file and row.

Bins: the card bins rows by the tokens of prompt and answer together, with the edges
[4096, 8192], (8192, 16384], ... (524288, 1048576] (upper edges included), 100 rows per bin and
needle count. A bin is named by its upper edge, as the boards name it (`128k` holds
(65536, 131072]).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from longscope.errors import describe_error

BIN_EDGES: tuple[int, ...] = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576)
"""OpenAI's bin edges in tokens: the first bin is [4096, 8192], the others (low, high]."""
BINS: tuple[int, ...] = BIN_EDGES[1:]
"""The bins, by upper edge."""
NEEDLES: tuple[int, ...] = (2, 4, 8)


def bin_of(tokens: int) -> int:
    """Return the bin (its upper edge) holding `tokens` of prompt and answer.

    Counted in a tokenizer other than OpenAI's (o200k_base), a row may come out under 4096 or over
    1M tokens: it stays in the first or last bin, where OpenAI's count put it (lm-evaluation-
    harness's MRCR also opens its first bin at 0).
    """
    for upper in BINS:
        if tokens <= upper:
            return upper
    return BINS[-1]


def bin_label(upper: int) -> str:
    """Return a bin's name as the boards write it: `8k` ... `512k`, `1M`."""
    return "1M" if upper == BINS[-1] else f"{upper // 1024}k"


def bins_of_lengths(lengths: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """Return the bins holding each length (`4k` and `8k` both name the first, [4096, 8192])."""
    return tuple(sorted({bin_of(length) for length in lengths}))


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Row(BaseModel):
    """One MRCR row, validated. `prompt` stays the JSON text it came as (a long string kept once:
    it becomes the sample's context); `chat()` parses it when a sample is built."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt: str
    answer: str
    random_string_to_prepend: str
    n_needles: int = Field(ge=1, le=64)
    desired_msg_index: int | None = None
    total_messages: int | None = None
    n_chars: int | None = None
    date_added: str | None = None

    @field_validator("prompt", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        # The card stores the chat as JSON text; a file we build may hold the list itself.
        if isinstance(value, list):
            return json.dumps(value, ensure_ascii=False)
        return value

    @field_validator("prompt")
    @classmethod
    def _chat(cls, value: str) -> str:
        messages = _parse_chat(value)
        if messages[-1].role != "user":
            raise ValueError("the chat must end with the user's request (role user)")
        return value

    @field_validator("date_added", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        # Parquet gives a timestamp or a date; JSONL a string: kept as text either way.
        return None if value is None else str(value)

    def chat(self) -> list[Message]:
        """Return the conversation's messages (parsed from `prompt`, validated when loaded)."""
        return _parse_chat(self.prompt)


def _parse_chat(text: str) -> list[Message]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON chat ({exc.msg})") from None
    except RecursionError:
        raise ValueError("a JSON chat nested too deeply to read") from None
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty list of {role, content} messages")
    out = []
    for index, item in enumerate(value):
        try:
            out.append(Message.model_validate(item))
        except ValidationError as exc:
            raise ValueError(f"message {index}: {describe_error(exc)}") from None
    return out


__all__ = [
    "BINS",
    "BIN_EDGES",
    "NEEDLES",
    "Message",
    "Row",
    "bin_label",
    "bin_of",
    "bins_of_lengths",
]
