"""The suite contract: the base class every suite derives from, with its optional hooks declared
and their defaults.

A suite is a class the registry (`longscope.suites`) finds by name: a `SUITES` table in its
package, the `longscope.suites` entry-point group, or `register_suite`; it derives from `Suite`.

Required: `name`, `version`, `template`, `default_config`, `default_repeats`, `params()`,
`build(ctx)`, `score(sample, generation, judgement=None)`, `summarize(rows) -> Summary`.

Optional, each declared on `Suite` with its default (the harness never asks "do you have X?"):
- `OPTIONS` (its `Param`s, each with its default: typed `-S key=value`, listed by `longscope list
  SUITE`; the registry hands every one, complete and typed, to the constructor), `DESCRIPTION`;
  `from_options(values)` / `from_params(params)` when the stored parameters differ from the
  options (default: the constructor, by option name);
- `sources()`: the files `longscope data SUITE` downloads (default: none);
- `prepare()` (default: nothing to load), `timeout_s(sample)` (default: 2 minutes plus 2 seconds
  per 1K context tokens);
- an LLM judge: `JUDGED`, `needs_judge`, `judge_task(sample, generation) -> JudgeTask | None`,
  `parse_verdict(kind, text) -> float | None`, and `score(sample, generation, judgement)`;
- `import_predictions(path, params) -> ImportedRun` (`score SUITE --predictions FILE`);
- `calibrate(tiers) -> dict` (`longscope calibrate`);
- `PUBLISHED` (a file in `analysis.published`'s format) or `published() -> Published`
  (`compare --published SUITE`);
- `cluster_key(sample) -> Hashable`: the unit samples share, for clustered standard errors and the
  bootstrap (`analysis.uncertainty`); default: the document (samples with the same context).
- what a shard overrides (run/shards.py): `shard`, `all_ids`, `record()`, `describe()`;
- a lazy build: `cells(ctx) -> Sequence[BuildCell] | None` (what it would build, cheap: no
  sample made; default None, no lazy build) and `iter_cell(ctx, task, length, count) ->
  Iterator[Sample]` (one cell's first `count` samples in index order, made as they are pulled).
  A suite with cells is built only as far as a run sends, and `--limit N` means N per cell;
  without them `build(ctx)` is its one cell (`SampleSource` adapts it), so a suite need not change.

Samples are sized with `prompt_fit` (BOS, a known chat template, else a margin) and carry their
output budget and counted prompt length as `Sample.max_tokens` / `Sample.prompt_tokens`.
Nothing outside `suites/` knows any suite by name (tests/test_import_graph.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from longscope.errors import UsageError
from longscope.params import Param, complete
from longscope.sources import Sources
from longscope.summary import Summary
from longscope.text.tokenizers import Tokenizer
from longscope.types import (
    Generation,
    GenerationConfig,
    Judgement,
    JudgeTask,
    Message,
    PromptMode,
    PromptParts,
    Sample,
    Score,
    ScoredRow,
)

_CONTEXT_MARK = "\x00context\x00"


@dataclass(frozen=True)
class PromptTemplate:
    """How a suite asks its question, in both prompt modes.

    `body` holds `{context}` and `{question}`; chat mode sends it as one user message, completion
    mode appends `answer_prefix` so that a base model continues with the answer (as RULER does).
    """

    body: str
    answer_prefix: str
    completion_stop: tuple[str, ...] = ()

    def parts(self, sample: Sample, mode: PromptMode) -> PromptParts:
        """Return the text `render` sends (prompt or user message) cut around the context."""
        probe = replace(sample, context=_CONTEXT_MARK)
        prompt, messages = self.render(probe, mode)
        head, _, tail = (prompt or messages[0].content).partition(_CONTEXT_MARK)
        return PromptParts(head, sample.context, tail)

    def render(self, sample: Sample, mode: PromptMode) -> tuple[str, tuple[Message, ...]]:
        """Return (prompt, messages) for `mode`; the other one is empty."""
        body = self.body.format(context=sample.context, question=sample.question)
        if mode == "completion":
            return body + self.answer_prefix, ()
        return "", (Message("user", body),)


@dataclass(frozen=True)
class BuildContext:
    """What a suite may know about the model when it builds samples: never the backend itself."""

    tokenizer: Tokenizer
    prompt_mode: PromptMode
    config: GenerationConfig
    context_length: int | None = None
    """Tokens the model can hold (prompt + output), when known: for suites that truncate to fit."""
    max_tokens_override: int | None = None
    """The user's `--max-tokens`, which wins over any per-sample output budget."""
    chat_overhead: int | None = None
    """Tokens the model's chat template adds around the user message, when known (chat mode)."""
    thinking_budget_override: int | None = None
    """The user's `--thinking-budget`, which wins over any per-sample thinking budget."""

    def output_budget(self, default: int) -> int:
        """Return the output budget of a sample: the user's `--max-tokens`, else `default`."""
        return self.max_tokens_override if self.max_tokens_override is not None else default

    def thinking_budget(self, default: int | None) -> int | None:
        """Return a sample's thinking budget: the user's `--thinking-budget`, else `default`."""
        override = self.thinking_budget_override
        return override if override is not None else default

    def fit(self, text: str) -> PromptFit:
        """Return what sending `text` (a rendered prompt, or the one user message) costs."""
        return prompt_fit(self, text)


