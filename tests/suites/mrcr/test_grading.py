"""MRCR's grade against OpenAI's definition: the prefix rule, then difflib's ratio, by hand.

Each expected ratio is worked out by hand as 2M / T (M matched characters, T both lengths), so a
grader that strips whitespace, folds case, drops difflib's autojunk or uses another similarity
fails here. Where lm-evaluation-harness's MRCR grader is importable it is checked on the same
rows (it strips the answer first, so only rows without outer whitespace are compared).
"""

from __future__ import annotations

import importlib

import pytest

from longscope.suites.mrcr.grading import grade

P = "aYooSG8CQg"
CASES = [
    # (response, gold, prefix, ratio, prefixed, why)
    (P + "A poem.", P + "A poem.", P, 1.0, True, "exact copy"),
    ("A poem.", P + "A poem.", P, 0.0, False, "the prefix missing: 0 whatever follows"),
    (" " + P + "A poem.", P + "A poem.", P, 0.0, False, "a leading space is not stripped"),
    (P.lower() + "A poem.", P + "A poem.", P, 0.0, False, "the prefix is case-sensitive"),
    (P + "abcd", P + "abce", P, 2 * 3 / 8, True, "abc of abcd/abce: 2*3/8"),
    (P, P, P, 1.0, True, "empty answer and empty gold: difflib's ratio of two empties is 1"),
    (P + "x", P, P, 0.0, True, "empty gold, one stray character: 2*0/1"),
    (P, P + "gold", P, 0.0, True, "the prefix alone against a gold: 2*0/4"),
    ("PPx", "Px", "P", 2 * 1 / 3, True, "removeprefix takes one copy: Px against x, 2*1/3"),
    ("abc", "abd", "", 2 * 2 / 6, True, "an empty prefix: the whole texts, 2*2/6"),
    (
        "Zq9Tapir 🦛 uber café",
        "Zq9Tapir 🦛 über café",
        "Zq9",
        2 * 16 / 34,
        True,
        "unicode: one of 17 code points differs (u for ü), 2*16/34",
    ),
    (
        "x" * 250,
        "y" + "x" * 250,
        "",
        0.0,
        True,
        "difflib's autojunk (the card's default call): x fills the 251-character gold, is "
        "'popular' and seeds no match, so 0 (2*250/501 without autojunk)",
    ),
]


@pytest.mark.parametrize(("response", "gold", "prefix", "ratio", "prefixed", "why"), CASES)
def test_grade_matches_the_hand_computed_ratio(
    response: str, gold: str, prefix: str, ratio: float, prefixed: bool, why: str
) -> None:
    graded = grade(response, gold, prefix)
    assert graded.ratio == pytest.approx(ratio, abs=1e-12), why
    assert graded.prefixed is prefixed, why


def test_grade_against_lm_evaluation_harness_where_installed() -> None:
    try:
        reference = importlib.import_module("lm_eval.tasks.mrcr.utils").grade_response
    except ImportError:
        pytest.skip("lm-evaluation-harness's MRCR task is not installed")
    for response, gold, prefix, _, _, why in CASES:
        if response != response.strip() or "</think>" in response:
            continue
        assert grade(response, gold, prefix).ratio == pytest.approx(
            reference(response, gold, prefix)
        ), why
