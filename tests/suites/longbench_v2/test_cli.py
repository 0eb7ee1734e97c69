"""`longscope run longbench-v2` on the embedded model (completion mode): the official prompt cut to
the window and recorded as truncated, then `report` and `compare --published longbench-v2`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from longscope.suites.longbench_v2.official import judge

from ...cli_helper import longscope
from .rows import question, write_json


@pytest.mark.model
def test_run_report_and_compare_published_on_the_embedded_model(tmp_path: Path) -> None:
    data = write_json(
        tmp_path / "data.json",
        [question(0, words=4), question(1, length="medium", difficulty="hard", words=40)],
    )
    out = tmp_path / "run"
    run = longscope(
        "run", "longbench-v2", "--model", "llamacpp/gemma3-270m", "-S", f"data={data}",
        "-S", "max_input_tokens=300", "--max-tokens", "4", "-o", str(out), "-q", timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    with sqlite3.connect(out / "longscope.sqlite") as db:
        stored = db.execute(
            "SELECT s.data, g.text, sc.value FROM samples s "
            "JOIN generations g USING (run_id, sample_id) "
            "JOIN scores sc USING (run_id, sample_id, repeat)"
        ).fetchall()
    assert len(stored) == 2
    cut = {}
    for sample_json, text, value in stored:
        sample = json.loads(sample_json)
        # Every stored score is pred.py's judgement of the answer line the model completed.
        assert value == judge("The correct answer is (" + text, sample["gold"][0]).credit
        cut[sample["id"]] = sample["meta"]["truncated"]
    assert cut == {"direct/q0000": False, "direct/q0001": True}
    summary = json.loads((out / "summary.json").read_text())
    line = summary["longbench_v2"]["w/o CoT"]
    assert line["truncated"] == 1 and line["questions"] == 2
    report = longscope("report", str(out))
    assert report.returncode == 0 and "LongBench v2" in report.stdout, report.stderr[-2000:]
    compare = longscope("compare", str(out), "--published", "longbench-v2")
    assert compare.returncode == 0, compare.stderr[-2000:]
    assert "o1-preview" in compare.stdout
