"""Date normalisation at the calendar's edges: month 1 and 12, day 1 and 31, and one past each.

An answer "2034-01-31" must equal "January 31, 2034"; "2034-13-01" is no date and stays as written
(a grader comparing it with a real date must not see a made-up one).
"""

from __future__ import annotations

import pytest

from longscope.metrics.normalize import normalize_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2034-1-1", "2034-01-01"),
        ("2034-12-31", "2034-12-31"),
        ("January 31, 2034", "2034-01-31"),
        ("31 December 2034", "2034-12-31"),
        ("Jan. 1st, 2034", "2034-01-01"),
        ("2034年1月31日", "2034-01-31"),
        ("January 2025", "2025-01"),
        ("December of 2025", "2025-12"),
        ("2025年12月", "2025-12"),
        ("2025年1月", "2025-01"),
    ],
)
def test_first_and_last_month_and_day_are_dates(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["2034-13-01", "2034-00-10", "2034-12-32", "2034-12-00", "2034年13月1日", "2034年12月32日"],
)
def test_one_past_the_calendar_is_left_as_written(raw: str) -> None:
    assert normalize_answer(raw) == raw


def test_month_year_past_december_is_left_as_written() -> None:
    assert normalize_answer("2025年13月") == "2025年13月"
    # the month-year form never invents a day
    assert normalize_answer("due March 2025.") == "due 2025-03."
