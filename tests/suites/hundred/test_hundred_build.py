"""100-LongBench's contexts sized to the token: one token per character, so every boundary is
computed by hand. The prompt a model is sent, the tokens reserved for BOS or a chat template
(known, or unknown: a margin), the gold answers and the order of the samples."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.base import CHAT_MARGIN_TOKENS, BuildContext
from longscope.suites.hundred.pool import WRAP, CountedPool, load_pool
from longscope.suites.hundred.tasks import SLACK, real_question, repeated
from longscope.types import GenerationConfig, Sample

from .helpers import FRAMES, CharTokenizer, SeamTokenizer, rendered, write_pool

FIXTURES = Path(__file__).parents[2] / "fixtures"
MAX_TOKENS = 40
# (prompt mode, the chat template's known tokens or None); what each reserves beside the text
MODES = {
    "completion": ("completion", None),  # BOS: one token, counted as sent
    "chat-unknown": ("chat", None),  # a server's template: 32 tokens kept free, not counted
    "chat-known": ("chat", 7),  # a template the backend counts: 7 tokens, counted as sent
}
UUID = "0" * 36
KV_QUESTION = f"Answer: the value of {UUID} is"
KV_SENTENCE = f"The value of {UUID} is {UUID}."
TEXT = "The reference manual describes the language in plain prose. " * 3


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGSCOPE_CACHE", str(tmp_path / "cache"))


def _ctx(mode: str, tokenizer=None, **extra) -> BuildContext:
    prompt_mode, overhead = MODES[mode]
    return BuildContext(
        tokenizer or CharTokenizer(),
        prompt_mode,
        GenerationConfig(max_tokens=MAX_TOKENS),
        chat_overhead=overhead,
        **extra,
    )


def _counted(mode: str) -> int:
    """Tokens sent beside the text: BOS, or a known template's."""
    return {"completion": 1, "chat-unknown": 0, "chat-known": 7}[mode]


def _margin(mode: str) -> int:
    return CHAT_MARGIN_TOKENS if mode == "chat-unknown" else 0


def _rendered(mode: str, context: str, question: str, task: str = "kv_retrieval") -> str:
    """The prompt (completion) or the one user message (chat): the authors' text in both modes."""
    assert mode in MODES
    return rendered(task, context, question)


def _build(pool: str, mode: str = "completion", **params) -> list[Sample]:
    params = {"tasks": ["kv_retrieval"], "samples": 1, "pool": pool, **params}
    return create_suite("hundred", params).build(_ctx(mode))


def _kv_length(mode: str, documents: int, text: str = TEXT) -> int:
    """The target length whose budget holds `documents` copies of a `text`-long passage exactly."""
    overhead = len(_rendered(mode, "", KV_QUESTION)) + _counted(mode) + _margin(mode)
    inserts = 3 * len(KV_SENTENCE + "\n\n")  # each sentence a paragraph of its own
    return overhead + inserts + SLACK + documents * len(WRAP.format(index=999, text=text))


@pytest.mark.parametrize("mode", list(MODES))
def test_a_passage_that_fits_the_budget_exactly_is_used_one_token_less_is_refused(
    tmp_path: Path, mode: str
) -> None:
    pool = write_pool(tmp_path / "one.jsonl", [{"id": "only", "context": TEXT}])
    length = _kv_length(mode, 1)
    (sample,) = _build(pool, mode, lengths=[length])
    keys = sample.meta["keys"]
    sentences = [f"The value of {keys[i]} is {keys[i + 1]}." for i in range(3)]
    # one passage: all three sentences before its header, in their order, a paragraph each
    assert sample.context == (
        f"{sentences[0]}\n\n{sentences[1]}\n\n{sentences[2]}\n\nPassage 1:\n{TEXT}\n\n"
    )
    assert sample.question == f"Answer: the value of {keys[0]} is"
    assert sample.gold == (keys[1],) and sample.language == "English"
    sent = len(_rendered(mode, sample.context, sample.question)) + _counted(mode)
    assert sample.prompt_tokens == sent == sample.meta["achieved_length"]
    assert sample.length == sent + _margin(mode) + MAX_TOKENS and sample.max_tokens == MAX_TOKENS
    # SLACK and the counted 3-digit index ("Passage 999" for "Passage 1") are all that is left
    assert length - sent - _margin(mode) == SLACK + 2
    assert sample.meta["target_length"] == length and sample.meta["passages"] == 1
    assert sample.id == f"kv_retrieval-{length}-000"

    with pytest.raises(UsageError) as short:
        _build(pool, mode, lengths=[length - 1])
    assert str(short.value) == (
        f"{length - 1} tokens leave no room for a single document: use a longer length"
    )
    count = len(WRAP.format(index=999, text=TEXT))
    with pytest.raises(UsageError) as small:
        _build(pool, mode, lengths=[length + 1])
    assert str(small.value) == (
        f"the {pool} pool holds {count} tokens, too few for {length + 1}-token contexts without "
        "repeating documents: give a larger pool (-S pool=FILE.jsonl)"
    )


