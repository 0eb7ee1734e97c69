"""RULER: samples as RULER's generators define them, exact lengths, RULER's scoring, skips."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.base import BuildContext, ScoredRow
from longscope.suites.ruler import from_params
from longscope.suites.ruler.published import published_rows
from longscope.suites.ruler.scoring import match_all, match_part, postprocess, task_score
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.summary import summarize_ruler
from longscope.suites.ruler.tasks import ALL_TASKS, TASKS
from longscope.types import Generation, GenerationConfig, Score

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
NEEDLE = re.compile(r"One of the special magic (\w+) for (.+?) is: (\S+)\.")  # keys may hold spaces


def _build(
    tokenizer,
    tasks,
    length=4096,
    samples=2,
    mode="completion",
    seed=42,
    overhead=None,
    fill="ruler",
):
    suite = make_suite(
        RulerSuite,
        tasks=tasks,
        lengths=[length],
        samples=samples,
        random_seed=seed,
        fill=fill,
        **DATA,
    )
    ctx = BuildContext(tokenizer, mode, GenerationConfig(), chat_overhead=overhead)
    return suite, suite.build(ctx)


def _sent(suite, sample, mode="completion") -> str:
    prompt, messages = suite.template.render(sample, mode)
    return prompt or messages[0].content


def test_same_seed_same_samples_other_seed_other_samples(qwen_tokenizer) -> None:
    tasks = ["niah_single_1", "niah_multikey_2", "vt", "cwe", "fwe", "qa_1"]
    _, first = _build(qwen_tokenizer, tasks)
    _, again = _build(qwen_tokenizer, tasks)
    _, other = _build(qwen_tokenizer, tasks, seed=7)
    assert [(s.id, s.context, s.question, s.gold) for s in first] == [
        (s.id, s.context, s.question, s.gold) for s in again
    ]
    assert [s.gold for s in first] != [s.gold for s in other]
    # One sample depends on (seed, task, length, index) alone: a smaller run holds the same ones.
    _, fewer = _build(qwen_tokenizer, ["vt"], samples=1)
    assert fewer[0].context == next(s for s in first if s.id == "vt-4096-000").context


@pytest.mark.parametrize("mode,overhead", [("completion", None), ("chat", 9)])
def test_fill_exact_counts_every_prompt_and_fills_its_length(qwen_tokenizer, mode, overhead):
    suite, samples = _build(
        qwen_tokenizer, list(ALL_TASKS), 4096, 2, mode, overhead=overhead, fill="exact"
    )
    assert {s.task for s in samples} == set(ALL_TASKS)
    for sample in samples:
        # What is sent: the text, plus BOS for a base model or the chat template's tokens.
        text = len(qwen_tokenizer.encode(_sent(suite, sample, mode)))
        real = text + (overhead if mode == "chat" else 1)
        budget = 4096 - TASKS[sample.task].template.tokens_to_generate
        assert sample.meta["achieved_length"] == real == sample.prompt_tokens, sample.id
        # RULER's own `length`: the text's tokens and the task's output budget.
        assert sample.meta["ruler_length"] == text + TASKS[sample.task].template.tokens_to_generate
        assert sample.meta["counted"] == "pieces"  # the counts added up: no whole recount
        # The largest haystack that fits: within one haystack unit (a document for QA) of it.
        slack = {"qa_1": 200, "qa_2": 200, "niah_multikey_3": 80}.get(sample.task, 40)
        assert budget - slack <= real <= budget, (sample.id, real)
        assert sample.length == 4096
        assert sample.max_tokens == TASKS[sample.task].template.tokens_to_generate


@pytest.mark.model
def test_lengths_exact_in_the_embedded_models_tokenizer(gemma_tokenizer) -> None:
    for fill in ("exact", "ruler"):
        suite, samples = _build(
            gemma_tokenizer, ["niah_single_1", "niah_single_2", "vt", "fwe"], 2048, 1, fill=fill
        )
        for sample in samples:
            real = len(gemma_tokenizer.encode(_sent(suite, sample))) + 1  # BOS
            assert sample.meta["achieved_length"] == real
            budget = 2048 - TASKS[sample.task].template.tokens_to_generate
            # RULER counts the text alone: BOS may take the prompt one token past its budget.
            assert real <= budget + (fill == "ruler")


def test_niah_shapes_follow_synthetic_yaml(qwen_tokenizer) -> None:
    _, samples = _build(qwen_tokenizer, [t for t in ALL_TASKS if t.startswith("niah")], 4096, 3)
    for s in samples:
        needles = NEEDLE.findall(s.context)
        args = TASKS[s.task].args
        planted = [n for n in needles if n[2] in s.gold]
        if s.task == "niah_multikey_1":
            keys = {k for k in s.meta["keys"]}
            assert len(keys) == 4 and len(s.meta["queries"]) == 1 and len(s.gold) == 1
            assert {k for _, k, _ in needles} == keys  # 4 needles, 1 queried
        if s.task == "niah_multivalue":
            assert len(s.gold) == 4 and len(planted) == 4
            assert {k for _, k, _ in planted} == {s.meta["queries"][0]}
        if s.task == "niah_multiquery":
            assert len(s.meta["queries"]) == 4 and len(s.gold) == 4
            assert ", and " in s.question
        if s.task in ("niah_multikey_2", "niah_multikey_3"):
            # The haystack is other needles: every line is one.
            assert all(NEEDLE.fullmatch(line) for line in s.context.split("\n"))
            assert len(planted) == 1
        if args["type_needle_v"] == "uuids":
            assert re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", s.gold[0]
            )
        if args["type_needle_v"] == "numbers":
            assert all(re.fullmatch(r"[1-9]\d{6}", g) for g in s.gold)
        if args["type_needle_k"] == "words":
            assert all(re.fullmatch(r"[^-]+-.+", k) for k in s.meta["queries"])
        if args["type_haystack"] == "noise":
            assert s.context.count("The grass is green.") > 100
        singular = args["num_needle_q"] * args["num_needle_v"] == 1
        head = s.meta["head"]
        if singular:
            assert head.startswith("A special magic number") or head.startswith(
                "A special magic uuid"
            )
            assert s.meta["answer_prefix"].endswith("mentioned in the provided text is")
        else:
            assert head.startswith("Some special magic numbers are hidden")
            assert s.meta["answer_prefix"].endswith("mentioned in the provided text are")
        assert all(g in s.context for g in s.gold)


def test_vt_cwe_fwe_qa_shapes(qwen_tokenizer) -> None:
    _, samples = _build(qwen_tokenizer, ["vt", "cwe", "fwe", "qa_1", "qa_2"], 4096, 2)
    for s in samples:
        if s.task == "vt":
            assert len(s.gold) == 5 and len(set(s.gold)) == 5
            value = s.meta["value"]
            assert f"VAR {s.gold[0]} = {value}" in s.context
            for a, b in zip(s.gold, s.gold[1:], strict=False):
                assert f"VAR {b} = VAR {a} " in s.context
            assert "5 variables are assigned the value " + value in s.meta["answer_prefix"]
            # The one-shot example: 3-letter names, its own value, answered.
            assert s.meta["head"].count("Memorize and track") == 2
        if s.task == "cwe":
            words = re.findall(r"\d+\. (\S+)", s.context)
            counts = Counter(words)
            assert len(s.gold) == 10 and all(counts[g] == 30 for g in s.gold)
            assert {c for w, c in counts.items() if w not in s.gold} == {3}
            assert "What are the 10 most common words" in s.question
        if s.task == "fwe":
            counts = Counter(s.context.split(" "))
            ranked = [w for w, _ in counts.most_common()]
            assert ranked[0] == "..." and list(s.gold) == ranked[1:4]
        if s.task == "qa_1":
            assert "Document 1:\n" in s.context and s.gold[0] in s.context
        if s.task == "qa_2":
            assert s.gold[0] in ("Boston", "yes")
            assert s.question.startswith("\n\nAnswer the question based on the given documents")


@pytest.mark.parametrize(
    "prediction,references,all_value,part_value",
    [
        (" 1234567 and 7654321 ", ["1234567", "7654321"], 1.0, 1.0),
        ("The value is 1234567.", ["1234567", "7654321"], 0.5, 1.0),
        ("nothing", ["1234567"], 0.0, 0.0),
        ("BLACK sea", ["the Black Sea", "Black Sea"], 0.5, 1.0),
        ("", ["x"], 0.0, 0.0),
        ("ab\x00cd\x1f", ["ab\ncd"], 1.0, 1.0),  # control characters become newlines
    ],
)
def test_scores_are_rulers_formulas(prediction, references, all_value, part_value) -> None:
    pred = postprocess(prediction)
    assert match_all(pred, references) == all_value
    assert match_part(pred, references) == part_value


def test_task_score_rounds_as_ruler() -> None:
    # RULER: sum / len * 100, rounded to 2 decimals (1/3 -> 33.33, 2/3 -> 66.67, 1/8 -> 12.5).
    assert task_score([1, 0, 0]) == 33.33 and task_score([1, 1, 0]) == 66.67
    assert task_score([0.25, 0, 0, 0]) == 6.25


def _row(task, length, value, text="x", status="ok"):
    sample = {
        "task": task,
        "gold": ["a"],
        "meta": {"target_length": length, "achieved_length": length - 50},
    }
    return ScoredRow(
        sample, 0, Generation(text, status), Score(value, 1.0) if status == "ok" else None
    )


def test_summary_averages_tasks_and_counts_nulls_and_failures() -> None:
    rows = [
        _row("niah_single_1", 4096, 1.0),
        _row("niah_single_1", 4096, 0.5, text="  "),
        _row("vt", 4096, 0.0, status="error"),
        _row("vt", 4096, 1.0),
        _row("niah_single_1", 8192, 1.0),
        _row("vt", 8192, 0.5),
    ]
    summary = summarize_ruler(rows, {"qa_1": "needs squad=FILE"}, ["qa_1 skipped"])
    assert summary["by_task"] == {
        "niah_single_1": {"4096": 75.0, "8192": 100.0},
        "vt": {"4096": 50.0, "8192": 50.0},
    }
    assert summary["by_length"] == {"4096": 62.5, "8192": 75.0}
    assert (
        summary["nulls"]["niah_single_1"]["4096"] == "1/2"
        and summary["nulls"]["vt"]["4096"] == "1/2"
    )
    assert summary["statuses"]["vt"]["4096"] == {"error": 1, "ok": 1}
    assert summary["wAvg_inc"] == round((62.5 + 2 * 75.0) / 3, 2)
    assert summary["effective_length"]["85.6"] == "<4096"
    assert summary["effective_length"]["50.0"] == ">8192"
    assert summary["comparable_with_published"] == "no" and summary["skipped"] == {
        "qa_1": "needs squad=FILE"
    }


def test_effective_length_at_the_threshold_exactly() -> None:
    rows = [_row("vt", 4096, 0.856), _row("vt", 8192, 0.8559)]
    summary = summarize_ruler(rows, {}, [])
    assert summary["by_length"] == {"4096": 85.6, "8192": 85.59}
    assert summary["effective_length"]["85.6"] == "4096"


def test_missing_data_skips_the_task_with_its_reason(qwen_tokenizer) -> None:
    suite = make_suite(
        RulerSuite,
        tasks=["niah_single_1", "niah_single_2", "qa_1", "qa_2"],
        lengths=[4096],
        samples=1,
    )
    skipped = suite.skipped()
    assert set(skipped) == {"niah_single_2", "qa_1", "qa_2"}
    assert "essays=FILE" in skipped["niah_single_2"] and "squad=FILE" in skipped["qa_1"]
    samples = suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    assert {s.task for s in samples} == {"niah_single_1"}
    assert suite.params()["comparable_with_published"] is False
    assert any("niah_single_2 skipped" in d for d in suite.differences())
    full = make_suite(RulerSuite, **DATA)
    assert full.differences() == [] and full.params()["comparable_with_published"] is True
    short = make_suite(RulerSuite, lengths=[4096, 8192], **DATA).differences()
    assert short == ["lengths 4K, 8K (RULER: 4K-128K): the average, effective length and wAvg "
                     "cover other lengths"]  # fmt: skip


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"\xff\xfe not utf-8", "not UTF-8 JSON"),
        (b"[1, 2]", "not RULER's format"),
        (b'{"text": "   "}', "holds no text"),
    ],
)
def test_bad_essays_file_is_one_line_naming_it(tmp_path, content, needle) -> None:
    bad = tmp_path / "essays.json"
    bad.write_bytes(content)
    suite = make_suite(RulerSuite, tasks=["niah_single_2"], essays=str(bad))
    with pytest.raises(UsageError, match=needle) as info:
        suite.prepare()
    assert str(bad) in str(info.value) and "\n" not in str(info.value)


def test_a_length_too_short_for_a_task_is_one_line(qwen_tokenizer) -> None:
    suite = make_suite(RulerSuite, tasks=["vt"], lengths=[700], samples=1)
    with pytest.raises(UsageError, match=r"ruler task vt does not fit in 700 tokens.*longer"):
        suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    suite = make_suite(
        RulerSuite, tasks=["niah_multikey_1"], lengths=[256], samples=1, fill="exact", **DATA
    )
    with pytest.raises(UsageError, match="fixed parts alone need 144 tokens, over the 127 left"):
        suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    # RULER itself would retry forever here: its smallest haystack never fits.
    suite = make_suite(RulerSuite, tasks=["niah_multikey_1"], lengths=[256], samples=1, **DATA)
    with pytest.raises(UsageError, match="even with RULER's smallest haystack"):
        suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))


def test_bad_squad_and_missing_file(tmp_path) -> None:
    bad = tmp_path / "squad.json"
    bad.write_text(json.dumps({"data": [{"paragraphs": [{"qas": []}]}]}))
    with pytest.raises(UsageError, match="not SQuAD JSON"):
        make_suite(RulerSuite, tasks=["qa_1"], squad=str(bad)).prepare()
    with pytest.raises(UsageError, match="not found"):
        make_suite(RulerSuite, tasks=["qa_2"], hotpotqa=str(tmp_path / "none.json")).prepare()


def test_from_params_reads_text_and_lists() -> None:
    suite = from_params({"tasks": "vt,cwe", "lengths": "4k,8192", "samples": "5", "language": "en"})
    assert suite.tasks == ("vt", "cwe") and suite.lengths == (4096, 8192) and suite.samples == 5
    assert suite.seed == 42
    # The run's --seed (sampling) never reaches RULER's random_seed: the samples stay RULER's.
    assert from_params({"seed": 0}).seed == 42 and from_params({"random_seed": "7"}).seed == 7
    again = from_params(suite.params())
    assert again.params() == suite.params()
    # stored or typed values are checked as `-S` checks them, naming the option
    with pytest.raises(
        UsageError, match=r"bad -S tasks=vt,nope: unknown 'nope'; use niah_single_1"
    ):
        from_params({"tasks": "vt,nope"})
    with pytest.raises(UsageError, match=r"bad length '4q' in -S lengths"):
        from_params({"lengths": "4q"})


def test_published_rows_as_published_with_flags() -> None:
    rows = published_rows()
    assert len(rows) == 45 and RulerSuite.published_rows() == rows
    gpt4 = next(r for r in rows if r.model == "GPT-4-1106-preview")
    assert gpt4.scores == {
        4096: 96.6,
        8192: 96.3,
        16384: 95.2,
        32768: 93.2,
        65536: 87.0,
        131072: 81.2,
    }
    assert gpt4.effective == "64K" and gpt4.wavg_inc == 89.0 and gpt4.flags == ()
    qwen3 = next(r for r in rows if r.model == "Qwen3-14B*")
    assert qwen3.scores[131072] == 85.1 and qwen3.effective == ">128K"  # as published
    assert qwen3.reported_by_authors and "its scores give 64K" in qwen3.flags[0]
    table = RulerSuite.published()  # as `compare --published ruler` reads it
    assert "NVIDIA/RULER@c3f5e3b" in table.source and len(table.rows) == 45
    shown = {r.model: r for r in table.rows}
    assert (
        shown["GPT-4-1106-preview"].lengths == gpt4.scores
        and shown["GPT-4-1106-preview"].context == 131072
    )
    assert "Qwen3-14B* (14B) \u2020" in shown and shown["Gemini-1.5-pro"].context == 1048576
    flagged = {r.model for r in rows if r.flags}
    assert flagged == {
        "Llama2", "Qwen3-14B*", "Qwen2.5-7B-Instruct-1M*", "Qwen3-8B*", "Qwen3-4B*", "EXAONE-4.0-1.2B*",
    }  # fmt: skip


def test_rulers_model_templates_wrap_the_task_in_completion_mode(qwen_tokenizer) -> None:
    suite = make_suite(RulerSuite, tasks=["niah_single_1", "vt", "cwe"], lengths=[4096], samples=1,
                       model_template="meta-chat")  # fmt: skip
    ctx = BuildContext(qwen_tokenizer, "completion", GenerationConfig())
    for sample in suite.build(ctx):
        prompt = _sent(suite, sample)
        assert prompt.startswith("[INST] ") and sample.meta["answer_prefix"] in prompt
        # RULER: the answer prefix follows the closed instruction, for every model.
        assert prompt.endswith(" [/INST]" + sample.meta["answer_prefix"])
        assert len(qwen_tokenizer.encode(prompt)) + 1 == sample.meta["achieved_length"]
        if sample.task == "vt":  # the one-shot example goes inside the instruction, unwrapped
            assert prompt.startswith("[INST] Memorize and track") and prompt.count("[INST]") == 1
        if sample.task == "cwe":  # the one-shot example is wrapped like the task
            assert prompt.count("[INST]") == 2
    chat = suite.build(BuildContext(qwen_tokenizer, "chat", GenerationConfig()))
    assert not any("[INST]" in _sent(suite, s, "chat") for s in chat)
    with pytest.raises(UsageError, match="bad -S model_template=nope: use one of base, meta-chat"):
        from_params({"model_template": "nope"})


@pytest.mark.model
def test_end_to_end_on_the_embedded_model_at_1k(tmp_path) -> None:
    """The registered suite runs offline on the embedded model and reports RULER's numbers."""
    from longscope.models.registry import create_backend
    from longscope.run.runner import RunOptions, run
    from longscope.suites import create_suite, suite_names

    assert "ruler" in suite_names()  # registered by its package's one SUITES line
    suite = create_suite(
        "ruler", {"tasks": "niah_single_1,vt", "lengths": "1k", "samples": "5", **DATA}
    )
    backend = create_backend("llamacpp/gemma3-270m", {"context_length": 2048})
    # Two 1K prompts (`limit` counts per task x length), short answers, one at a time: a quarter
    # of a minute of model time on 2 cores (2K prompts took twice that and test nothing more).
    options = RunOptions(output=tmp_path, limit=1, max_tokens=16, concurrency=1, quiet=True)
    result = run(suite, backend, options)
    assert result.sent == 2
    rows = result.scores.rows
    assert len(rows) == 2 and {r.sample["task"] for r in rows} == {"niah_single_1", "vt"}
    for row in rows:  # RULER's budget: prompt + the task's output tokens within the length
        budget = TASKS[row.sample["task"]].template.tokens_to_generate
        assert row.sample["meta"]["achieved_length"] + budget <= 1024
    for row in rows:
        # Every stored score is RULER's formula on the stored generation.
        expected = (
            match_all(postprocess(row.generation.text), row.sample["gold"])
            if row.generation.status in ("ok", "length")
            else None
        )
        assert row.score is None or row.score.value == expected
    summarized = suite.summarize(rows)
    summary = getattr(summarized, "native", summarized)  # RULER's own numbers, key for key
    assert set(summary["by_length"]) == {"1024"}
    cells = [summary["by_task"][t]["1024"] for t in summary["by_task"]]
    assert summary["by_length"]["1024"] == round(sum(cells) / len(cells), 2)
    assert summary["comparable_with_published"] == "no"  # 5 samples, 2 tasks, 1K only
    typed = result.scores.summary
    assert typed.title == "RULER" and set(typed.by_length) == {1024}
    assert any("tasks not run" in d for d in summary["differences"])


