"""LongBench v2: 503 multiple-choice questions over long real documents, as `pred.py` asks them.

Each question is filled into the official prompt (direct, or CoT), cut in the middle to the model's
window exactly as `pred.py` cuts it (the first and last half of the window's tokens of the whole
prompt, counted in the model's tokenizer) and recorded as truncated; the answer letter is read by
`pred.py`'s `extract_answer`. One view per setting (w/o CoT, w/ CoT), with `result.py`'s splits:
overall, Easy/Hard, Short/Medium/Long; and accuracy by the prompt's tokens before the cut (the
length curve for AUC and effective length).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildCell, BuildContext, Suite
from longscope.suites.longbench_v2.data import SPLITS, Dataset, Row, load_hub, load_local
from longscope.suites.longbench_v2.official import (
    MODE_NAMES,
    OUTPUT_TOKENS,
    TEMPERATURE,
    TEMPLATES,
    fill,
    judge,
)
from longscope.suites.longbench_v2.summary import longbench_v2_summary
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

ANSWER_LINE = "The correct answer is ("
COMPLETION_PREFIX = f"\n\n{ANSWER_LINE}"
"""Completion mode, direct setting: what follows the prompt so that a base model writes the letter
(put back before the official extraction)."""
BINS: tuple[int, ...] = tuple(8192 << i for i in range(10))
"""Length bins of the prompt's tokens before the cut, by upper edge: (0, 8K] ... (2M, 4M]."""
SPLIT_LABELS = {"short": "Short", "medium": "Medium", "long": "Long"}


def bin_of(tokens: int) -> int:
    """Return the length bin (its upper edge) of a prompt of `tokens` tokens."""
    return next((upper for upper in BINS if tokens <= upper), BINS[-1])


