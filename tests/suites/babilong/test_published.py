"""The reader of the authors' published predictions, on folders built here in their layout."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.babilong.published import Cell, published, read_results, table, to_tsv
from longscope.suites.babilong.schema import HEADLINE_TASKS, LENGTHS

YES = "instruction_yes_examples_yes_post_prompt_yes_chat_template_yes"
NO = "instruction_no_examples_no_post_prompt_no_chat_template_yes"


def write(
    folder: Path, task: str, length: str, config: str, rows: list[tuple[str, str, str]]
) -> None:
    """A prediction file as their script writes it: pandas' index column, target, output, question."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{task}_{length}_{config}.csv").open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["", "target", "output", "question"])
        for i, row in enumerate(rows):
            out.writerow([i, *row])


def right(n: int, wrong: int, task: str = "qa1") -> list[tuple[str, str, str]]:
    """`n` right rows then `wrong` wrong ones, in the labels of `task` (qa5's are names)."""
    if task == "qa5":
        good, bad = ("Fred", "Fred", "Who did Mary give the apple to?"), ("Fred", "Bill", "Who?")
    else:
        q = "Where is Mary? "
        good, bad = ("kitchen", "Mary is in the kitchen.", q), ("kitchen", "garden", q)
    return [good] * n + [bad] * wrong


def test_scores_cells_and_picks_the_best_configuration(tmp_path: Path) -> None:
    model = tmp_path / "org" / "model"
    for task in HEADLINE_TASKS:
        write(model, task, "0k", YES, right(3, 1, task))  # 75
        write(model, task, "4k", YES, right(1, 1, task))  # 50: mean 62.5
        write(model, task, "0k", NO, right(1, 3, task))  # 25
        write(model, task, "4k", NO, right(2, 0, task))  # 100: mean 62.5, a tie
    write(model, "qa3", "0k", NO, right(2, 2, "qa3"))  # qa3 under NO: (50 + 100) / 2 = 75
    write(model, "qa5", "4k", NO, right(0, 2, "qa5"))  # qa5 under NO: (25 + 0) / 2 = 12.5
    [result] = read_results(tmp_path)
    assert result.model == "org/model"
    assert result.best_config["qa3"] == NO
    assert result.scores["qa3"] == {"0k": 50.0, "4k": 100.0}
    assert result.best_config["qa5"] == YES
    assert result.scores["qa5"] == {"0k": 75.0, "4k": 50.0}
    # A tie keeps the first configuration by name (instruction_no... before instruction_yes...).
    assert result.best_config["qa1"] == NO
    assert result.scores["qa4"] == {"0k": 25.0, "4k": 100.0}
    assert result.headline["0k"] == pytest.approx((25 + 25 + 50 + 25 + 75) / 5)
    assert result.headline["4k"] == pytest.approx((100 + 100 + 100 + 100 + 50) / 5)


def test_a_missing_length_counts_as_minus_one_when_choosing() -> None:
    # collect_results: A has only 0k (100), B has both (49.6, 49.6). A's mean is (100 - 1) / 2 =
    # 49.5 < 49.6; counting the gap as 0 (50) or leaving it out (100) would pick A.
    cells = [
        Cell("qa1", "0k", "A", 1, 1),
        Cell("qa1", "0k", "B", 1000, 496),
        Cell("qa1", "4k", "B", 1000, 496),
    ]
    result = table("m", cells)
    assert result.best_config["qa1"] == "B"
    assert result.scores["qa1"] == {"0k": 49.6, "4k": 49.6}


def test_headline_needs_all_five_tasks_at_a_length() -> None:
    cells = [Cell(t, "0k", "A", 2, 1) for t in HEADLINE_TASKS] + [
        Cell(t, "1k", "A", 2, 2) for t in HEADLINE_TASKS[:4]
    ]
    result = table("m", cells)
    assert result.headline == {"0k": 50.0}
    assert result.scores["qa1"]["1k"] == 100.0


def test_outputs_pandas_reads_as_missing_score_as_empty(tmp_path: Path) -> None:
    model = tmp_path / "org" / "m"
    q = "Is John in the garden?"
    # 'no' is in 'None': read raw it would be right; pandas reads None as missing -> '' -> wrong.
    write(
        model,
        "qa6",
        "0k",
        YES,
        [("no", "None", q), ("no", "no", q), ("no", "", q), ("no", "Nope", q)],
    )
    [result] = read_results(tmp_path)
    assert result.scores["qa6"]["0k"] == 50.0


def test_not_a_result_file_is_one_line(tmp_path: Path) -> None:
    model = tmp_path / "org" / "m"
    model.mkdir(parents=True)
    (model / f"qa1_0k_{YES}.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(UsageError, match="no column 'output'"):
        read_results(tmp_path)


def test_shipped_table_is_consistent() -> None:
    rows = published()
    assert {r.model for r in rows} == {
        "google/gemini-3-flash-preview",
        "microsoft/Phi-3-mini-128k-instruct",
    }
    for row in rows:
        assert row.scores, row.model
        for tokens, avg in row.scores.items():
            mean = sum(row.tasks[t][tokens] for t in HEADLINE_TASKS) / 5
            assert avg == pytest.approx(mean, abs=0.01), (row.model, tokens)
        assert set(row.scores) <= set(LENGTHS.values())


def test_tsv_round_trips_the_table() -> None:
    cells = [Cell(t, "0k", YES, 4, 3) for t in HEADLINE_TASKS]
    text = to_tsv([table("org/m", cells)])
    lines = text.splitlines()
    assert lines[0] == "model\ttask\tconfig\t0k"
    assert lines[1] == f"org/m\tqa1\t{YES}\t75.00"
    assert lines[-1] == "org/m\tavg\t-\t75.00"
