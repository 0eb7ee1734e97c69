"""ROUGE-L: equal to the official `rouge` 1.0.1 package wherever it works; real values where it fails."""

import random
import sys

import pytest

from longscope.metrics.rouge import RougeL, rouge_l, split_sentences

WORDS = [
    "the",
    "a",
    "model",
    "reads",
    "long",
    "context",
    "and",
    "finds",
    "facts",
    "in",
    "every",
    "part",
    "of",
    "it",
    "quickly",
    "or",
    "slowly",
]


def _text(rng: random.Random, sentences: int, words: int) -> str:
    return (
        ". ".join(
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, words)))
            for _ in range(sentences)
        )
        + "."
    )


def test_matches_the_official_package_on_random_texts() -> None:
    rouge = pytest.importorskip("rouge")
    scorer = rouge.Rouge(metrics=["rouge-l"])
    rng = random.Random(1)
    for _ in range(300):
        hyp, ref = _text(rng, rng.randint(1, 4), 12), _text(rng, rng.randint(1, 4), 12)
        official = scorer.get_scores(hyp, ref)[0]["rouge-l"]
        ours = rouge_l(hyp, ref)
        assert (ours.f, ours.p, ours.r) == pytest.approx(
            (official["f"], official["p"], official["r"])
        ), (hyp, ref)
        assert not ours.official_fails


def test_hand_computed_value() -> None:
    # one sentence each; LCS "the cat the mat" -> words {the, cat, mat}; counts are UNIQUE tokens:
    # m = |{the, cat, sat, on, mat}| = 5, n = |{the, cat, mat}| = 3
    score = rouge_l("the cat the mat", "the cat sat on the mat")
    assert score.r == pytest.approx(3 / 5) and score.p == pytest.approx(1.0)
    assert score.f == pytest.approx(2 * 1.0 * 0.6 / (1.0 + 0.6 + 1e-8))


def test_long_text_without_periods_gets_its_real_value_where_the_package_fails() -> None:
    rouge = pytest.importorskip("rouge")
    rng = random.Random(2)
    hyp = " ".join(rng.choice(WORDS) for _ in range(700))
    ref = " ".join(rng.choice(WORDS) for _ in range(700))
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1000)
        with pytest.raises(RecursionError):
            rouge.Rouge(metrics=["rouge-l"]).get_scores(hyp, ref)
        sys.setrecursionlimit(100000)
        official_deep = rouge.Rouge(metrics=["rouge-l"]).get_scores(hyp, ref)[0]["rouge-l"]["f"]
    finally:
        sys.setrecursionlimit(limit)
    ours = rouge_l(hyp, ref)
    assert ours.official_fails
    assert ours.f == pytest.approx(official_deep) and ours.f > 0.5


def test_sentences_split_on_ascii_period_only() -> None:
    assert split_sentences("a b. c。d  e.") == ["a b", "c。d e"]


def test_a_blank_sentence_is_one_empty_token_as_in_the_package() -> None:
    # "a b. . c" has the sentences "a b", "" and "c"; the package splits each on " ", so the blank
    # sentence is the token "" and matches the reference's blank sentence: m = n = |{a, b, "", c}|
    # = 4, union LCS {a, b, ""} = 3 -> P = R = 3/4 (the official package gives the same)
    score = rouge_l("a b. . c", "a b. . d")
    assert (score.p, score.r) == (0.75, 0.75)
    assert score.f == pytest.approx(2 * 0.75 * 0.75 / (1.5 + 1e-8))
    rouge = pytest.importorskip("rouge")
    official = rouge.Rouge(metrics=["rouge-l"]).get_scores("a b. . c", "a b. . d")[0]["rouge-l"]
    assert (score.f, score.p, score.r) == pytest.approx(
        (official["f"], official["p"], official["r"])
    )


@pytest.mark.parametrize(
    ("prediction", "reference", "error"),
    [
        ("", "a b.", "empty hypothesis"),
        ("..", "a b.", "empty hypothesis"),  # periods only: no sentence
        ("a b.", "", "empty reference"),
        ("a b.", "...", "empty reference"),
    ],
)
def test_no_sentence_scores_zero_in_f_p_and_r(prediction: str, reference: str, error: str) -> None:
    assert rouge_l(prediction, reference) == RougeL(0.0, 0.0, 0.0, official_error=error)
