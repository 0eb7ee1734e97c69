"""The authors' published BABILong results: their prediction files, re-scored as they score them.

Layout (`babilong_evals/` of github.com/booydar/babilong, and the fuller `RMT-team/babilong_evals`
dataset on the Hugging Face hub): `{org}/{model}/{task}_{length}_{config}.csv` with columns
`target`, `output`, `question` (and pandas' unnamed index), one row per sample, beside a `.json`
of the same name recording the prompt and generation settings. `config` is the authors' prompt
configuration name (`instruction_yes_examples_yes_post_prompt_yes_chat_template_yes...`; older runs
omit `chat_template` and `system_prompt`).

Their table (`babilong/collect_results.py` at commit 7a6efee29f5cac03c3c410e6799c80fd2ffe3610):
every file scored with `compare_answers` (an output pandas reads as missing counts as empty), a
cell is 100 * correct / rows; per task, the configuration with the highest mean over the lengths
(a missing length counting as -1) gives the task's row; the headline per length is the mean of
qa1-qa5, and missing when any of them is. Their tie-break follows a set's iteration order (varies
between runs); here ties go to the first configuration by name.

`published.tsv` holds that table for the models of `babilong_evals/` at the commit above (two:
google/gemini-3-flash-preview and microsoft/Phi-3-mini-128k-instruct); the other models of the
leaderboard live in the Hub dataset, which `read_results` reads the same way once downloaded.
"""

from __future__ import annotations

import csv
import functools
import importlib.resources
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from longscope.errors import UsageError
from longscope.suites.babilong.schema import HEADLINE_TASKS, LENGTHS, TASKS
from longscope.suites.babilong.scoring import TASK_LABELS, accuracy, compare_answers

SOURCE = "booydar/babilong babilong_evals/@7a6efee29f5cac03c3c410e6799c80fd2ffe3610"

PANDAS_MISSING = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip
"""Outputs `pandas.read_csv` reads as missing, which the authors then score as the empty string."""

_NAME = re.compile(r"^(qa\d+)_(\d+k|\d+M)_(.+)$")


@dataclass(frozen=True)
class Cell:
    """One task at one length under one configuration: rows and how many the metric accepts."""

    task: str
    length: str
    config: str
    rows: int
    correct: int

    @property
    def accuracy(self) -> float:
        return accuracy(self.correct, self.rows)


@dataclass(frozen=True)
class ModelTable:
    """One model's table as the authors build it: per task the best configuration's row."""

    model: str
    scores: dict[str, dict[str, float]]
    """task -> length -> accuracy (percent), for the lengths the model has files for."""
    best_config: dict[str, str]
    """task -> the configuration whose row was kept."""
    headline: dict[str, float]
    """length -> mean of qa1-qa5 (only lengths where all five have a score)."""


def score_file(path: Path, task: str) -> tuple[int, int]:
    """Return (rows, correct) of one prediction file by the authors' metric."""
    labels = TASK_LABELS[task]
    rows = correct = 0
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = {"target", "output", "question"} - set(reader.fieldnames or ())
            if missing:
                raise UsageError(
                    f"{path}: no column {sorted(missing)[0]!r}: not a BABILong result file"
                )
            csv.field_size_limit(sys.maxsize)
            for line in reader:
                output = line["output"] or ""
                output = "" if output in PANDAS_MISSING else output
                rows += 1
                correct += compare_answers(line["target"], output, line["question"], labels)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"cannot read BABILong result file {path}: {exc}") from exc
    return rows, correct


def read_cells(model_dir: Path) -> list[Cell]:
    """Return every (task, length, configuration) cell of one model's folder of prediction files."""
    if not model_dir.is_dir():
        raise UsageError(f"BABILong results {model_dir} is not a folder: give {{org}}/{{model}}")
    cells = []
    for path in sorted(model_dir.glob("*.csv")):
        match = _NAME.match(path.stem)
        if not match or match[1] not in TASKS or match[2] not in LENGTHS:
            continue
        task, length, config = match[1], match[2], match[3]
        rows, correct = score_file(path, task)
        cells.append(Cell(task, length, config, rows, correct))
    return cells


def table(model: str, cells: Iterable[Cell]) -> ModelTable:
    """Return the authors' table from a model's cells (best configuration per task, headline)."""
    cells = list(cells)
    lengths = [name for name in LENGTHS if any(c.length == name for c in cells)]
    grid: dict[str, dict[str, dict[str, float]]] = {}
    for cell in cells:
        grid.setdefault(cell.config, {}).setdefault(cell.task, {})[cell.length] = cell.accuracy
    scores: dict[str, dict[str, float]] = {}
    best_config: dict[str, str] = {}
    best_mean: dict[str, float] = {}
    for config in sorted(grid):
        for task in TASKS:
            row = grid[config].get(task)
            if row is None:
                continue
            # collect_results fills a missing cell with -1 and averages it in.
            mean = sum(row.get(length, -1.0) for length in lengths) / len(lengths)
            if task not in best_mean or mean > best_mean[task]:
                best_mean[task], best_config[task], scores[task] = mean, config, dict(row)
    headline = {
        length: sum(scores[t][length] for t in HEADLINE_TASKS) / len(HEADLINE_TASKS)
        for length in lengths
        if all(length in scores.get(t, {}) for t in HEADLINE_TASKS)
    }
    return ModelTable(model, scores, best_config, headline)


def read_results(root: Path) -> list[ModelTable]:
    """Return the table of every `{org}/{model}` folder under `root`, by model name."""
    if not root.is_dir():
        raise UsageError(f"BABILong results {root} is not a folder: give babilong_evals/")
    models = sorted(p for p in root.glob("*/*") if p.is_dir() and ".git" not in p.parts)
    return [table(f"{p.parent.name}/{p.name}", read_cells(p)) for p in models]


@dataclass(frozen=True)
class PublishedRow:
    """One model's headline (mean of qa1-qa5, percent) by length in tokens, as shipped."""

    model: str
    scores: dict[int, float]
    tasks: dict[str, dict[int, float]]


@functools.cache
def published() -> tuple[PublishedRow, ...]:
    """Return the shipped table (`published.tsv`): each model's headline and qa1-qa5 by length."""
    text = importlib.resources.files(__package__).joinpath("published.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    by_model: dict[str, dict[str, dict[int, float]]] = {}
    for line in lines[1:]:
        fields = dict(zip(header, line.split("\t"), strict=True))
        row = by_model.setdefault(fields["model"], {})
        row[fields["task"]] = {
            LENGTHS[name]: float(fields[name]) for name in header[3:] if fields[name] != "-"
        }
    return tuple(
        PublishedRow(model, rows["avg"], {t: rows[t] for t in HEADLINE_TASKS})
        for model, rows in by_model.items()
    )


def to_tsv(tables: Iterable[ModelTable]) -> str:
    """Return tables as `published.tsv`'s rows: model, task (qa1-qa5, avg), config, then lengths."""
    tables = list(tables)
    lengths = [n for n in LENGTHS if any(n in row for t in tables for row in t.scores.values())]
    out = ["\t".join(["model", "task", "config", *lengths])]
    for t in tables:
        for task in (*HEADLINE_TASKS, "avg"):
            values = t.headline if task == "avg" else t.scores.get(task, {})
            config = "-" if task == "avg" else t.best_config.get(task, "-")
            cells = [f"{values[n]:.2f}" if n in values else "-" for n in lengths]
            out.append("\t".join([t.model, task, config, *cells]))
    return "\n".join(out) + "\n"
