"""Travel planning: the authors' verbalized search for a trip plan (the prompt's examples and each
row's reference) and their evaluators (`longproc/travel_planning_evaluator.py`, whose plan parser
is NATURAL PLAN's), re-implemented. The trace must match theirs byte for byte.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longscope.suites.longproc.grading import Graded, extract_with_tag

START = "the starting point"
LEVEL_TOKENS = {"2k": (0, 2048), "8k": (4096, 8192)}
"""Rows of each level by their `estimated_output_tokens` (the authors' loader)."""


def _indent(level: int) -> str:
    return "" if level == 0 else " " * level + "|- "


def _names(items: Sequence[dict[str, Any]]) -> str:
    return "[" + ", ".join(str(x["city"]) for x in items) + "]"


@dataclass
class _Planner:
    cities: int
    fixed: list[dict[str, Any]]
    flights: set[tuple[str, str]]
    log: list[str]

    def say(self, depth: int, text: str) -> None:
        self.log.append(f"{_indent(depth)}{text}")

    def search(
        self, day: int, plan: list[dict[str, Any]], free: list[dict[str, Any]]
    ) -> list[dict[str, Any]] | None:
        depth = len(plan) * 2
        self.say(depth, f"Current day: {day}. Current plan: {_names(plan)}.")
        if len(plan) == self.cities:
            self.say(depth, f"All {self.cities} cities are arranged. Complete plan is found!")
            return plan
        self.say(depth, f"Check whether the city with an arrival day of Day {day} - is fixed.")
        fixed = next((c for c in self.fixed if c["start_day"] == day), None)
        if fixed is not None:
            self.say(
                depth,
                f"Yes. The city with an arrival day of Day {day} - is fixed: {fixed['city']}.",
            )
            choices = [
                {
                    "city": fixed["city"],
                    "num_days": fixed["end_day"] - fixed["start_day"] + 1,
                    "start_day": fixed["start_day"],
                    "end_day": fixed["end_day"],
                }
            ]
        else:
            self.say(
                depth,
                "No. Consider possible options from cities needing arrangement: "
                f"{_names(free)} and explore these options in order.",
            )
            choices = [
                {
                    "city": c["city"],
                    "num_days": c["num_days"],
                    "start_day": day,
                    "end_day": day + c["num_days"] - 1,
                }
                for c in free
            ]
        last = START if not plan else plan[-1]["city"]
        following = next((c for c in self.fixed if c["start_day"] > day), None)
        depth += 1
        for choice in choices:
            city, start, end = choice["city"], choice["start_day"], choice["end_day"]
            self.say(
                depth,
                f"Try arranging to visit {city} from Day {day}. Duration: {choice['num_days']} "
                f"days. Schedule: Day {day} - {day + choice['num_days'] - 1}.",
            )
            self.say(depth, f"Check for direct flight from {last} to {city}.")
            if not (last == START or (last, city) in self.flights):
                self.say(depth, "No. Drop this branch.")
                continue
            self.say(depth, "Yes.")
            head = f"Check whether this arrangement is compatible with the next fixed schedule after Day {day}"
            if following is None:
                self.say(depth, f"{head}: None.")
                self.say(depth, "No following fixed schedules. This arrangement is compatible.")
            else:
                f_city, f_start = following["city"], following["start_day"]
                self.say(depth, f"{head}: {f_city} (Day {f_start} - {following['end_day']}).")
                if f_start == start:
                    raise ValueError("travel planning: invalid fixed schedule")
                said = (
                    f"The departure day of {city} is Day {end}. The arrival day of {f_city} is "
                    f"Day {f_start}. Day {end} is"
                )
                if f_start < end:
                    self.say(
                        depth,
                        f"{said} later than (>) Day {f_start}. This arrangement is incompatible. "
                        "Drop this branch.",
                    )
                    continue
                self.say(
                    depth,
                    f"{said} not later than (<=) Day {f_start}. This arrangement is compatible.",
                )
            self.say(
                depth,
                "This arrangement is feasible for now. Continue to arrange the rest of the plan.",
            )
            found = self.search(end, [*plan, choice], [c for c in free if c["city"] != city])
            if found is not None:
                return found
        self.say(
            depth,
            f"Fail to arrange any option on day {day} in the current arrangement. Drop this branch.",
        )
        return None


def plan_text(plan: Sequence[dict[str, Any]]) -> str:
    """Return a plan in the authors' format (`format_result_plan`)."""
    lines = []
    for i, stop in enumerate(plan):
        city, start, end, days = stop["city"], stop["start_day"], stop["end_day"], stop["num_days"]
        if i == 0:
            lines.append(
                f"**Day {start}-{end}:** Arriving in {city} and visit {city} for {days} days."
            )
        else:
            lines.append(f"**Day {start}-{end}:** Visit {city} for {days} days.")
        if i + 1 < len(plan):
            lines.append(f"**Day {end}:** Fly from {city} to {plan[i + 1]['city']}.")
    return "\n".join(lines)


def demonstration(row: dict[str, Any]) -> str:
    """Return the authors' solving procedure and plan for a row (`build_travel_plan_demonstration`);
    raises ValueError when the plan found is not the row's ground truth (their assert)."""
    constraints = row["constraints"]
    fixed = [c for c in constraints if c["type"] == "fixed"]
    fixed_names = [c["city"] for c in fixed]
    free = [c for c in constraints if c["type"] == "duration" and c["city"] not in fixed_names]
    log = [
        "Read the requirements and identify the cities that have fixed schedules and the cities "
        "that need to be arranged."
    ]
    for i, cons in enumerate(constraints):
        if cons["type"] == "fixed":
            continue
        if cons["city"] in fixed_names:
            nxt = constraints[i + 1]
            if nxt["type"] != "fixed" or nxt["city"] != cons["city"]:
                raise ValueError("travel planning: a fixed city's schedule must follow its stay")
            log.append(
                f"* City: {cons['city']}, Duration: {cons['num_days']} days, Fixed Schedule: Day "
                f"{nxt['start_day']} - {nxt['end_day']}."
            )
        else:
            log.append(f"* City: {cons['city']}, Duration: {cons['num_days']} days.")
    log.append("")
    if fixed:
        log.append("Cities that have fixed schedules (sorted by their arrival days):")
        fixed = sorted(fixed, key=lambda c: c["start_day"])
        log += [
            f"* City: {c['city']}, Fixed Schedule: Day {c['start_day']} - {c['end_day']}."
            for c in fixed
        ]
    else:
        log.append("Cities that have fixed schedules: None.")
    log.append("")
    if free:
        log.append("Cities needing arrangement:")
        log += [f"* City: {c['city']}, Duration: {c['num_days']} days." for c in free]
    else:
        log.append("Cities needing arrangement: None.")
    log.append("")
    flights = {(a, b) for a, b in row["connected_cities"]}
    planner = _Planner(row["num_cities"], fixed, flights, log)
    found = planner.search(1, [], free)
    if found is None:
        raise ValueError(f"travel planning: no plan found for {row.get('id', 'a row')}")
    plan = plan_text(found)
    if plan != row["ground_truth_plan"].split("\n\n")[1].strip():
        raise ValueError(f"travel planning: the plan found is not {row.get('id')}'s ground truth")
    steps = "\n".join(planner.log)
    return (
        f"<Solving Procedure>\n{steps}\n</Solving Procedure>\n\nOutput the plan in the required "
        f"format:\n<Plan>\n{plan}\n</Plan>"
    )


def examples(rows: Sequence[dict[str, Any]]) -> str:
    """Return the prompt's `{demonstration}` from the worked examples' rows."""
    return "\n\n".join(
        f"# Example\n{row['disambig_question_text']}\n\n{demonstration(row)}" for row in rows
    )


# --- grading -------------------------------------------------------------------------------------

_VISIT = re.compile(r"\d+-\d+")
_FLIGHT = re.compile(r".*Day (\d+).*from (\w+) to (\w+)")
_TOTAL = re.compile(r"European cities for (\d+) days")


def parse_plan(response: str) -> list[tuple[str, int]]:
    """Return (city, days) per stay read from a plan (NATURAL PLAN's `_parse_response`)."""
    days: list[str] = []
    flights: list[tuple[str, str, str]] = []
    total = None
    for piece in response.split("\n"):
        found_total = _TOTAL.findall(piece)
        if found_total:
            total = int(found_total[0])
        visit = _VISIT.findall(piece)
        if visit:
            days.append(visit[0])
            if int(visit[0].split("-")[1]) == total:
                break  # the plan's end: alternatives after it are not read
        flight = _FLIGHT.findall(piece)
        if flight:
            flights.append(flight[0])
    cities: list[str] = []
    flight_days = []
    for day, begin, end in flights:
        flight_days.append(int(day))
        cities += [begin, end] if not cities else [end]
    if not days or not flights or not cities:
        return []
    bounds = [1, *flight_days, int(days[-1].split("-")[1])]
    return [(city, bounds[i + 1] - bounds[i] + 1) for i, city in enumerate(cities)]


def plan_is_right(cities: str, durations: str, response: str) -> bool:
    """Exact match of every stay, city and days, in order (`evaluate_travel_plan_solution`)."""
    stays = [x for x in cities.split("**") if x]
    days = [int(x) for x in durations.split("**") if x]
    parsed = parse_plan(response)
    matched = 0
    for i in range(min(len(stays), len(parsed))):
        if stays[i] != parsed[i][0] or days[i] != parsed[i][1]:
            break
        matched += 1
    return bool(stays) and matched == len(stays)


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def _normal(line: str) -> str:
    line = "".join(ch for ch in line.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", line).split())


def procedure_score(output: str, reference: str) -> tuple[float, dict[str, Any]]:
    """Return (partial accuracy, error) of a solving procedure (`evaluate_travel_plan_search_
    procedure`): non-empty lines in order, each reference line (normalized) contained in the
    answer's; the share is the last compared line's index over the reference's lines. As theirs,
    the error report names the answer's line `gt` and the reference's `pr`."""
    marker, said = "<Solving Procedure>", "Output the plan in the required format:"
    reference, output = reference.replace(said, ""), output.replace(said, "")
    reference = marker + reference.split(marker)[1]
    if marker in output:
        output = marker + output.split(marker)[1]
    pred = [line.rstrip() for line in output.strip().split("\n") if line.strip()]
    gold = [line.rstrip() for line in reference.strip().split("\n") if line.strip()]
    index, error = -1, {}
    for p, g in zip(pred, gold, strict=False):
        index += 1
        if _normal(g) not in _normal(p):
            error = {"line": index, "gt": p, "pr": g}
            break
    if index < 0:
        index, error = 0, {"empty_output": True}
    return index / len(gold), error


def grade_travel_planning(prediction: str, cities: str, durations: str, reference: str) -> Graded:
    """Grade a trip plan (`eval_travel_planning`): the <Plan> block's stays must be the ground
    truth's; otherwise partial credit from the solving procedure."""
    plan = extract_with_tag(prediction, "Plan")
    extraction = 0.0 if plan is None else 1.0
    right = plan is not None and plan_is_right(cities, durations, plan.strip())
    if right:
        metrics = {"accuracy": 1.0, "partial_accuracy": 1.0, "extraction_rate": extraction}
        return Graded(1.0, metrics, plan.strip() if plan else None)
    partial, error = procedure_score(prediction, reference)
    metrics = {"accuracy": 0.0, "partial_accuracy": partial, "extraction_rate": extraction}
    return Graded(0.0, metrics, plan.strip() if plan else None, error or None)


__all__ = [
    "LEVEL_TOKENS",
    "demonstration",
    "examples",
    "grade_travel_planning",
    "parse_plan",
    "plan_is_right",
    "plan_text",
    "procedure_score",
]