def test_typed_summary_carries_rulers_table_and_round_trips() -> None:
    from longscope.suites.ruler.summary import ruler_summary
    from longscope.summary import Summary

    rows = [
        _row("niah_single_1", 4096, 1.0),
        _row("vt", 4096, 0.5),
        _row("niah_single_1", 8192, 1.0),
        _row("vt", 8192, 0.0, text=""),
    ]
    native = summarize_ruler(rows, {}, ["5 samples per task and length (RULER: 500)"])
    summary = ruler_summary(native)
    assert summary.title == "RULER" and summary.native == native
    assert summary.by_length == {4096: 75.0, 8192: 50.0}
    assert summary.headline.score == 62.5 and summary.overall == 62.5
    assert summary.view.curves == {
        "niah_single_1": {4096: 100.0, 8192: 100.0},
        "vt": {4096: 50.0, 8192: 0.0},
    }
    table = summary.view.tables[0]
    assert table.columns == ("task", "4K", "8K") and table.rows[-1] == ("average", "75.00", "50.00")
    assert summary.view.tables[1].rows[1] == ("vt", "0/1", "1/1")  # nulls
    facts = dict(summary.view.facts)
    assert (
        native["wAvg_inc"] == round((75 + 2 * 50) / 3, 2)
        and facts["effective length at 85.6"] == "<4096"
    )
    # wAvg is shown from the view's curve metrics, with its SE (analysis.curves), not twice.
    assert "wAvg (inc)" not in facts
    assert any("not comparable" in n for n in summary.notes)
    again = Summary.from_dict(summary.to_dict())
    assert again.view == summary.view and again.native["by_task"] == native["by_task"]


