"""100-LongBench's per-answer score, rule by rule: which metric applies, and the judge's verdicts.

Hand-computed values: token F1 with SQuAD normalisation, ROUGE-L over the whole summary (never its
first line), the judge's verdict only where the judge applies, and 0/1 for the synthetic tasks.
"""

from __future__ import annotations

import pytest

from longscope.metrics.rouge import rouge_l
from longscope.suites.hundred.suite import HundredSuite, grade
from longscope.types import Generation, Judgement

from ...factories import make_suite

KEY = "0f8fad5b-d9cb-469f-a165-70867728950e"
OTHER = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def _sample(metric: str | None, gold: list[str], **meta) -> dict:
    return {"task": "single_doc_qa", "gold": gold, "meta": {"metric": metric, **meta}}


def test_token_f1_hand_computed() -> None:
    score = make_suite(HundredSuite).score(
        _sample("f1", ["Orla River", "x"]), Generation("the Orla", "ok")
    )
    # 1 common token: precision 1/1, recall 1/2 -> F1 2/3; the best of the golds counts
    assert score.value == pytest.approx(2 / 3) and score.max == 1.0
    assert score.evidence["metric"] == "token F1" and score.evidence["gold"] == ["Orla River", "x"]
    empty = make_suite(HundredSuite).score(_sample("f1", ["Orla River"]), Generation("", "ok"))
    assert empty.value == 0.0


def test_rouge_l_scores_the_whole_summary_lower_cased() -> None:
    gold = "The committee approved the budget after a long debate"
    answer = "Summary:\nthe committee APPROVED the budget"
    score = make_suite(HundredSuite).score(
        _sample("rouge_l", [gold, "unrelated words"]), Generation(answer, "ok")
    )
    assert score.value == pytest.approx(rouge_l(answer.lower(), gold.lower()).f)
    assert score.value > 0.5 and score.evidence["metric"] == "ROUGE-L F"


@pytest.mark.parametrize(
    ("judgement", "value", "failed"),
    [
        (None, 0.0, "not judged yet"),
        (Judgement(0.75, "gguf:judge", ""), 0.75, None),
        (Judgement(None, "gguf:judge", "no JSON verdict"), 0.0, "no JSON verdict"),
    ],
)
def test_judge_verdicts_replace_f1_and_rouge(judgement, value, failed) -> None:
    suite = make_suite(HundredSuite, metric="judge")
    for metric in ("f1", "rouge_l"):
        sample = _sample(metric, ["Orla River"])
        score = suite.score(sample, Generation("Orla River", "ok"), judgement=judgement)
        assert score.value == value and score.evidence["metric"] == "judge"
        assert score.evidence.get("judge_failed") == failed


def test_judge_mode_leaves_no_context_and_synthetic_tasks_to_their_rules() -> None:
    suite = make_suite(HundredSuite, metric="judge")
    no_context = _sample("f1", ["Orla River"], no_context=True)
    assert suite.score(no_context, Generation("Orla River", "ok")).value == 1.0
    kv = {"task": "kv_retrieval", "gold": [KEY], "meta": {"answer": KEY}}
    assert suite.score(kv, Generation(f"The value is {KEY}.", "ok")).value == 1.0
    # without a judge, f1 rows are never "not judged"; an article alone is no answer (SQuAD)
    assert (
        make_suite(HundredSuite).score(_sample("f1", ["Orla"]), Generation("Orla", "ok")).value
        == 1.0
    )
    assert make_suite(HundredSuite).score(_sample("f1", ["a"]), Generation("a", "ok")).value == 0.0


@pytest.mark.parametrize(
    ("task", "answer", "gold", "value"),
    [
        ("kv_retrieval", f"{OTHER} then {KEY.upper()}", KEY, 1.0),  # the last UUID, any case
        ("kv_retrieval", f"{KEY} then {OTHER}", KEY, 0.0),
        ("kv_retrieval", f"nothing here\n{KEY}", KEY, 0.0),  # only the first line counts
        ("kv_retrieval", f"  \n{KEY}", KEY, 1.0),  # leading blank lines are stripped first
        ("counting_stars", "Option 3, not 4", "3", 1.0),  # the first number
        ("counting_stars", "4 or 3", "3", 0.0),
        ("passage_count", "", "7", 0.0),
        ("passage_count", "There are 12 unique passages.", "12", 1.0),
    ],
)
def test_synthetic_grades(task: str, answer: str, gold: str, value: float) -> None:
    score = grade(task, answer, gold)
    assert score.value == value and score.max == 1.0 and score.evidence["gold"] == gold


def test_the_suite_summary_applies_its_own_qa_filter_and_records_its_metric() -> None:
    from longscope.types import Score, ScoredRow

    def row(no_context: bool, value: float, text: str) -> ScoredRow:
        meta = {"metric": "f1", "source_row": "r1", "target_length": 0 if no_context else 2048}
        meta |= {"no_context": True} if no_context else {"achieved_length": 2000}
        sample = {"id": f"qa-{no_context}", "task": "single_doc_qa", "meta": meta}
        return ScoredRow(sample, 0, Generation(text, "ok"), Score(value, 1.0))

    # answered with no context at F1 0.6: dropped at the default 0.5, kept with a filter of 0.7
    rows = [row(True, 0.6, "Orla"), row(False, 1.0, "Orla River")]
    default = make_suite(HundredSuite, tasks=("kv_retrieval",)).summarize(rows).native
    assert default["metric"] == "deterministic"
    assert default["qa_filter"] == {"threshold": 0.5, "dropped": {"single_doc_qa": {"2048": 1}}}
    assert default["by_task"] == {}
    strict = make_suite(HundredSuite, tasks=("kv_retrieval",), qa_filter=0.7).summarize(rows).native
    assert strict["qa_filter"] == {"threshold": 0.7, "dropped": {}}
    assert strict["by_task"] == {"single_doc_qa": {"2048": 100.0}}
