"""Countdown: the authors' verbalized depth-first search (the prompt's examples and each row's
reference trace) and their two evaluators (`longproc/countdown_evaluator.py`), re-implemented.

The trace must match theirs byte for byte: it is shown to the model as the procedure to follow and
graded against line by line. Their final-solution check `eval`s each equation's left side; here it
is parsed (numbers, + - * / and parentheses only): an answer their `eval` would raise on (names,
syntax) is simply wrong here, where theirs stopped the evaluation.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longscope.suites.longproc.grading import Graded, extract_with_tag

MAX_INTERMEDIATE = 2000
DEMOS = ((40, 19, 23, 7), 29), ((9, 16, 6, 18), 12)
"""The prompt's two worked examples (`_DEMO_SET`)."""
_SOLUTION = """Now we have found the target, let's trace back the solution:
Final step: {2}
The step before: {1}
The first step: {0}

Output the solution in the required format:
<Solution>
{0}
{1}
{2}
</Solution>
"""


def _indent(level: int) -> str:
    return "" if level == 0 else " " * level + "|- "


def _pairs(nums: list[Any]) -> list[tuple[Any, Any, list[Any]]]:
    """Every pair (i < j) in order, with the numbers left."""
    return [
        (a, b, [x for k, x in enumerate(nums) if k not in (i, j)])
        for i, a in enumerate(nums)
        for j, b in enumerate(nums)
        if j > i
    ]


@dataclass
class _Search:
    target: int
    log: list[str]
    states: list[tuple[int, str]]
    """(parent state, equation) per explored state."""

    def visit(self, nums: list[Any], parent: int, equation: str | None, depth: int) -> bool:
        state = len(self.states)
        self.states.append((parent, equation or ""))
        pad = _indent(depth)
        if equation is not None:
            value = nums[0]
            if value is None:  # division by zero
                self.log.append(f"\n{pad}Try {equation}. drop this branch.")
                return False
            if value % 1 != 0:
                self.log.append(
                    f"\n{pad}Try {equation}. {value:.1f} is a decimal, drop this branch."
                )
                return False
            if value >= MAX_INTERMEDIATE:
                self.log.append(
                    f"\n{pad}Try {equation}. {value} exceeds the maximum intermediate result, "
                    "drop this branch."
                )
                return False
        if len(nums) == 1:
            sign = "==" if nums[0] == self.target else "!="
            found = nums[0] == self.target
            end = "target found!" if found else "drop this branch."
            self.log.append(
                f"\n{pad}Try {equation}. Evaluate {nums[0]} {sign} {self.target}, {end}"
            )
            return found
        if equation is not None:
            self.log.append(f"\n{pad}Try {equation}. Add {nums[0]} to the number set.")
        options = [(a, b) for a, b, _ in _pairs(nums)]
        if len(nums) == 2:
            self.log.append(
                f" Current number set: {nums}, target: {self.target}, just two numbers left."
            )
        else:
            head = "Initial number set" if equation is None else " Current number set"
            self.log.append(
                f"{head}: {nums}, target: {self.target}. Options for choosing two numbers: "
                f"{options}."
            )
            depth += 1
        for a, b, left in _pairs(nums):
            if len(nums) > 2:
                self.log.append(
                    f"\n{_indent(depth)}Pick two numbers ({a}, {b}) (numbers left: {left}). "
                    "Try possible operations."
                )
            a, b = (b, a) if a < b else (a, b)
            tries: list[tuple[Any, str]] = [
                (a + b, f"{a} + {b} = {a + b}"),
                (a - b, f"{a} - {b} = {a - b}"),
                (a * b, f"{a} * {b} = {a * b}"),
            ]
            if b == 0:
                tries.append((None, f"{a} / {b} (invalid operation)"))
            elif a % b == 0:
                tries.append((int(a / b), f"{a} / {b} = {int(a / b)}"))
            else:
                tries.append((a / b, f"{a} / {b} = {a / b:.1f}"))
            for value, eq in tries:
                if self.visit([value, *left], state, eq, depth + 1):
                    return True
        return False


def demonstration(nums: list[int], target: int) -> tuple[list[str], str]:
    """Return (the three equations, the trace) of the authors' search for `target` from `nums`."""
    search = _Search(target, [], [])
    if not search.visit(list(nums), -1, None, 0):
        raise ValueError(f"countdown: no solution for {nums} -> {target}")
    steps = []
    parent, equation = search.states[-1]
    while parent != -1:
        steps.append(equation)
        parent, equation = search.states[parent]
    steps.reverse()
    trace = "# Search Procedure\n" + "".join(search.log) + "\n\n" + _SOLUTION.format(*steps)
    return steps, trace


