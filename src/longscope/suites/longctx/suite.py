"""LongCtx: 20 synthetic tasks over 5 tiers (the fixed preset), or any lengths x depths x types grid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite
from longscope.suites.longctx.grading import grade
from longscope.suites.longctx.summary import longctx_summary, summarize_longctx
from longscope.suites.longctx.tasks import TASK_TYPES, TASKS, TASKS_BY_ID, TIERS, TaskSpec
from longscope.summary import (
    Summary,
)
from longscope.text.haystack import FillerPool, Insert, build_haystack
from longscope.types import Generation, GenerationConfig, Sample, Score

TEMPLATES = {
    "en": PromptTemplate(
        body=(
            "Below is a long document. Read it carefully, then answer the question that follows "
            "it. Answer concisely using only the document.\n\n"
            "Document:\n{context}\n\nQuestion: {question}"
        ),
        answer_prefix="\nAnswer:",
        completion_stop=("\n\n", "\nQuestion:", "\nDocument:"),
    ),
    "zh": PromptTemplate(
        body="下面是一份很长的文档。请仔细阅读，然后只根据文档简洁地回答后面的问题。\n\n文档：\n{context}\n\n问题：{question}",
        answer_prefix="\n答案：",
        completion_stop=("\n\n", "\n问题：", "\n文档："),
    ),
}
# Grid cells reuse these tasks' facts (type -> task) unless told otherwise.
GRID_TASKS = {
    "needle": "LCB-001",
    "position_bias": "LCB-003",
    "multi_fact": "LCB-002",
    "reasoning": "LCB-004",
}


SEAM_TOKENS = 4
"""Kept free where the haystack meets the template: the two are counted apart, and a tokenizer
may merge or split one or two tokens differently when it reads them joined (SmolLM2's chat
template read 3,897 tokens for a prompt counted as 3,896)."""


@dataclass(frozen=True)
class GridSpec:
    """Any lengths x depths x task types, built by the same code as the fixed 20."""

    lengths: tuple[int, ...]
    depths: tuple[float, ...]
    types: tuple[str, ...]


class LongCtxSuite(Suite):
    """The LongCtx benchmark (docs/benchmarks/longctx.md)."""

    name = "longctx"
    title = "LongCtx"
    DESCRIPTION = (
        "LongCtx: 20 synthetic tasks (needle, position bias, multi-fact, reasoning), 4K-128K"
    )
    OPTIONS = (
        Param(
            "tiers",
            "ints",
            (1, 2, 3, 4, 5),
            "the fixed 20 tasks' tiers (1=4K 2=16K 3=32K 4=64K 5=128K)",
            choices=(),
        ),
        Param(
            "lengths",
            "lengths",
            (),
            "grid mode: any context lengths, e.g. 2k,4k,8k (replaces the tiers)",
        ),
        Param(
            "depths",
            "depths",
            (0.1, 0.3, 0.5, 0.7, 0.9),
            "grid mode: needle depths, fractions or percents",
        ),
        Param("types", "strs", ("needle",), "grid mode: task types", choices=TASK_TYPES),
        Param("language", "choice", "en", "prompts, documents and answers", choices=("en", "zh")),
        Param("seed", "int", 0, "filler text (also the run's --seed)", low=0),
    )
    default_repeats = 1
    version = "longctx-1"
    default_config = GenerationConfig(max_tokens=200, temperature=0.0)

    def __init__(
        self,
        *,
        tiers: Sequence[int],
        lengths: Sequence[int],
        depths: Sequence[float],
        types: Sequence[str],
        language: str,
        seed: int,
    ) -> None:
        """Any `lengths` make a grid (lengths x depths x task types); none, the fixed 20 tasks
        of `tiers`."""
        bad = [t for t in tiers if t not in TIERS]
        if bad:
            raise ValueError(f"unknown LongCtx tier(s) {bad}: tiers are 1-5 ({_tier_names()})")
        if language not in TEMPLATES:
            raise ValueError(f"unknown language {language!r}: use en or zh")
        grid = GridSpec(tuple(lengths), tuple(depths), tuple(types)) if lengths else None
        if grid is not None:
            unknown = [t for t in grid.types if t not in TASK_TYPES]
            if unknown or any(not 0 <= d <= 1 for d in grid.depths):
                raise ValueError(
                    f"bad grid: types must be among {', '.join(TASK_TYPES)} and depths in 0..1"
                )
        self.tiers = tuple(sorted(set(tiers)))
        self.language = language
        self.seed = seed
        self.grid = grid
        self.template = TEMPLATES[language]

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> LongCtxSuite:
        """Build from complete `-S` values: depths and types belong to grid mode (lengths)."""
        default = cls.completed({})
        changed = {k for k in ("depths", "types", "tiers") if values[k] != default[k]}
        if not values["lengths"] and changed & {"depths", "types"}:
            raise ValueError("-S depths and -S types need -S lengths (grid mode)")
        if values["lengths"] and "tiers" in changed:
            raise ValueError("-S tiers is the fixed preset, -S lengths the grid: give one")
        return cls.from_params(values)

    def prepare(self) -> None:
        """Nothing to load: LongCtx generates its data."""

    def params(self) -> dict[str, Any]:
        base: dict[str, Any] = {"language": self.language, "seed": self.seed}
        if self.grid is None:
            return {**base, "preset": "fixed20", "tiers": list(self.tiers)}
        return {
            **base,
            "preset": "grid",
            "lengths": list(self.grid.lengths),
            "depths": list(self.grid.depths),
            "types": list(self.grid.types),
        }

    def _cells(self) -> list[tuple[str, TaskSpec, int, float | None]]:
        """Return (sample id, task, length, depth override) for every sample."""
        if self.grid is None:
            return [(t.id, t, t.tokens, None) for t in TASKS if t.tier in self.tiers]
        cells = []
        for kind in self.grid.types:
            task = TASKS_BY_ID[GRID_TASKS[kind]]
            # Only single-needle tasks move with depth; multi-fact and reasoning keep their layout.
            depths = self.grid.depths if len(task.facts) == 1 else (None,)
            for length in self.grid.lengths:
                for depth in depths:
                    where = f"d{round(depth * 100):03d}" if depth is not None else "native"
                    cells.append((f"{kind}-{length}-{where}", task, length, depth))
        return cells

    def build(self, ctx: BuildContext) -> list[Sample]:
        pool = FillerPool(ctx.tokenizer, self.language, self.seed)
        lang = self.language
        samples = []
        for sample_id, task, length, depth in self._cells():
            question = task.question[lang]
            prompt, messages = self.template.render(
                Sample("probe", "probe", lang, "", question, ()), ctx.prompt_mode
            )
            # The template, question and BOS are counted; a chat template's role markers are
            # counted when the backend knows its template (local GGUF), else covered by a margin
            # that is not reported as sent (a server's template is unknown to us).
            fit = ctx.fit(prompt or messages[0].content)
            counted, overhead = fit.counted, fit.reserved
            budget = length - overhead - ctx.config.max_tokens - SEAM_TOKENS
            inserts = [
                Insert(getattr(fact, lang), fact.depth if depth is None else depth)
                for fact in task.facts
            ]
            if ctx.context_length is not None and length > ctx.context_length:
                # The runner skips it unsent (it cannot fit): no haystack is built for it.
                samples.append(_unbuilt(sample_id, task, lang, question, length, inserts, self))
                continue
            try:
                hay = build_haystack(pool, budget, inserts)
            except ValueError as exc:  # the output budget leaves the facts no room
                raise UsageError(
                    f"length {length} cannot hold the task's facts with an output budget of "
                    f"{ctx.config.max_tokens} tokens ({exc}): use a smaller --max-tokens or longer "
                    "lengths"
                ) from None
            samples.append(
                Sample(
                    id=sample_id,
                    task=task.type,
                    language=lang,
                    context=hay.text,
                    question=question,
                    gold=(task.answer[lang],),
                    length=length,
                    prompt_tokens=hay.tokens + counted,
                    meta={
                        "task_id": task.id,
                        "tier": task.tier if self.grid is None else None,
                        "context_tokens": hay.tokens,
                        "depths": [p.depth for p in hay.inserts],
                        "actual_depths": [p.actual_depth for p in hay.inserts],
                        "depth": round(mean(p.depth for p in hay.inserts), 4),
                    },
                )
            )
        return samples

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        task = TASKS_BY_ID[sample["meta"]["task_id"]]
        return grade(task, generation.text, sample["language"])

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return longctx_summary(summarize_longctx(rows), rows)


def _unbuilt(
    sample_id: str,
    task: Any,
    lang: str,
    question: str,
    length: int,
    inserts: list[Insert],
    suite: Any,
) -> Sample:
    """Return the cell of a sample too long for the model, without its context (never sent)."""
    depths = [i.depth for i in inserts]
    return Sample(
        id=sample_id,
        task=task.type,
        language=lang,
        context="",
        question=question,
        gold=(task.answer[lang],),
        length=length,
        meta={
            "task_id": task.id,
            "tier": task.tier if suite.grid is None else None,
            "context_tokens": 0,
            "depths": depths,
            "actual_depths": [],
            "depth": round(mean(depths), 4),
        },
    )


def _tier_names() -> str:
    return ", ".join(f"{n}={tokens // 1024}K" for n, tokens in TIERS.items())
