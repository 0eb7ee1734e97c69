"""LongCtx grades out of 5 with the evidence a person reads in the report (which rule, which facts,
the overlap), and the reading rules under them: years, sentences, canonical text.

Every expected value follows from the rubric in `longscope.suites.longctx.grading`'s docstring.
"""

from __future__ import annotations

import pytest

from longscope.suites.longctx.grading import (
    MAX_POINTS,
    grade,
    key_match,
    read,
    sentences,
    tokens,
)
from longscope.suites.longctx.tasks import TASKS_BY_ID, Fact, Key, TaskSpec
from longscope.text.quantities import parse_value

from .test_grading_table import TABLE


def test_every_hand_graded_answer_is_out_of_5() -> None:
    # the report shows points of 5 and averages the fraction: a grade without its maximum is 0%
    for task_id, language, answer, points, why in TABLE:
        score = grade(TASKS_BY_ID[task_id], answer, language)
        assert (score.max, score.fraction) == (MAX_POINTS, pytest.approx(points / 5)), why


def test_grade_defaults_to_english_gold() -> None:
    # the overlap is read against the English gold unless a language is given
    assert grade(TASKS_BY_ID["LCB-019"], "December 2034").value == 3.0


# --- needle ------------------------------------------------------------------------------------
def test_needle_evidence_of_each_rule() -> None:
    task = TASKS_BY_ID["LCB-001"]  # 0.003 arc-seconds; topic: crestfall, resolution, calibration
    gold = parse_value("0.003 arc-seconds").canonical()
    assert grade(task, "").evidence == {"words": 0, "values": [], "rule": "empty"}
    assert grade(task, "0.003 arc-seconds").evidence == {
        "words": 2,
        "values": [gold],
        "matched": ["0.003 arc-seconds"],
        "missed": [],
        "topic": False,
        "rule": "exact, concise",
    }
    wrong = parse_value("0.3 arc-seconds").canonical()
    assert grade(task, "The calibration reached 0.3 arc-seconds.").evidence == {
        "words": 5,
        "values": [wrong],
        "matched": [],
        "missed": ["0.003 arc-seconds"],
        "topic": True,
        "wrong_values": [wrong],
        "rule": "wrong value, topic mentioned",
    }
    # a unit without its number shares no token of the value: topic only, overlap 0 of 1
    assert grade(task, "Crestfall arc-seconds").evidence == {
        "words": 2,
        "values": [],
        "matched": [],
        "missed": ["0.003 arc-seconds"],
        "topic": True,
        "overlap": "0/1",
        "value_token_shared": False,
        "rule": "topic mentioned, wrong answer",
    }


@pytest.mark.parametrize(
    ("answer", "points", "overlap", "rule"),
    [
        # gold December 1, 2034: year, month and day tokens
        ("December 2034", 3.0, "2/3", "overlap > 0.6"),
        ("It finished in 2034.", 2.0, "1/3", "overlap 0.3-0.6"),
    ],
)
def test_needle_overlap_evidence(answer: str, points: float, overlap: str, rule: str) -> None:
    score = grade(TASKS_BY_ID["LCB-019"], answer)
    assert (score.value, score.max) == (points, MAX_POINTS)
    assert score.evidence["overlap"] == overlap and score.evidence["value_token_shared"] is True
    assert score.evidence["rule"] == rule and score.evidence["topic"] is False
    assert score.evidence["matched"] == [] and score.evidence["missed"] == ["December 1, 2034"]


# --- multi-fact --------------------------------------------------------------------------------
def test_multi_fact_two_of_three_is_10_thirds_rounded_to_6_digits_with_a_misquote() -> None:
    score = grade(TASKS_BY_ID["LCB-002"], "3 members; July 14, 2019; $15 million")
    assert (score.value, score.max) == (3.333333, MAX_POINTS)
    usd = parse_value("$15 million").canonical()
    assert score.evidence == {
        "matched": ["3 founding members", "July 14, 2019"],
        "missed": ["$12 million"],
        # another amount (and the bare 3, another number) where $12 million belongs
        "misquoted": {"$12 million": ["3", usd]},
        "split": {"3 founding members": 1.667, "July 14, 2019": 1.667, "$12 million": 1.667},
        "values": ["3", parse_value("July 14, 2019").canonical(), usd],
    }


# --- reasoning ---------------------------------------------------------------------------------
LCB012 = TASKS_BY_ID["LCB-012"]  # No (not in compliance): a minimum of 4, a night crew of 3


def test_reasoning_full_marks_evidence() -> None:
    score = grade(
        LCB012, "No, not in compliance: SOP-14 requires at least 4, but the night crew has only 3."
    )
    assert (score.value, score.max) == (5.0, MAX_POINTS)
    assert score.evidence == {
        "conclusion": "correct",
        "conclusion_words": "no",
        "cited": ["minimum of 4", "crew of 3"],
        "not_cited": [],
        "misquoted": {},
        "reasoning_chain": True,
        "chain_rule": "'but' with minimum of 4 in one sentence",
        "rule": "conclusion correct, citations 2.0, chain 1",
    }


