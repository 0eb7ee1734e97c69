"""Token F1 (100-LongBench's QA metric): hand-computed values where precision and recall differ."""

import pytest

from longscope.metrics.qa import best_f1, normalize_qa, token_f1


def test_token_f1_with_extra_predicted_words() -> None:
    # "a b c x" vs "a b": 2 common tokens, precision 2/4, recall 2/2 -> F1 2 * 0.5 * 1 / 1.5
    assert token_f1("alpha beta gamma delta", "alpha beta") == pytest.approx(2 / 3)
    # the other way round: precision 1, recall 0.5 -> the same 2/3
    assert token_f1("alpha beta", "alpha beta gamma delta") == pytest.approx(2 / 3)
    # precision 1/3, recall 1/2 -> 2 * (1/6) / (5/6) = 0.4
    assert token_f1("alpha x y", "alpha z") == pytest.approx(0.4)


def test_token_f1_counts_repeated_tokens_as_a_bag() -> None:
    # prediction "a a b", gold "a b b": common = min counts = 1 + 1 = 2; P = R = 2/3
    assert token_f1("alpha alpha beta", "alpha beta beta") == pytest.approx(2 / 3)


def test_best_f1_takes_the_closest_gold_and_no_gold_scores_zero() -> None:
    assert best_f1("alpha beta", ["alpha", "alpha beta", "gamma"]) == 1.0
    assert best_f1("alpha beta", ["alpha beta gamma delta"]) == pytest.approx(2 / 3)
    assert best_f1("alpha", []) == 0.0


def test_normalize_qa_drops_case_punctuation_and_articles_only() -> None:
    assert normalize_qa("The  Orla, an old River!") == "orla old river"
    # "a"/"an"/"the" inside words stay
    assert normalize_qa("Theory anaconda") == "theory anaconda"
