"""LongProc on the command line: bad input in one line, and one run on the embedded model against
the built fixture, compared with the authors' published rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ...cli_helper import longscope
from .rows import write_data


def _one_line(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_run_without_data_says_how_to_give_it(tmp_path: Path) -> None:
    line = _one_line(longscope("run", "longproc", "--model", "scripted/x", "-o", str(tmp_path)))
    assert "longproc needs -S data=DIR" in line and "-S data=github" in line


def test_a_task_not_run_lists_the_choices(tmp_path: Path) -> None:
    line = _one_line(
        longscope(
            "run",
            "longproc",
            "--model",
            "scripted/x",
            "-S",
            f"data={tmp_path}",
            "-S",
            "tasks=sudoku",
        )
    )
    assert "sudoku" in line and "travel_planning" in line and "path_traversal" in line


def test_data_not_of_the_pinned_commit_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data", rows=1)
    out = tmp_path / "run"
    line = _one_line(
        longscope("run", "longproc", "--model", "scripted/x", "-S", f"data={data}", "-o", str(out))
    )
    assert "is not princeton-pli/LongProc's data/" in line and "allow_unpinned" in line
    assert not (out / "longscope.sqlite").exists()


@pytest.mark.model
def test_a_run_on_the_embedded_model_reports_and_compares_with_the_published_table(
    tmp_path: Path,
) -> None:
    data = write_data(tmp_path / "data", rows=2)
    out = tmp_path / "run"
    done = longscope(
        "run", "longproc", "--model", "llamacpp/gemma3-270m", "-S", f"data={data}",
        "-S", "allow_unpinned=true", "-S", "tasks=path_traversal",
        "-S", "levels=0.5k,2k", "--limit", "1", "--max-tokens", "16", "-o", str(out), "-q",
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    native = summary["longproc"]
    assert set(native["tasks"]) == {"path_traversal"}
    assert set(native["levels"]) == {"0.5K", "2K"}
    assert 0.0 <= native["mean"] <= 100.0
    assert summary["comparable_with_published"] == "no"
    compared = longscope("compare", str(out), "--published", "longproc", "--json")
    assert compared.returncode == 0, compared.stderr
    models = [r["model"] for r in json.loads(compared.stdout)]
    assert "GPT-4o-2024-08" in models and "llamacpp/gemma3-270m" in " ".join(models)
