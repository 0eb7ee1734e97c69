"""The task table: 20 tasks as the seed lists them, and reasoning conclusions that follow from facts."""

import calendar
import re
from datetime import date, timedelta

import pytest

from longscope.suites.longctx.grading import grade
from longscope.suites.longctx.tasks import TASKS, TIERS


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year = day.year + month // 12
    month = month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _derive(check: dict) -> bool:
    """Recompute a reasoning task's conclusion from its facts."""
    kind = check["kind"]
    if kind == "interval_months":  # overdue?
        due = _add_months(date.fromisoformat(check["start"]), check["months"])
        return date.fromisoformat(check["as_of"]) > due
    if kind == "deadline_days":  # on time?
        due = date.fromisoformat(check["start"]) + timedelta(days=check["days"])
        return date.fromisoformat(check["event"]) <= due
    if kind == "minimum":  # compliant?
        return check["actual"] >= check["required"]
    if kind == "tolerance":  # within spec?
        low = check["nominal"] * (1 - check["percent"] / 100)
        high = check["nominal"] * (1 + check["percent"] / 100)
        return low <= check["reading"] <= high
    if kind == "age_years":  # must retire?
        made = date.fromisoformat(check["made"])
        limit = made.replace(year=made.year + check["years"])
        return date.fromisoformat(check["as_of"]) > limit
    raise AssertionError(f"unknown check {kind}")


def test_twenty_tasks_four_per_tier_five_per_type() -> None:
    assert [t.id for t in TASKS] == [f"LCB-{i:03d}" for i in range(1, 21)]
    for tier in TIERS:
        assert sorted(t.type for t in TASKS if t.tier == tier) == [
            "multi_fact",
            "needle",
            "position_bias",
            "reasoning",
        ]
    assert TIERS == {1: 4096, 2: 16384, 3: 32768, 4: 65536, 5: 131072}


@pytest.mark.parametrize("task", [t for t in TASKS if t.type == "reasoning"], ids=lambda t: t.id)
def test_reasoning_expected_conclusion_follows_from_its_facts(task) -> None:
    assert _derive(task.check) is task.check["expect"]
    # The facts the model reads carry the same numbers as the check.
    text = " ".join(f.en for f in task.facts) + " " + task.question["en"]
    for key, value in task.check.items():
        if key in ("kind", "expect"):
            continue
        if isinstance(value, str):
            day = date.fromisoformat(value)
            assert f"{calendar.month_name[day.month]} {day.day}, {day.year}" in text, (key, value)
        else:
            assert re.search(rf"(?<!\d){value}(?!\d)", text), (key, value)


def test_seed_defects_are_corrected() -> None:
    by_id = {t.id: t for t in TASKS}
    assert "October 10, 2025" in by_id["LCB-008"].facts[2].en
    assert "136 N·m" in by_id["LCB-016"].facts[1].en


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_expected_answer_scores_full_marks(task, language) -> None:
    score = grade(task, task.answer[language], language)
    assert score.value == pytest.approx(5.0), score.evidence


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_fact_is_in_both_languages(task, language) -> None:
    for fact in task.facts:
        text = getattr(fact, language)
        assert text and 0 <= fact.depth <= 1
        if language == "zh":
            assert re.search(r"[\u4e00-\u9fff]", text)
    assert task.question[language]