@pytest.mark.parametrize("seed", range(8))
def test_three_passages_for_three_sentences_get_one_sentence_each(
    tmp_path: Path, seed: int
) -> None:
    rows = [{"id": str(i), "context": TEXT.replace("The", f"T{i}e")} for i in range(3)]
    pool = write_pool(tmp_path / "three.jsonl", rows)
    (sample,) = _build(pool, lengths=[_kv_length("completion", 3, rows[0]["context"])], seed=seed)
    # what stands before each header: one sentence, its own paragraph; none after the last passage
    chunks = re.split(r"Passage \d:\n", sample.context)
    assert len(chunks) == 4 and sample.meta["passages"] == 3
    assert [c.count("The value of ") for c in chunks] == [1, 1, 1, 0]
    assert all(re.search(r"(^|\n\n)The value of \S+ is \S+\.\n\n$", c) for c in chunks[:3])
    sent = len(_rendered("completion", sample.context, sample.question)) + 1
    assert sample.prompt_tokens == sent


@pytest.mark.parametrize("length", [1460, 1660, 2060, 4560])
def test_counting_stars_true_list_is_the_counts_in_the_order_the_context_tells_them(
    tmp_path: Path, length: int
) -> None:
    # "In order, how many stars": the gold option is the list as read, first to last, also when
    # a short context puts several sentences before one passage (the frame and the options take
    # about 900 of these tokens).
    pool = _labelled_pool(tmp_path, 40, size=200)
    samples = _build(pool, tasks=["counting_stars", "kv_retrieval"], lengths=[length], samples=6)
    assert any(s.meta["passages"] < 4 for s in samples if s.task == "counting_stars") == (
        length < 2060
    )
    for sample in samples:
        if sample.task == "counting_stars":
            read = [
                int(n) for n in re.findall(r"The little penguin counted (\d+) ★", sample.context)
            ]
            assert read == sample.meta["counts"], sample.id
            (gold,) = sample.gold
            assert sample.meta["options"][int(gold) - 1] == str(read)
            assert f"\n{gold}. {read}\n" in sample.question + "\n"
        else:
            keys = sample.meta["keys"]
            chain = [f"The value of {keys[i]} is {keys[i + 1]}." for i in range(3)]
            assert [sample.context.index(c) for c in chain] == sorted(
                sample.context.index(c) for c in chain
            )


def _labelled_pool(tmp_path: Path, n: int, size: int = 60, name: str = "pool") -> str:
    rows = [{"id": f"d{i}", "context": f"[d{i:02d}] " + "x" * size} for i in range(n)]
    return write_pool(tmp_path / f"{name}.jsonl", rows)