CHAT_MARGIN_TOKENS = 32
"""A chat template's role markers when the backend cannot count them (a server's template)."""


@dataclass(frozen=True)
class PromptFit:
    """The tokens a prompt costs as the model receives it, in the model's tokenizer.

    Every suite sizes its contexts with this, so that all count the same things: the rendered
    text, the BOS token a base model is given, and the chat template's own tokens (counted when the
    backend knows its template, else covered by a margin that is never reported as sent).
    """

    counted: int
    """Tokens counted exactly: the text, BOS in completion mode, a known chat template's."""
    margin: int = 0
    """Tokens reserved for what cannot be counted (a server's chat template)."""

    @property
    def reserved(self) -> int:
        """Tokens to keep free for the prompt: counted and margin."""
        return self.counted + self.margin


def prompt_fit(ctx: BuildContext, text: str) -> PromptFit:
    """Return what sending `text` costs in `ctx`'s model (see `PromptFit`)."""
    counted = len(ctx.tokenizer.encode(text)) if text else 0
    if ctx.prompt_mode == "completion":
        return PromptFit(counted + 1)  # BOS
    if ctx.chat_overhead is not None:
        return PromptFit(counted + ctx.chat_overhead)
    return PromptFit(counted, CHAT_MARGIN_TOKENS)


@dataclass(frozen=True)
class ImportedRun:
    """Predictions made elsewhere, read by their suite: a run for `run.predictions` to store."""

    suite: Any
    """The suite the predictions answer (scores them, names the run)."""
    samples: list[Sample]
    generations: list[tuple[str, int, Generation]]
    """(sample id, repeat, generation) per prediction, in the file's order."""
    model: str
    identity: dict[str, Any]
    """What makes the run id (the data's revision, a digest of the file)."""
    params: dict[str, Any]
    """The parameters stored with the run (re-scoring reads them)."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Further header fields (where the predictions came from)."""


