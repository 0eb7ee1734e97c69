"""100-LongBench's questions and gold answers, task by task: the exact text a model is asked, the
answer it is scored against, and the random draws behind them (ranges, distinct options).

The questions are the reference's `{input}` (and `{instruction}`) as its generators write them:
uservan/100-LongBench, utils/data_utils.py at 1254aae707c99f5420b172627be48192113356d4
(`generate_dataset_kv_retrieval`, `_counting_stars`, `_passage_count`, `_passage_retrieval`,
`_single_doc_qa`, `_multi_doc_qa`, `_single_doc_sum`, `_multi_doc_sum`); the texts below are
written out by hand from that reading."""

from __future__ import annotations

import json
import random
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from longscope.suites.hundred.pool import CountedPool, Document
from longscope.suites.hundred.sources import SourceRow
from longscope.suites.hundred.tasks import real_question, repeated, star_options, task_parts

from .helpers import CharTokenizer


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGSCOPE_CACHE", str(tmp_path / "cache"))


def test_kv_retrieval_asks_for_the_first_keys_value_in_a_chain_of_uuid4_keys() -> None:
    for seed in range(20):
        question, sentences, meta = task_parts("kv_retrieval", random.Random(seed))
        keys = meta["keys"]
        assert len(keys) == 4 and len(set(keys)) == 4
        assert all(uuid.UUID(k).version == 4 and str(uuid.UUID(k)) == k for k in keys)
        assert question == f"Answer: the value of {keys[0]} is"
        assert sentences == [
            f"The value of {keys[0]} is {keys[1]}.",
            f"The value of {keys[1]} is {keys[2]}.",
            f"The value of {keys[2]} is {keys[3]}.",
        ]
        assert meta == {"answer": keys[1], "keys": keys}


STARS_HEAD = (
    "On this moonlit and misty night, the little penguin is looking up at the sky and "
    "concentrating on counting ★. Please help the little penguin collect the number of ★, for "
    "example: [x, x, x,...]. The summation is not required, and the numbers in [x, x, x,...]. "
    "represent the counted number of ★ by the little penguin.\n"
    "Question: Which of the following is the correct number of ★ the little penguin collect?\n"
)
STARS_TAIL = (
    "Please provide your answer as a single number (1, 2, 3, 4 ...) without any explanation."
)


def _options(question: str) -> list[str]:
    assert question.startswith(STARS_HEAD) and question.endswith("\n" + STARS_TAIL)
    lines = question[len(STARS_HEAD) : -len(STARS_TAIL) - 1].split("\n")
    assert [line.split(". ", 1)[0] for line in lines] == ["1", "2", "3", "4", "5"]
    return [line.split(". ", 1)[1] for line in lines]


def test_counting_stars_lists_five_numbered_options_and_the_gold_is_the_truths_number() -> None:
    drawn: Counter[int] = Counter()
    golds: set[str] = set()
    for seed in range(800):
        question, sentences, meta = task_parts("counting_stars", random.Random(seed))
        counts = meta["counts"]
        assert len(counts) == 4
        drawn.update(counts)
        assert sentences == [f"The little penguin counted {n} ★" for n in counts]
        options = _options(question)
        assert options == meta["options"] and options[0] == "unanswerable"
        assert options[int(meta["answer"]) - 1] == str(counts)
        golds.add(meta["answer"])
        assert set(meta) == {"answer", "counts", "options"}
    assert min(drawn) == 1 and max(drawn) == 100  # N in 1..100, both ends reachable
    assert set(golds) == {"2", "3", "4", "5"}  # the truth is any of the four after "unanswerable"


def _kinds(options: list[str], counts: list[int]) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for option in options:
        if option == "unanswerable":
            kinds["unanswerable"] += 1
            continue
        values = json.loads(option)
        assert len(values) == 4 and all(isinstance(v, int) for v in values)
        if values == counts:
            kinds["truth"] += 1
        elif sorted(values) == sorted(counts):
            kinds["swap"] += 1
        else:
            assert sum(a != b for a, b in zip(values, counts, strict=True)) == 1
            assert all(1 <= v <= 100 for v in values)
            kinds["changed"] += 1
    return kinds


def test_counting_stars_options_are_the_truth_two_swaps_one_changed_number_and_unanswerable() -> (
    None
):
    changed: set[int] = set()
    for seed in range(3000):
        rng = random.Random(seed)
        counts = [rng.randint(1, 100) for _ in range(4)]
        if seed % 3 == 0:
            counts[1] = counts[0]  # equal numbers: some swaps give the truth back
        options = star_options(rng, counts)
        assert len(set(options)) == 5 and options[0] == "unanswerable"
        assert _kinds(options, counts) == {"truth": 1, "swap": 2, "changed": 1, "unanswerable": 1}
        (one,) = [
            json.loads(o)
            for o in options
            if o not in ("unanswerable", str(counts)) and sorted(json.loads(o)) != sorted(counts)
        ]
        changed.update(v for v, c in zip(one, counts, strict=True) if v != c)
    assert min(changed) == 1 and max(changed) == 100


