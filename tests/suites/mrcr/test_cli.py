"""Bad MRCR input on the command line: one line naming the thing and what to do, exit 2."""

from __future__ import annotations

from pathlib import Path

from ...cli_helper import longscope
from .rows import mrcr_row, write_jsonl


def _one_line(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_run_without_data_says_how_to_give_it(tmp_path: Path) -> None:
    line = _one_line(
        longscope("run", "mrcr", "--model", "llamacpp/smollm2-135m", "-o", str(tmp_path))
    )
    assert "mrcr needs -S data=FILE" in line and "-S data=hub" in line


def test_a_bad_row_is_named_before_any_model_is_loaded(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2), {**mrcr_row(2), "n_needles": "two"}])
    line = _one_line(
        longscope(
            "run",
            "mrcr",
            "--model",
            "llamacpp/smollm2-135m",
            "-S",
            f"data={data}",
            "-o",
            str(tmp_path / "run"),
        )
    )
    assert line.startswith(f"error: {data}: row 2: field 'n_needles'")
    assert not (tmp_path / "run" / "longscope.sqlite").exists()


def test_an_unknown_bin_counter_lists_the_choices(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2)])
    line = _one_line(
        longscope(
            "run",
            "mrcr",
            "--model",
            "llamacpp/smollm2-135m",
            "-S",
            f"data={data}",
            "-S",
            "bins=cl100k",
        )
    )
    assert "bins=cl100k" in line and "model, o200k" in line
