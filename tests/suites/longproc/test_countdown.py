"""Countdown: the authors' search trace (written out by hand from their rules) and their two
evaluators, on hand cases; their `eval` of the model's equations is never reproduced."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.suites.longproc.countdown import (
    demonstration,
    examples,
    grade_countdown,
    procedure_score,
    solution_is_right,
)

# [1, 1, 1, 1] -> 4 by their depth-first search: the first pair, then +, at every level.
ONES = """# Search Procedure
Initial number set: [1, 1, 1, 1], target: 4. Options for choosing two numbers: [(1, 1), (1, 1), \
(1, 1), (1, 1), (1, 1), (1, 1)].
 |- Pick two numbers (1, 1) (numbers left: [1, 1]). Try possible operations.
  |- Try 1 + 1 = 2. Add 2 to the number set. Current number set: [2, 1, 1], target: 4. Options \
for choosing two numbers: [(2, 1), (2, 1), (1, 1)].
   |- Pick two numbers (2, 1) (numbers left: [1]). Try possible operations.
    |- Try 2 + 1 = 3. Add 3 to the number set. Current number set: [3, 1], target: 4, just two \
numbers left.
     |- Try 3 + 1 = 4. Evaluate 4 == 4, target found!

Now we have found the target, let's trace back the solution:
Final step: 3 + 1 = 4
The step before: 2 + 1 = 3
The first step: 1 + 1 = 2

Output the solution in the required format:
<Solution>
1 + 1 = 2
2 + 1 = 3
3 + 1 = 4
</Solution>
"""


def test_the_trace_is_their_search_written_out() -> None:
    steps, trace = demonstration([1, 1, 1, 1], 4)
    assert steps == ["1 + 1 = 2", "2 + 1 = 3", "3 + 1 = 4"]
    assert trace == ONES


def test_the_trace_drops_decimals_big_numbers_and_wrong_ends_with_their_words() -> None:
    steps, trace = demonstration([3, 2, 1000, 1], 1001)
    lines = trace.split("\n")
    # 3 + 2 = 5 first; then the pair (5, 1000), the larger first, tried one level deeper.
    assert (
        lines[4] == "   |- Pick two numbers (5, 1000) (numbers left: [1]). Try possible operations."
    )
    assert lines[5].startswith("    |- Try 1000 + 5 = 1005. Add 1005 to the number set.")
    assert lines[6] == "     |- Try 1005 + 1 = 1006. Evaluate 1006 != 1001, drop this branch."
    assert (
        "    |- Try 1000 * 5 = 5000. 5000 exceeds the maximum intermediate result, drop this branch."
        in lines
    )
    assert "     |- Try 1000 / 6 = 166.7. 166.7 is a decimal, drop this branch." in lines
    # The search ends at the first way found: 3 - 2 = 1 is tried only after 3 + 2 fails.
    assert steps == ["3 - 2 = 1", "1000 + 1 = 1001", "1001 * 1 = 1001"]
    assert solution_is_right([3, 2, 1000, 1], 1001, "\n".join(steps))


def test_the_prompts_examples_are_their_two_demos() -> None:
    text = examples()
    assert text.startswith(
        "# Example\nNumbers: [40, 19, 23, 7]\nTarget: 29\n\n# Search Procedure\n"
    )
    assert "\n\n# Example\nNumbers: [9, 16, 6, 18]\nTarget: 12\n\n# Search Procedure\n" in text
    assert text.count("<Solution>") == 2 and text.endswith("</Solution>\n")


@pytest.mark.parametrize(
    ("solution", "right"),
    [
        ("1 + 1 = 2\n2 + 1 = 3\n3 + 1 = 4", True),
        ("1+1=2\n1+1=2\n2+2=4", True),  # any order of the numbers that reaches the target
        ("1 + 1 = 2\n2 + 1 = 3\n3 + 1 = 5", False),  # wrong arithmetic
        ("1 + 1 = 2\n2 + 2 = 4\n4 - 0 = 4", False),  # 2 used twice, 0 never given
        ("1 + 1 = 2\n2 + 1 = 3", False),  # two lines, not three
        ("1 * 1 = 1\n1 * 1 = 1\n1 + 1 = 2", False),  # reaches 2, not 4
        ("2 / 1 = 2.0\n1 + 1 = 2\n2 + 2 = 4", False),  # a decimal result is not an int
        ("(1) + 1 = 2\n2 + 1 = 3\n3 + 1 = 4", False),  # their int('(1) ') fails
    ],
)
def test_the_final_solution_check(solution: str, right: bool) -> None:
    assert solution_is_right([1, 1, 1, 1], 4, solution) is right


def test_model_text_is_parsed_never_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    attack = f"__import__('pathlib').Path({str(marker)!r}).touch() or 2 = 2\n2 + 1 = 3\n3 + 1 = 4"
    assert solution_is_right([1, 1, 1, 1], 4, attack) is False
    assert not marker.exists()


def test_a_right_solution_scores_one_whatever_the_trace() -> None:
    graded = grade_countdown("<Solution>\n1+1=2\n1+1=2\n2+2=4\n</Solution>", [1, 1, 1, 1], 4, ONES)
    assert graded.score == 1.0 and graded.metrics["partial_accuracy"] == 1.0


def test_partial_credit_follows_the_trace_to_the_first_wrong_action() -> None:
    lines = ONES.split("\n")
    # The second try (index 3 after the first line) drops its branch where the reference adds.
    wrong = "\n".join([*lines[:5], lines[5].replace("Add 3 to", "drop this branch. Add 3 to")])
    graded = grade_countdown(wrong, [1, 1, 1, 1], 4, ONES)
    gold_lines = 5  # the reference's procedure lines after its first
    assert graded.score == 0.0 and graded.metrics["partial_accuracy"] == pytest.approx(
        3 / gold_lines
    )
    assert graded.metrics["extraction_rate"] == 0.0  # no <Solution>


def test_a_wrong_first_line_or_no_procedure_scores_zero_partial() -> None:
    assert procedure_score("Initial number set: [1]", ONES.split("\n", 1)[1])[0] == 0.0
    graded = grade_countdown("<Solution>\n1+1=3\n</Solution>", [1, 1, 1, 1], 4, ONES)
    assert graded.metrics == {"accuracy": 0.0, "partial_accuracy": 0.0, "extraction_rate": 1.0}


def test_an_empty_trace_after_a_right_first_line_gets_their_minus_one_share() -> None:
    first = ONES.split("\n")[1]
    assert procedure_score(first, "\n".join(ONES.split("\n")[1:7])) == (-1 / 5, {})
