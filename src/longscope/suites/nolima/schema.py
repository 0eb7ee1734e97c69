"""NoLiMa's needle sets, as the dataset publishes them (huggingface.co/datasets/amodaresi/NoLiMa).

A needle-set file (`needlesets/needle_set.json`, `needle_set_hard.json`, ...) is a JSON list of
experiments. The fields below are the ones the authors' `evaluation/run_tests.py` reads
(adobe-research/NoLiMa@7532e4eebf095c5540dc256900a63968da58a9d0):

- `id`: the experiment's id; its first four characters are an integer that seeds the character draw
  (`seed = base_seed + int(id[:4]) + haystack_no`).
- `system_prompt`: read for every experiment (a KeyError upstream when absent); sent only by models
  whose connector has no default system prompt (see `prompts.py`).
- `task_template` (optional): replaces the default template; formatted with `haystack` and
  `question` through `str.format`.
- `needle`: the sentence placed in the haystack, with `{1}`, `{2}`, ... for a test's `input_args`
  and `{CHAR}` for a character drawn from `character_set`.
- `questions`: question type (`onehop`, `twohop`, ...) -> question template.
- `character_set` (optional): the names `{CHAR}` is drawn from; the drawn name is then the only gold.
- `tests`: test id -> `input_args` (the values of `{1}`, `{2}`, ...) and, for needles without
  `{CHAR}`, `gold_answers`.
- `distractors` (optional): question type -> a distractor sentence template (the distractor needle
  set only; the suite does not run it yet).

Fields the code does not read (`reasoning_type`, notes) are kept, not refused: the files are the
authors', and a field they add later must not stop a run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from longscope.errors import UsageError, describe_error

CHAR = "{CHAR}"
"""The needle's (and question's) placeholder for the drawn character."""

_ID = re.compile(r"^\d{4}")


class NeedleTest(BaseModel):
    """One test of an experiment: the values of the needle's and question's `{n}` placeholders."""

    model_config = ConfigDict(extra="allow", frozen=True)

    input_args: tuple[str, ...]
    gold_answers: tuple[str, ...] | None = None
    """The answers that count (`contains`: any of them inside the response); unused with `{CHAR}`."""


class Experiment(BaseModel):
    """One entry of a needle-set file: a needle template, its questions and its tests."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(pattern=_ID.pattern)
    reasoning_type: str | None = None
    system_prompt: str
    task_template: str | None = None
    needle: str = Field(min_length=1)
    questions: dict[str, str] = Field(min_length=1)
    character_set: tuple[str, ...] | None = Field(default=None, min_length=1)
    tests: dict[str, NeedleTest] = Field(min_length=1)
    distractors: dict[str, str] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Experiment:
        if CHAR in self.needle and not self.character_set:
            raise ValueError(f"the needle has {CHAR} but the experiment has no character_set")
        if CHAR not in self.needle:
            for test_id, test in self.tests.items():
                if not test.gold_answers:
                    raise ValueError(
                        f"test {test_id!r}: a needle without {CHAR} needs gold_answers"
                    )
        if self.task_template is not None:
            try:
                self.task_template.format(haystack="", question="")
            except (KeyError, IndexError, ValueError) as error:
                raise ValueError(
                    "task_template must format with only {haystack} and {question}: "
                    f"{type(error).__name__}: {error}"
                ) from None
        if self.distractors is not None:
            missing = sorted(set(self.questions) - set(self.distractors))
            if missing:
                raise ValueError(f"distractors lack the question types {missing}")
        return self

    @property
    def seed_offset(self) -> int:
        """Return `int(id[:4])`, the experiment's part of the authors' seed."""
        return int(self.id[:4])


def parse_needle_set(text: str, source: str) -> tuple[Experiment, ...]:
    """Return the experiments of one needle-set file's text; bad input names file and entry."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{source}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(raw, list):
        raise UsageError(f"{source}: expected a JSON list of experiments, got {type(raw).__name__}")
    experiments = []
    for index, entry in enumerate(raw):
        try:
            experiments.append(Experiment.model_validate(entry))
        except ValidationError as error:
            name = entry.get("id") if isinstance(entry, dict) else None
            where = f"entry {index}" + (f" (id {name!r})" if isinstance(name, str) else "")
            raise UsageError(f"{source}: {where}: {describe_error(error)}") from None
    seen: set[str] = set()
    for experiment in experiments:
        if experiment.id in seen:
            raise UsageError(f"{source}: experiment id {experiment.id!r} appears twice")
        seen.add(experiment.id)
    return tuple(experiments)


def read_needle_set(path: Path) -> tuple[Experiment, ...]:
    """Return the experiments of a needle-set file, validated (one clear line when it is bad)."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the needle set ({error})") from None
    return parse_needle_set(text, str(path))