def examples() -> str:
    """Return the prompt's `{demonstration}`: the two worked examples (`build_icl_demonstration`)."""
    out = []
    for nums, target in DEMOS:
        _, trace = demonstration(list(nums), target)
        out.append(f"# Example\nNumbers: {list(nums)}\nTarget: {target}\n\n{trace}")
    return "\n\n".join(out)


_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _arith(text: str) -> float | None:
    """Return the value of an arithmetic expression (numbers, + - * /, parentheses), or None."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("not arithmetic")

    try:
        return value(tree.body)
    except (ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None


def solution_is_right(nums: list[int], target: int, solution: str) -> bool:
    """Check three equations `a op b = c` that use the numbers up to `target`
    (`evaluate_countdown_final_solution`)."""
    left = list(nums)
    lines = solution.split("\n")
    if len(lines) != 3:
        return False
    for line in lines:
        line = line.strip()
        if len(line.split("=")) != 2:
            return False
        lhs, rhs = line.split("=")
        result = _arith(lhs)
        if result is None:
            return False  # their eval raised: the evaluation stopped
        op = next((o for o in "+-*/" if o in lhs), None)
        if op is None:
            return False
        try:
            a_text, b_text = lhs.split(op)
            a, b, c = int(a_text), int(b_text), int(rhs)
        except ValueError:
            return False
        if result != c or a not in left:
            return False
        left.remove(a)
        if b not in left:
            return False
        left.remove(b)
        left.append(c)
    return left[0] == target


def procedure_score(procedure: str, reference: str) -> tuple[float, dict[str, Any]]:
    """Return (partial accuracy, error) of a search trace against the reference's
    (`evaluate_countdown_search_procedure`): the first line must match; then lines are compared in
    order up to the first wrong pick or a try on other numbers or with another outcome. As theirs,
    the share is the last compared line's index over the reference's lines (so an empty trace after
    a right first line gets -1 / n)."""
    pred = procedure.strip().split("\n")
    gold = reference.strip().split("\n")
    if pred[0] != gold[0]:
        return 0.0, {"line_number": 0, "prediction": pred[0], "ground_truth": gold[0]}
    pred, gold = pred[1:], gold[1:]
    index, error = -1, {}
    for p, g in zip(pred, gold, strict=False):
        index += 1
        if p == g:
            continue
        if "Pick two numbers" in g:
            error = {"line": index, "pr": p, "gt": g}
            break
        if "|- Try" in g:
            drop_g, drop_p = "drop this branch" in g, "drop this branch" in p
            if p.split("=")[0] != g.split("=")[0] or drop_g != drop_p:
                error = {"line": index, "pr": p, "gt": g}
                break
            continue
        error = {"line": index, "pr": p, "gt": g, "unknown": True}  # theirs raised here
        break
    return (index / len(gold) if gold else 0.0), error


def grade_countdown(prediction: str, nums: list[int], target: int, reference: str) -> Graded:
    """Grade a countdown answer (`eval_countdown`): the <Solution> equations must reach the target;
    otherwise partial credit from the `# Search Procedure` trace."""
    solution = extract_with_tag(prediction, "Solution")
    if solution is not None and solution_is_right(nums, target, solution):
        return Graded(
            1.0, {"accuracy": 1.0, "partial_accuracy": 1.0, "extraction_rate": 1.0}, solution
        )
    extraction = 1.0 if solution is not None else 0.0
    if "# Search Procedure" not in prediction:
        metrics = {"accuracy": 0.0, "partial_accuracy": 0.0, "extraction_rate": extraction}
        return Graded(0.0, metrics, None)
    procedure = prediction.split("# Search Procedure")[-1].strip()
    gold = reference.split("# Search Procedure")[-1].split("Now we have found the target")[0]
    partial, error = procedure_score(procedure, gold.strip())
    metrics = {"accuracy": 0.0, "partial_accuracy": partial, "extraction_rate": extraction}
    return Graded(0.0, metrics, solution, error or None)


__all__ = [
    "DEMOS",
    "demonstration",
    "examples",
    "grade_countdown",
    "procedure_score",
    "solution_is_right",
]
