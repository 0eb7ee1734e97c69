"""BABILong's scorer against hand cases taken from the authors' metric (babilong/metrics.py@7a6efee).

Each case states the rule it checks; the expected value is worked out by hand from that rule.
"""

from __future__ import annotations

import pytest

from longscope.errors import UsageError
from longscope.suites.babilong.schema import TASKS
from longscope.suites.babilong.scoring import (
    TASK_LABELS,
    accuracy,
    compare_answers,
    is_correct,
    preprocess_output,
)

WHERE_MARY = "Where is Mary? "

CASES = [
    # (task, target, output, question, expected, rule)
    (
        "qa1",
        "kitchen",
        "The most recent location of Mary is kitchen.",
        WHERE_MARY,
        True,
        "format answer",
    ),
    ("qa1", "kitchen", "KITCHEN", WHERE_MARY, True, "case ignored"),
    ("qa1", "kitchen", "kitchen!!!", WHERE_MARY, True, "punctuation around the label"),
    ("qa1", "kitchen", "I believe the answer is kitchen, surely", WHERE_MARY, True, "extra words"),
    ("qa1", "kitchen", "kitchen or garden", WHERE_MARY, False, "two labels"),
    (
        "qa1",
        "garden",
        "Mary is in the garden. Before: kitchen",
        WHERE_MARY,
        True,
        "first sentence only",
    ),
    (
        "qa1",
        "kitchen",
        "Mary is in the garden. Before: kitchen",
        WHERE_MARY,
        False,
        "after '.' unread",
    ),
    ("qa1", "kitchen", "", WHERE_MARY, False, "empty answer"),
    ("qa1", "kitchen", "   ", WHERE_MARY, False, "blank answer"),
    ("qa1", "kitchen", "<context>kitchen", WHERE_MARY, False, "cut at <context>"),
    ("qa1", "kitchen", "kitchen<example>garden", WHERE_MARY, True, "cut at <example>"),
    ("qa1", "kitchen", "kitchen Question: garden", WHERE_MARY, False, "'Question' cut never fires"),
    ("qa1", "kitchen", "the kitchens", WHERE_MARY, True, "substring match"),
    ("qa1", "balcony", "balcony", WHERE_MARY, False, "target outside the labels"),
    ("qa1", "", "kitchen", WHERE_MARY, False, "empty target"),
    (
        "qa4",
        "bedroom",
        "kitchen bedroom",
        "What is the kitchen south of?",
        True,
        "question's label dropped",
    ),
    (
        "qa4",
        "kitchen",
        "kitchen",
        "What is the kitchen south of?",
        False,
        "question's label never the answer",
    ),
    (
        "qa14",
        "park",
        "park, not school",
        "Where was Julie before the school?",
        True,
        "question label",
    ),
    ("qa6", "no", "No", "Is John in the garden?", True, "yes/no, case"),
    ("qa6", "yes", "no", "Is John in the garden?", False, "yes/no wrong"),
    ("qa6", "no", "not sure", "Is John in the garden?", True, "'no' is in 'not'"),
    (
        "qa6",
        "yes",
        "yes, I am not sure",
        "Is John in the garden?",
        False,
        "'no' in 'not' adds a label",
    ),
    ("qa9", "yes", "Yes.", "Is Mary in the kitchen?", True, "yes with period"),
    ("qa10", "maybe", "maybe", "Is Mary in the school?", True, "three-way answer"),
    ("qa7", "two", "two", "How many objects is Daniel carrying?", True, "count"),
    ("qa7", "one", "none", "How many objects is Daniel carrying?", False, "'one' is in 'none'"),
    ("qa7", "none", "none", "How many objects is Mary carrying?", False, "qa7 none never right"),
    ("qa8", "apple,milk", "apple, milk", "What is Daniel carrying?", True, "set, spaced"),
    ("qa8", "apple,milk", "Milk,Apple.", "What is Daniel carrying?", True, "set, any order, case"),
    ("qa8", "apple,milk", "apple", "What is Daniel carrying?", False, "set, part only"),
    ("qa8", "apple,milk", "apple, milk, football", "What is Daniel carrying?", False, "set, extra"),
    ("qa8", "nothing", "nothing", "What is Sandra carrying?", True, "nothing alone"),
    ("qa8", "milk", "milk", "What is Mary carrying?", True, "single object"),
    ("qa19", "n,w", "n,w", "How do you go from the kitchen to the hallway?", True, "path"),
    ("qa19", "n,w", "N,W", "How do you go from the kitchen to the hallway?", True, "path, case"),
    (
        "qa19",
        "n,w",
        "n, w",
        "How do you go from the kitchen to the hallway?",
        False,
        "path, spaced",
    ),
    ("qa19", "n,w", "w,n", "How do you go from the kitchen to the hallway?", False, "path order"),
    ("qa19", "s,e", "s,e,n", "How do you go from the kitchen to the garden?", False, "s,e and e,n"),
    ("qa5", "Fred", "Mary gave it to Fred", "Who did Mary give the apple to?", True, "names, case"),
    ("qa5", "Mary", "Mary", "Who did Mary give the apple to?", False, "name in question"),
    ("qa15", "wolf", "wolves", "What is gertrude afraid of?", False, "plural lacks the label"),
    ("qa20", "hungry", "hungry", "Why did yann go to the kitchen?", True, "motivation"),
    ("qa20", "kitchen", "kitchen", "Why did yann go to the kitchen?", False, "place in question"),
]


@pytest.mark.parametrize(
    ("task", "target", "output", "question", "expected", "rule"), CASES, ids=[c[-1] for c in CASES]
)
def test_hand_cases(
    task: str, target: str, output: str, question: str, expected: bool, rule: str
) -> None:
    assert is_correct(task, target, output, question) is expected, rule


def test_preprocess_cuts_in_the_authors_order() -> None:
    assert preprocess_output("Kitchen. Garden") == "kitchen"
    assert preprocess_output("a<example>b.c") == "a"
    assert preprocess_output("x Question y") == "x question y"


def test_each_label_alone_is_right_unless_it_holds_another() -> None:
    assert set(TASK_LABELS) == set(TASKS)
    for task, labels in TASK_LABELS.items():
        for label in labels:
            holds_another = any(o.lower() in label.lower() for o in labels if o != label)
            assert compare_answers(label, label, "?", labels) is not holds_another, (task, label)
    assert [t for t, ls in TASK_LABELS.items() if "none" in ls] == ["qa7"]


def test_unknown_task_is_one_clear_line() -> None:
    with pytest.raises(UsageError, match="unknown BABILong task 'qa21'"):
        is_correct("qa21", "x", "x", "?")


def test_accuracy_is_percent_and_zero_for_no_rows() -> None:
    assert accuracy(3, 4) == 75.0
    assert accuracy(0, 0) == 0.0
