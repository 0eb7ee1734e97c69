"""RULER (NVIDIA/RULER, ../shared/specs/ruler.md): 13 synthetic tasks at any length, RULER's scoring.

Comparable with RULER's published table when every task runs on RULER's data (the essay haystack and
the two QA sets are local files the user gives) at RULER's lengths, sample count and seed; the run
header (`comparable_with_published`) and the summary say when a run is not.

By default (`fill=ruler`) every sample is the one RULER's `prepare.py` writes for the same task,
length, index, tokenizer and `random_seed` (see `generate`): its haystack search, its random draws,
its prompts. Where longscope differs from RULER's scripts:
- `fill=exact` gives each sample the largest haystack that fits (see `tight`): prompts up to 19%
  longer than RULER's at the same length, so such a run is marked not comparable.
- Without nltk and its punkt data the essay is cut into sentences by a regular expression
  (needles then land between other sentences): marked not comparable.
- Chat models get RULER's base prompt as their user message, without the answer prefix (a chat
  template cannot end inside the assistant's turn); base models get RULER's prompt and answer
  prefix, wrapped in RULER's model template (`model_template`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.sources import Sources
from longscope.suites.base import (
    BuildCell,
    BuildContext,
    PromptTemplate,
    ScoredRow,
    Suite,
    prompt_fit,
)
from longscope.suites.ruler import generate, tight
from longscope.suites.ruler.counting import ruler_counting
from longscope.suites.ruler.data import (
    PUNKT_DIRS,
    SPANS_DIRS,
    load_essays,
    load_hotpotqa,
    load_squad,
)
from longscope.suites.ruler.scoring import match_all, match_part, postprocess
from longscope.suites.ruler.sources import FILES, PUNKT
from longscope.suites.ruler.summary import ruler_summary, summarize_ruler
from longscope.suites.ruler.tasks import (
    ALL_TASKS,
    DEFAULT_LENGTHS,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    MODEL_TEMPLATES,
    RULER_REVISION,
    TASKS,
    Task,
)
from longscope.summary import Summary
from longscope.text.tokenizers import Tokenizer
from longscope.types import (
    Generation,
    GenerationConfig,
    Message,
    PromptMode,
    Sample,
    Score,
)

_DATA = {"essay": "essays", "squad": "squad", "hotpotqa": "hotpotqa"}
_FORMAT = {
    "essays": 'a {"text": ...} JSON file (RULER\'s json/PaulGrahamEssays.json)',
    "squad": "SQuAD v2 dev JSON (dev-v2.0.json)",
    "hotpotqa": "HotpotQA dev JSON (hotpot_dev_distractor_v1.json)",
}


@dataclass(frozen=True)
class RulerTemplate(PromptTemplate):
    """RULER's prompts differ per sample: the text around the context and the answer prefix are
    stored in the sample (`meta.head`, `question`, `meta.answer_prefix`)."""

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return (prompt, messages): base models get RULER's answer prefix, chat models not."""
        body = sample.meta.get("head", "") + sample.context + sample.question
        if mode == "completion":
            return body + sample.meta.get("answer_prefix", ""), ()
        return "", (Message("user", body),)


def _unsent(tokenizer: Tokenizer, written: generate.Written, counted: int) -> int:
    """Return the tokens RULER counted for the answer prefix, which a chat model is not sent
    (`counted`: RULER's count of the input with it, template and answer budget taken off)."""
    if written.meta.get("counted") == "whole":  # the pieces' counts do not add up: count all
        return counted - len(tokenizer.encode(written.input))
    tail = written.question
    return len(tokenizer.encode(tail + written.answer_prefix)) - len(tokenizer.encode(tail))


def _length(text: str) -> int:
    lower = text.lower()
    try:
        value = float(lower[:-1]) * 1024 if lower.endswith("k") else float(lower)
    except ValueError as exc:
        raise UsageError(f"bad ruler length {text!r}: use token counts like 4k or 32768") from exc
    if value % 1 or value < 1:
        raise UsageError(f"bad ruler length {text!r}: use whole token counts like 4k or 32768")
    return int(value)


