"""`longscope run graphwalks` on the embedded model (completion mode), then `report` and
`compare --published graphwalks`; bad input is one line, exit 2, before any model loads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from longscope.suites.graphwalks.grading import grade

from ...cli_helper import longscope
from .rows import graphwalks_row, write_jsonl


@pytest.mark.model
def test_run_report_and_compare_published_on_the_embedded_model(tmp_path: Path) -> None:
    data = write_jsonl(
        tmp_path / "gw.jsonl",
        [
            graphwalks_row("parents", seed=1, nodes=5, edges=6),
            graphwalks_row("bfs", seed=2, nodes=5, edges=6),
            graphwalks_row("parents", seed=3, nodes=150, edges=250),  # over 2,048 tokens
        ],
    )
    out = tmp_path / "run"
    args = ("--model", "llamacpp/gemma3-270m", "-S", f"data={data}", "-M", "context_length=2048")
    args += ("--max-tokens", "8")  # the rows' answers fit; a short cap keeps the test fast
    plan = longscope("plan", "graphwalks", *args)
    assert plan.returncode == 0 and "plan: 2 requests (1 skipped, 0 done)" in plan.stdout, plan
    run = longscope("run", "graphwalks", *args, "-o", str(out), "-q", timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "(2 sent, 1 skipped this time)" in run.stdout
    again = longscope("run", "graphwalks", *args, "-o", str(out), "-q", timeout=300)
    assert "(0 sent, 1 skipped this time)" in again.stdout, again.stdout[-500:]  # resumed
    assert "every request is stored already" in again.stdout + again.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"] == "graphwalks"
    with sqlite3.connect(out / "longscope.sqlite") as db:
        stored = db.execute(
            "SELECT s.data, g.text, g.status, sc.value FROM samples s "
            "JOIN generations g USING (run_id, sample_id) "
            "JOIN scores sc USING (run_id, sample_id, repeat)"
        ).fetchall()
    assert len(stored) == 2
    for sample_json, text, status, value in stored:
        sample = json.loads(sample_json)
        assert status in ("ok", "length")
        # Every stored score is the card's grade of the answer line the model completed.
        assert value == grade("Final Answer: [" + text, tuple(sample["gold"])).f1
    views = {v["name"]: v for v in summary["longscope"]["views"]}
    assert set(views) == {"bfs", "parents"}
    assert summary["comparable_with_published"] == "no"  # a fixture, completion mode
    assert summary["graphwalks"]["problem_types"]["parents"]["skipped"] == 1
    report = longscope("report", str(out))
    assert report.returncode == 0 and "GraphWalks" in report.stdout, report.stderr[-2000:]
    compare = longscope("compare", str(out), "--published", "graphwalks")
    assert compare.returncode == 0, compare.stderr[-2000:]
    assert "openai/gpt-5.4" in compare.stdout


def test_a_bad_row_is_named_before_any_model_is_loaded(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "r.jsonl", [{**graphwalks_row(), "problem_type": "dfs"}])
    done = longscope(
        "run", "graphwalks", "--model", "llamacpp/gemma3-270m", "-S", f"data={data}",
        "-o", str(tmp_path / "run"),
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {data}: row 1: field 'problem_type'")
    assert not (tmp_path / "run" / "longscope.sqlite").exists()