class Suite:
    """A benchmark: its samples, how to ask, how to grade, and how to sum up.

    Required: the attributes `name`, `version`, `template`, `default_config`, `default_repeats`;
    `params()`, `build(ctx)`, `score(sample, generation)`, `summarize(rows)`, and the class method
    `from_params(params)`. Every other member is an optional hook declared here with its default.
    """

    name: str
    version: str
    """Dataset revision or generator version: part of the run identity."""
    template: PromptTemplate
    default_config: GenerationConfig
    default_repeats: int

    # -- read by the registry (longscope.suites.REGISTRY), on the class ---------------------------

    OPTIONS: ClassVar[tuple[Param, ...]] = ()
    """Its `-S` options, each once, typed, with its default (`longscope list SUITE` shows them)."""
    DESCRIPTION: ClassVar[str] = ""
    """One line for `longscope list` (default: the first line of the class's docstring)."""

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> Suite:
        """Return the suite of complete typed `-S` values (every declared option, defaults
        applied by the registry). Default: `from_params(values)`."""
        return cls.from_params(values)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Suite:
        """Return the suite of stored parameters (`params()`) or typed values. Default: the
        constructor, given every declared option (stored value, else its default) by name."""
        return cls(**cls.completed(params))

    @classmethod
    def completed(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Return every declared option, typed: its value in `params` where one is given there
        (not None, not empty), else its declared default. Keys it does not declare are dropped."""
        given = {
            p.name: params[p.name]
            for p in cls.OPTIONS
            if params.get(p.name) is not None and params[p.name] not in ("", [], (), {})
        }
        values = complete(cls.OPTIONS, given)
        return {p.name: values[p.name] for p in cls.OPTIONS}

    @classmethod
    def sources(cls) -> Sources | None:
        """Return the input files `longscope data SUITE` downloads, or None (nothing to download)."""
        return None

    # -- required --------------------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        """Return the options that change which samples exist or how they read."""
        raise NotImplementedError(f"{type(self).__name__} must define params()")

    def build(self, ctx: BuildContext) -> list[Sample]:
        """Return the samples, each sized for `ctx.tokenizer` so that prompt + output fit its length.
        Default, for a suite with a lazy build (`cells` and `iter_cell`): every cell that can be
        built, whole, in the cells' order."""
        cells = self.cells(ctx)
        if cells is None:
            raise NotImplementedError(f"{type(self).__name__} must define build(ctx)")
        return [
            sample
            for cell in cells
            if not cell.skipped
            for sample in self.iter_cell(ctx, cell.task, cell.length, cell.count)
        ]

    def score(
        self, sample: dict[str, Any], generation: Generation, judgement: Judgement | None = None
    ) -> Score:
        """Grade a scorable generation against a stored sample (the dict from `Sample.public`).
        A suite scored by a judge (`JUDGED`) is also handed the answer's stored verdict, or None;
        any other suite may leave `judgement` out of its signature (it is never given one)."""
        raise NotImplementedError(f"{type(self).__name__} must define score(sample, generation)")

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        """Return the typed summary (`longscope.summary`): headline, curve, breakdowns."""
        raise NotImplementedError(f"{type(self).__name__} must define summarize(rows)")

    # -- a lazy build, optional (with `iter_cell`) ------------------------------------------------

    def cells(self, ctx: BuildContext) -> Sequence[BuildCell] | None:
        """Return what the suite would build, cheaply (no sample made): one `BuildCell` per task
        and length, each made by `iter_cell` as it is pulled. Default None: no lazy build;
        `build(ctx)` is then the suite's one cell, and `--limit N` counts in all."""
        return None

    def iter_cell(self, ctx: BuildContext, task: str, length: int, count: int) -> Iterator[Sample]:
        """Return an iterator over the first `count` samples of one cell (of `cells`), in index
        order, each made when pulled. Needed only by a suite whose `cells` gives cells."""
        raise NotImplementedError(f"{type(self).__name__} gives cells but no iter_cell")

    # -- optional, with defaults -----------------------------------------------------------------

    def grid_length(self, sample: Sample) -> int:
        """Return the grid length (tokens) `sample` is scored at in the suite's by-length curve.
        Default: its `length`; a suite whose samples vary around a target length returns the
        target (an adaptive run of a suite built whole groups its samples by it)."""
        return sample.length

    def prepare(self) -> None:
        """Load and validate inputs that need no model (data files), so bad input fails first.
        Default: nothing to load."""

    def samples_at_least(self) -> int:
        """Return how many samples `build` makes at the least, known without building (default
        0: unknown): a run past the request ceiling is refused before a long build."""
        return 0

    def timeout_s(self, sample: Sample) -> float:
        """Return how long one request for `sample` may take before it is recorded as a timeout.
        Default: 2 minutes plus 2 seconds per 1K context tokens."""
        return 120.0 + 2.0 * sample.length / 1000.0

    cluster_key: Callable[[dict[str, Any]], Hashable] | None = None
    """`cluster_key(sample)`: the unit samples share, for clustered standard errors and the
    bootstrap (`analysis.uncertainty`); None: the document (samples with the same context)."""

    # An LLM judge (run/judge.py).
    JUDGED: ClassVar[bool] = False
    """True when the suite can be scored with a judge's verdicts: it defines `judge_task` and
    `parse_verdict`, and its `score` takes `judgement=` (a `Judgement` or None)."""
    needs_judge: bool = False
    """True when this suite's scores need a judge pass (its parameters ask for one)."""

    def judge_task(self, sample: dict[str, Any], generation: Generation) -> JudgeTask | None:
        """Return what to ask the judge about one answer, or None (not judged)."""
        return None

    def parse_verdict(self, kind: str, text: str) -> float | None:
        """Return the judged score in [0, 1] read from a judge's reply, or None."""
        return None

    # Hooks of the suite's class (the registry's factory), used without building a suite.
    PUBLISHED: ClassVar[Path | None] = None
    """A file of published rows in `analysis.published`'s format (`compare --published SUITE`)."""

    @classmethod
    def published(cls) -> Any:
        """Return published rows (`analysis.published.Published`) made in code, or None."""
        return None

    @classmethod
    def import_predictions(cls, predictions: Path, params: dict[str, Any]) -> ImportedRun:
        """Return predictions made elsewhere, read from `predictions` (`score SUITE --predictions`)."""
        raise UsageError(f"{cls.name} cannot score predictions made elsewhere")

    @classmethod
    def calibrate(cls, tiers: dict[str, list[Any]]) -> dict[str, Any]:
        """Return model-calibrated labels from scored runs grouped by tier (`longscope calibrate`)."""
        raise ValueError(
            f"calibration needs runs of one suite that calibrates its difficulty; {cls.name} does not"
        )

    # A shard of a run (run/shards.py's `ShardedSuite` overrides these).
    shard: Any = None
    """The shard this suite is seen through (`run.shards.Shard`), or None for the whole run."""
    all_ids: Sequence[str] = ()
    """Every sample id of the whole run, when this is a shard of it (after building)."""

    def record(self) -> dict[str, Any] | None:
        """Return what a run stores before sending so that merge can find gaps (a shard), or None."""
        return None

    def describe(self) -> str:
        """Return how outputs name what this suite runs (a shard says which part)."""
        return self.name


@dataclass(frozen=True)
class BuildCell:
    """Samples a suite builds together, in index order: one task at one length (RULER), or the
    whole list of a suite without a lazy build (task "", length 0)."""

    task: str
    length: int
    count: int
    """Samples the cell holds (the suite's own count, before any `--limit`)."""
    skipped: str = ""
    """Why this cell cannot be built (its data not given): "" when it can."""
    id_format: str = ""
    """The id of sample `index` as `id_format.format(index=index)`, when the suite knows it before
    building ("" otherwise): a resumed run skips a cell whose every sample is done without
    building it. A wrong format only costs that: each sample is checked by its own id."""

    def sample_id(self, index: int) -> str | None:
        """Return the id sample `index` will have, or None when the suite does not say."""
        return self.id_format.format(index=index) if self.id_format else None


class SampleSource:
    """A suite's samples for one build context, as cells made lazily in index order.

    A suite with the lazy hooks (`cells`, `iter_cell`) is asked for what is pulled and nothing
    more; any other suite is built once, here, and its list is its one cell. One source serves a
    whole invocation (`plan`'s count and `run`'s sending), so nothing is built twice.
    """

    def __init__(self, suite: Suite, ctx: BuildContext) -> None:
        self.suite, self.ctx = suite, ctx
        cells = suite.cells(ctx)
        self.lazy = cells is not None
        self._built: list[Sample] = []
        if cells is not None:
            self.cells: tuple[BuildCell, ...] = tuple(cells)
        else:
            self._built = suite.build(ctx)
            self.cells = (BuildCell("", 0, len(self._built)),)

    def samples(self, cell: BuildCell, count: int) -> Iterator[Sample]:
        """Return an iterator over the first `count` samples of `cell`, each made when pulled."""
        if cell.skipped or count <= 0:
            return iter(())
        if not self.lazy:
            return iter(self._built[:count])
        return iter(self.suite.iter_cell(self.ctx, cell.task, cell.length, count))

    def sample_id(self, cell: BuildCell, index: int) -> str | None:
        """Return the id of sample `index` of `cell` when known without building it."""
        if not self.lazy:
            return self._built[index].id
        return cell.sample_id(index)