class QuestionTemplate:
    """The prompt is the filled official template, stored (cut, when cut) as the sample's context."""

    completion_stop: tuple[str, ...] = ()

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return the prompt (completion: with the answer line's start) or the one user message."""
        if mode == "completion":
            return sample.context + str(sample.meta.get("answer_prefix") or ""), ()
        return "", (Message("user", sample.context),)

    def parts(self, sample: Sample, mode: PromptMode) -> PromptParts:
        """Return the sent text cut around the context (the whole filled prompt)."""
        tail = str(sample.meta.get("answer_prefix") or "") if mode == "completion" else ""
        return PromptParts("", sample.context, tail)


class LongBenchV2Suite(Suite):
    """LongBench v2 (github.com/THUDM/LongBench; docs/suites/longbench-v2.md)."""

    name = "longbench-v2"
    title = "LongBench v2"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=OUTPUT_TOKENS["direct"], temperature=TEMPERATURE)
    template = QuestionTemplate()
    PUBLISHED = Path(__file__).with_name("published.json")
    """Leaderboard rows (longbench2.github.io), with their source line."""
    DESCRIPTION = "LongBench v2: 503 multiple-choice questions, 8K-2M words (-S data=FILE|hub)"
    OPTIONS = (
        Param("data", "str", None, "data.json (or .jsonl) of LongBench v2, or hub (pinned)"),
        Param(
            "modes",
            "strs",
            ("direct",),
            "settings to run: direct (w/o CoT), cot (w/ CoT)",
            choices=tuple(TEMPLATES),
        ),
        Param(
            "max_input_tokens",
            "int",
            None,
            "cut prompts to this many tokens, as pred.py's model2maxlen (none given: the model's "
            "context less the output budget)",
            low=1,
        ),
        Param(
            "compensated",
            "bool",
            False,
            "result.py's switch: a response with no answer letter counts 0.25",
            scoring=True,
        ),
    )

    def __init__(
        self,
        data: str | None,
        modes: Sequence[str],
        max_input_tokens: int | None,
        compensated: bool,
    ) -> None:
        if not data:
            raise ValueError("longbench-v2 needs -S data=FILE (data.json) or -S data=hub")
        unknown = set(modes) - set(TEMPLATES)
        if unknown or not modes:
            raise ValueError(f"-S modes={','.join(modes)}: use direct, cot or both")
        self.data = data
        self.modes = tuple(m for m in TEMPLATES if m in modes)
        self.max_input_tokens = max_input_tokens
        self.compensated = compensated

    @classmethod
    def sources(cls) -> Sources:
        """Return the file `longscope data longbench-v2` downloads."""
        from longscope.suites.longbench_v2.data import sources

        return sources()

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "modes": list(self.modes),
            "max_input_tokens": self.max_input_tokens,
            "compensated": self.compensated,
        }

    @functools.cached_property
    def dataset(self) -> Dataset:
        return load_hub() if self.data == "hub" else load_local(self.data)

    @property
    def version(self) -> str:
        return f"longbench-v2-1/{self.dataset.identity}"

    def prepare(self) -> None:
        """Load and validate the questions before any model is contacted."""
        _ = self.dataset

    def _members(self, split: str) -> list[Row]:
        return [r for r in self.dataset.rows if r.length == split]

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return one cell per setting and length split (`--limit N`: N questions of each)."""
        return [
            BuildCell(f"{mode} {split}", 0, len(self._members(split)))
            for mode in self.modes
            for split in SPLITS
            if self._members(split)
        ]

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` questions of one setting and split, each made when pulled."""
        mode, _, split = task.partition(" ")
        members = self._members(split)
        for row in members[: len(members) if count is None else count]:
            yield self._sample(ctx, row, mode)

    def _sample(self, ctx: BuildContext, row: Row, mode: str) -> Sample:
        prompt = fill(TEMPLATES[mode], row.context, row.question, row.choices)
        completion = ctx.prompt_mode == "completion"
        prefix = COMPLETION_PREFIX if completion and mode == "direct" else ""
        budget = ctx.output_budget(OUTPUT_TOKENS[mode])
        frame = ctx.fit("")  # BOS, or the chat template around the one message
        tail = len(ctx.tokenizer.encode(prefix)) if prefix else 0
        ids = ctx.tokenizer.encode(prompt)
        original = len(ids)
        limit = self.max_input_tokens
        if limit is None and ctx.context_length is not None:
            limit = ctx.context_length - budget - frame.reserved - tail
        truncated = limit is not None and 0 < limit < original
        if truncated and limit is not None:
            # pred.py's cut: input_ids[:max_len//2] + input_ids[-max_len//2:], decoded.
            kept = ids[: limit // 2] + ids[len(ids) - (limit - limit // 2) :]
            prompt, sent = ctx.tokenizer.decode(kept), len(kept)
        else:
            sent = original
        prompt_tokens = sent + frame.counted + tail
        needed = prompt_tokens + frame.margin + budget
        upper = bin_of(original)
        if ctx.context_length is None:
            length = upper
        elif needed > ctx.context_length:
            length = needed  # no room even for the answer: skipped with its need
        else:
            length = min(upper, ctx.context_length)
        return Sample(
            id=f"{mode}/{row.id}",
            task=row.domain or "-",
            language="en",
            context=prompt,
            question="",
            gold=(row.answer,),
            length=length,
            max_tokens=budget,
            prompt_tokens=prompt_tokens,
            meta={
                "mode": mode,
                "setting": MODE_NAMES[mode],
                "difficulty": row.difficulty.capitalize(),
                "length_split": SPLIT_LABELS[row.length],
                "domain": row.domain,
                "sub_domain": row.sub_domain,
                "bin": upper,
                "original_tokens": original,
                "truncated": truncated,
                "answer_prefix": prefix,
                "put_back": ANSWER_LINE if prefix else "",
                "data": self.dataset.identity,
            },
        )

    def timeout_s(self, sample: Sample) -> float:
        return 300.0 + 2.0 * sample.prompt_tokens / 1000.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        """`pred.py`'s judgement: the letter `extract_answer` reads, against the answer."""
        response = str(sample["meta"].get("put_back") or "") + generation.text
        judged = judge(response, sample["gold"][0], self.compensated)
        return Score(judged.credit, 1.0, evidence={"pred": judged.pred})

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return longbench_v2_summary(rows)


__all__ = ["LongBenchV2Suite", "bin_of"]