@pytest.mark.parametrize(
    ("answer", "value", "conclusion", "cited", "chain_rule", "rule"),
    [
        (
            "No, the crew is not in compliance.",
            2.0,
            "correct",
            [],
            "no cited fact to link",
            "conclusion correct, citations 0.0, chain 0",
        ),
        (
            # facts without a conclusion: citations only
            "The minimum is 4 and the night crew has 3.",
            2.0,
            "none",
            ["minimum of 4", "crew of 3"],
            "needs the correct conclusion",
            "conclusion none, citations 2.0, chain 0",
        ),
        (
            "Yes, it is compliant with 4 required and 3 present.",
            -5.0,
            "wrong",
            ["minimum of 4", "crew of 3"],
            "needs the correct conclusion",
            "wrong conclusion",
        ),
        (
            # the fact opens the answer: the first sentence starts at its first character
            "4 people is the minimum but the crew is short: not in compliance.",
            4.0,
            "correct",
            ["minimum of 4"],
            "'but' with minimum of 4 in one sentence",
            "conclusion correct, citations 1.0, chain 1",
        ),
    ],
)
def test_reasoning_evidence(answer, value, conclusion, cited, chain_rule, rule) -> None:
    score = grade(LCB012, answer)
    assert (score.value, score.max) == (value, MAX_POINTS)
    evidence = score.evidence
    assert evidence["conclusion"] == conclusion and evidence["cited"] == cited
    assert evidence["reasoning_chain"] is (chain_rule.startswith("'"))
    assert (evidence["chain_rule"], evidence["rule"]) == (chain_rule, rule)
    assert "links_away_from_facts" not in evidence
    if conclusion == "none":
        assert evidence["conclusion_words"] == ""


def test_a_link_in_a_sentence_without_a_fact_is_listed_and_earns_nothing() -> None:
    answer = (
        "Not in compliance. The minimum is 4. The night crew has 3. It rained because of clouds."
    )
    score = grade(LCB012, answer)
    assert score.value == 4.0
    assert score.evidence["links_away_from_facts"] == ["because"]
    assert score.evidence["chain_rule"] == (
        "no linking word beside a cited fact and no derived value"
    )
    # a fact right after the sentence's end (no space) belongs to the next sentence
    glued = grade(LCB012, "Not in compliance because of staffing;4 people is the minimum.")
    assert glued.value == 3.0 and glued.evidence["links_away_from_facts"] == ["because"]


def test_a_word_fact_counts_for_the_chain_only_in_its_own_sentence() -> None:
    # LCB-020 cites "2014 / over 10 years" by a pattern; the link is two sentences away
    task = TASKS_BY_ID["LCB-020"]
    score = grade(
        task, "Yes, it must be retired. It was made in 2014. It rained because of clouds."
    )
    assert score.evidence["cited"] == ["2014 / over 10 years"]
    assert score.evidence["reasoning_chain"] is False
    assert score.value == 3.0  # conclusion 2 + one of two citations 1


# --- reading -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "year"),
    [("1000", True), ("2999", True), ("999", False), ("3000", False), ("1000.5", False)],
)
def test_a_bare_number_reads_as_a_year_from_1000_to_2999(text: str, year: bool) -> None:
    found, _ = tokens(read(text), years=True)
    assert (found == [f"y:{text}"]) is year
    # only where the gold is a date
    assert tokens(read(text))[0] == [f"n:{text}"]


def test_a_small_number_is_never_a_year() -> None:
    assert tokens(read("5"), years=True)[0] == ["n:5"]


def test_tokens_keep_the_words_around_each_value_once() -> None:
    assert tokens(read("alpha 5 beta 7 gamma")) == (
        ["alpha", "n:5", "beta", "n:7", "gamma"],
        {"n:5", "n:7"},
    )


def test_canonical_text_puts_each_value_in_place_with_single_spaces() -> None:
    reading = read("about  5 km away and  7 more")
    assert reading.canonical == "about 5 km away and 7 more"
    assert read("Rated at 2.4 GHz today").canonical == (
        f"rated at {parse_value('2.4 GHz').canonical()} today"
    )


def test_a_sentence_ends_right_after_a_value() -> None:
    reading = read("It was 5. Then it rained.")
    assert [reading.text[a:b] for a, b in sentences(reading)] == ["it was 5.", " then it rained."]


def test_a_number_with_a_unit_is_never_a_year() -> None:
    assert "y:2034" not in tokens(read("2034 hours"), years=True)[0]


def test_a_key_with_a_value_also_matches_its_pattern() -> None:
    key = Key("budget", regex=r"a dozen million", value="$12 million")
    assert key_match(key, read("A dozen million dollars.")) == (True, [])
    assert key_match(key, read("$12 million")) == (True, [])
    assert key_match(key, read("$15 million"))[0] is False


def test_reasoning_facts_with_a_link_but_no_conclusion_earn_citations_only() -> None:
    score = grade(LCB012, "The minimum is 4 but the night crew has 3.")
    assert score.value == 2.0 and score.evidence["reasoning_chain"] is False


def _value_and_words_task() -> TaskSpec:
    """A needle whose gold has words and a value: overlap credit needs a token of the value."""
    gold = "Helios orbits Earth in 94 minutes"
    return TaskSpec(
        "T-2",
        "needle",
        1,
        (Fact(gold, gold, 0.5),),
        {"en": "How long is an orbit?", "zh": "How long is an orbit?"},
        {"en": gold, "zh": gold},
        (Key("94 minutes", value="94 minutes"),),
        topic=r"satellite",
    )


def test_overlap_credit_needs_a_shared_value_token() -> None:
    # gold tokens: helios, orbits, earth, in, 94 min; the answer shares the 4 words, not the value
    words_only = grade(_value_and_words_task(), "Helios orbits Earth in")
    assert words_only.evidence["overlap"] == "4/5"
    assert words_only.evidence["value_token_shared"] is False
    assert (words_only.value, words_only.evidence["rule"]) == (0.0, "wrong or off-topic")


def test_an_empty_answer_is_0_of_5() -> None:
    score = grade(TASKS_BY_ID["LCB-001"], "   ")
    assert (score.value, score.max, score.fraction) == (0.0, MAX_POINTS, 0.0)
