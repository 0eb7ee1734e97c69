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
    """Five distinct options: "unanswerable" first, then the truth, two swaps and one changed
    number in random order (the reference's order; its options could repeat, ours cannot)."""
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
    rng.shuffle(options)
    return ["unanswerable", *options]


def real_question(task: str, row: SourceRow, where: list[int]) -> str:
    """What a real task asks (the reference's `{input}`, and the QA tasks' `{instruction}`)."""
    if task == RETRIEVAL_TASK:
        return row.answers[0]
    if task in QA_TASKS:
        named = ",".join(str(n) for n in where)
        return f"Answer the question related with Passage {named}. \n\nQuestion: {row.input}"
    if task == "single_doc_sum":
        asked = f"Write a one-page summary of Passage {where[0]} into a few short sentences"
    else:
        listed = ",".join(f"Passage {n}" for n in where)
        asked = (
            "Combine and summarize the main ideas from the selected relevant passages into one "
            f"cohesive summary: {listed}"
        )
    # A row's own query (qmsum's, say) follows the instruction.
    return f"{asked}: {row.input}" if row.input else f"{asked}."


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


_STARS = (
    "On this moonlit and misty night, the little penguin is looking up at the sky and "
    "concentrating on counting ★. Please help the little penguin collect the number of ★, for "
    "example: [x, x, x,...]. The summation is not required, and the numbers in [x, x, x,...]. "
    "represent the counted number of ★ by the little penguin.\nQuestion: Which of the following "
    "is the correct number of ★ the little penguin collect?\n"
)


def task_parts(task: str, rng: random.Random) -> tuple[str, list[str], dict[str, Any]]:
    """A synthetic task's question, the sentences it hides in the context (in order), its meta."""
    if task == "kv_retrieval":
        keys = [new_uuid(rng) for _ in range(4)]
        sentences = [f"The value of {keys[i]} is {keys[i + 1]}." for i in range(3)]
        question = f"Answer: the value of {keys[0]} is"
        return question, sentences, {"answer": keys[1], "keys": keys}
    if task == "counting_stars":
        counts = [rng.randint(1, 100) for _ in range(4)]
        sentences = [f"The little penguin counted {n} ★" for n in counts]
        options = star_options(rng, counts)
        listed = "".join(f"{i + 1}. {opt}\n" for i, opt in enumerate(options))
        answer = str(options.index(str(counts)) + 1)
        question = (
            f"{_STARS}{listed}Please provide your answer as a single number (1, 2, 3, 4 ...) "
            "without any explanation."
        )
        return question, sentences, {"answer": answer, "counts": counts, "options": options}
    # passage_count: the frame asks it all.
    return "", [], {}
