"""100-LongBench: length-controllable contexts from real documents, and LongScore.

This module holds the synthetic tasks (kv_retrieval, counting_stars, passage_count), which run on the
embedded default pool. The QA and summary tasks, the LLM judge and the QA filter are not built yet:
asking for them stops with a message.
"""

from __future__ import annotations

import random
import re
import uuid
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS, longscore
from longscope.models.base import UsageError
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow
from longscope.suites.hundred.pool import DEFAULT_POOL, WRAP, CountedPool, load_pool
from longscope.types import SCORABLE, Generation, GenerationConfig, Sample, Score

SYNTHETIC_TASKS = ("kv_retrieval", "counting_stars", "passage_count")
NOT_YET = ("passage_retrieval", "single_doc_qa", "multi_doc_qa", "single_doc_sum", "multi_doc_sum")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_INT = re.compile(r"\d+")
# Passage wrappers of real indices can be a token shorter or longer than the counted upper bound.
_SLACK = 16


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


def _uuid(rng: random.Random) -> str:
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


class HundredSuite:
    """100-LongBench (seed 004; ../shared/specs/100-longbench.md): the synthetic tasks."""

    name = "hundred"
    version = "hundred-1"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=64, temperature=0.0)
    template = PromptTemplate(
        body="{context}\n{question}",
        answer_prefix="\nAnswer:",
        completion_stop=("\n\n", "\nQuestion:"),
    )

    def __init__(
        self,
        tasks: Sequence[str] = SYNTHETIC_TASKS,
        lengths: Sequence[int] = (2048, 4096, 6144, 8192, 16384),
        samples: int = 10,
        seed: int = 0,
        pool: str = DEFAULT_POOL,
        base_lengths: Sequence[int] = DEFAULT_BASE_LENGTHS,
    ) -> None:
        later = [t for t in tasks if t in NOT_YET]
        if later:
            raise ValueError(
                f"task(s) {', '.join(later)} need a QA/summary source and the LLM judge, which this "
                f"version does not have yet; available: {', '.join(SYNTHETIC_TASKS)}"
            )
        unknown = [t for t in tasks if t not in SYNTHETIC_TASKS]
        if unknown or not tasks:
            raise ValueError(f"unknown task(s) {unknown}: use {', '.join(SYNTHETIC_TASKS)}")
        self.tasks = tuple(tasks)
        self.lengths = tuple(sorted(set(lengths)))
        self.samples = samples
        self.seed = seed
        self.pool = pool
        self.base_lengths = tuple(base_lengths)

    def params(self) -> dict[str, Any]:
        return {
            "tasks": list(self.tasks),
            "lengths": list(self.lengths),
            "samples": self.samples,
            "seed": self.seed,
            "pool": self.pool,
        }

    def prepare(self) -> None:
        load_pool(self.pool)

    def build(self, ctx: BuildContext) -> list[Sample]:
        documents, source_id = load_pool(self.pool)
        pool = CountedPool(documents, source_id, ctx.tokenizer)
        out = []
        for task in self.tasks:
            for length in self.lengths:
                for row in range(self.samples):
                    out.append(self._sample(task, length, row, pool, ctx))
        return out

    def _sample(
        self, task: str, length: int, row: int, pool: CountedPool, ctx: BuildContext
    ) -> Sample:
        # Each sample depends on (seed, task, length, row) alone.
        rng = random.Random(f"{self.seed}:{task}:{length}:{row}")
        question, gold, inserts, meta = self._task_parts(task, rng)
        probe = Sample("p", task, "English", "", question, ())
        prompt, messages = self.template.render(probe, ctx.prompt_mode)
        overhead = len(ctx.tokenizer.encode(prompt or messages[0].content)) + sum(
            len(ctx.tokenizer.encode(s + " ")) for s in inserts
        )
        budget = length - overhead - _SLACK
        if pool.total_tokens < budget:
            raise UsageError(
                f"the {self.pool} pool holds {pool.total_tokens} tokens, too few for {length}-token "
                "contexts without repeating documents: give a larger pool (--pool FILE.jsonl)"
            )
        if task == "passage_count":
            passages = self._repeated(rng, pool, budget, meta)
        else:
            passages = [pool.documents[i].text for i in fill(rng, pool.counts, budget)]
        if not passages:
            raise UsageError(
                f"{length} tokens leave no room for a single document: use a longer length"
            )
        if task != "passage_count":
            # Ground-truth sentences go before randomly chosen passages (distinct ones when there
            # are enough; short contexts hold fewer passages than sentences).
            if len(passages) >= len(inserts):
                places = rng.sample(range(len(passages)), len(inserts))
            else:
                places = [rng.randrange(len(passages)) for _ in inserts]
            for sentence, where in zip(inserts, places, strict=True):
                passages[where] = sentence + " " + passages[where]
            rng.shuffle(passages)
        context = "".join(WRAP.format(index=i + 1, text=text) for i, text in enumerate(passages))
        sample = Sample(
            f"{task}-{length}-{row:03d}", task, "English", context, question, gold, length, {}
        )
        rendered, messages = self.template.render(sample, ctx.prompt_mode)
        achieved = len(ctx.tokenizer.encode(rendered or messages[0].content))
        return Sample(
            sample.id,
            task,
            "English",
            context,
            question,
            (str(meta["answer"]),),
            length=achieved + ctx.config.max_tokens,
            meta={
                **meta,
                "target_length": length,
                "achieved_length": achieved,
                "passages": len(passages),
                "prompt_tokens": achieved + 1,
            },
        )

    def _repeated(
        self, rng: random.Random, pool: CountedPool, budget: int, meta: dict[str, Any]
    ) -> list[str]:
        """Distinct documents, each repeated 1-3 times, shuffled; records the unique count."""
        chosen: list[str] = []
        remaining = budget
        order = list(range(len(pool.documents)))
        rng.shuffle(order)
        unique = 0
        for index in order:
            copies = rng.randint(1, 3)
            cost = copies * pool.counts[index]
            if cost > remaining:
                continue
            chosen += [pool.documents[index].text] * copies
            remaining -= cost
            unique += 1
        rng.shuffle(chosen)
        meta["unique"] = unique
        meta["answer"] = str(unique)
        return chosen

    def _task_parts(
        self, task: str, rng: random.Random
    ) -> tuple[str, tuple[str, ...], list[str], dict[str, Any]]:
        if task == "kv_retrieval":
            keys = [_uuid(rng) for _ in range(4)]
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

    def timeout_s(self, sample: Sample) -> float:
        return 120.0 + 2.0 * sample.length / 1000.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return grade(sample["task"], generation.text, str(sample["meta"]["answer"]))

    def summarize(self, rows: Sequence[ScoredRow]) -> dict[str, Any]:
        return summarize_hundred(rows, self.base_lengths)