def test_passage_count_sends_its_repeats_in_the_drawn_order(tmp_path: Path) -> None:
    pool_file = _labelled_pool(tmp_path, 30)
    length = 2000
    (sample,) = _build(pool_file, tasks=["passage_count"], lengths=[length], seed=4)
    # the same draws again: the sample is (seed, task, length, row) alone, nothing drawn after
    documents, source = load_pool(pool_file)
    pool = CountedPool(documents, source, CharTokenizer())
    question = ""
    budget = length - len(_rendered("completion", "", question, "passage_count")) - 1 - SLACK
    meta: dict = {}
    pieces = repeated(random.Random(f"4:passage_count:{length}:0"), pool, budget, meta)
    expected = "".join(WRAP.format(index=i + 1, text=t) for i, (t, _) in enumerate(pieces))
    assert sample.context == expected
    assert sample.gold == (str(meta["unique"]),) and sample.meta["unique"] == meta["unique"]
    labels = [p[p.index("[") : p.index("]") + 1] for p in sample.context.split("Passage ")[1:]]
    assert len(labels) > len(set(labels)) == meta["unique"]
    assert sample.question == ""
    prompt = _rendered("completion", sample.context, question, "passage_count")
    assert sample.prompt_tokens == len(prompt) + 1


class _Recording(CharTokenizer):
    """Notes the longest text it was asked to count, and how many characters in all."""

    def __init__(self) -> None:
        super().__init__("recording")
        self.longest = self.total = 0

    def encode(self, text: str) -> list[int]:
        self.longest = max(self.longest, len(text))
        self.total += len(text)
        return super().encode(text)


def test_an_additive_pool_is_counted_by_its_passages_not_by_tokenizing_the_whole_prompt(
    tmp_path: Path,
) -> None:
    pool_file = _labelled_pool(tmp_path, 80)
    documents, source = load_pool(pool_file)
    tokenizer = _Recording()
    CountedPool(documents, source, tokenizer)  # counted (and cached) before the build
    tokenizer.longest = 0
    suite = create_suite(
        "hundred",
        {"tasks": ["kv_retrieval", "passage_count"], "lengths": [4000], "pool": pool_file},
    )
    samples = suite.build(_ctx("completion", tokenizer))
    for sample in samples:
        prompt, _ = suite.template.render(sample, "completion")
        assert sample.prompt_tokens == len(prompt) + 1
        assert len(prompt) > 3000
    # a long prompt is never tokenized whole: the first and last passages, edited ones, the frame
    assert tokenizer.longest < len(FRAMES["passage_count"]) + 100
    # nor passage by passage: the passages between are their cached bodies and a header each
    tokenizer.total = 0
    single = create_suite(
        "hundred",
        {"tasks": ["passage_count"], "lengths": [4000], "samples": 1, "pool": pool_file},
    )
    (sample,) = single.build(_ctx("completion", tokenizer))
    assert sample.meta["passages"] > 30
    assert tokenizer.total < len(sample.context) / 2


def test_two_pool_files_of_the_same_size_keep_their_own_counts(tmp_path: Path) -> None:
    short = _labelled_pool(tmp_path, 60, size=50, name="short")
    long = _labelled_pool(tmp_path, 60, size=90, name="long")
    for pool_file in (short, long):
        suite = create_suite(
            "hundred",
            {"tasks": ["passage_count"], "lengths": [3000], "samples": 1, "pool": pool_file},
        )
        (sample,) = suite.build(_ctx("completion"))
        prompt, _ = suite.template.render(sample, "completion")
        assert sample.prompt_tokens == len(prompt) + 1 <= 3000


# Real sources: LongBench v1 rows, sized the same way.
QA = str(FIXTURES / "longbench_v1_qa.jsonl")
HOTPOT = str(FIXTURES / "longbench_v1_hotpotqa.jsonl")
GOV = str(FIXTURES / "longbench_v1_gov_report.jsonl")
NEWS = str(FIXTURES / "longbench_v1_multi_news.jsonl")


