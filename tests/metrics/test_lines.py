"""LongBench Pro line metrics: hand-computed cases for every metric and every quirk in the spec."""

import math

import pytest

from longscope.metrics.lines import (
    accuracy,
    answer_area,
    f1,
    gold_items,
    ndcg,
    pairwise_accuracy,
    prediction_lines,
    sub_em,
)


def lines(reply: str) -> list[str]:
    return prediction_lines(reply)


# --- answer area and normalisation -------------------------------------------------------------
def test_answer_area_is_after_the_last_answer_marker() -> None:
    assert answer_area("[Answer] draft\nthinking...\n[Answer]  final  ") == "final"


def test_chinese_marker_only_when_english_is_absent() -> None:
    assert answer_area("[答案] 北京") == "北京"
    assert answer_area("[答案] 北京 [Answer] Beijing") == "Beijing"
    # the English marker wins whenever present, even before a later Chinese one
    assert answer_area("[Answer] Beijing\n[答案] 北京") == "Beijing\n[答案] 北京"


def test_no_marker_means_the_whole_reply() -> None:
    assert answer_area("  just text \n") == "just text"


def test_lines_are_lowercased_stripped_collapsed_and_keep_blanks_and_punctuation() -> None:
    assert lines("[Answer] Paris.\n\n  - New   York ") == ["paris.", "", "- new york"]


def test_gold_items_are_lowercased_stripped_collapsed() -> None:
    assert gold_items(["  New\tYork ", "PARIS"]) == ["new york", "paris"]


# --- accuracy ----------------------------------------------------------------------------------
def test_accuracy_compares_first_line_only() -> None:
    assert accuracy(lines("[Answer] B\nA"), gold_items(["B"])) == 1.0
    assert accuracy(lines("[Answer] A\nB"), gold_items(["B"])) == 0.0
    assert accuracy(lines("[Answer] B."), gold_items(["B"])) == 0.0  # no punctuation removal


# --- F1 ----------------------------------------------------------------------------------------
def test_f1_is_set_f1_over_lines() -> None:
    assert f1(["a", "b", "x"], ["a", "b", "c"]) == pytest.approx(2 / 3)
    assert f1(["a", "a", "b"], ["a", "b"]) == 1.0  # sets: duplicates do not count twice
    assert f1(["x"], ["a"]) == 0.0


def test_f1_blank_line_is_an_item_that_costs_precision() -> None:
    pred = lines("[Answer] a\n\nb")  # ["a", "", "b"]
    assert f1(pred, ["a", "b"]) == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


# --- SubEM -------------------------------------------------------------------------------------
def test_subem_is_recall_and_extra_lines_are_free() -> None:
    assert sub_em(["a", "c", "z", "w"], ["a", "b", "c"]) == pytest.approx(2 / 3)
    assert sub_em(["a", "b", "c", "d", "e"], ["a", "b", "c"]) == 1.0


# --- NDCG --------------------------------------------------------------------------------------
def test_ndcg_hand_computed() -> None:
    # gold relevance: a=3, b=2, c=1; prediction order b, a, c
    dcg = 2 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(["b", "a", "c"], ["a", "b", "c"]) == pytest.approx(dcg / idcg)
    assert ndcg(["a", "b", "c"], ["a", "b", "c"]) == pytest.approx(1.0)


def test_ndcg_is_cut_at_the_gold_length() -> None:
    # k = 2: the third prediction line is not counted even though it is relevant
    assert ndcg(["x", "b", "a"], ["a", "b"]) == pytest.approx(
        (1 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


def test_ndcg_repeated_line_keeps_its_last_position() -> None:
    # "a" appears at 0 and 2: its score is that of position 2, so b ranks first
    assert ndcg(["a", "b", "a"], ["a", "b"]) == pytest.approx(ndcg(["b", "a"], ["a", "b"]))


def test_ndcg_empty_lists_score_zero() -> None:
    assert ndcg([], ["a"]) == 0.0 and ndcg(["a"], []) == 0.0


# --- Pairwise ----------------------------------------------------------------------------------
def test_pairwise_hand_computed() -> None:
    # gold a<b<c<d; pred a, c, b, d: all pairs but (b, c) in order -> 5 of C(4, 2) = 6
    assert pairwise_accuracy(["a", "c", "b", "d"], ["a", "b", "c", "d"]) == pytest.approx(5 / 6)


def test_pairwise_denominator_is_the_predicted_pair_count() -> None:
    # the same 3 correct pairs, but 5 predicted lines: 3 / C(5, 2) = 0.3
    assert pairwise_accuracy(["a", "b", "c", "x", "y"], ["a", "b", "c"]) == pytest.approx(0.3)


def test_pairwise_repeated_line_keeps_its_last_position() -> None:
    # "a" last at index 2, after "b": the pair (a, b) is out of order; C(3, 2) = 3
    assert pairwise_accuracy(["a", "b", "a"], ["a", "b"]) == 0.0
    assert pairwise_accuracy(["b", "a", "b"], ["a", "b"]) == pytest.approx(1 / 3)


def test_pairwise_needs_two_items_each_side() -> None:
    assert pairwise_accuracy(["a"], ["a", "b"]) == 0.0
    assert pairwise_accuracy(["a", "b"], ["a"]) == 0.0


def test_ndcg_matches_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import random

    rng = random.Random(0)
    for _ in range(200):
        gold = rng.sample("abcdefgh", rng.randint(1, 6))
        pred = [rng.choice("abcdefghij") for _ in range(rng.randint(1, 8))]
        k = len(gold)
        qrel = {"q": {doc: k - i for i, doc in enumerate(gold)}}
        scores = {}
        for j, doc in enumerate(pred):
            scores[doc] = float(len(pred) - j)
        evaluator = pytrec_eval.RelevanceEvaluator(qrel, {f"ndcg_cut.{k}"})
        result = evaluator.evaluate({"q": scores})["q"]
        assert ndcg(pred, gold) == pytest.approx(result[f"ndcg_cut_{k}"], abs=1e-4), (pred, gold)


def test_subem_with_no_gold_scores_zero_not_full_marks() -> None:
    # nothing to find is not "everything found": a row without gold must not lift the average
    assert sub_em(["a", "b"], []) == 0.0


def test_pairwise_a_repeated_gold_item_is_no_ordered_pair() -> None:
    # "a before b in the prediction" is strict: an item is never before itself
    assert pairwise_accuracy(["a", "b"], ["a", "a"]) == 0.0