def grade(task: str, answer: str, gold: str) -> Score:
    """kv: last UUID of the first line; stars: the chosen option number; count: the number. 0/1."""
    first = answer.strip().split("\n", 1)[0] if answer.strip() else ""
    if task == "kv_retrieval":
        found = _UUID.findall(first)
        got = found[-1].lower() if found else ""
    else:
        numbers = _INT.findall(first)
        got = numbers[0] if numbers else ""
    return Score(
        1.0 if got == gold.lower() else 0.0,
        1.0,
        {"got": got, "gold": gold, "first_line": first[:200]},
    )


def summarize_hundred(rows: Sequence[ScoredRow], base_lengths: Sequence[int]) -> dict[str, Any]:
    """Per task x length scores (x100), achieved lengths, statuses, and LongScore per task."""
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    achieved: dict[int, list[int]] = defaultdict(list)
    statuses: dict[str, int] = defaultdict(int)
    for row in rows:
        meta = row.sample["meta"]
        ok = row.generation.status in SCORABLE and row.score is not None
        cells[row.sample["task"]][meta["target_length"]].append(
            row.score.value if ok and row.score else 0.0
        )
        achieved[meta["target_length"]].append(meta["achieved_length"])
        statuses[row.generation.status] += 1
    tasks = {
        task: {str(length): round(100 * mean(v), 2) for length, v in sorted(by_len.items())}
        for task, by_len in cells.items()
    }
    overall = {
        str(length): round(mean(tasks[t][str(length)] for t in tasks if str(length) in tasks[t]), 2)
        for length in sorted({n for by_len in cells.values() for n in by_len})
    }
    return {
        "by_task": tasks,
        "by_length": overall,
        "achieved_length": {str(k): round(mean(v)) for k, v in sorted(achieved.items())},
        "longscore": {
            task: longscore({int(k): v for k, v in scores.items()}, base_lengths).as_dict()
            for task, scores in {**tasks, "overall": overall}.items()
        },
        "statuses": dict(statuses),
    }
