"""LongBench v2's official pieces against hand cases from its repository (THUDM/LongBench):
`pred.py`'s `extract_answer` and `str.replace` filling, the prompt files, `result.py`'s switch."""

from __future__ import annotations

import pytest

from longscope.suites.longbench_v2.official import (
    COT,
    DIRECT,
    OUTPUT_TOKENS,
    extract_answer,
    fill,
    judge,
)

CASES = [
    ("The correct answer is (B)", "B"),
    ("The correct answer is (B).", "B"),
    ("**The correct answer is (C)**", "C"),  # asterisks removed first
    ("The correct answer is **(D)**", "D"),
    ("Reasoning... so The correct answer is (A) and not (B).", "A"),
    ("The correct answer is D", "D"),  # the second pattern, no parentheses
    ("The correct answer is Apple", "A"),  # pred.py's second pattern reads the A of Apple
    ("The correct answer is (A) ... The correct answer is (B)", "A"),  # the first one
    ("The correct answer is (E)", None),
    ("The correct answer is (insert answer here)", None),
    ("the correct answer is (A)", None),  # case-sensitive
    ("The correct answer: (A)", None),
    ("(B)", None),
    ("", None),
]


@pytest.mark.parametrize(("response", "letter"), CASES)
def test_extract_answer_as_pred_py(response: str, letter: str | None) -> None:
    assert extract_answer(response) == letter


def test_judge_strips_and_compensates_only_when_asked() -> None:
    assert judge("  The correct answer is (B)\n", "B") == ("B", 1.0)
    assert judge("The correct answer is (C)", "B") == ("C", 0.0)
    assert judge("I cannot tell.", "B") == (None, 0.0)
    assert judge("I cannot tell.", "B", compensated=True) == (None, 0.25)
    assert judge("The correct answer is (C)", "B", compensated=True) == ("C", 0.0)


def test_prompts_are_the_repositorys_files() -> None:
    assert DIRECT.startswith("Please read the following text and answer the question below.")
    assert DIRECT.endswith(
        'Format your response as follows: "The correct answer is (insert answer here)".'
    )
    assert COT.startswith("Please read the following text and answer the questions below.")
    assert COT.endswith("(D) $C_D$\n\nLet\u2019s think step by step:")
    assert OUTPUT_TOKENS == {"direct": 128, "cot": 1024}


def test_fill_replaces_in_pred_pys_order_with_values_stripped() -> None:
    text = fill(DIRECT, "  the doc  ", " Q? ", (" a ", "b", "c", "d\n"))
    assert "<text>\nthe doc\n</text>" in text
    assert "question: Q?\nChoices:\n(A) a\n(B) b\n(C) c\n(D) d\n\n" in text
    # Sequential str.replace: a document holding a later placeholder has it filled too.
    assert "<text>\nsee Q?\n</text>" in fill(DIRECT, "see $Q$", "Q?", ("a", "b", "c", "d"))
