"""LongBench Pro loading, filters, prompts, truncation, and a few rows on the embedded model."""

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.base import BuildContext
from longscope.suites.longbench_pro.loader import load_file, select
from longscope.suites.longbench_pro.suite import SEPARATOR, LongBenchProSuite, middle_truncate
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import GenerationConfig

DATA = Path(__file__).parents[2] / "fixtures" / "longbench_pro_mini.json"


def _rows() -> list[dict]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_fixture_has_one_row_per_secondary_task_per_language() -> None:
    rows = load_file(DATA).rows
    assert len(rows) == 50
    assert len({(r.secondary_task, r.language) for r in rows}) == 50


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("answer"), "row 3: field 'answer': missing"),
        (lambda r: r.update(answer="Paris"), "row 3: field 'answer': Input should be a valid list"),
        (
            lambda r: r.update(secondary_task="T99 Nothing"),
            "row 3: field 'secondary_task': unknown secondary task",
        ),
        (
            lambda r: r.update(language="French"),
            "row 3: field 'language': Input should be 'English' or 'Chinese'",
        ),
        (lambda r: r.update(token_length="300k"), "row 3: field 'token_length'"),
        (
            lambda r: r.update(primary_task="T5. Attribution & Citation Alignment"),
            "row 3: field 'row': secondary task 'T1.2 Key-Snippet Retrieval' belongs to",
        ),
    ],
)
def test_malformed_rows_fail_with_file_row_and_field(tmp_path, edit, message) -> None:
    rows = _rows()
    edit(rows[2])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(UsageError) as info:
        load_file(bad)
    assert str(bad) in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value)


def test_jsonl_and_parquet_load_the_same_rows(tmp_path) -> None:
    rows = _rows()
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    assert load_file(jsonl).rows == load_file(DATA).rows
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    assert load_file(tmp_path / "rows.parquet").rows == load_file(DATA).rows


def test_filters_one_flag_each() -> None:
    rows = load_file(DATA).rows
    english_to_32k = select(rows, language=["en"], max_length="32k")
    assert english_to_32k and all(
        r.language == "English" and r.token_length in ("8k", "16k", "32k") for r in english_to_32k
    )
    assert {r.secondary_task for r in select(rows, task=["T3"])} == {
        "T3.1 Multi-Doc Integration QA",
        "T3.2 Single-Hop Fact QA",
    }
    assert {r.secondary_task for r in select(rows, task=["T3.2"])} == {"T3.2 Single-Hop Fact QA"}
    assert all(r.difficulty == "Hard" for r in select(rows, difficulty=["Hard"]))
    assert all(r.contextual_requirement == "Partial" for r in select(rows, requirement=["Partial"]))
    with pytest.raises(UsageError, match="unknown task 'T99'"):
        select(rows, task=["T99"])
    with pytest.raises(UsageError, match="unknown length '7k'"):
        select(rows, length=["7k"])


def test_prompt_is_context_four_newlines_question_in_one_user_message() -> None:
    suite = LongBenchProSuite.from_params({"data": str(DATA), "modes": ["nonthinking", "thinking"]})
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    row = next(r for r in _rows() if r["id"] == "mini-T3.2-en")
    by_id = {s.id: s for s in samples}
    for mode, question in (
        ("nonthinking", row["question_nonthinking"]),
        ("thinking", row["question_thinking"]),
    ):
        prompt, messages = suite.template.render(by_id[f"mini-T3.2-en#{mode}"], "chat")
        assert prompt == "" and len(messages) == 1 and messages[0].role == "user"
        assert messages[0].content == row["context"] + "\n\n\n\n" + question
    assert by_id["mini-T3.2-en#nonthinking"].max_tokens == 1024
    thinking = by_id["mini-T3.2-en#thinking"]
    assert (thinking.max_tokens, thinking.thinking_budget) == (1024, 8192 - 1024)
    # requests sharing a context run back to back: both languages' documents form two blocks
    contexts = [s.context for s in samples]
    assert sum(1 for a, b in itertools.pairwise(contexts) if a != b) == 1


