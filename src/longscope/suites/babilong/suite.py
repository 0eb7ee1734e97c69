"""BABILong as a suite: the authors' rows, prompts, generation settings and answer checking.

A cell is one task at one length (`cells`), made row by row as the run pulls it (`iter_cell`):
`--limit N` opens only the files of the cells it sends and reads N rows of each. A row is sent as
the authors' script sends it (`prompts.build_prompt`: chat models get one user message, base models
the same text as a completion prompt), greedy, at most 20 new tokens, and checked with their
`compare_answers` (`scoring.is_correct`).

The headline is the authors': per length, the mean of the qa1-qa5 accuracies (their README and
leaderboard); the overall is that curve's mean over the lengths run. A row too long for the model
(counted in its own tokenizer) is never sent nor truncated: it is skipped with its need and left out
of the means, as every BABILong length is a fixed text. A request that failed counts 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.babilong import data
from longscope.suites.babilong.prompts import (
    MAX_NEW_TOKENS,
    BuiltPrompt,
    PromptConfig,
    build_prompt,
)
from longscope.suites.babilong.schema import HEADLINE_TASKS, LENGTHS, TASKS, Row
from longscope.suites.babilong.scoring import (
    collected_output,
    is_correct,
    preprocess_output,
)
from longscope.suites.babilong.summary import (
    LENGTH_NAMES,
    babilong_summary,
    group_of,
)
from longscope.suites.base import BuildCell, BuildContext, PromptTemplate, Suite
from longscope.summary import (
    Summary,
)
from longscope.types import (
    Generation,
    GenerationConfig,
    Message,
    PromptMode,
    PromptParts,
    Sample,
    Score,
    ScoredRow,
)

DEFAULT_LENGTHS = ("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k")
"""The lengths run by default: the 1000-row set's (the authors read its rows up to 32k and the
100-row set's from 64k); 256k, 512k, 1M and 10M on request."""
SYSTEM_MARGIN = 8
"""Tokens reserved (not counted as sent) for a system message's role markers in chat mode."""


@dataclass(frozen=True)
class BabilongTemplate(PromptTemplate):
    """The authors' prompt of a row, in the model's prompt mode (`prompts.build_prompt`)."""

    body: str = ""
    answer_prefix: str = ""
    pieces: PromptConfig = field(default_factory=PromptConfig)
    """Which pieces the run uses and its system prompt (`chat_template` follows the mode)."""

    def built(self, sample: Sample, mode: PromptMode) -> BuiltPrompt:
        """Return the prompt the authors' script sends for `sample` in `mode`."""
        config = replace(self.pieces, chat_template=mode == "chat")
        return build_prompt(sample.task, sample.context, sample.question, config)

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return (prompt, messages): the text as a completion prompt, or the chat messages."""
        made = self.built(sample, mode)
        return (made.text, ()) if mode == "completion" else ("", made.messages)

    def parts(self, sample: Sample, mode: PromptMode) -> PromptParts:
        """Return the text (prompt or user message) cut around the row's context."""
        return self.built(sample, mode).parts


