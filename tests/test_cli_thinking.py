"""`--thinking-budget` through the real CLI: bad values refused in one line, the plan counts the
thinking budget beside the answer's, and a run stores what the budget did."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .cli_helper import longscope

TEMPLATE = Path(__file__).parent / "fixtures" / "think_chatml.jinja"
NEEDLE = ("-S", "lengths=512", "-S", "depths=0.5", "-S", "types=needle")
SMOL = ("--model", "llamacpp/smollm2-135m", "-M", f"chat_template={TEMPLATE}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "bad --thinking-budget 0: expected a whole number of at least 1"),
        ("1.5", "--thinking-budget"),
        ("100000000000", "bad --thinking-budget 100000000000: at most"),
    ],
)
def test_a_bad_thinking_budget_is_one_line_and_exit_2(value: str, expected: str) -> None:
    made = longscope("plan", "longctx", *SMOL, *NEEDLE, "--thinking-budget", value)
    assert made.returncode == 2, made.stderr[-1000:]
    lines = [x for x in made.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and expected in lines[0], made.stderr


@pytest.mark.model
def test_the_plan_counts_thinking_and_answer(tmp_path: Path) -> None:
    made = longscope(
        "plan", "longctx", *SMOL, *NEEDLE, "--max-tokens", "16", "--thinking-budget", "40",
        "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    plan = json.loads(made.stdout)
    (cell,) = plan["by_length"]
    assert cell["requests"] == 1 and cell["output_tokens"] == plan["output_tokens_max"] == 16 + 40


@pytest.mark.model
def test_run_with_a_thinking_budget_stores_the_forced_close(tmp_path: Path) -> None:
    made = longscope(
        "run", "longctx", *SMOL, *NEEDLE, "--max-tokens", "8", "--thinking-budget", "8",
        "-o", str(tmp_path), "-q", timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    assert "Budgets by length" in made.stdout and "budget-bound at 512" in made.stdout
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    (row,) = db.execute("SELECT thinking_tokens, forced FROM budgets").fetchall()
    assert row == (8, 1)