def _alarm(signum, frame):
    raise TimeoutError("star_options did not return")


def test_counting_stars_with_four_equal_numbers_gives_up_swapping_after_200_tries() -> None:
    # No swap differs from the truth: after 200 draws the options are filled by changed numbers.
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    try:
        rng = random.Random(3)
        options = star_options(rng, [9, 9, 9, 9])
        after = rng.random()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert _kinds(options, [9, 9, 9, 9]) == {"truth": 1, "changed": 3, "unanswerable": 1}
    # exactly 200 swap draws, then the changed numbers: the same options for the same seed
    expected = random.Random(3)
    for _ in range(200):
        expected.sample(range(4), 2)
    assert options == _replayed(expected, [9, 9, 9, 9])
    assert after == expected.random()


def _replayed(rng: random.Random, counts: list[int]) -> list[str]:
    """The changed-number options and the shuffle, drawn from where the swaps left `rng`."""
    options = [str(counts)]
    while len(options) < 4:
        changed = list(counts)
        changed[rng.randrange(len(counts))] = rng.randint(1, 100)
        if str(changed) not in options:
            options.append(str(changed))
    rng.shuffle(options)
    return ["unanswerable", *options]


def test_passage_count_asks_nothing_beyond_its_frame() -> None:
    # The reference's passage_count frame holds the whole question; its `{input}` is empty.
    question, sentences, meta = task_parts("passage_count", random.Random(0))
    assert question == "" and sentences == [] and meta == {}


def test_real_questions_name_the_gold_passages() -> None:
    row = SourceRow(_id="r", input="Who wrote it?", context="c", answers=["A summary."])
    # QA: the reference's "{instruction}\n\nQuestion: {input}", the instruction's trailing space kept
    assert real_question("single_doc_qa", row, [3]) == (
        "Answer the question related with Passage 3. \n\nQuestion: Who wrote it?"
    )
    assert real_question("multi_doc_qa", row, [2, 5, 11]) == (
        "Answer the question related with Passage 2,5,11. \n\nQuestion: Who wrote it?"
    )
    # summaries: the row's own query after a colon, else a full stop
    assert real_question("single_doc_sum", row, [4]) == (
        "Write a one-page summary of Passage 4 into a few short sentences: Who wrote it?"
    )
    no_query = SourceRow(_id="r", input="", context="c", answers=["A summary."])
    assert real_question("single_doc_sum", no_query, [4]) == (
        "Write a one-page summary of Passage 4 into a few short sentences."
    )
    assert real_question("multi_doc_sum", no_query, [1, 7]) == (
        "Combine and summarize the main ideas from the selected relevant passages into one "
        "cohesive summary: Passage 1,Passage 7."
    )
    assert real_question("multi_doc_sum", row, [2]) == (
        "Combine and summarize the main ideas from the selected relevant passages into one "
        "cohesive summary: Passage 2: Who wrote it?"
    )
    # passage_retrieval: the summary alone (the frame asks the question)
    assert real_question("passage_retrieval", row, [6]) == "A summary."


def _pool(sizes: list[int]) -> CountedPool:
    documents = [Document(str(i), chr(65 + i) * n) for i, n in enumerate(sizes)]
    return CountedPool(documents, f"test:{sizes}", CharTokenizer())


def test_passage_count_repeats_each_document_one_to_three_times() -> None:
    pool = _pool([10] * 8)
    copies: Counter[int] = Counter()
    for seed in range(60):
        meta: dict = {}
        pieces = repeated(random.Random(seed), pool, 10_000, meta)
        per_text = Counter(text for text, _ in pieces)
        assert len(per_text) == 8  # a budget for all: every document, each 1-3 times
        copies.update(per_text.values())
        assert meta == {"unique": 8, "answer": "8"}
        assert all(body == pool.bodies[0] for _, body in pieces)
    assert set(copies) == {1, 2, 3}


def test_passage_count_takes_a_document_whose_copies_fill_the_budget_exactly() -> None:
    pool = _pool([10])
    count = pool.counts[0]
    for seed in range(30):
        meta: dict = {}
        pieces = repeated(random.Random(seed), pool, 3 * count, meta)
        assert meta["unique"] == 1 and 1 <= len(pieces) <= 3
    taken = set()
    for seed in range(60):
        meta = {}
        pieces = repeated(random.Random(seed), pool, 2 * count, meta)
        taken.add(len(pieces))
        assert meta["unique"] == (1 if pieces else 0)
    assert taken == {0, 1, 2}  # three copies do not fit in two copies' budget
