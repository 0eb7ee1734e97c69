"""LongBench Pro: 1,500 bilingual samples, official prompts, truncation, metrics and aggregation."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

from longscope.metrics.similarity import DEFAULT_EMBEDDER, load_embedder
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow
from longscope.suites.longbench_pro.loader import Dataset, load, select
from longscope.suites.longbench_pro.schema import DIFFICULTIES, LENGTHS, Row
from longscope.suites.longbench_pro.scoring import score_prediction, solved
from longscope.text.tokenizers import QwenTokenizer, Tokenizer
from longscope.text.truncate import middle_truncate
from longscope.types import SCORABLE, Generation, GenerationConfig, Sample, Score

SEPARATOR = "\n\n\n\n"
MODES = ("nonthinking", "thinking")
BUCKET_TOKENS = {bucket: int(bucket[:-1]) * 1024 for bucket in LENGTHS}
OUTPUT_BUDGET = {"nonthinking": 1024, "thinking": 8192}
LONG_MODEL_THINKING_BUDGET = 32768
"""Thinking budget for models holding 256K tokens or more (as the official runs)."""
DIMENSIONS = (
    "token_length",
    "contextual_requirement",
    "difficulty",
    "primary_task",
    "language",
    "secondary_task",
    "language_x_length",
)


def row_sample(
    row: Row, mode: str, *, context: str | None = None, question: str | None = None, **meta: Any
) -> Sample:
    """Return the sample of one dataset row in one prompt mode (`meta` adds run-time facts)."""
    if question is None:
        question = row.question_thinking if mode == "thinking" else row.question_nonthinking
    return Sample(
        id=f"{row.id}#{mode}",
        task=row.secondary_task,
        language=row.language,
        context=row.context if context is None else context,
        question=question,
        gold=tuple(row.answer),
        meta={
            "row_id": row.id,
            "mode": mode,
            "metric": row.metric,
            "token_length": row.token_length,
            "primary_task": row.primary_task,
            "secondary_task": row.secondary_task,
            "contextual_requirement": row.contextual_requirement,
            "difficulty": row.difficulty,
            "truncated": False,
            **meta,
        },
    )


class LongBenchProSuite:
    """LongBench Pro (seeds 000, 002; ../shared/specs/longbench-pro.md)."""

    name = "longbench-pro"
    default_repeats = 3
    template = PromptTemplate(
        body="{context}" + SEPARATOR + "{question}",
        answer_prefix="\n",
        completion_stop=(),
    )

    def __init__(
        self,
        data: str,
        *,
        modes: Sequence[str] = ("nonthinking",),
        filters: dict[str, Any] | None = None,
        truncate_with: str = "qwen2.5",
        max_input_tokens: int | None = None,
        temperature: float = 1.0,
        embedder: str = DEFAULT_EMBEDDER,
        embed_base_url: str | None = None,
        rouge_parity: bool = False,
        difficulty_labels: str | None = None,
    ) -> None:
        bad = [m for m in modes if m not in MODES]
        if bad or not modes:
            raise ValueError(f"unknown mode(s) {bad}: use nonthinking, thinking or both")
        if truncate_with not in ("qwen2.5", "model"):
            raise ValueError("truncate_with must be 'qwen2.5' (official) or 'model'")
        self.data = data
        self.modes = tuple(modes)
        self.filters = {k: v for k, v in (filters or {}).items() if v}
        self.truncate_with = truncate_with
        self.max_input_tokens = max_input_tokens
        self.default_config = GenerationConfig(
            max_tokens=OUTPUT_BUDGET["nonthinking"], temperature=temperature
        )
        self.embedder = embedder
        self.embed_base_url = embed_base_url
        self.rouge_parity = rouge_parity
        self.difficulty_labels = difficulty_labels
        self._dataset: Dataset | None = None

    @property
    def dataset(self) -> Dataset:
        if self._dataset is None:
            self._dataset = load(self.data)
        return self._dataset

    @property
    def version(self) -> str:
        return f"longbench-pro-1/{self.dataset.revision}"

    def prepare(self) -> None:
        """Load and validate the data file and the filters before any model is contacted."""
        self.rows()

    def rows(self) -> list[Row]:
        """Return the dataset rows that pass the suite's filters."""
        filters = dict(self.filters)
        return select(self.dataset.rows, **filters)

    def params(self) -> dict[str, Any]:
        return {
            "data": self.data,
            "modes": list(self.modes),
            "filters": self.filters,
            "truncate_with": self.truncate_with,
            "max_input_tokens": self.max_input_tokens,
            "temperature": self.default_config.temperature,
        }

    def _budget(self, mode: str, ctx: BuildContext) -> int:
        if ctx.max_tokens_override is not None:
            return ctx.max_tokens_override
        if mode == "thinking" and (ctx.context_length or 0) >= 256 * 1024:
            return LONG_MODEL_THINKING_BUDGET
        return OUTPUT_BUDGET[mode]

    def build(self, ctx: BuildContext) -> list[Sample]:
        counter: Tokenizer = ctx.tokenizer if self.truncate_with == "model" else QwenTokenizer()
        samples = []
        # Rows sharing a document run back to back (both modes, all repeats): prefix caches work.
        by_document: dict[str, list[Row]] = defaultdict(list)
        for row in self.rows():
            by_document[row.context].append(row)
        for row in (row for group in by_document.values() for row in group):
            for mode in self.modes:
                question = row.question_thinking if mode == "thinking" else row.question_nonthinking
                budget = self._budget(mode, ctx)
                limit = self.max_input_tokens or (
                    ctx.context_length - budget if ctx.context_length else None
                )
                prompt = row.context + SEPARATOR + question
                context, truncated, tokens = row.context, False, -1
                if limit is not None:
                    text, tokens, truncated = middle_truncate(prompt, limit, counter)
                    if truncated:
                        head, sep, tail = text.rpartition(SEPARATOR)
                        context, question = (head, tail) if sep else (text, "")
                samples.append(
                    row_sample(
                        row,
                        mode,
                        context=context,
                        question=question,
                        truncated=truncated,
                        prompt_tokens=tokens if tokens > 0 and counter is ctx.tokenizer else 0,
                        max_tokens=budget,
                    )
                )
        return samples

    def timeout_s(self, sample: Sample) -> float:
        return 1800.0 if sample.meta["mode"] == "thinking" else 600.0

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return score_prediction(
            generation.text,
            sample,
            embedder=load_embedder(self.embedder, self.embed_base_url)
            if sample["meta"]["metric"] == "summary"
            else None,
            rouge_parity=self.rouge_parity,
        )

    def summarize(self, rows: Sequence[ScoredRow]) -> dict[str, Any]:
        if self.difficulty_labels:
            rows = _relabel(rows, self.difficulty_labels)
        by_mode: dict[str, list[ScoredRow]] = defaultdict(list)
        for row in rows:
            by_mode[row.sample["meta"]["mode"]].append(row)
        summary: dict[str, Any] = {
            "modes": {mode: summarize_mode(by_mode[mode]) for mode in MODES if mode in by_mode}
        }
        summary["embedder"] = self.embedder
        summary["rouge_parity"] = self.rouge_parity
        summary["difficulty_source"] = self.difficulty_labels or "dataset"
        return summary