def _real(task: str, source: str, mode: str = "completion", pool: str | None = None, **params):
    params = {"tasks": [task], "samples": 1, "sources": {task: source}, **params}
    if pool:
        params["pool"] = pool
    return create_suite("hundred", params).build(_ctx(mode))


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("task", ["single_doc_qa", "single_doc_sum"])
def test_a_gold_passage_that_fills_the_length_exactly_is_sent_alone(
    tmp_path: Path, mode: str, task: str
) -> None:
    # A context holding a passage mark is still one document for the single-document tasks.
    context = "Intro of the report.\nPassage 2:\nThe body, with its own mark."
    row = {"_id": "g1", "input": "What is the body?", "context": context, "answers": ["a body"]}
    source = write_pool(tmp_path / "one.jsonl", [row])
    pool = _labelled_pool(tmp_path, 5)
    from longscope.suites.hundred.sources import SourceRow

    probe = real_question(task, SourceRow.model_validate(row), [999])
    length = (
        len(_rendered(mode, "", probe, task))
        + _counted(mode)
        + _margin(mode)
        + SLACK
        + len(WRAP.format(index=999, text=context))
    )
    samples = _real(task, source, mode, pool, lengths=[length])
    sample = samples[0]
    assert sample.context == f"Passage 1:\n{context}\n\n"  # no room for any distractor
    assert sample.meta["gold_passages"] == [1] and sample.meta["passages"] == 1
    assert sample.question == real_question(task, SourceRow.model_validate(row), [1])
    assert sample.gold == ("a body",) and sample.meta["source_row"] == "g1"
    sent = len(_rendered(mode, sample.context, sample.question, task)) + _counted(mode)
    # and the probe question named "Passage 999" where the real one names "Passage 1"
    assert sample.prompt_tokens == sent and length - sent - _margin(mode) == SLACK + 2 + 2
    with pytest.raises(UsageError) as caught:
        _real(task, source, mode, pool, lengths=[length - 1])
    assert (
        str(caught.value) == f"no {task} source row fits in {length - 1} tokens: use longer lengths"
    )


def test_multi_document_golds_are_their_own_passages_among_distractors(tmp_path: Path) -> None:
    pool = _labelled_pool(tmp_path, 40)
    for sample in _real("multi_doc_qa", HOTPOT, pool=pool, lengths=[1500], samples=4):
        if sample.meta.get("no_context"):
            continue
        golds = sample.meta["gold_passages"]
        assert len(golds) == 2 and sample.meta["passages"] > 2
        passages = sample.context.split("Passage ")[1:]
        texts = [passages[g - 1].split(":\n", 1)[1].strip() for g in golds]
        assert all(not t.startswith("[d") for t in texts)  # the gold documents, not distractors
        assert sample.question == (
            f"Answer the question related with Passage {golds[0]},{golds[1]}. \n\n"
            f"Question: {sample.meta['question_text']}"
        )
        prompt = _rendered("completion", sample.context, sample.question, "multi_doc_qa")
        assert sample.prompt_tokens == len(prompt) + 1 <= 1500


def test_gold_passages_land_anywhere_including_last(tmp_path: Path) -> None:
    pool = _labelled_pool(tmp_path, 12)
    places = set()
    for seed in range(12):
        (sample, _) = _real("single_doc_qa", QA, pool=pool, lengths=[700], seed=seed)
        (gold,) = sample.meta["gold_passages"]
        places.add(gold == sample.meta["passages"])
    assert places == {True, False}


def test_real_samples_record_their_metric_output_budget_and_source_row(tmp_path: Path) -> None:
    pool = _labelled_pool(tmp_path, 30)
    rows = [{"context": f"Report {i}. " * 20, "answers": [f"summary {i}"]} for i in range(2)]
    source = write_pool(tmp_path / "noid.jsonl", rows)
    sums = _real("single_doc_sum", source, pool=pool, lengths=[1200], samples=3)
    assert {s.meta["source_row"] for s in sums} <= {"0", "1"}  # rows without an id: their index
    for s in sums:
        assert s.meta["metric"] == "rouge_l" and s.max_tokens == 256 and s.language == "English"
        assert s.length == s.prompt_tokens + 256
        assert s.gold == (f"summary {s.meta['source_row']}",)
    qa = [
        s
        for s in _real("single_doc_qa", QA, pool=pool, lengths=[1200])
        if "no_context" not in s.meta
    ]
    assert qa[0].meta["metric"] == "f1" and qa[0].max_tokens == MAX_TOKENS
    override = create_suite(
        "hundred",
        {
            "tasks": ["single_doc_sum", "single_doc_qa"],
            "lengths": [1200],
            "samples": 1,
            "pool": pool,
            "sources": {"single_doc_sum": source, "single_doc_qa": QA},
        },
    ).build(_ctx("completion", max_tokens_override=12))
    assert {s.max_tokens for s in override if "no_context" not in s.meta} == {12}


