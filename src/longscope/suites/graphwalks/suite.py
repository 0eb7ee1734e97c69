"""OpenAI GraphWalks: a directed graph as an edge list, then a BFS or a parents query; set F1.

The prompt is the row's own text, sent as one user message (chat mode, as the card says); in
completion mode it is followed by `Final Answer: [` and the model's first line completes that line
(a base model has no other way to write the card's answer line). The grade is the card's
(`grading.grade`). Rows are counted in the model's tokenizer and binned by prompt tokens, per
problem type (one view each, as model cards report them: never averaged across types); a row that
cannot fit is skipped with its need, never truncated.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildCell, BuildContext, PromptTemplate, Suite
from longscope.suites.graphwalks.data import SET_CHOICES, Dataset, load_hub, load_local
from longscope.suites.graphwalks.grading import MARKER, grade
from longscope.suites.graphwalks.schema import (
    LONG,
    PROBLEM_TYPES,
    SET_EDGE,
    SHORT,
    bin_label,
    bin_of,
    bins_of_lengths,
)
from longscope.suites.graphwalks.summary import graphwalks_summary
from longscope.summary import (
    Summary,
)
from longscope.types import Generation, GenerationConfig, Sample, Score, ScoredRow

ANSWER_PREFIX = f"{MARKER} ["
"""What completion mode appends to the prompt (after a newline) and puts back before the answer."""
CHAT_MIN_OUTPUT = 4096
CHAT_REASONING = 4096
"""Chat mode's output budget: the gold's answer line plus CHAT_REASONING, at least CHAT_MIN_OUTPUT
(a model may work through the graph before its last line; lm-evaluation-harness allows 16,384)."""
COMPLETION_SLACK = 32
"""Completion mode's budget past the gold list's tokens: the line stops at its newline."""


class Counted(NamedTuple):
    """A row's tokens in the model's tokenizer."""

    index: int
    prompt: int
    answer: int
    """The gold's answer line (`Final Answer: [a, b]`)."""