def reason_missing(task: Task, data: dict[str, str]) -> str:
    """Return why `task` cannot run with the data given, or "" when it can."""
    need = _DATA.get(task.haystack)
    if need and not data.get(need):
        where = data_cache()
        return (
            f"needs {need}=FILE ({_FORMAT[need]}); not given and no {FILES[need]} in {where} "
            "(`longscope data ruler` downloads RULER's inputs there)"
        )
    return ""


def data_cache() -> Path:
    """Return the folder `longscope data ruler` downloads into (runs look there for inputs)."""
    from longscope.download import suite_cache

    return suite_cache("ruler")


def cached_data() -> dict[str, str]:
    """Return {parameter: path} of RULER's inputs found in the data cache."""
    folder = data_cache()
    return {k: str(folder / name) for k, name in FILES.items() if (folder / name).is_file()}


class RulerSuite(Suite):
    """RULER's 13 tasks (synthetic.yaml), sized exactly in the model's tokenizer."""

    name = "ruler"
    title = "RULER"

    @classmethod
    def sources(cls) -> Sources:
        """Return the files `longscope data ruler` downloads."""
        from longscope.suites.ruler.sources import sources

        return sources()

    DESCRIPTION = (
        "RULER: 13 synthetic tasks (NIAH, tracing, aggregation, QA), 4K-128K, RULER's scoring"
    )
    OPTIONS = (
        Param("tasks", "strs", ALL_TASKS, "RULER tasks (synthetic.yaml)", choices=ALL_TASKS),
        Param("lengths", "lengths", DEFAULT_LENGTHS, "context lengths (prompt + output)"),
        Param("samples", "int", DEFAULT_SAMPLES, "samples per task and length (RULER: 500)", low=1),
        Param("random_seed", "int", DEFAULT_SEED, "RULER's --random_seed: which samples are drawn "
              "(42 in its published runs; the run's --seed is the sampling seed)", low=0),
        Param("essays", "str", None, "essay haystack: RULER's PaulGrahamEssays.json ({\"text\"}); "
              "default: the one in the data cache (`longscope data ruler`)"),
        Param("squad", "str", None, "qa_1: SQuAD v2 dev JSON (dev-v2.0.json); default: the data "
              "cache's"),
        Param("hotpotqa", "str", None, "qa_2: HotpotQA dev JSON (hotpot_dev_distractor_v1.json); "
              "default: the data cache's"),
        Param("words", "str", None, "cwe past wonderwords' words: RULER's english_words.json; "
              "default: the data cache's"),
        Param("model_template", "choice", "base", "RULER's model template in completion mode",
              choices=tuple(MODEL_TEMPLATES)),
        Param("fill", "choice", "ruler", "haystack size: ruler (RULER's own search, its samples "
              "byte for byte) or exact (the largest that fits; not comparable)",
              choices=("ruler", "exact")),
    )  # fmt: skip
    # ruler-2: fill=exact cwe/fwe take the word that still fits (one more at some budgets)
    # ruler-3: fill=exact's single-answer niah wording reaches the model template as RULER's does
    # (lwm-chat, vicuna-chat prompts changed); a model template's special tokens count one token
    # each where the tokenizer has them (Phi3, meta-llama3, ... on their GGUFs: other haystack
    # sizes); a resumed ruler-2 run would mix both
    version = "ruler-3"
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=128, temperature=0.0)
    template = RulerTemplate(body="{context}{question}", answer_prefix="")

    def __init__(
        self,
        *,
        tasks: Sequence[str],
        lengths: Sequence[int],
        samples: int,
        random_seed: int,
        essays: str | None,
        squad: str | None,
        hotpotqa: str | None,
        words: str | None,
        model_template: str,
        fill: str,
    ) -> None:
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise ValueError(f"unknown ruler task(s) {unknown}: use {', '.join(ALL_TASKS)}")
        if samples < 1:
            raise ValueError(f"samples must be at least 1, not {samples}")
        bad = [n for n in lengths if int(n) < 256]
        if bad or not lengths:
            raise ValueError(f"ruler lengths must be at least 256 tokens, not {bad}")
        if model_template not in MODEL_TEMPLATES:
            raise ValueError(
                f"unknown model_template {model_template!r}: use one of RULER's "
                f"{', '.join(MODEL_TEMPLATES)}"
            )
        if fill not in ("ruler", "exact"):
            raise ValueError(f"unknown fill {fill!r}: use ruler (RULER's samples) or exact")
        self.fill = fill
        self.model_template = model_template
        self.tasks = tuple(tasks)
        self.lengths = tuple(sorted({int(n) for n in lengths}))
        self.samples = samples
        self.seed = random_seed
        self.data = {
            k: v
            for k, v in (
                ("essays", essays),
                ("squad", squad),
                ("hotpotqa", hotpotqa),
                ("words", words),
            )
            if v
        }
        self._env_data: dict[str, Any] | None = None
        self._cached: set[str] = set()
        self._inputs: dict[str, Any] | None = None

    def _from_cache(self, cached: set[str], inputs: dict[str, Any] | None) -> RulerSuite:
        """Note which inputs came from the data cache (checked against their pins before they
        are read) and the input record of a stored run (kept as recorded)."""
        self._cached = cached & set(self.data)
        self._inputs = inputs if isinstance(inputs, dict) else None
        return self

    def inputs(self) -> dict[str, Any]:
        """Return each input file's record: name, sha256, and whether it is the pinned file."""
        if self._inputs is None:
            from longscope.suites.ruler.sources import input_record

            self._inputs = {k: input_record(k, v) for k, v in sorted(self.data.items())}
        return self._inputs

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RulerSuite:
        """Build from stored params (`params()`) or typed `-S` values; unknown keys ignored. An
        input file not given is taken from the data cache (`longscope data ruler`)."""
        try:
            values = cls.completed(params)
            found = cached_data()
            from_cache = {k for k in found if not values.get(k)}
            values |= {k: found[k] for k in from_cache}
            return cls(**values)._from_cache(from_cache, params.get("inputs"))
        except ValueError as exc:
            if isinstance(exc, UsageError):
                raise
            raise UsageError(str(exc)) from exc

    @staticmethod
    def published_rows() -> tuple[Any, ...]:
        """Return RULER's published table as `PublishedRow`s (scores by length in tokens, stated
        and flagged effective length, wAvg), for `compare --published ruler`."""
        from longscope.suites.ruler.published import published_rows

        return published_rows()

    @staticmethod
    def published() -> Any:
        """Return RULER's published table as `compare --published ruler` reads it: a row's
        name carries a dagger where the README's effective length disagrees with its scores."""
        from longscope.analysis.published import Published
        from longscope.analysis.published import PublishedRow as Row
        from longscope.suites.ruler.published import PUBLISHED_SOURCE, published_rows

        rows = []
        for row in published_rows():
            flagged = " \u2020" if row.flags else ""
            claimed = _length(row.claimed.upper().replace("M", "024K")) if row.claimed else None
            # The README's own effective length and wAvg (TBD included) stay as published.
            stated: dict[str, Any] = {"effective": row.effective} if row.effective else {}
            if row.tbd:
                stated |= {"wAvg_inc": "TBD", "wAvg_dec": "TBD"}
            elif row.wavg_inc is not None and row.wavg_dec is not None:
                stated |= {"wAvg_inc": row.wavg_inc, "wAvg_dec": row.wavg_dec}
            rows.append(
                Row(
                    f"{row.label}{flagged}",
                    "",
                    claimed,
                    row.avg,
                    dict(row.scores),
                    stated=stated,
                )
            )
        source = (
            f"{PUBLISHED_SOURCE}; \u2020: the README's effective length disagrees with the row's "
            "own scores at 85.6, or the row is the threshold's reference"
        )
        return Published(source, tuple(rows))

    def skipped(self) -> dict[str, str]:
        """Return {task: reason} for the tasks this run cannot run (data not given)."""
        out = {}
        for name in self.tasks:
            reason = reason_missing(TASKS[name], self.data)
            if reason:
                out[name] = reason
        return out

    def differences(self) -> list[str]:
        """Return how this run's setup differs from RULER's published one (empty: comparable)."""
        out = [f"{t} skipped: {r}" for t, r in self.skipped().items()]
        missing = [t for t in ALL_TASKS if t not in self.tasks]
        if missing:
            out.append(f"tasks not run: {', '.join(missing)} (RULER averages all 13)")
        if self.lengths != DEFAULT_LENGTHS:
            shown = ", ".join(f"{n // 1024}K" if n % 1024 == 0 else str(n) for n in self.lengths)
            out.append(
                f"lengths {shown} (RULER: 4K-128K): the average, effective length and wAvg "
                "cover other lengths"
            )
        if self.samples != DEFAULT_SAMPLES:
            out.append(f"{self.samples} samples per task and length (RULER: {DEFAULT_SAMPLES})")
        if self.seed != DEFAULT_SEED:
            out.append(f"random_seed {self.seed} (RULER: {DEFAULT_SEED})")
        if self.fill != "ruler":
            out.append(f"fill={self.fill}: not RULER's haystack sizes (prompts up to 19% longer)")
        return out

    def params(self) -> dict[str, Any]:
        return {
            "tasks": list(self.tasks),
            "lengths": list(self.lengths),
            "samples": self.samples,
            "random_seed": self.seed,
            "model_template": self.model_template,
            "fill": self.fill,
            **{k: str(v) for k, v in sorted(self.data.items())},
            # Which files were read, by content: the same path may hold another file later.
            **({"inputs": self.inputs()} if self.data else {}),
            "ruler": RULER_REVISION,
            "comparable_with_published": not self.differences(),
        }

    def prepare(self) -> None:
        self._load()

    def _load(self) -> dict[str, Any]:
        if self._env_data is None:
            from longscope.suites.ruler.data import cwe_words
            from longscope.suites.ruler.sources import check_cached

            for key in sorted(self._cached):  # a file in the cache must be the pinned one
                check_cached(key, self.data[key])

            cwe_words()  # wonderwords present, or one line saying so
            punkt = data_cache() / PUNKT
            if punkt not in PUNKT_DIRS:
                PUNKT_DIRS.append(punkt)  # RULER's sentence model, where `longscope data` put it
            if not SPANS_DIRS:
                SPANS_DIRS.append(data_cache() / "spans")  # essays cut once, kept between runs
            loaded: dict[str, Any] = {"qa": {}}
            wanted = {TASKS[t].haystack for t in self.tasks}
            if "essay" in wanted and "essays" in self.data:
                loaded["essays"] = load_essays(self.data["essays"])
            if "squad" in wanted and "squad" in self.data:
                loaded["qa"]["squad"] = load_squad(self.data["squad"])
            if "hotpotqa" in wanted and "hotpotqa" in self.data:
                loaded["qa"]["hotpotqa"] = load_hotpotqa(self.data["hotpotqa"])
            loaded["words"] = _load_words(self.data["words"]) if "words" in self.data else ()
            self._env_data = loaded
        return self._env_data

    def env(self, ctx: BuildContext) -> tight.Env:
        """Return the tight fill's shared state for one tokenizer and prompt mode (`fill=exact`)."""
        loaded = self._load()
        wrapped = self.model_template if ctx.prompt_mode == "completion" else "base"
        return tight.Env(
            ruler_counting(ctx.tokenizer, wrapped),  # the template's special tokens as one each
            ctx.prompt_mode,
            self.seed,
            model_template=self.model_template,
            essays=loaded.get("essays"),
            qa=loaded["qa"],
            extra_words=loaded["words"],
        )

    def ruler_env(self, ctx: BuildContext) -> generate.Env:
        """Return what RULER's generators read (`fill=ruler`); chat models get the base prompt."""
        loaded = self._load()
        chat = ctx.prompt_mode == "chat"
        return generate.Env(
            self.seed,
            model_template="base" if chat else self.model_template,
            essays=loaded.get("essays"),
            qa=loaded["qa"],
            extra_words=loaded["words"],
            # RULER counts its model template in the length; a chat model's own template is the
            # backend's, counted when it knows it (a server's is unknown: nothing counted).
            frame=(ctx.chat_overhead or 0) if chat else 0,
        )

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        """Return the task x length cells (the lazy build's outline): nothing is built here."""
        skipped = self.skipped()
        return [
            BuildCell(
                name,
                length,
                self.samples,
                skipped=skipped.get(name, ""),
                id_format=f"{name}-{length}-{{index:03d}}",
            )
            for name in self.tasks
            for length in self.lengths
        ]

    def build(self, ctx: BuildContext) -> list[Sample]:
        skipped = self.skipped()
        cells = [
            self.iter_cell(ctx, name, length)
            for name in self.tasks
            if name not in skipped
            for length in self.lengths
        ]
        # Sample-major order: `--limit N` keeps whole rounds of every task and length.
        return [next(cell) for _ in range(self.samples) for cell in cells]

    def iter_cell(
        self, ctx: BuildContext, task: str, length: int, count: int | None = None
    ) -> Iterator[Sample]:
        """Yield the first `count` (default: `samples`) samples of one task x length, lazily.

        With `fill=ruler` sample i is RULER's sample i (its random stream runs through samples
        0..i-1, so a cell is replayed from its start); RULER's haystack search runs once, when
        the first sample is pulled.
        """
        if task not in TASKS:
            raise UsageError(f"unknown ruler task {task!r}: use {', '.join(ALL_TASKS)}")
        reason = reason_missing(TASKS[task], self.data)
        if reason:
            raise UsageError(f"ruler task {task} cannot run: {reason}")
        count = self.samples if count is None else count
        if self.fill == "exact":
            return self.cell_samples(self.env(ctx), ctx, TASKS[task], length, count)
        return self._ruler_cell(ctx, TASKS[task], length, count)

    def _ruler_cell(
        self, ctx: BuildContext, task: Task, length: int, count: int
    ) -> Iterator[Sample]:
        env = self.ruler_env(ctx)
        overhead = prompt_fit(ctx, "").counted
        ttg = task.template.tokens_to_generate
        max_tokens = ctx.max_tokens_override or ttg
        written = generate.ruler_cell(task, env, ctx.tokenizer, length, count)
        for index, w in enumerate(written):
            # RULER counts the text (answer prefix included) and its model template, here a chat
            # template's tokens (`frame`); the model also gets what it did not count (BOS).
            counted = w.length - ttg - env.frame
            achieved = counted + overhead
            if ctx.prompt_mode == "chat" and w.answer_prefix:
                achieved -= _unsent(ctx.tokenizer, w, counted)
            meta = {
                **w.meta,
                "head": w.head,
                "answer_prefix": w.answer_prefix,
                "metric": task.template.metric,
                "target_length": length,
                "achieved_length": achieved,
                "ruler_length": w.length,
                "fill": "ruler",
                "prompt_mode": ctx.prompt_mode,
                "model_template": env.model_template,
            }
            if task.haystack == "essay" and env.essays is not None:
                meta["sentences"] = "punkt" if env.essays.haystack.exact else "regex"
            yield Sample(
                f"{task.name}-{length}-{index:03d}",
                task.name,
                "English",
                w.context,
                w.question,
                w.outputs,
                length=length,
                max_tokens=max_tokens,
                prompt_tokens=achieved,
                meta=meta,
            )

    def build_cell(
        self, env: tight.Env, ctx: BuildContext, task: Task, length: int
    ) -> list[Sample]:
        """Return the samples of one task at one length with the tight fill (`fill=exact`)."""
        return list(self.cell_samples(env, ctx, task, length, self.samples))

    def cell_samples(
        self, env: tight.Env, ctx: BuildContext, task: Task, length: int, count: int
    ) -> Iterator[Sample]:
        """Yield the first `count` tight-fill samples of one task at one length, made when pulled."""
        # What the model receives beyond the text: BOS for a base model, a known chat template's
        # tokens, else a margin for an unknown one (RULER counts the text alone).
        frame = prompt_fit(ctx, "")
        overhead, margin = frame.counted, frame.margin
        budget = length - task.template.tokens_to_generate - overhead - margin
        max_tokens = ctx.max_tokens_override or task.template.tokens_to_generate
        whole = False
        for index in range(count):
            rng = random.Random(f"{self.seed}:{task.name}:{length}:{index}")
            try:
                draft = self._draft(task, rng, env, budget, length, index)
            except ValueError as exc:
                raise UsageError(
                    f"ruler task {task.name} does not fit in {length} tokens ({exc}): use longer "
                    "lengths (RULER's shortest is 4k)"
                ) from exc
            if index == 0:
                # The pieces' counts are checked against the whole prompt once per task and length;
                # where they do not add up, every prompt of the cell is counted whole.
                prompt = self._prompt_text(draft, ctx.prompt_mode)
                whole = env.counter(draft.sep).count(prompt) != draft.predicted
            if whole:
                draft = _fit_whole(env, draft, budget, ctx.prompt_mode)
            achieved = draft.predicted + overhead
            sample = Sample(
                f"{task.name}-{length}-{index:03d}",
                task.name,
                "English",
                draft.context,
                draft.question,
                tuple(draft.answers),
                length=length,  # the bucket reports group by; prompt + output never exceed it
                max_tokens=max_tokens,
                prompt_tokens=achieved,
                meta={
                    **draft.meta,
                    "head": draft.head,
                    "answer_prefix": draft.answer_prefix,
                    "metric": task.template.metric,
                    "target_length": length,
                    "achieved_length": achieved,
                    "ruler_length": draft.predicted + task.template.tokens_to_generate,
                    "counted": "whole" if whole else "pieces",
                    "fill": "exact",
                    "prompt_mode": ctx.prompt_mode,
                    "model_template": self.model_template
                    if ctx.prompt_mode == "completion"
                    else "base",
                },
            )
            yield sample

    @staticmethod
    def _prompt_text(draft: tight.Draft, mode: PromptMode) -> str:
        tail = draft.question + (draft.answer_prefix if mode == "completion" else "")
        return draft.head + draft.context + tail

    @staticmethod
    def _draft(
        task: Task, rng: random.Random, env: tight.Env, budget: int, length: int, index: int
    ) -> tight.Draft:
        if task.generator == "niah":
            return tight.niah(task, rng, env, budget)
        if task.generator == "variable_tracking":
            return tight.variable_tracking(task, rng, env, budget)
        if task.generator == "common_words_extraction":
            return tight.common_words(task, rng, env, budget, length)
        if task.generator == "freq_words_extraction":
            return tight.freq_words(task, rng, env, budget, length)
        return tight.qa(task, rng, env, budget, index)

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        prediction = postprocess(generation.text)
        references = list(sample["gold"])
        metric = sample["meta"].get("metric", "string_match_all")
        value = (
            match_part(prediction, references)
            if metric == "string_match_part"
            else match_all(prediction, references)
        )
        return Score(
            value, 1.0, {"metric": metric, "references": references[:10], "null": not prediction}
        )

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return ruler_summary(summarize_ruler(rows, self.skipped(), self.differences()))


