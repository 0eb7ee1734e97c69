"""The issue's commands on the embedded BASE model (completion mode), as a user types them:
`longscope list`, `longscope run babilong --model llamacpp/gemma3-270m -S data=FIXTURE --lengths
0k,1k` and `longscope compare RUN --published babilong`.

The fixture is a folder the test builds in the dataset's schema (`rows.py`); the run sends one task
at two lengths, two rows each (4 requests): small enough for the default run.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from longscope.analysis.curves import length_auc
from longscope.analysis.effective import RULER_THRESHOLD, effective_length
from longscope.cli import app
from longscope.suites.babilong.published import published
from longscope.suites.babilong.scoring import is_correct

from .rows import write_folder

pytestmark = pytest.mark.model


def _cli(*args: str) -> Result:
    """Run the real CLI in this process (the model loads once; no interpreter start per command)."""
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    base = tmp_path_factory.mktemp("babilong-gemma")
    data = write_folder(base / "babilong", {("qa1", "0k"): 2, ("qa1", "1k"): 2, ("qa2", "0k"): 2})
    out = base / "run"
    done = _cli(
        "run", "babilong", "--model", "llamacpp/gemma3-270m", "-S", f"data={data}",
        "-S", "tasks=qa1", "--lengths", "0k,1k", "-o", str(out),
    )  # fmt: skip
    return out, done


def test_listed() -> None:
    listed = _cli("list")
    assert listed.exit_code == 0, listed.output
    assert any(line.split()[:1] == ["babilong"] for line in listed.output.splitlines())


def test_the_run_reports_effective_length_and_auc(run_dir) -> None:
    out, done = run_dir
    assert done.exit_code == 0, done.output[-2000:]
    assert "BABILong" in done.output and "mean of qa1" in done.output
    assert "effective length (>= 85.6)" in done.output and "length AUC" in done.output
    db = sqlite3.connect(out / "longscope.sqlite")
    samples = {sid: json.loads(d) for sid, d in db.execute("SELECT sample_id, data FROM samples")}
    assert sorted(samples) == ["qa1-0k-0000", "qa1-0k-0001", "qa1-1k-0000", "qa1-1k-0001"]
    generations = {
        sid: (status, text, tokens)
        for sid, status, text, tokens in db.execute(
            "SELECT sample_id, status, text, prompt_tokens FROM generations"
        )
    }
    scores = dict(db.execute("SELECT sample_id, value FROM scores"))
    for sid, sample in samples.items():
        status, text, engine_tokens = generations[sid]
        assert status in ("ok", "length")
        # The prompt the suite counted (text + BOS) is the one llama.cpp read.
        assert engine_tokens == sample["prompt_tokens"]
        right = is_correct("qa1", sample["gold"][0], text.strip(), sample["question"])
        assert scores[sid] == (1.0 if right else 0.0)
    summary = json.loads((out / "summary.json").read_text())
    [view] = summary["longscope"]["views"]
    by_length = {int(k): v for k, v in view["by_length"].items()}
    assert set(by_length) == {0, 1000}
    for length in by_length:
        mine = [s for sid, s in scores.items() if samples[sid]["meta"]["dataset_length"] == length]
        assert by_length[length] == pytest.approx(100 * sum(mine) / len(mine))
    metrics = view["metrics"]
    assert metrics["effective"] == effective_length(by_length, RULER_THRESHOLD).label
    assert metrics["auc"] == pytest.approx(length_auc(by_length), abs=0.01)
    assert metrics["auc_se"] is not None
    assert summary["comparable_with_published"] == "no"  # the test's rows, not RMT-team's


def test_compare_places_the_run_among_the_published_rows(run_dir) -> None:
    out, done = run_dir
    assert done.exit_code == 0, done.output[-2000:]
    compared = _cli("compare", str(out), "--published", "babilong", "--threshold", "85", "--json")
    assert compared.exit_code == 0, compared.output[-2000:]
    rows = json.loads(compared.stdout)
    rows = rows.get("rows", rows) if isinstance(rows, dict) else rows
    models = [r["model"] for r in rows]
    assert "google/gemini-3-flash-preview" in models and "llamacpp/gemma3-270m" in models
    gemini = next(r for r in rows if r["model"] == "google/gemini-3-flash-preview")
    # Published numbers over the run's lengths (0k and 1k), as the run's own are.
    assert gemini["AUC"] == pytest.approx((96.54 + 95.42) / 2, abs=0.01)
    # Effective length at the paper's 85, on the published curve (0k-1M) and on the run's.
    shipped = next(r for r in published() if r.model == "google/gemini-3-flash-preview")
    assert gemini["effective"] == effective_length(shipped.scores, 85.0).label == "4000"
    mine = next(r for r in rows if r["model"] == "llamacpp/gemma3-270m")
    summary = json.loads((out / "summary.json").read_text())
    by_length = {int(k): v for k, v in summary["longscope"]["views"][0]["by_length"].items()}
    assert mine["effective"] == effective_length(by_length, 85.0).label
    assert mine["comparable"].startswith("no: ") and "data from" in mine["comparable"]
