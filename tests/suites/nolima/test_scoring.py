"""NoLiMa's scorer against hand cases from the authors' rules (async_evaluate._evaluate_response)."""

from __future__ import annotations

import pytest

from longscope.suites.nolima.published import published_rows
from longscope.suites.nolima.scoring import (
    PUBLISHED_METRIC,
    base_score,
    below_half,
    contains,
    effective,
    effective_threshold,
    exact_match,
    in_published_score,
    lastline_contains,
    lastline_exact_match,
    score_response,
)

# (response, gold answers, EM, contains, lastline_EM, lastline_contains)
CASES = [
    ("Orla", ["Orla"], 1, 1, 1, 1),
    ("  Orla \n", ["Orla"], 1, 1, 1, 1),  # EM strips the ends only
    ("orla", ["Orla"], 0, 0, 0, 0),  # case counts everywhere
    ("ORLA", ["Orla"], 0, 0, 0, 0),
    ("Orla.", ["Orla"], 0, 1, 0, 1),  # punctuation breaks EM, not contains
    ("The painter was Orla, I think.", ["Orla"], 0, 1, 0, 1),
    ("Or la", ["Orla"], 0, 0, 0, 0),  # no whitespace normalisation
    ("Orlando", ["Orla"], 0, 1, 0, 1),  # contains is a plain substring test
    ("It was the brass owl.", ["brass owl", "owl"], 0, 1, 0, 1),  # multi-word gold
    ("brass  owl", ["brass owl"], 0, 0, 0, 0),
    ("owl", ["brass owl", "owl"], 1, 1, 1, 1),  # any gold answer counts
    ("", ["Orla"], 0, 0, 0, 0),  # empty response
    ("   \n ", ["Orla"], 0, 0, 0, 0),
    ("Orla", [], 0, 0, 0, 0),  # no gold answers: nothing counts
    ("anything", [""], 0, 1, 0, 1),  # an empty gold answer is inside every response
    ("", [""], 1, 1, 1, 1),
    ("Thinking about it...\nOrla", ["Orla"], 0, 1, 1, 1),  # last line only for lastline_*
    ("Orla\nNo wait, Bram", ["Orla"], 0, 1, 0, 0),
    ("Answer:\nOrla\n\n", ["Orla"], 0, 1, 1, 1),  # trailing blank lines are stripped first
    ("Orla\r\nBram", ["Bram"], 0, 1, 1, 1),  # lines split on \n only
    ("Bram\r\nOrla", ["Bram"], 0, 1, 0, 0),  # so `Bram\r` stays in the first line
]


@pytest.mark.parametrize(("response", "gold", "em", "cont", "last_em", "last_cont"), CASES)
def test_metrics_follow_the_authors_rules(
    response: str, gold: list[str], em: int, cont: int, last_em: int, last_cont: int
) -> None:
    assert exact_match(response, gold) == em
    assert contains(response, gold) == cont
    assert lastline_exact_match(response, gold) == last_em
    assert lastline_contains(response, gold) == last_cont
    assert score_response(response, gold, "EM") == em
    assert score_response(response, gold, "contains") == cont
    assert score_response(response, gold, "lastline_EM") == last_em
    assert score_response(response, gold, "lastline_contains") == last_cont


def test_published_runs_use_contains() -> None:
    assert PUBLISHED_METRIC == "contains"


def test_unknown_metric_and_string_gold_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown NoLiMa metric 'F1'"):
        score_response("Orla", ["Orla"], "F1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        score_response("Or", "Orla", "EM")


@pytest.mark.parametrize(
    ("name", "counted"),
    [
        ("0137_T01_onehop", True),
        ("0137_T01_twohop", True),
        ("0137_T01_direct", False),
        ("0137_T01_onehop_direct", False),  # the notebook's test is a substring test
    ],
)
def test_direct_tests_stay_out_of_the_published_score(name: str, counted: bool) -> None:
    assert in_published_score(name) is counted


def test_base_score_is_the_best_of_the_three_short_lengths() -> None:
    scores = {250: 81.0, 500: 90.0, 1000: 75.0, 2000: 95.0}
    base = base_score(scores)
    # 2000 is not a short length: its higher score stays out of the base.
    assert base.score == 90.0 and base.lengths == (250, 500, 1000) and base.missing == ()
    partial = base_score({1000: 75.0, 2000: 10.0})
    assert partial.score == 75.0 and partial.missing == (250, 500)
    assert base_score({2000: 10.0}).score is None


def test_the_mean_of_the_short_lengths_cannot_give_a_published_base() -> None:
    """Jamba 1.5 Mini: base 92.4 with 76.3 at 1K; a mean would need 250 and 500 above 100%."""
    jamba = next(r for r in published_rows() if r.model == "Jamba 1.5 Mini")
    needed = (3 * (jamba.base + 0.05) - jamba.scores[1000]) / 2
    assert needed > 100.0
    # The best of the three fits every row: no base is below its own 1K score.
    assert all(r.base >= r.scores[1000] for r in published_rows())


def test_a_base_of_zero_gives_no_effective_length() -> None:
    assert effective({250: 0.0, 500: 0.0, 1000: 0.0, 2000: 0.0}) is None
    assert effective({2000: 50.0}) is None


def test_effective_length_stops_at_85_percent_of_the_base_score() -> None:
    base = 80.0
    bar = effective_threshold(base)
    assert bar == pytest.approx(68.0)
    short = {250: base, 500: base, 1000: base}
    # A length exactly at the bar passes; the first one below it ends the effective length.
    result = effective({**short, 2000: bar, 4000: bar - 0.01, 8000: 79.0})
    assert result is not None
    assert result.tokens == 2000
    assert result.threshold == pytest.approx(68.0)
    shorter = effective({**short, 2000: bar - 0.01, 4000: 79.0})
    assert shorter is not None and shorter.tokens == 1000


def test_effective_length_is_below_1k_when_1k_fails() -> None:
    # 250 and 500 make the base score but are not part of the sweep (`<1K` in the README).
    result = effective({250: 100.0, 500: 100.0, 1000: 40.0, 2000: 30.0})
    assert result is not None
    assert result.tokens is None
    assert result.label == "<1000"


def test_below_half_matches_the_readmes_italics() -> None:
    assert below_half(42.7, 97.3)  # Llama 3.3 70B at 32K, italic in the README
    assert not below_half(48.2, 92.6)  # Gemini 1.5 Pro at 32K, not italic
    assert not below_half(50.0, 100.0)