def _fit_whole(env: tight.Env, draft: tight.Draft, budget: int, mode: PromptMode) -> tight.Draft:
    """Return `draft` with haystack pieces dropped from the end until its whole prompt fits."""
    counter = env.counter(draft.sep)
    pieces, removable = list(draft.pieces), list(draft.removable)
    d = replace(draft, pieces=pieces, removable=removable)
    total = counter.count(RulerSuite._prompt_text(d, mode))
    while total > budget and any(removable):
        excess = total - budget
        while excess > 0 and any(removable):
            drop = max(i for i, r in enumerate(removable) if r)
            excess -= counter.mid(pieces.pop(drop), False)
            removable.pop(drop)
        total = counter.count(RulerSuite._prompt_text(d, mode))
    return replace(d, predicted=total)


def _load_words(path: str) -> tuple[str, ...]:
    """Return the words of a JSON list or object (RULER's english_words.json), for cwe past wonderwords."""
    from longscope.suites.ruler.data import _read_json

    raw = _read_json(path, "words")
    values = list(raw.values()) if isinstance(raw, dict) else raw
    if not isinstance(values, list) or not all(isinstance(w, str) and w.strip() for w in values):
        raise UsageError(
            f"words file {path!r} is not a JSON list or object of words: give english_words.json"
        )
    return tuple(dict.fromkeys(values))