@pytest.mark.parametrize("limit", [None, 120])
def test_the_prompt_is_stripped_as_the_official_runner_strips_it(tmp_path, limit) -> None:
    # modules/model_manager.py:31 strips f"{context}\n\n\n\n{question}" before counting and
    # cutting it: white space opening the context or closing the question is never sent.
    rows = _rows()
    row = next(r for r in rows if r["id"] == "mini-T1.1-en")
    row["context"] = " \n\t" + row["context"]
    row["question_nonthinking"] += "\n\n "
    data = tmp_path / "rows.json"
    data.write_text(json.dumps([row]), encoding="utf-8")
    params = {"data": str(data), "max_input_tokens": limit}
    suite = LongBenchProSuite.from_params({k: v for k, v in params.items() if v})
    (sample,) = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    _, messages = suite.template.render(sample, "chat")
    official = (row["context"] + SEPARATOR + row["question_nonthinking"]).strip()
    if limit is None:
        assert not sample.meta["truncated"] and messages[0].content == official
    else:
        tokenizer = QwenTokenizer()
        ids = tokenizer.encode(official)
        assert sample.meta["truncated"]
        assert messages[0].content == tokenizer.decode(ids[: limit // 2] + ids[-(limit // 2) :])


def test_thinking_budget_for_256k_models() -> None:
    suite = LongBenchProSuite.from_params({"data": str(DATA), "modes": ["thinking"]})
    ctx = BuildContext(QwenTokenizer(), "chat", GenerationConfig(), context_length=262144)
    assert {(s.max_tokens, s.thinking_budget) for s in suite.build(ctx)} == {(1024, 32768 - 1024)}


def test_middle_truncation_keeps_head_and_tail_tokens() -> None:
    tokenizer = QwenTokenizer()
    text = " ".join(f"word{i}" for i in range(5000))
    out, tokens, truncated = middle_truncate(text, 1000, tokenizer)
    assert truncated and tokens == 1000
    ids = tokenizer.encode(text)
    assert out == tokenizer.decode(ids[:500] + ids[-500:])
    assert out.startswith("word0 word1") and out.endswith("word4999")
    short, _, was_cut = middle_truncate("short text", 1000, tokenizer)
    assert short == "short text" and not was_cut


def test_truncated_sample_keeps_the_question_whole() -> None:
    suite = LongBenchProSuite.from_params({"data": str(DATA), "max_input_tokens": 120})
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    row = {r["id"]: r for r in _rows()}["mini-T1.1-en"]
    sample = next(s for s in samples if s.id == "mini-T1.1-en#nonthinking")
    assert sample.meta["truncated"]
    assert sample.question == row["question_nonthinking"]
    prompt = sample.context + SEPARATOR + sample.question
    assert len(QwenTokenizer().encode(prompt)) <= 121


@pytest.mark.model
def test_a_few_rows_on_the_embedded_model(tmp_path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "longscope.cli",
            "run",
            "longbench-pro",
            "-S",
            f"data={DATA}",
            "--model",
            "llamacpp/gemma3-270m",
            "-S",
            "language=zh",
            "-S",
            "task=T3,T8",
            "--limit",
            "3",
            "--repeats",
            "2",
            "--max-tokens",
            "16",
            "--temperature",
            "0",
            "-o",
            str(tmp_path),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())["modes"]["nonthinking"]
    assert summary["total_questions_num"] == 3 and summary["total_samples_num"] == 6
    assert summary["inference_iterations"] == 2
    assert set(summary["average_language_metric"]) == {"Chinese"}
    assert 0.0 <= summary["average_overall_metric"] <= 100.0


def test_summary_notes_the_share_of_thinking_forced_closed() -> None:
    from longscope.suites.longbench_pro.summary import budget_notes
    from longscope.types import BudgetUse, Generation, ScoredRow

    def row(mode: str, status: str, forced: bool | None) -> ScoredRow:
        use = (
            None if forced is None else BudgetUse(7168, 7168 if forced else 900, forced, 10, False)
        )
        sample = {"meta": {"mode": mode}}
        return ScoredRow(sample, 0, Generation("x", status, budget=use), None)

    rows = [row("thinking", "ok", True), row("thinking", "ok", False), row("thinking", "ok", False)]
    rows += [row("thinking", "length", False), row("thinking", "error", None)]
    rows += [row("nonthinking", "ok", None)]
    (line,) = budget_notes(rows)
    assert line.startswith("thinking: 1 of 4 answers (25.0%) had their thinking closed at its")
    assert "(7168 tokens;" in line and line.endswith("1 (25.0%) cut at the answer budget")


def test_the_official_summary_is_dated_by_the_runs_last_stored_answer() -> None:
    """The official `date` is the UTC day of the last answer the store holds, so a stored run
    reports the same bytes any day (it was the day the report ran); without stored times, today."""
    import datetime as dt

    from longscope.suites.longbench_pro.summary import _answered_on
    from longscope.types import Generation, ScoredRow

    late = dt.datetime(2020, 1, 2, 23, 59, 59, tzinfo=dt.UTC).timestamp()
    early = dt.datetime(2020, 1, 1, 0, 0, 1, tzinfo=dt.UTC).timestamp()
    rows = [ScoredRow({}, 0, Generation("x", "ok"), None, when) for when in (early, late, None)]
    assert _answered_on(rows) == "2020-01-02"
    assert _answered_on(rows[:1]) == "2020-01-01"
    assert _answered_on(rows[2:]) is None
