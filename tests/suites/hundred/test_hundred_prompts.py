"""100-LongBench prompts the authors' way: each task's frame (uservan/100-LongBench,
config/dataset2prompt.json at 1254aae707c99f5420b172627be48192113356d4), the same text for a base
model and for a chat model, and every token of it counted in the length.

`helpers.FRAMES` is the reference text written out by hand; here whole prompts are pinned too."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.suites.hundred.sources import load_source, split_documents
from longscope.suites.hundred.suite import HundredSuite
from longscope.types import GenerationConfig, Sample

from .helpers import GOV_REPORT, LONGBENCH_V1, CharTokenizer, rendered, write_pool

SOURCES = {**LONGBENCH_V1, "passage_retrieval": GOV_REPORT}
TEXT = "The reference manual describes the language in plain prose. " * 3
# prompt mode, a known chat template's tokens (None: unknown, a margin kept free), tokens counted
MODES = {"completion": ("completion", None, 1), "chat-known": ("chat", 7, 7)}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGSCOPE_CACHE", str(tmp_path / "cache"))


def _ctx(mode: str) -> BuildContext:
    prompt_mode, overhead, _ = MODES[mode]
    return BuildContext(
        CharTokenizer(), prompt_mode, GenerationConfig(max_tokens=40), chat_overhead=overhead
    )


def _pool(tmp_path: Path, n: int = 30) -> str:
    rows = [{"id": f"d{i}", "context": f"[d{i:02d}] " + "x" * 60} for i in range(n)]
    return write_pool(tmp_path / "pool.jsonl", rows)


def _one_fits(tmp_path: Path) -> dict:
    """A pool where only TEXT fits a 1500-token sample (the other document is too long)."""
    rows = [{"id": "text", "context": TEXT}, {"id": "long", "context": "y" * 3000}]
    return {"pool": write_pool(tmp_path / "two.jsonl", rows), "lengths": [1500]}


def _sent(suite: HundredSuite, sample: Sample, mode: str) -> str:
    """The text the model receives; completion and chat must agree on it."""
    prompt, none = suite.template.render(sample, "completion")
    blank, messages = suite.template.render(sample, "chat")
    assert none == () and blank == "" and [m.role for m in messages] == ["user"]
    assert messages[0].content == prompt
    return prompt


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    "task",
    [
        "kv_retrieval",
        "counting_stars",
        "passage_count",
        "passage_retrieval",
        "single_doc_qa",
        "multi_doc_qa",
        "single_doc_sum",
        "multi_doc_sum",
    ],
)
def test_every_task_is_sent_in_its_authors_frame_and_counted_whole(
    tmp_path: Path, task: str, mode: str
) -> None:
    params = {"tasks": [task], "lengths": [1800], "samples": 2, "pool": _pool(tmp_path)}
    if task in SOURCES:
        params["sources"] = {task: SOURCES[task]}
    suite = create_suite("hundred", params)
    samples = suite.build(_ctx(mode))
    assert samples
    for sample in samples:
        prompt = _sent(suite, sample, mode)
        if sample.meta.get("no_context"):
            assert prompt == rendered("no_context", "", sample.question)
            continue
        assert prompt == rendered(task, sample.context, sample.question)
        # everything sent is counted: frame, question, context, and BOS or the chat template
        assert sample.prompt_tokens == len(prompt) + MODES[mode][2]
        assert sample.prompt_tokens <= sample.meta["target_length"]


def test_a_kv_prompt_pinned_whole(tmp_path: Path) -> None:
    suite = create_suite(
        "hundred", {"tasks": ["kv_retrieval"], "samples": 1, **_one_fits(tmp_path)}
    )
    (sample,) = suite.build(_ctx("completion"))
    k = sample.meta["keys"]
    assert _sent(suite, sample, "completion") == (
        "There are some passages below sourced from many different fields.\n\n"
        f"The value of {k[0]} is {k[1]}.\n\nThe value of {k[1]} is {k[2]}.\n\n"
        f"The value of {k[2]} is {k[3]}.\n\nPassage 1:\n{TEXT}\n\n\n\n"
        "Given several key-value pairs in these passages, you need to find the value of the key. "
        "Read the question related with these key-value pairs and give the correct answer. "
        f"Answer: the value of {k[0]} is "
    )


def test_a_counting_stars_prompt_pinned_whole(tmp_path: Path) -> None:
    suite = create_suite(
        "hundred", {"tasks": ["counting_stars"], "samples": 1, **_one_fits(tmp_path)}
    )
    (sample,) = suite.build(_ctx("completion"))
    n, options = sample.meta["counts"], sample.meta["options"]
    assert options[0] == "unanswerable" and options[int(sample.gold[0]) - 1] == str(n)
    assert _sent(suite, sample, "completion") == (
        "There are some passages below sourced from many different fields.\n\n"
        f"The little penguin counted {n[0]} ★\n\nThe little penguin counted {n[1]} ★\n\n"
        f"The little penguin counted {n[2]} ★\n\nThe little penguin counted {n[3]} ★\n\n"
        f"Passage 1:\n{TEXT}\n\n\n\n"
        "Only output the results without any explanation. Read the following question and give "
        "the correct answer: On this moonlit and misty night, the little penguin is looking up at "
        "the sky and concentrating on counting ★. Please help the little penguin collect the "
        "number of ★, for example: [x, x, x,...]. The summation is not required, and the numbers "
        "in [x, x, x,...]. represent the counted number of ★ by the little penguin.\n"
        "Question: Which of the following is the correct number of ★ the little penguin collect?\n"
        f"1. unanswerable\n2. {options[1]}\n3. {options[2]}\n4. {options[3]}\n5. {options[4]}\n"
        "Please provide your answer as a single number (1, 2, 3, 4 ...) without any explanation."
        "\nThe final answer is: "
    )


def test_a_passage_count_prompt_pinned_whole(tmp_path: Path) -> None:
    suite = create_suite(
        "hundred", {"tasks": ["passage_count"], "samples": 1, **_one_fits(tmp_path)}
    )
    (sample,) = suite.build(_ctx("completion"))
    copies = int(sample.meta["passages"])
    assert sample.gold == ("1",) and 1 <= copies <= 3
    passages = "".join(f"Passage {i + 1}:\n{TEXT}\n\n" for i in range(copies))
    assert _sent(suite, sample, "completion") == (
        "There are some paragraphs below sourced from many different fields. Some of them may be "
        "duplicates. Please carefully read these paragraphs and determine how many unique "
        "paragraphs there are after removing duplicates. In other words, how many non-repeating "
        f"paragraphs are there in total?\n\n{passages}\n\nPlease enter the final count of unique "
        "paragraphs after removing duplicates. The output format should only contain the number, "
        "such as 1, 2, 3, and so on.\n\nThe final answer is: "
    )


def test_a_single_doc_qa_prompt_and_its_no_context_twin_pinned_whole(tmp_path: Path) -> None:
    row = {"_id": "q1", "input": "Who built it?", "context": "Built by Ada.", "answers": ["Ada"]}
    source = write_pool(tmp_path / "qa.jsonl", [row])
    pool = write_pool(tmp_path / "one.jsonl", [{"id": "only", "context": TEXT}])
    suite = create_suite(
        "hundred",
        {
            "tasks": ["single_doc_qa"],
            "samples": 1,
            "lengths": [1000],
            "pool": pool,
            "sources": {"single_doc_qa": source},
        },
    )
    sample, twin = suite.build(_ctx("completion"))
    (gold,) = sample.meta["gold_passages"]
    first, second = ("Built by Ada.", TEXT) if gold == 1 else (TEXT, "Built by Ada.")
    assert _sent(suite, sample, "completion") == (
        "Answer the question based on the given passages. Only give me the answer and do not "
        "output any other words.\n\nThe following are given passages and these passages are from "
        f"many different fields.\n\nPassage 1:\n{first}\n\nPassage 2:\n{second}\n\n\n\n"
        "Answer the question based on the given passages following the instruction: \n"
        f"Answer the question related with Passage {gold}. \n\nQuestion: Who built it?\n"
        "Only give me the answer and do not output any other words. Answer:\n"
    )
    assert _sent(suite, twin, "completion") == (
        "Answer the question as concisely as you can, using a single phrase or sentence if "
        'possible. If the question cannot be answered, write "unanswerable". Do not provide any '
        "explanation. Question: Who built it?\nOnly give me the answer and do not output any other "
        "words. Answer:\n "
    )


def test_multi_document_golds_come_in_either_order_and_are_named_in_reading_order(
    tmp_path: Path,
) -> None:
    # The reference shuffles a multi-hop row's own passages with the distractors: its golds stand
    # in any order among themselves, and the question lists their numbers in reading order.
    source = load_source(SOURCES["multi_doc_qa"])
    documents = {row.id: split_documents(row.context) for row in source.rows}
    suite = create_suite(
        "hundred",
        {
            "tasks": ["multi_doc_qa"],
            "lengths": [1200],
            "samples": 12,
            "pool": _pool(tmp_path),
            "sources": {"multi_doc_qa": SOURCES["multi_doc_qa"]},
        },
    )
    orders = set()
    for sample in suite.build(_ctx("completion")):
        if sample.meta.get("no_context"):
            continue
        golds = sample.meta["gold_passages"]
        assert golds == sorted(golds)
        named = ",".join(map(str, golds))
        assert sample.question.startswith(f"Answer the question related with Passage {named}. ")
        parts = documents[sample.meta["source_row"]]
        seen = [d for d in sorted(parts, key=sample.context.index)]
        assert len(seen) == len(golds)
        orders.add(seen == parts)
    assert orders == {True, False}
