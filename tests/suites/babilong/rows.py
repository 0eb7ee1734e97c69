"""BABILong rows built here in the dataset's schema (`input`, `question`, `target`), never copied.

`write_folder` lays them out as the Hub's 100-row set is downloaded (`data/{task}/{length}.json`)
or as the 1000-row set's Parquet export (`{length}/{task}-00000-of-00001.parquet`).
"""

from __future__ import annotations

import json
from pathlib import Path

FACTS = {
    "qa1": ("Mary moved to the bathroom. John went to the hallway.", "Where is Mary?", "bathroom"),
    "qa2": ("John picked up the apple. John went to the office.", "Where is the apple?", "office"),
    "qa3": (
        "Mary got the milk. Mary went to the kitchen. Mary travelled to the garden.",
        "Where was the milk before the garden?",
        "kitchen",
    ),
    "qa4": (
        "The kitchen is west of the garden. The hallway is east of the garden.",
        "What is west of the garden?",
        "kitchen",
    ),
    "qa5": ("Fred gave the football to Jeff. Bill went to the office.", "Who received the football?",
            "Jeff"),
    "qa6": ("Daniel went to the garden.", "Is Daniel in the garden?", "yes"),
}  # fmt: skip
FILLER = (
    "The grey ship rounded the headland at dusk. ",
    "Old songs of home drifted over the water. ",
    "A gull circled the mast and was gone. ",
)
PAD = {"0k": 0, "1k": 12, "2k": 30}
"""Filler sentences per row at each length (a few hundred tokens: enough to be a haystack here)."""


def row(task: str, length: str, index: int) -> dict[str, str]:
    """Return row `index` of `task` at `length`: the task's facts in the middle of filler text."""
    facts, question, target = FACTS[task]
    noise = [FILLER[(index + k) % len(FILLER)] for k in range(PAD.get(length, 4))]
    half = len(noise) // 2
    text = "".join(noise[:half]) + f"{facts} Row {index}. " + "".join(noise[half:])
    return {"input": text, "question": question, "target": target}


def write_folder(root: Path, cells: dict[tuple[str, str], int], layout: str = "json") -> Path:
    """Write `count` rows for each (task, length) of `cells` under `root` in `layout`."""
    for (task, length), count in cells.items():
        rows = [row(task, length, i) for i in range(count)]
        if layout == "json":
            path = root / "data" / task / f"{length}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rows), encoding="utf-8")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            path = root / length / f"{task}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows), path)
    return root
