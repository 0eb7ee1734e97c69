"""Grading rubric cases: (task, answer) -> points, with the rule that fired."""

import pytest

from longscope.suites.longctx.grading import grade
from longscope.suites.longctx.tasks import TASKS_BY_ID

LONG = " ".join(["The document also discusses many unrelated procurement matters."] * 10)

CASES = [
    # needle: exact/concise, formatting variants, verbose, overlap, topic-only, wrong, empty
    ("LCB-001", "0.003 arc-seconds", 5, "exact, concise"),
    ("LCB-001", "It achieved 0.003 arcseconds.", 5, "exact, concise"),
    ("LCB-001", "0.003 arc-seconds. " + LONG, 4, "correct, over 60 words"),
    ("LCB-001", "0.03 arc-seconds", 0, "wrong value"),  # was 2: a wrong number gets <= 1
    ("LCB-001", "The calibration resolution is not stated.", 1, "topic mentioned, wrong answer"),
    ("LCB-001", "Purple.", 0, "wrong or off-topic"),
    ("LCB-001", "", 0, "empty"),
    ("LCB-007", "2.4GHz", 5, "exact, concise"),
    ("LCB-011", "8400 tonnes of steel", 5, "exact, concise"),
    ("LCB-011", "8,400", 5, "exact, concise"),
    ("LCB-011", "84,000 metric tons", 0, "wrong value"),  # was 2: wrong number
    ("LCB-013", "85°C", 5, "exact, concise"),
    ("LCB-019", "1 December 2034", 5, "exact, concise"),
    ("LCB-019", "2034-12-01", 5, "exact, concise"),
    ("LCB-019", "December 2, 2034", 0, "wrong value"),
    (
        "LCB-019",
        "The endurance test ended on December 2, 2034.",
        1,
        "wrong value, topic mentioned",
    ),
    ("LCB-003", "94分钟", 5, "exact, concise"),
    ("LCB-003", "194 minutes", 0, "wrong value"),  # was 2: wrong number
]


@pytest.mark.parametrize(("task_id", "answer", "points", "rule"), CASES)
def test_needle_rubric(task_id, answer, points, rule) -> None:
    score = grade(TASKS_BY_ID[task_id], answer)
    assert (score.value, score.evidence["rule"]) == (points, rule)


def test_multi_fact_three_facts_split_five_points() -> None:
    task = TASKS_BY_ID["LCB-002"]
    one = grade(task, "It was established on 14 July 2019.")
    assert one.value == pytest.approx(5 / 3)
    assert one.evidence["matched"] == ["July 14, 2019"]
    assert grade(task, "Three founders, July 14 2019, $12 million.").value == pytest.approx(5.0)


def test_multi_fact_five_facts_one_point_each() -> None:
    task = TASKS_BY_ID["LCB-018"]
    score = grade(task, "Mei Wong proposed it in March 2025; it targets coastal regions.")
    assert score.value == pytest.approx(3.0)
    assert score.evidence["missed"] == ["2.4 billion", "early 2028"]


def test_reasoning_full_marks_needs_conclusion_citations_and_chain() -> None:
    task = TASKS_BY_ID["LCB-004"]
    full = grade(
        task,
        "Yes. The policy requires an audit every 18 months; the last was March 1, 2024, "
        "so it was due September 2025.",
    )
    assert full.value == 5.0
    bare = grade(task, "Yes.")
    assert bare.value == 2.0 and bare.evidence["not_cited"] == [
        "18-month interval",
        "last audit date",
    ]


def test_reasoning_wrong_conclusion_costs_five() -> None:
    task = TASKS_BY_ID["LCB-012"]
    score = grade(task, "Yes, the crew is in compliance because 3 is enough.")
    assert score.value == -5.0 and score.evidence["conclusion"] == "wrong"
    # "not in compliance" is the right conclusion even though it contains "in compliance".
    right = grade(task, "The crew is not in compliance: SOP-14 needs 4, there are only 3.")
    assert right.evidence["conclusion"] == "correct" and right.value == 5.0


def test_reasoning_chinese() -> None:
    task = TASKS_BY_ID["LCB-016"]
    score = grade(task, "不在规格内，因为136 N·m低于下限137.75 N·m（145 N·m ± 5%）。", "zh")
    assert score.value == 5.0