class BabilongSuite(Suite):
    """BABILong (github.com/booydar/babilong; docs/suites/babilong.md)."""

    name = "babilong"
    title = "BABILong"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=MAX_NEW_TOKENS, temperature=0.0)
    DESCRIPTION = (
        "BABILong: bAbI's 20 reasoning tasks hidden in PG-19 text, 0k-10M, the authors' prompts "
        "and checking (-S data=DIR|hub)"
    )
    OPTIONS = (
        Param("data", "str", None, "the rows: a folder in the dataset's layout (data/qa1/1k.json "
              "or 1k/qa1-*.parquet, as downloaded), or hub (RMT-team's sets at pinned revisions) "
              "(required)"),
        Param("tasks", "strs", HEADLINE_TASKS, "bAbI tasks, qa1-qa20 (the headline is the mean "
              "of qa1-qa5; past 0k the dataset holds qa1-qa10)", choices=TASKS),
        Param("lengths", "strs", DEFAULT_LENGTHS, "the dataset's lengths in GPT-2 tokens (1k = "
              "1000), 0k-128k by default; 256k, 512k, 1M, 10M on request", choices=tuple(LENGTHS)),
        Param("samples", "int", None, "rows per task and length, in file order (default: every "
              "row: 1000 up to 32k, 100 from 64k, as the authors ran)", low=1),
        Param("instruction", "bool", True, "the authors' task instruction in the prompt"),
        Param("examples", "bool", True, "the authors' few-shot examples in the prompt"),
        Param("post_prompt", "bool", True, "the authors' answer-format post-prompt"),
        Param("system_prompt", "str", None, "a system message before the prompt (chat models; "
              "the authors' --system_prompt)"),
    )  # fmt: skip

    def __init__(
        self,
        data: str | None,
        tasks: Sequence[str],
        lengths: Sequence[str],
        samples: int | None,
        instruction: bool,
        examples: bool,
        post_prompt: bool,
        system_prompt: str | None,
    ) -> None:
        if not data:
            raise UsageError(
                "babilong needs its rows: -S data=DIR (the dataset's folder, e.g. from `hf download "
                "RMT-team/babilong-1k-samples --repo-type dataset --local-dir DIR`) or -S data=hub"
            )
        if not tasks or not lengths:
            raise UsageError("babilong needs at least one task and one length")
        self.data = str(data)
        self.tasks = tuple(sorted(dict.fromkeys(tasks), key=TASKS.index))
        self.lengths = tuple(sorted(dict.fromkeys(lengths), key=LENGTHS.__getitem__))
        self.samples = samples
        self.pieces = PromptConfig(
            instruction=instruction,
            examples=examples,
            post_prompt=post_prompt,
            system_prompt=system_prompt or "",
        )
        self.template = BabilongTemplate(pieces=self.pieces)
        self._files: dict[tuple[str, str], Path | str] | None = None
        self._identity: str | None = None

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "tasks": list(self.tasks),
            "lengths": list(self.lengths),
            "samples": self.samples,
            "instruction": self.pieces.instruction,
            "examples": self.pieces.examples,
            "post_prompt": self.pieces.post_prompt,
            "system_prompt": self.pieces.system_prompt or None,
        }

    @classmethod
    def sources(cls) -> Sources:
        """Return what `longscope data babilong` downloads: every file of the default tasks and
        lengths (qa1-qa20 at 0k), each from the set the authors read there."""
        cells = [(t, n) for n in DEFAULT_LENGTHS for t in (TASKS if n == "0k" else HEADLINE_TASKS)]
        return data.hub_sources(cells)

    @staticmethod
    def published() -> Any:
        """Return the authors' published headline by length (`compare --published babilong`)."""
        from longscope.analysis.published import Published
        from longscope.analysis.published import PublishedRow as Row
        from longscope.suites.babilong.published import SOURCE as WHERE
        from longscope.suites.babilong.published import published

        rows = tuple(
            Row(
                row.model,
                overall=round(mean(row.scores.values()), 2) if row.scores else None,
                lengths=dict(row.scores),
            )
            for row in published()
        )
        source = (
            f"{WHERE}: the authors' prediction files re-scored as their collect_results.py does; "
            "mean of qa1-qa5 per length, each task's best prompt configuration"
        )
        return Published(source, rows)

    # -- data --------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        """Return the folder the rows are read from (the suite's cache for `data=hub`)."""
        if self.data == "hub":
            from longscope.download import suite_cache

            return suite_cache(self.name)
        return Path(self.data).expanduser()

    def files(self) -> dict[tuple[str, str], Path | str]:
        """Return each (task, length)'s file, or why it cannot run (a string)."""
        if self._files is None:
            root = self.root
            if self.data != "hub" and not root.is_dir():
                raise UsageError(
                    f"BABILong data {root} is not a folder: give the dataset's folder "
                    "(-S data=DIR) or -S data=hub"
                )
            found: dict[tuple[str, str], Path | str] = {}
            for task in self.tasks:
                for length in self.lengths:
                    if self.data == "hub" and data.hub_set_for(task, length) is None:
                        found[(task, length)] = (
                            f"the dataset has no {task} at {length} (it holds qa1-qa20 at 0k, "
                            "qa1-qa10 from 1k on)"
                        )
                        continue
                    try:
                        found[(task, length)] = data.find_file(root, task, length)
                    except UsageError as exc:
                        found[(task, length)] = str(exc)
            self._files = found
        return self._files

    def prepare(self) -> None:
        """Fetch what `data=hub` needs (before any model is asked), then find every file."""
        if self.data == "hub":
            from longscope.download import fetch

            # Only the files of this run's cells: the 100-row set reaches 10M tokens.
            fetch(data.hub_sources((t, n) for t in self.tasks for n in self.lengths))
        self.files()

    @property
    def version(self) -> str:
        """The data the run reads, by the sha256 of its files (part of the run identity)."""
        if self._identity is None:
            read = {f"{t}/{n}": p for (t, n), p in self.files().items() if isinstance(p, Path)}
            where = "hub" if self.data == "hub" else "dir"
            self._identity = f"babilong-1/{where}:{data.identity(read)}"
        return self._identity

    # -- the lazy build ----------------------------------------------------------------------

    def _wanted(self, path: Path) -> int:
        """Return how many rows a cell sends: `samples`, else the file's rows (else its set's)."""
        held = data.count_rows(path)
        if held is None:
            held = data.set_of(path).rows_per_split
        return held if self.samples is None else min(self.samples, held)

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per task and length (nothing read but row counts); a (task, length)
        the data lacks is a skipped cell saying so."""
        out = []
        for (task, length), path in self.files().items():
            skipped = path if isinstance(path, str) else ""
            count = 0 if isinstance(path, str) else self._wanted(path)
            out.append(
                BuildCell(
                    task,
                    LENGTHS[length],
                    count,
                    skipped=skipped,
                    id_format=f"{task}-{length}-{{index:04d}}",
                )
            )
        return out

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` rows of `task` at `length` (tokens) as samples, read as pulled."""
        name = LENGTH_NAMES.get(length)
        path = self.files().get((task, name or ""))
        if name is None or path is None:
            raise UsageError(f"babilong has no cell {task} at {length} tokens in this run")
        if isinstance(path, str):
            raise UsageError(f"babilong {task} at {name} cannot run: {path}")
        limit = self._wanted(path) if count is None else count
        for index, row in enumerate(data.iter_rows(path, limit)):
            yield self._sample(ctx, task, name, index, row, path)

    def _sample(
        self, ctx: BuildContext, task: str, length: str, index: int, row: Row, path: Path
    ) -> Sample:
        probe = Sample("", task, "en", row.input.strip(), row.question, (row.target,))
        made = self.template.built(probe, ctx.prompt_mode)
        fit = ctx.fit(made.text)
        counted, margin = fit.counted, fit.margin
        if ctx.prompt_mode == "chat" and self.pieces.system_prompt:
            # A template that adds a default system prompt to a lone user message (SmolLM2,
            # Qwen) drops it for ours: its tokens are reserved, never counted as sent.
            frame = ctx.fit("")
            counted = fit.counted - frame.counted
            counted += len(ctx.tokenizer.encode(self.pieces.system_prompt))
            margin += frame.counted + SYSTEM_MARGIN
        budget = ctx.output_budget(MAX_NEW_TOKENS)
        needed = counted + margin + budget
        nominal = LENGTHS[length]
        return replace(
            probe,
            id=f"{task}-{length}-{index:04d}",
            length=_length(nominal, needed, ctx.context_length),
            max_tokens=budget,
            prompt_tokens=counted,
            meta={
                "config": length,
                "dataset_length": nominal,
                "set": data.set_of(path).rows_per_split,
                "prompt": replace(self.pieces, chat_template=ctx.prompt_mode == "chat").name,
                "prompt_mode": ctx.prompt_mode,
                "needed_tokens": needed,
                "group": group_of(task),
            },
        )

    # -- scoring -----------------------------------------------------------------------------

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """The authors' `compare_answers` on the stripped output as their CSV gives it back
        (1 right, 0 wrong)."""
        output = collected_output(generation.text)
        right = is_correct(sample["task"], sample["gold"][0], output, sample["question"])
        return Score(1.0 if right else 0.0, 1.0, {"read": preprocess_output(output)[:200]})

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return babilong_summary(rows, self.differences())

    def differences(self) -> list[str]:
        """Return how this run's setup differs from the authors' published runs (from its
        parameters; the rows add theirs in `babilong_summary`)."""
        out = []
        missing = [t for t in HEADLINE_TASKS if t not in self.tasks]
        if missing:
            out.append(
                f"tasks {', '.join(missing)} not run (the published headline is the mean of qa1-qa5)"
            )
        off = [
            name
            for name, on in (
                ("instruction", self.pieces.instruction),
                ("examples", self.pieces.examples),
                ("post-prompt", self.pieces.post_prompt),
            )
            if not on
        ]
        if off:
            out.append(
                f"prompt without the {', '.join(off)} (the published rows use instruction, "
                "examples and post-prompt)"
            )
        if self.data != "hub":
            out.append(
                f"data from {self.data}, not checked to be RMT-team's files (-S data=hub reads "
                "the pinned revisions)"
            )
        return out


def _length(nominal: int, needed: int, context: int | None) -> int:
    """Return a sample's length: the dataset's length (at most the model's context), or what it
    needs when it cannot fit, so that the runner skips it saying so (never truncated)."""
    if context is None:
        return nominal
    if needed > context:
        return needed
    return min(nominal, context) if nominal else 0


__all__ = ["BabilongSuite", "BabilongTemplate"]
