"""A thinking budget end to end: a small LongCtx grid on the embedded instruct model with a chat
template that opens a think block; what the budget did is stored per generation and shown by every
report. (Grid lengths, not the 4K tier: this test's time is prefill on a shared 2-core machine.)"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from longscope import api
from longscope.models.registry import create_backend
from longscope.report.html import render_html
from longscope.report.terminal import print_leaderboard, print_summary
from longscope.run.runner import RunOptions, run
from longscope.run.scoring import read_run
from longscope.suites import create_suite

pytestmark = pytest.mark.model

TEMPLATE = Path(__file__).parent.parent / "fixtures" / "think_chatml.jinja"
GRID = {"lengths": [512], "depths": [0.5], "types": ["needle"]}
THINKING = 24
ANSWER = 16


@pytest.fixture(scope="module")
def thought_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("think-run")
    suite = create_suite("longctx", GRID)
    backend = create_backend("llamacpp/smollm2-135m", {"chat_template": str(TEMPLATE)})
    options = RunOptions(
        output=out, quiet=True, limit=1, max_tokens=ANSWER, thinking_budget=THINKING
    )
    run(suite, backend, options)
    return out


def test_every_generation_stores_what_its_budget_did(thought_run: Path) -> None:
    db = sqlite3.connect(thought_run / "longscope.sqlite")
    rows = db.execute(
        "SELECT g.sample_id, g.status, g.completion_tokens, b.thinking_budget, b.thinking_tokens, "
        "b.forced, b.answer_tokens, b.answer_cut FROM generations g JOIN budgets b "
        "USING (run_id, sample_id, repeat)"
    ).fetchall()
    assert rows, "no budget stored"
    for _sid, status, completion, budget, thinking, forced, answer, cut in rows:
        assert budget == THINKING and 0 < thinking <= THINKING and answer <= ANSWER
        assert completion == thinking + answer
        assert bool(cut) == (status == "length")
        # This small model never closes a think block: every request is forced.
        assert forced == 1
    header = json.loads(db.execute("SELECT header FROM runs").fetchone()[0])
    assert header["config"]["thinking_budget"] == THINKING


def test_reports_show_the_forced_share_and_flag_the_length(thought_run: Path) -> None:
    result = read_run(thought_run)
    record = result.summary.budgets
    cell = record["by_length"]["512"]
    assert record["thinking_budget"] == THINKING
    assert cell["answered"] >= 1 and cell["forced_share"] == 1.0 and cell["bound"]
    # JSON
    assert result.to_dict()["longscope"]["budgets"]["by_length"]["512"]["bound"] is True
    # terminal
    console = Console(file=io.StringIO(), width=200)
    print_summary(result.summary, console)
    text = console.file.getvalue()
    assert "Budgets by length" in text and "budget-bound at 512" in text
    assert "100.0" in text
    # HTML
    html = render_html([(thought_run, result)])
    assert "Budgets by length" in html and "budget-bound" in html
    # compare
    rows = api.compare([thought_run]).rows
    assert rows[0]["forced %"] == 100.0 and rows[0]["budget-bound"] == "512"
    console = Console(file=io.StringIO(), width=250)
    print_leaderboard(rows, console)
    assert "budget-bound" in console.file.getvalue()


def test_a_thinking_budget_the_context_cannot_hold_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    suite = create_suite("longctx", {**GRID, "lengths": [1024]})
    backend = create_backend(
        "llamacpp/smollm2-135m", {"chat_template": str(TEMPLATE), "context_length": 1100}
    )
    # llama.cpp holds a multiple of 256 tokens (1280 here): 1024 + 600 cannot fit it.
    options = RunOptions(output=tmp_path, quiet=True, limit=1, max_tokens=ANSWER,
                         thinking_budget=600)  # fmt: skip
    run(suite, backend, options)
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    rows = db.execute("SELECT status, error FROM generations").fetchall()
    assert rows and all(
        s == "skipped"
        and e.startswith(
            "insufficient_context: needs 1624 tokens (prompt, thinking and answer), backend holds"
        )
        for s, e in rows
    )