class GraphWalksSuite(Suite):
    """OpenAI GraphWalks (huggingface.co/datasets/openai/graphwalks; docs/suites/graphwalks.md)."""

    name = "graphwalks"
    title = "OpenAI GraphWalks"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=CHAT_MIN_OUTPUT, temperature=0.0)
    template = PromptTemplate("{context}", f"\n{ANSWER_PREFIX}", completion_stop=("\n",))
    PUBLISHED = Path(__file__).with_name("published.json")
    """GraphWalks numbers from model cards (docs/suites/graphwalks.md), each with its source."""
    DESCRIPTION = "OpenAI GraphWalks: BFS and parents over an edge list, set F1 (-S data=FILE|hub)"
    OPTIONS = (
        Param(
            "data",
            "str",
            None,
            "the rows: a .parquet/.jsonl file or folder, or hub (openai/graphwalks, pinned) "
            "(required)",
        ),
        Param(
            "problem_types",
            "strs",
            (),
            "problem types to run, of bfs,parents (none given: both)",
            choices=PROBLEM_TYPES,
        ),
        Param(
            "lengths",
            "lengths",
            (),
            "bins to run, each named by a prompt length it holds (8k: (0, 8k]; 128k: (64k, 128k]; "
            "none given: every bin)",
        ),
        Param(
            "files",
            "choice",
            "all",
            "with data=hub, OpenAI's files to load: all, 128k (the <128k file) or 1M (>128k)",
            choices=SET_CHOICES,
        ),
        Param(
            "allow_unpinned",
            "bool",
            False,
            "score files named like OpenAI's that are not the pinned revision (recorded)",
        ),
    )

    def __init__(
        self,
        data: str | None,
        problem_types: Sequence[str],
        lengths: Sequence[int],
        files: str,
        allow_unpinned: bool,
    ) -> None:
        if not data:
            raise ValueError(
                "graphwalks needs -S data=FILE (.parquet/.jsonl, or a folder) or -S data=hub"
            )
        self.data = data
        self.problem_types = tuple(sorted(set_of(problem_types)))
        self.bins = bins_of_lengths(tuple(lengths)) if lengths else ()
        self.files = files
        self.allow_unpinned = allow_unpinned
        self._counts: dict[str, list[Counted]] = {}
        self._sizes: dict[str, dict[tuple[str, str], int]] = {}

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data graphwalks` downloads."""
        from longscope.suites.graphwalks.data import sources

        return sources()

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "problem_types": list(self.problem_types),
            "lengths": list(self.bins),
            "files": self.files,
            "allow_unpinned": self.allow_unpinned,
        }

    @functools.cached_property
    def dataset(self) -> Dataset:
        if self.data == "hub":
            return load_hub(self.files, self.problem_types)
        return load_local(self.data, self.problem_types, self.allow_unpinned)

    @property
    def version(self) -> str:
        return f"graphwalks-1/{self.dataset.identity}"

    def prepare(self) -> None:
        """Load and validate the rows (and their revision) before any model is contacted."""
        _ = self.dataset

    def _counted(self, ctx: BuildContext) -> list[Counted]:
        """Return every row's token counts in `ctx`'s tokenizer, counted once per tokenizer."""
        key = ctx.tokenizer.name
        if key not in self._counts:
            self._counts[key] = [
                Counted(
                    index,
                    len(ctx.tokenizer.encode(row.prompt)),
                    len(ctx.tokenizer.encode(_answer_line(row.answer_nodes))),
                )
                for index, (_, _, row) in enumerate(self.dataset.rows)
            ]
        return self._counts[key]

    def _set_sizes(self, ctx: BuildContext) -> dict[tuple[str, str], int]:
        """Return how many rows of the data each (problem type, set) holds (once per tokenizer)."""
        key = ctx.tokenizer.name
        if key not in self._sizes:
            sizes: dict[tuple[str, str], int] = defaultdict(int)
            for counted in self._counted(ctx):
                _, known, row = self.dataset.rows[counted.index]
                sizes[(row.problem_type, _set(known, counted.prompt))] += 1
            self._sizes[key] = dict(sizes)
        return self._sizes[key]

    def _groups(self, ctx: BuildContext) -> dict[tuple[str, int], list[Counted]]:
        """Return the rows by (problem type, bin), the bins asked for only, in file order."""
        groups: dict[tuple[str, int], list[Counted]] = {}
        rows = self.dataset.rows
        for counted in self._counted(ctx):
            upper = bin_of(counted.prompt)
            if not self.bins or upper in self.bins:
                kind = rows[counted.index][2].problem_type
                groups.setdefault((kind, upper), []).append(counted)
        if not groups and self.bins:
            raise UsageError(
                "no GraphWalks row of the data falls in the bins "
                f"{', '.join(map(bin_label, self.bins))} (prompt tokens in the model's "
                "tokenizer): choose other --lengths"
            )
        return dict(sorted(groups.items()))

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per problem type and bin (`--limit N`: N rows of each), none built."""
        return [
            BuildCell(kind, upper, len(members))
            for (kind, upper), members in self._groups(ctx).items()
        ]

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` rows of one problem type and bin as samples, made as pulled."""
        members = self._groups(ctx).get((task, length), [])
        for counted in members[: len(members) if count is None else count]:
            yield self._sample(ctx, counted, length)

    def _sample(self, ctx: BuildContext, counted: Counted, upper: int) -> Sample:
        sample_id, known_set, row = self.dataset.rows[counted.index]
        row_set = _set(known_set, counted.prompt)
        completion = ctx.prompt_mode == "completion"
        frame = ctx.fit("")  # BOS, or the chat template around one message (counted or a margin)
        tail = len(ctx.tokenizer.encode(self.template.answer_prefix)) if completion else 0
        prompt = counted.prompt + tail + frame.counted
        if completion:
            budget = ctx.output_budget(counted.answer + COMPLETION_SLACK)
        else:
            budget = ctx.output_budget(max(CHAT_MIN_OUTPUT, counted.answer + CHAT_REASONING))
        room = None if ctx.context_length is None else ctx.context_length - prompt - frame.margin
        if ctx.max_tokens_override is None and room is not None:
            # Room for the gold's answer line is what must fit; past it the budget is cut to the
            # room left, never the prompt.
            budget = max(min(budget, room), counted.answer)
        needed = prompt + frame.margin + budget
        return Sample(
            id=sample_id,
            task=row.problem_type,
            language="en",
            context=row.prompt,
            question="",
            gold=tuple(row.answer_nodes),
            length=_length(upper, needed, ctx.context_length),
            max_tokens=budget,
            prompt_tokens=prompt,
            meta={
                "problem_type": row.problem_type,
                "bin": upper,
                "bin_label": bin_label(upper),
                "set": row_set,
                "set_rows": self._set_sizes(ctx)[(row.problem_type, row_set)],
                "prompt_tokens": counted.prompt,
                "prompt_chars": row.prompt_chars,
                "answer_tokens": counted.answer,
                "needed_tokens": needed,
                "answer_prefix": ANSWER_PREFIX if completion else "",
                "date_added": row.date_added,
                "data": self.dataset.identity,
            },
        )

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """The card's set F1 of the answer's last line (completion mode: the prefix put back)."""
        response = str(sample["meta"].get("answer_prefix") or "") + generation.text
        graded = grade(response, tuple(sample["gold"]))
        evidence: dict[str, Any] = {
            "precision": round(graded.precision, 6),
            "recall": round(graded.recall, 6),
            "answered": len(graded.parsed.nodes),
        }
        if graded.parsed.failed:
            evidence["parse_failed"] = graded.parsed.failure
        return Score(graded.f1, 1.0, evidence=evidence)

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return graphwalks_summary(rows)


def set_of(problem_types: Sequence[str]) -> set[str]:
    """Return the problem types asked for, lowercased; an unknown one is a ValueError."""
    out = {t.strip().lower() for t in problem_types}
    unknown = out - set(PROBLEM_TYPES)
    if unknown:
        raise ValueError(f"-S problem_types={','.join(sorted(unknown))}: use bfs or parents")
    return out


def _set(known: str | None, prompt_tokens: int) -> str:
    """Return a row's set: its OpenAI file's, else by its prompt tokens (`schema.SET_EDGE`)."""
    return known or (SHORT if prompt_tokens <= SET_EDGE else LONG)


def _answer_line(nodes: Sequence[str]) -> str:
    return f"{ANSWER_PREFIX}{', '.join(nodes)}]"


def _length(upper: int, needed: int, context: int | None) -> int:
    """Return a sample's length: its bin, or what it needs when it cannot fit the model (the
    runner then skips it with that need, never truncating); a bin longer than the model's context
    shows its rows that fit at the context."""
    if context is None:
        return upper
    if needed > context:
        return needed
    return min(upper, context)


__all__ = ["ANSWER_PREFIX", "GraphWalksSuite"]
