"""MRCR rows built by the tests in the card's schema (never copied from the dataset).

A conversation of writing requests and answers, two or more of them the same request (the needles),
ending with the card's question: prepend the random string to the i-th answer of that request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOPICS = ("tapirs", "rocks", "lanterns", "rivers", "owls", "bridges", "kites", "moss")
FORMATS = ("poem", "blog post", "riddle", "short essay")
ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}


def _answer(kind: str, topic: str, turn: int, words: int) -> str:
    line = f"This {kind} about {topic}, number {turn}, tells of "
    body = " ".join(f"{topic}-{turn}-{w}" for w in range(words))
    return f"{line}{body}."


def mrcr_row(
    needles: int = 2,
    *,
    target: int = 2,
    prefix: str = "aYooSG8CQg",
    turns: int = 6,
    words: int = 12,
    needle: tuple[str, str] = ("poem", "tapirs"),
    answer: str | None = None,
) -> dict[str, Any]:
    """Return one row: `turns` distractor requests, `needles` identical ones, the i-th asked for."""
    messages: list[dict[str, str]] = []
    kind, topic = needle
    written: list[str] = []
    where: list[int] = []
    slots = sorted({round(i * (turns + needles) / needles) for i in range(needles)})
    distractor = 0
    for turn in range(turns + needles):
        if turn in slots and len(written) < needles:
            text = _answer(kind, topic, turn, words)
            messages += [
                {"role": "user", "content": f"write a {kind} about {topic}"},
                {"role": "assistant", "content": text},
            ]
            written.append(text)
            where.append(len(messages) - 1)
        else:
            other = (FORMATS[distractor % len(FORMATS)], TOPICS[1 + distractor % 7])
            distractor += 1
            messages += [
                {"role": "user", "content": f"write a {other[0]} about {other[1]}"},
                {"role": "assistant", "content": _answer(*other, turn, words)},
            ]
    messages.append(
        {
            "role": "user",
            "content": f"Prepend {prefix} to the {ORDINAL.get(target, f'{target}th')} (1 indexed) "
            f"{kind} about {topic}. Do not include any other text in your response.",
        }
    )
    gold = prefix + written[target - 1] if answer is None else answer
    return {
        "prompt": json.dumps(messages, ensure_ascii=False),
        "answer": gold,
        "random_string_to_prepend": prefix,
        "n_needles": needles,
        "desired_msg_index": where[target - 1],
        "total_messages": len(messages),
        "n_chars": sum(len(m["content"]) for m in messages),
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path