def test_samples_come_task_by_task_length_by_length_then_the_no_context_questions(
    tmp_path: Path,
) -> None:
    pool = _labelled_pool(tmp_path, 40)
    suite = create_suite(
        "hundred",
        {
            "tasks": ["single_doc_qa", "kv_retrieval"],
            "lengths": [1500, 1000],
            "samples": 3,
            "pool": pool,
            "sources": {"single_doc_qa": QA},
        },
    )
    samples = suite.build(_ctx("completion"))
    asked = [s for s in samples if not s.meta.get("no_context")]
    assert [s.id for s in asked] == [
        f"{task}-{length}-{row:03d}"
        for task in ("single_doc_qa", "kv_retrieval")
        for length in (1000, 1500)
        for row in range(3)
    ]
    rows = list(dict.fromkeys(s.meta["source_row"] for s in asked if s.task == "single_doc_qa"))
    assert len(rows) >= 2
    twins = samples[len(asked) :]
    # each QA question once more, with no context, in the order first asked
    assert [s.id for s in twins] == [f"single_doc_qa-nocontext-{r}" for r in rows]
    questions = {s.meta["source_row"]: s for s in asked if s.task == "single_doc_qa"}
    for twin in twins:
        asked_once = questions[twin.meta["source_row"]]
        assert twin == Sample(
            twin.id,
            "single_doc_qa",
            "English",
            "",
            asked_once.meta["question_text"],
            asked_once.gold,
            length=0,
            max_tokens=MAX_TOKENS,
        )
        assert twin.meta == {
            "metric": "f1",
            "no_context": True,
            "source_row": twin.meta["source_row"],
            "target_length": 0,
            "achieved_length": 0,
        }


def test_real_samples_are_the_same_for_the_same_seed(tmp_path: Path) -> None:
    pool = _labelled_pool(tmp_path, 30)
    one = _real("multi_doc_sum", NEWS, pool=pool, lengths=[1200], samples=2)
    two = _real("multi_doc_sum", NEWS, pool=pool, lengths=[1200], samples=2)
    assert [(s.id, s.context, s.question) for s in one] == [
        (s.id, s.context, s.question) for s in two
    ]
    assert all(s.meta["metric"] == "rouge_l" for s in one)


def test_passage_retrieval_counts_a_source_that_does_not_add_up_whole(tmp_path: Path) -> None:
    # Source documents open with "Q" (a seam the SeamTokenizer merges); the pool's do not.
    rows = [
        {"_id": f"s{i}", "context": f"Quarterly report {i}. " * 6, "answers": [f"Summary {i}."]}
        for i in range(8)
    ]
    source = write_pool(tmp_path / "reports.jsonl", rows)
    pool = _labelled_pool(tmp_path, 30)
    tokenizer = SeamTokenizer("seam")
    suite = create_suite(
        "hundred",
        {
            "tasks": ["passage_retrieval"],
            "lengths": [900, 1400],
            "samples": 4,
            "pool": pool,
            "sources": {"passage_retrieval": source},
        },
    )
    samples = suite.build(_ctx("completion", tokenizer))
    assert any(s.meta["source_distractors"] >= 3 for s in samples)
    for sample in samples:
        prompt, _ = suite.template.render(sample, "completion")
        assert sample.prompt_tokens == len(tokenizer.encode(prompt)) + 1
        assert sample.prompt_tokens <= sample.meta["target_length"]
        (gold,) = sample.gold
        assert (
            f"Passage {gold}:\n{rows[int(sample.meta['source_row'][1:])]['context']}\n\n"
            in sample.context
        )
