"""Travel planning: the authors' solving procedure (written out by hand from their rules) and their
evaluators (NATURAL PLAN's plan parser), on hand cases."""

from __future__ import annotations

import pytest

from longscope.suites.longproc.travel import (
    demonstration,
    grade_travel_planning,
    parse_plan,
    plan_is_right,
    procedure_score,
)

from .rows import TRIP_PLAN, trip_row

TRACE = f"""<Solving Procedure>
Read the requirements and identify the cities that have fixed schedules and the cities that need \
to be arranged.
* City: Oslo, Duration: 2 days.
* City: Rome, Duration: 3 days.

Cities that have fixed schedules: None.

Cities needing arrangement:
* City: Oslo, Duration: 2 days.
* City: Rome, Duration: 3 days.

Current day: 1. Current plan: [].
Check whether the city with an arrival day of Day 1 - is fixed.
No. Consider possible options from cities needing arrangement: [Oslo, Rome] and explore these \
options in order.
 |- Try arranging to visit Oslo from Day 1. Duration: 2 days. Schedule: Day 1 - 2.
 |- Check for direct flight from the starting point to Oslo.
 |- Yes.
 |- Check whether this arrangement is compatible with the next fixed schedule after Day 1: None.
 |- No following fixed schedules. This arrangement is compatible.
 |- This arrangement is feasible for now. Continue to arrange the rest of the plan.
  |- Current day: 2. Current plan: [Oslo].
  |- Check whether the city with an arrival day of Day 2 - is fixed.
  |- No. Consider possible options from cities needing arrangement: [Rome] and explore these \
options in order.
   |- Try arranging to visit Rome from Day 2. Duration: 3 days. Schedule: Day 2 - 4.
   |- Check for direct flight from Oslo to Rome.
   |- Yes.
   |- Check whether this arrangement is compatible with the next fixed schedule after Day 2: None.
   |- No following fixed schedules. This arrangement is compatible.
   |- This arrangement is feasible for now. Continue to arrange the rest of the plan.
    |- Current day: 4. Current plan: [Oslo, Rome].
    |- All 2 cities are arranged. Complete plan is found!
</Solving Procedure>

Output the plan in the required format:
<Plan>
{TRIP_PLAN}
</Plan>"""

FIXED = {
    **trip_row(),
    "num_cities": 3,
    "constraints": [
        {"type": "duration", "city": "Oslo", "num_days": 3},
        {"type": "duration", "city": "Rome", "num_days": 2},
        {"type": "fixed", "city": "Rome", "start_day": 2, "end_day": 3},
        {"type": "duration", "city": "Lima", "num_days": 2},
    ],
    "connected_cities": [["Lima", "Rome"], ["Rome", "Oslo"]],
    "ground_truth_plan": "Plan:\n\n**Day 1-2:** Arriving in Lima and visit Lima for 2 days.\n"
    "**Day 2:** Fly from Lima to Rome.\n**Day 2-3:** Visit Rome for 2 days.\n"
    "**Day 3:** Fly from Rome to Oslo.\n**Day 3-5:** Visit Oslo for 3 days.",
}


def test_the_procedure_is_their_search_written_out() -> None:
    assert demonstration(trip_row()) == TRACE


def test_a_fixed_city_is_listed_with_its_schedule_and_a_stay_past_it_is_dropped() -> None:
    lines = demonstration(FIXED).split("\n")
    assert "* City: Rome, Duration: 2 days, Fixed Schedule: Day 2 - 3." in lines
    assert "* City: Rome, Fixed Schedule: Day 2 - 3." in lines
    # Oslo first (3 days, to Day 3) runs past Rome's arrival on Day 2; Lima (to Day 2) fits.
    assert (
        " |- The departure day of Oslo is Day 3. The arrival day of Rome is Day 2. Day 3 is later "
        "than (>) Day 2. This arrangement is incompatible. Drop this branch." in lines
    )
    assert (
        " |- The departure day of Lima is Day 2. The arrival day of Rome is Day 2. Day 2 is not "
        "later than (<=) Day 2. This arrangement is compatible." in lines
    )
    assert "  |- Yes. The city with an arrival day of Day 2 - is fixed: Rome." in lines


def test_a_plan_that_is_not_the_rows_ground_truth_is_refused() -> None:
    with pytest.raises(ValueError, match="not trip_0's ground truth"):
        demonstration({**trip_row(), "ground_truth_plan": "x\n\n**Day 1-4:** Rome."})


def test_plans_are_parsed_from_their_flights() -> None:
    assert parse_plan(TRIP_PLAN) == [("Oslo", 2), ("Rome", 3)]
    assert parse_plan("**Day 1-4:** Visit Oslo for 4 days.") == []  # no flight: nothing read
    # After the stay that ends on the total day, an alternative plan is not read.
    stated = (
        "for 4 European cities for 4 days\n" + TRIP_PLAN + "\n**Day 4:** Fly from Rome to Bonn."
    )
    assert parse_plan(stated) == [("Oslo", 2), ("Rome", 3)]


def test_a_plan_is_right_only_when_every_stay_matches_in_order() -> None:
    assert plan_is_right("Oslo**Rome", "2**3", TRIP_PLAN)
    assert not plan_is_right("Oslo**Rome", "2**3", TRIP_PLAN.replace("Day 2:", "Day 3:"))
    assert not plan_is_right("Rome**Oslo", "3**2", TRIP_PLAN)


def test_a_right_plan_scores_one_and_a_wrong_one_gets_its_procedure_share() -> None:
    right = grade_travel_planning(f"<Plan>\n{TRIP_PLAN}\n</Plan>", "Oslo**Rome", "2**3", TRACE)
    assert right.score == 1.0 and right.metrics["partial_accuracy"] == 1.0
    gold = [line for line in TRACE.split("<Plan>")[0].split("\n") if line.strip()]
    # The answer's procedure stops after its first 6 lines; its plan is missing.
    answer = "\n".join(gold[:6])
    graded = grade_travel_planning(answer, "Oslo**Rome", "2**3", TRACE)
    expected = 5 / len([x for x in TRACE.replace("Output the plan in the required format:", "")
                        .split("\n") if x.strip()])  # fmt: skip
    assert graded.score == 0.0 and graded.metrics["extraction_rate"] == 0.0
    assert graded.metrics["partial_accuracy"] == pytest.approx(expected)


def test_procedure_lines_may_add_words_but_must_hold_the_reference_line() -> None:
    noisy = TRACE.replace("|- Yes.", "|- Yes, indeed.")
    # "yes indeed" holds "yes": every line passes, up to the last compared.
    share, error = procedure_score(noisy, TRACE)
    assert error == {}
    wrong = TRACE.replace("Check for direct flight from Oslo to Rome.", "Skip the flight check.")
    share, error = procedure_score(wrong, TRACE)
    assert error["pr"] == "   |- Check for direct flight from Oslo to Rome."  # their keys, swapped
    assert share < 1.0
    assert procedure_score("", TRACE) == (0.0, {"empty_output": True})