def _relabel(rows: Sequence[ScoredRow], path: str) -> list[ScoredRow]:
    """Replace each sample's difficulty with calibrated labels (unlabelled samples keep theirs)."""
    from longscope.analysis.calibrate import load_labels

    labels = load_labels(path)
    out = []
    for row in rows:
        label = labels.get(row.sample["id"])
        if label is None:
            out.append(row)
            continue
        sample = {**row.sample, "meta": {**row.sample["meta"], "difficulty": label}}
        out.append(ScoredRow(sample, row.repeat, row.generation, row.score))
    return out


def _value(row: ScoredRow) -> float:
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.value
    return 0.0


def _failed(row: ScoredRow) -> bool:
    if row.generation.status not in SCORABLE or row.score is None:
        return True
    return bool(row.score.evidence.get("failed"))


def _dimension(sample: dict[str, Any], dimension: str) -> str:
    meta = sample["meta"]
    if dimension == "language":
        return sample["language"]
    if dimension == "language_x_length":
        return f"{sample['language']} {meta['token_length']}"
    return str(meta[dimension])


def _breakdowns(per_sample: dict[str, float], samples: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dimension in DIMENSIONS:
        groups: dict[str, list[float]] = defaultdict(list)
        for sid, value in per_sample.items():
            groups[_dimension(samples[sid], dimension)].append(value)
        out[dimension] = {k: round(100 * mean(v), 2) for k, v in sorted(groups.items(), key=_order)}
    return out


def _order(item: tuple[str, Any]) -> tuple[int, str]:
    """Length buckets short to long, difficulty easy to extreme, the rest alphabetically."""
    key = item[0]
    for ranks in (LENGTHS, DIFFICULTIES):
        for index, name in enumerate(ranks):
            if key == name or key.endswith(" " + name):
                return (index, key)
    return (len(LENGTHS), key)


def summarize_mode(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """The official summary file's keys, plus our extra breakdowns, for one prompt mode."""
    runs: dict[str, dict[int, float]] = defaultdict(dict)
    samples: dict[str, dict[str, Any]] = {}
    failed = 0
    for row in rows:
        sid = row.sample["id"]
        samples[sid] = row.sample
        runs[sid][row.repeat] = _value(row)
        failed += _failed(row)
    n_runs = max((len(r) for r in runs.values()), default=0)
    per_sample = {sid: mean(values.values()) for sid, values in runs.items()}
    out: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "total_questions_num": len(samples),
        "inference_iterations": n_runs,
        "total_samples_num": len(rows),
        "fail_samples_num": failed,
        "truncated_questions_num": sum(1 for s in samples.values() if s["meta"].get("truncated")),
        "average_overall_metric": round(100 * mean(per_sample.values()), 2) if per_sample else 0.0,
    }
    for i in range(n_runs):
        values = [r[i] for r in runs.values() if i in r]
        out[f"inference_iteration_{i + 1}_overall_metric"] = (
            round(100 * mean(values), 2) if values else 0.0
        )
    for dimension, groups in _breakdowns(per_sample, samples).items():
        out[f"average_{dimension}_metric"] = groups
    for i in range(1, n_runs + 1):
        best = {
            sid: max(v for k, v in r.items() if k < i)
            for sid, r in runs.items()
            if any(k < i for k in r)
        }
        out[f"BoN-{i}"] = {
            "overall_metric": round(100 * mean(best.values()), 2) if best else 0.0,
            **{f"{d}_metric": g for d, g in _breakdowns(best, samples).items()},
        }
        passed = [solved(v, samples[sid]["meta"]["metric"]) for sid, v in best.items()]
        out[f"pass@{i}"] = round(100 * sum(passed) / len(passed), 2) if passed else 0.0
    return out
