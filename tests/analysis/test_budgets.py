"""The budget record: answers cut by a budget and thinking forced closed, per length, and the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.analysis.budgets import (
    BOUND_SHARE,
    budget_note,
    budget_record,
    budget_rows,
    leaderboard_columns,
)
from longscope.run.store import RunStore
from longscope.summary import Summary
from longscope.types import BudgetUse, Generation, ScoredRow


def _row(length: int, status: str = "ok", forced: bool | None = None) -> ScoredRow:
    budget = None if forced is None else BudgetUse(64, 64 if forced else 10, forced, 5, False)
    return ScoredRow({"length": length}, 0, Generation("a", status, budget=budget), None)


def test_a_run_no_budget_touched_has_no_record() -> None:
    assert budget_record([_row(4096), _row(8192), _row(8192, "error")]) == {}


def test_shares_per_length_and_the_flag_just_past_ten_percent() -> None:
    # 4096: 1 forced of 10 (10%, not past); 8192: 1 forced + 1 cut of 10 (20%).
    rows = [_row(4096, forced=i == 0) for i in range(10)]
    rows += [_row(8192, forced=i == 0) for i in range(9)] + [_row(8192, "length", forced=False)]
    rows += [_row(8192, "timeout")]  # not answered: not counted
    record = budget_record(rows)
    short, long = record["by_length"]["4096"], record["by_length"]["8192"]
    assert (short["answered"], short["forced"], short["cut"], short["bound"]) == (10, 1, 0, False)
    assert (long["answered"], long["forced"], long["cut"], long["bound"]) == (10, 1, 1, True)
    assert long["hit_share"] == 0.2 > BOUND_SHARE
    assert record["thinking_budget"] == 64 and record["overall"]["answered"] == 20
    assert "budget-bound at 8192" in budget_note(record)
    table = budget_rows(record, {4096: 50.0, 8192: 12.5})
    assert table[1] == ["8192", "12.5", "10", "10.0", "10.0", "budget-bound"]
    assert table[-1][0] == "all"
    assert leaderboard_columns(record) == {"forced %": 10.0, "cut %": 5.0, "budget-bound": "8192"}


def test_answers_cut_without_a_thinking_budget_still_count() -> None:
    record = budget_record([_row(1024, "length"), _row(1024)])
    assert record["thinking_budget"] is None and record["by_length"]["1024"]["bound"]


def test_the_record_survives_summary_json() -> None:
    record = budget_record([_row(1024, forced=True)])
    summary = Summary(suite="x", title="x", budgets=record)
    assert Summary.from_dict(summary.to_dict()).budgets == record
    assert "budgets" not in Summary(suite="x", title="x").to_dict()["longscope"]


@pytest.mark.parametrize("forced", [True, False])
def test_the_store_keeps_what_the_budget_did(tmp_path: Path, forced: bool) -> None:
    use = BudgetUse(32, 32 if forced else 7, forced, 9, not forced)
    with RunStore(tmp_path) as store:
        store.put_generations("r", [("s", 0, Generation("x", "ok", budget=use))])
        store.put_generations("r", [("t", 0, Generation("y", "ok"))])
    with RunStore.open_readonly(tmp_path) as store:
        got = {sid: gen.budget for sid, _, gen in store.generations("r")}
    assert got == {"s": use, "t": None}
