"""100-LongBench's tasks: which exist, how their questions read, how documents fill a length.

Each function depends on its random generator alone, so a sample depends on (seed, task, length,
row) and nothing else.
"""

from __future__ import annotations

import random
import uuid
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from longscope.suites.hundred.pool import CountedPool
from longscope.suites.hundred.sources import QA_TASKS, SUM_TASKS, SourceRow

SYNTHETIC_TASKS = ("kv_retrieval", "counting_stars", "passage_count")
REAL_TASKS = (*QA_TASKS, *SUM_TASKS)
RETRIEVAL_TASK = "passage_retrieval"
ALL_TASKS = (*SYNTHETIC_TASKS, RETRIEVAL_TASK, *REAL_TASKS)
# Passage wrappers of real indices can be a token shorter or longer than the counted upper bound.
SLACK = 16
ONE_GOLD = ("single_doc_qa", "single_doc_sum", RETRIEVAL_TASK)


def fill(
    rng: random.Random, counts: Sequence[int], budget: int, exclude: set[int] = frozenset()
) -> list[int]:
    """Pick documents uniformly among those that still fit, WITHOUT replacement, until none fits."""
    available = sorted((counts[i], i) for i in range(len(counts)) if i not in exclude)
    chosen: list[int] = []
    remaining = budget
    while available:
        fitting = bisect_right(available, (remaining, len(counts)))
        if fitting == 0:
            break
        count, index = available.pop(rng.randrange(fitting))
        chosen.append(index)
        remaining -= count
    return chosen


def new_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def star_options(rng: random.Random, counts: list[int]) -> list[str]:
    """Five distinct options: unanswerable, the truth, two swaps, one changed number (shuffled)."""
    options = [str(counts)]

    def add(candidate: list[int]) -> bool:
        if str(candidate) in options:
            return False
        options.append(str(candidate))
        return True

    swaps = attempts = 0
    while swaps < 2 and attempts < 200:  # equal counts make some swaps identical to the truth
        attempts += 1
        a, b = rng.sample(range(len(counts)), 2)
        swapped = list(counts)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        swaps += add(swapped)
    while len(options) < 4:
        changed = list(counts)
        changed[rng.randrange(len(counts))] = rng.randint(1, 100)
        add(changed)
    options.append("unanswerable")
    rng.shuffle(options)
    return options


def real_question(task: str, row: SourceRow, where: list[int]) -> str:
    named = ", ".join(str(n) for n in where)
    if task == RETRIEVAL_TASK:
        return (
            "Question: Which passage above does the following summary describe? Answer with "
            f"the passage number only.\nSummary: {row.answers[0]}"
        )
    if task == "single_doc_qa":
        return f"Answer the question based on Passage {where[0]}. Answer concisely.\nQuestion: {row.input}"
    if task == "multi_doc_qa":
        return f"Answer the question based on Passages {named}. Answer concisely.\nQuestion: {row.input}"
    if task == "single_doc_sum":
        return f"Question: Write a summary of Passage {where[0]} in a few sentences."
    return f"Question: Write one summary of Passages {named} together in a few sentences."


def repeated(
    rng: random.Random, pool: CountedPool, budget: int, meta: dict[str, Any]
) -> list[tuple[str, int | None]]:
    """Distinct documents, each repeated 1-3 times, shuffled; records the unique count."""
    chosen: list[tuple[str, int | None]] = []
    remaining = budget
    order = list(range(len(pool.documents)))
    rng.shuffle(order)
    unique = 0
    for index in order:
        copies = rng.randint(1, 3)
        cost = copies * pool.counts[index]
        if cost > remaining:
            continue
        chosen += [(pool.documents[index].text, pool.bodies[index])] * copies
        remaining -= cost
        unique += 1
    rng.shuffle(chosen)
    meta["unique"] = unique
    meta["answer"] = str(unique)
    return chosen


def task_parts(
    task: str, rng: random.Random
) -> tuple[str, tuple[str, ...], list[str], dict[str, Any]]:
    if task == "kv_retrieval":
        keys = [new_uuid(rng) for _ in range(4)]
        sentences = [f"The value of {keys[i]} is {keys[i + 1]}." for i in range(3)]
        question = f"Question: What is the value of {keys[0]}? Answer with the value only."
        return question, (keys[1],), sentences, {"answer": keys[1], "keys": keys}
    if task == "counting_stars":
        counts = [rng.randint(1, 100) for _ in range(4)]
        sentences = [f"The little penguin counted {n} ★." for n in counts]
        options = star_options(rng, counts)
        listed = "\n".join(f"{i + 1}. {opt}" for i, opt in enumerate(options))
        answer = str(options.index(str(counts)) + 1)
        question = (
            "Question: In order, how many ★ did the little penguin count? Choose one option and "
            f"answer with its number only.\n{listed}"
        )
        return (
            question,
            (answer,),
            sentences,
            {"answer": answer, "counts": counts, "options": options},
        )
    question = "Question: How many unique passages are there above? Answer with a number only."
    return question, ("",), [], {}
