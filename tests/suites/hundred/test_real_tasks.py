"""100-LongBench QA and summary tasks on hand-written LongBench v1 fixtures, and the QA filter."""

from pathlib import Path

import pytest

from longscope.metrics.qa import best_f1, token_f1
from longscope.models.base import UsageError
from longscope.suites import create_suite
from longscope.suites.base import BuildContext, ScoredRow
from longscope.suites.hundred.sources import split_documents
from longscope.types import Generation, GenerationConfig

FIXTURES = Path(__file__).parents[2] / "fixtures"
SOURCES = {
    "single_doc_qa": str(FIXTURES / "longbench_v1_qa.jsonl"),
    "multi_doc_qa": str(FIXTURES / "longbench_v1_hotpotqa.jsonl"),
    "single_doc_sum": str(FIXTURES / "longbench_v1_gov_report.jsonl"),
    "multi_doc_sum": str(FIXTURES / "longbench_v1_multi_news.jsonl"),
}


def _suite(**extra):
    params = {
        "tasks": list(SOURCES),
        "lengths": [2048, 4096],
        "samples": 2,
        "sources": SOURCES,
        **extra,
    }
    return create_suite("hundred", params)


def test_gold_passages_are_named_and_present(qwen_tokenizer) -> None:
    suite = _suite()
    for sample in suite.build(
        BuildContext(qwen_tokenizer, "completion", GenerationConfig(max_tokens=64))
    ):
        if sample.meta.get("no_context"):
            assert sample.context == "" and "unanswerable" in sample.question
            continue
        for where in sample.meta["gold_passages"]:
            assert f"Passage {where}:" in sample.context
            assert str(where) in sample.question
        assert sample.meta["achieved_length"] <= sample.meta["target_length"]
        prompt, _ = suite.template.render(sample, "completion")
        assert sample.meta["achieved_length"] == len(qwen_tokenizer.encode(prompt))


def test_multi_document_contexts_split_on_their_marks() -> None:
    assert split_documents("Passage 1:\nA.\nPassage 2:\nB.") == ["A.", "B."]
    assert split_documents("Document 1:\nA.\nDocument 2:\nB.") == ["A.", "B."]


def test_token_f1_hand_computed() -> None:
    assert token_f1("The Orla River.", "Orla River") == 1.0  # articles and punctuation dropped
    assert token_f1("the orla", "orla river") == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert best_f1("3", ["three", "3"]) == 1.0


def _row(sample, text):
    suite_score = _suite().score(sample.public(), Generation(text, "ok"))
    return ScoredRow(sample.public(), 0, Generation(text, "ok"), suite_score)


def test_qa_filter_drops_questions_answered_from_memory_at_every_length(qwen_tokenizer) -> None:
    suite = _suite()
    samples = suite.build(
        BuildContext(qwen_tokenizer, "completion", GenerationConfig(max_tokens=64))
    )
    rows = []
    for sample in samples:
        if sample.meta.get("no_context"):
            # the model "knows" the capital of France without any context, and nothing else
            text = "Paris" if sample.meta["source_row"] == "qa4" else "unanswerable"
        else:
            text = sample.gold[0]
        rows.append(_row(sample, text))
    summary = suite.summarize(rows)
    dropped = summary["qa_filter"]["dropped"].get("single_doc_qa", {})
    kept_qa4 = [
        s for s in samples if s.meta.get("source_row") == "qa4" and not s.meta.get("no_context")
    ]
    assert sum(dropped.values()) == len(kept_qa4)
    assert summary["by_task"]["single_doc_qa"]["2048"] == 100.0


def test_summaries_are_scored_whole_not_first_line(qwen_tokenizer) -> None:
    suite = _suite()
    sample = next(
        s
        for s in suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
        if s.task == "single_doc_sum"
    )
    gold = sample.gold[0]
    first, rest = gold[: len(gold) // 2], gold[len(gold) // 2 :]
    whole = suite.score(sample.public(), Generation(first + "\n" + rest, "ok")).value
    head = suite.score(sample.public(), Generation(first, "ok")).value
    assert whole > head


def test_metric_flag_is_parsed_not_truthy() -> None:
    # The reference code parsed "--original_metric False" as True; here the value is the name.
    assert _suite(metric="deterministic").metric == "deterministic"
    assert _suite(metric="judge").metric == "judge"
    with pytest.raises(UsageError, match="unknown metric 'False'"):
        _suite(metric="False")


def test_real_tasks_without_a_source_say_how_to_get_one() -> None:
    with pytest.raises(UsageError, match=r"need a real source: pass --source TASK=FILE\.jsonl"):
        create_suite("hundred", {"tasks": ["single_doc_qa"]})
