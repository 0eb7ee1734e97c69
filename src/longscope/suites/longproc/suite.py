"""LongProc (Princeton, COLM 2025): long procedural generation, 0.5K, 2K and 8K output tokens.

Each task's prompt is the authors' `USER_PROMPT` (its `prompts.yaml`) formatted with the row, sent
as one user message (or a plain prompt to a base model); the output budget is the authors' per
level (1024, 3072, 10240 tokens: `data.BUDGETS`), never cut to fit: a row whose prompt and budget
do not fit the model is skipped with the tokens it needs. Answers are graded by the authors'
evaluators (`grading.py`; the C++ task in the sandbox, `code.py`), a cut answer on the text it
has, as theirs. The headline is theirs: per level the mean over tasks (their `agg_results.csv`),
then the mean over the levels run.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildCell, BuildContext, PromptTemplate, Suite
from longscope.suites.longproc import code
from longscope.suites.longproc.countdown import grade_countdown
from longscope.suites.longproc.data import (
    BUDGETS,
    LABELS,
    LEVELS,
    TASK_LEVELS,
    TASKS,
    Folder,
    Item,
    item_of,
    prompt_template,
    raw_rows,
    render,
    resolve,
    selected,
)
from longscope.suites.longproc.grading import (
    Graded,
    grade_html_to_tsv,
    grade_path_traversal,
    grade_tom_tracking,
)
from longscope.suites.longproc.summary import longproc_summary
from longscope.suites.longproc.travel import grade_travel_planning
from longscope.summary import Summary
from longscope.types import Generation, GenerationConfig, Sample, Score, ScoredRow


class LongProcSuite(Suite):
    """LongProc (github.com/princeton-pli/LongProc; docs/suites/longproc.md)."""

    name = "longproc"
    title = "LongProc"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=1024, temperature=0.0)
    template = PromptTemplate("{context}", "")
    DESCRIPTION = (
        "LongProc: long procedural output (HTML to TSV, pseudocode to C++, path traversal, ToM "
        "tracking, countdown, travel planning) at 0.5K/2K/8K output tokens (-S data=DIR|github)"
    )
    PUBLISHED = Path(__file__).with_name("published.json")
    """The authors' leaderboard (agg_results.csv, full_results.csv), with its source."""
    OPTIONS = (
        Param(
            "data",
            "str",
            None,
            "the repository's data/ folder, or github (princeton-pli/LongProc, pinned) (required)",
        ),
        Param("tasks", "strs", TASKS, "tasks to run", choices=TASKS),
        Param(
            "levels",
            "strs",
            tuple(LEVELS),
            "output levels to run (0.5k, 2k, 8k: the authors' 500, 2K and 8K tokens)",
            choices=tuple(LEVELS),
        ),
        Param(
            "subset",
            "choice",
            "helmet",
            "rows per task and level: helmet (the published runs' 100, shuffled with seed 42) or all",
            choices=("helmet", "all"),
        ),
        Param(
            "allow_unpinned",
            "bool",
            False,
            "score data that is not the pinned commit's (recorded as unpinned)",
        ),
    )

    def __init__(
        self,
        data: str | None,
        tasks: Sequence[str],
        levels: Sequence[str],
        subset: str,
        allow_unpinned: bool,
    ) -> None:
        if not data:
            raise UsageError(
                "longproc needs -S data=DIR (the repository's data/ folder) or -S data=github"
            )
        self.data = data
        self.tasks = tuple(t for t in TASKS if t in set(tasks))
        self.levels = tuple(level for level in LEVELS if level in set(levels))
        if not self.tasks or not self.levels:
            raise UsageError("longproc: -S tasks= and -S levels= must each name at least one")
        self.subset = subset
        self.allow_unpinned = allow_unpinned
        self._folder: Folder | None = None
        self._identity = ""

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data longproc` downloads (the pinned commit's data/)."""
        from longscope.suites.longproc.data import sources

        return sources()

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "tasks": list(self.tasks),
            "levels": list(self.levels),
            "subset": self.subset,
            "allow_unpinned": self.allow_unpinned,
        }

    @property
    def folder(self) -> Folder:
        if self._folder is None:
            self._folder = Folder(resolve(self.data), self.allow_unpinned)
        return self._folder

    @functools.cached_property
    def version(self) -> str:
        for task in self.tasks:  # read (and check) every file the identity stands for
            prompt_template(self.folder, task)
            for level in self._levels_of(task):
                raw_rows(self.folder, task, level)
        # The identity stands for the prompts and row files; each page a row names is checked
        # against the pinned commit when it is read (refused unless allow_unpinned).
        self._identity = self.folder.identity()
        return f"longproc-1/{self._identity}"

    def prepare(self) -> None:
        """Read and check the rows and prompts (the pinned commit) before any model is asked."""
        _ = self.version

    def _levels_of(self, task: str) -> tuple[str, ...]:
        return tuple(level for level in self.levels if level in TASK_LEVELS[task])

    @functools.cache  # noqa: B019  (one suite per run; rows are read once)
    def _rows(self, task: str, level: str) -> list[tuple[int, Any]]:
        rows = raw_rows(self.folder, task, level)
        return [(position, rows[position]) for position in selected(len(rows), self.subset)]

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per task and level (`--limit N`: N rows of each), none built."""
        why = code.unavailable()
        out = []
        for task in self.tasks:
            for level in self._levels_of(task):
                count = len(self._rows(task, level))
                skipped = f"{task} is skipped: {why}" if task == "pseudo_to_code" and why else ""
                out.append(BuildCell(task, LEVELS[level], count, skipped=skipped))
        return out

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` rows of one task and level as samples, made as pulled."""
        level = next(name for name, tokens in LEVELS.items() if tokens == length)
        template = prompt_template(self.folder, task)
        rows = self._rows(task, level)
        for position, row in rows[: len(rows) if count is None else count]:
            yield self._sample(
                ctx, task, level, template, item_of(self.folder, task, position, row)
            )

    def _sample(
        self, ctx: BuildContext, task: str, level: str, template: str, item: Item
    ) -> Sample:
        prompt = render(template, item.fields)
        fit = ctx.fit(prompt)
        budget = ctx.output_budget(BUDGETS[level])
        needed = fit.reserved + budget
        meta: dict[str, Any] = {
            "level": LABELS[level],
            # The task-and-level cell it counts in, as the summary names it (for the statistics).
            "task_level": f"{task} {LABELS[level]}",
            "budget": budget,
            "position": item.position,
            "needed_tokens": needed,
            "data": self.version.split("/", 1)[1],
        }
        if item.name:
            meta["row"] = item.name
        if task == "countdown":
            meta["nums"], meta["target"] = item.fields["nums"], item.fields["target"]
        if task == "travel_planning":
            meta["cities"] = item.fields["ground_truth_cities"]
            meta["durations"] = item.fields["ground_truth_durations"]
        if item.testcases:
            meta["testcases"] = [[list(i), list(o)] for i, o in item.testcases[: code.MAX_CASES]]
        return Sample(
            id=f"{task}/{level}/{item.position:04d}",
            task=task,
            language="en",
            context=prompt,
            question="",
            gold=(item.reference,),
            length=_length(needed, ctx.context_length),
            meta=meta,
            max_tokens=budget,
            prompt_tokens=fit.counted,
        )

    def timeout_s(self, sample: Sample) -> float:
        # Long outputs are the point: allow for the budget at a slow 10 tokens/s.
        budget = sample.max_tokens or 1024
        return 120.0 + budget / 10.0 + 2.0 * sample.counted_prompt() / 1000.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """The authors' evaluator on the answer (the C++ task's programs run in the sandbox)."""
        graded = grade(sample["task"], generation.text, sample)
        evidence: dict[str, Any] = {"metrics": graded.metrics}
        if graded.error is not None:
            evidence["error"] = graded.error
        if graded.parsed is None:
            evidence["parsed"] = None
        return Score(graded.score, 1.0, evidence=evidence)

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return longproc_summary(rows)


def _length(needed: int, context: int | None) -> int:
    """Return a sample's length: the power of two holding its prompt and budget (few groups, an
    upper bound of what it costs), the model's context when that is less and the sample fits, or
    its need when it cannot fit (the runner then skips it, saying so). The output level, what
    LongProc reports by, is `meta.level`."""
    tier = max(1024, 1 << (needed - 1).bit_length())
    if context is None:
        return tier
    return needed if needed > context else min(tier, context)


def grade(task: str, text: str, sample: dict[str, Any]) -> Graded:
    """Return the authors' grade of `text` for a stored sample of `task`."""
    reference = sample["gold"][0]
    if task == "html_to_tsv":
        return grade_html_to_tsv(text, reference)
    if task == "path_traversal":
        return grade_path_traversal(text, reference)
    if task == "tom_tracking":
        return grade_tom_tracking(text, reference)
    if task == "countdown":
        meta = sample["meta"]
        return grade_countdown(text, list(meta["nums"]), int(meta["target"]), reference)
    if task == "travel_planning":
        meta = sample["meta"]
        return grade_travel_planning(text, meta["cities"], meta["durations"], reference)
    if task == "pseudo_to_code":
        cases = [(tuple(i), tuple(o)) for i, o in sample["meta"]["testcases"]]
        return code.grade_pseudo_to_code(text, cases)
    raise ValueError(f"unknown LongProc task {task!r}")


__all__ = ["LongProcSuite", "grade"]