def test_suite_options_parse_as_minus_s_values(tmp_path) -> None:
    from longscope.params import parse_options

    pairs = ["tasks=vt,cwe", "lengths=4k,8k", "samples=3", "random-seed=7", f"essays={DATA['essays']}",
             "model-template=meta-chat"]  # fmt: skip
    values = parse_options("ruler", RulerSuite.OPTIONS, pairs)
    suite = RulerSuite.from_params(values)
    assert (suite.tasks, suite.lengths, suite.samples, suite.seed) == (
        ("vt", "cwe"),
        (4096, 8192),
        3,
        7,
    )
    assert suite.model_template == "meta-chat" and suite.data["essays"] == DATA["essays"]
    assert RulerSuite.from_params(suite.params()).params() == suite.params()
    for bad, needle in (("samples=0", "at least 1"), ("model_template=x", "use one of"),
                        ("tasks=vt,nope", "unknown 'nope'"), ("lengths=4q", "bad length")):  # fmt: skip
        with pytest.raises(UsageError, match=needle):
            parse_options("ruler", RulerSuite.OPTIONS, [bad])


def test_stored_run_scores_as_ruler_and_reports(tmp_path, qwen_tokenizer) -> None:
    """A stored run re-scored from the store: RULER's numbers by hand, nulls, failed requests."""
    from longscope.run.scoring import score_run
    from longscope.run.store import RunStore
    from longscope.suites import create_suite

    suite = create_suite("ruler", {"tasks": "niah_single_1,vt", "lengths": "4k,8k", "samples": 2})
    samples = suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    with RunStore(tmp_path) as store:
        store.put_run("r1", "ruler", {"params": suite.params(), "model": "openai/x"})
        store.put_samples("r1", samples)
        for s in samples:
            if s.task == "niah_single_1":  # right at 4K; at 8K one right, one failed request
                right = s.meta["target_length"] == 4096 or s.id.endswith("000")
                gen = Generation(f" {s.gold[0]}.", "ok") if right else Generation("", "error")
            else:  # vt: 2 of 5 names at 4K (0.4), all 5 upper-cased at 8K (1.0), one blank
                names = (
                    s.gold[:2] if s.meta["target_length"] == 4096 else [g.lower() for g in s.gold]
                )
                blank = s.id == "vt-8192-001"
                gen = Generation("\x00 \n" if blank else " ".join(names), "ok")
            store.put_generation("r1", s.id, 0, gen)
    result = score_run(tmp_path, "r1")
    native = json.loads((tmp_path / "summary.json").read_text())
    assert native["by_task"] == {
        "niah_single_1": {"4096": 100.0, "8192": 50.0},
        "vt": {"4096": 40.0, "8192": 50.0},
    }
    assert native["by_length"] == {"4096": 70.0, "8192": 50.0}
    assert native["nulls"] == {
        "niah_single_1": {"4096": "0/2", "8192": "1/2"},
        "vt": {"4096": "0/2", "8192": "1/2"},
    }
    assert native["statuses"]["niah_single_1"]["8192"] == {"ok": 1, "error": 1}
    assert native["wAvg_inc"] == round((70 + 2 * 50) / 3, 2) and native["wAvg_dec"] == round(
        (2 * 70 + 50) / 3, 2
    )
    assert (
        native["effective_length"]["50.0"] == ">8192"
        and native["effective_length"]["85.6"] == "<4096"
    )
    typed = result.summary
    assert typed.title == "RULER" and typed.by_length == {4096: 70.0, 8192: 50.0}
    assert typed.headline.score == 60.0


@pytest.mark.model
def test_cli_run_with_suite_options_on_the_embedded_model(tmp_path) -> None:
    """`longscope run ruler -S ...` on the embedded model: RULER's header, summary and report."""
    from ...cli_helper import longscope

    run = longscope(
        "run", "ruler", "--model", "llamacpp/gemma3-270m", "--lengths", "1k",
        "-S", "tasks=niah_single_1", "-S", "samples=1", "-S", f"essays={DATA['essays']}",
        "--max-tokens", "12", "-o", str(tmp_path), "-q", timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "RULER" in run.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["suite"] == "ruler" and set(summary["by_length"]) == {"1024"}
    assert summary["comparable_with_published"] == "no"
    assert summary["nulls"]["niah_single_1"]["1024"] in ("0/1", "1/1")
    report = longscope("report", str(tmp_path))
    assert report.returncode == 0, report.stderr[-2000:]
    assert "not comparable with RULER's published table" in " ".join(report.stdout.split())
    bad = longscope("run", "ruler", "--model", "llamacpp/gemma3-270m", "-S", "samples=0")
    assert (
        bad.returncode == 2
        and "samples" in bad.stderr
        and len(bad.stderr.strip().splitlines()) == 1
    )
