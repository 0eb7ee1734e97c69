"""NoLiMa needle-set rows validated at the edge: one clear line naming the entry and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.nolima.schema import parse_needle_set, read_needle_set

from .rows import experiment, plain_experiment


def parse(rows: object) -> tuple:
    return parse_needle_set(json.dumps(rows), "needle_set.json")


def test_rows_in_the_datasets_schema_parse() -> None:
    first, second = parse([experiment(), plain_experiment()])
    assert first.id == "0137" and first.seed_offset == 137
    assert first.character_set == ("Orla", "Bram", "Tamsin", "Idris")
    assert first.tests["T02"].input_args == ("the Salt Bridge", "Kessrow", "the Low Fens")
    assert list(first.questions) == ["onehop", "twohop"]
    assert second.tests["A1"].gold_answers == ("brass owl", "owl")
    assert second.task_template == "Read this:\n{haystack}\nNow answer: {question}"


def test_fields_the_code_does_not_read_are_kept() -> None:
    (row,) = parse([experiment(notes="added later by the authors")])
    assert row.model_extra == {"notes": "added later by the authors"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({k: v for k, v in experiment().items() if k != "system_prompt"}, "field 'system_prompt'"),
        (experiment(id="x137"), "field 'id'"),
        (experiment(character_set=None), "no character_set"),
        (experiment(character_set=[]), "field 'character_set'"),
        (experiment(questions={}), "field 'questions'"),
        (experiment(tests={}), "field 'tests'"),
        (plain_experiment(tests={"A1": {"input_args": ["x"]}}), "test 'A1'"),
        (plain_experiment(task_template="{haystack} {question} {extra}"), "task_template"),
        (plain_experiment(task_template="{haystack} {0}"), "task_template"),
        (experiment(distractors={"onehop": "x {1}"}), "lack the question types ['twohop']"),
        (experiment(tests={"T01": {"input_args": "the Glass Harbour"}}), "input_args"),
    ],
)
def test_bad_rows_are_named(row: dict, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse([experiment(id="0001"), row])
    text = str(caught.value)
    assert text.startswith("needle_set.json: entry 1")
    assert message in text
    assert "\n" not in text


def test_a_file_that_is_not_a_list_of_experiments_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="expected a JSON list of experiments, got dict"):
        parse(experiment())
    with pytest.raises(UsageError, match="not JSON"):
        parse_needle_set("[{", "needle_set.json")
    with pytest.raises(UsageError, match="appears twice"):
        parse([experiment(), experiment()])
    with pytest.raises(UsageError, match="cannot read the needle set"):
        read_needle_set(tmp_path / "absent.json")
