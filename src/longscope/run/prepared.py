"""One prepared run: what `plan` and `run` share up to sending.

`PreparedRun.create` resolves the generation settings and the run's identity once, and opens the
suite's samples as a `SampleSource` (suites/base.py) for one build context. Samples are made as
they are pulled, cell by cell and index by index: `--limit` (per cell for a suite built by cells),
a resume and the first request build only what they send, and memory holds what is in flight, not
the grid. `plan` counts the same samples `run` sends; one invocation builds them once.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from longscope.errors import UsageError
from longscope.models.base import Backend, ModelInfo
from longscope.suites.base import BuildCell, BuildContext, SampleSource, Suite
from longscope.text.safe_text import visible
from longscope.types import GenerationConfig, Request, Sample, stable_hash

MAX_REQUESTS = 1_000_000
"""Requests one run may ask (samples x repeats): past it a count is a typo (RULER's full grid is
under 40,000)."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: what changes outputs (repeats, seed, generation overrides) and what does not."""

    output: Path | None = None
    limit: int | None = None
    """Samples to build and send: per cell (task x length) for a suite built by cells, else in all."""
    repeats: int = 1
    seed: int = 0
    max_tokens: int | None = None
    thinking_budget: int | None = None
    """Tokens a reasoning model may think before its thinking is closed (models/thinking.py)."""
    temperature: float | None = None
    concurrency: int | None = None
    quiet: bool = False
    serial: bool = False
    """Run requests one by one in order (for stepping through with a debugger)."""


def resolve_config(suite: Suite, info: ModelInfo, options: RunOptions) -> GenerationConfig:
    """Return the generation settings of a run of `suite` on a model described by `info`."""
    overrides: dict[str, Any] = {"seed": options.seed}
    if options.max_tokens is not None:
        overrides["max_tokens"] = options.max_tokens
    if options.temperature is not None:
        overrides["temperature"] = options.temperature
    if options.thinking_budget is not None:
        overrides["thinking_budget"] = options.thinking_budget
    if info.prompt_mode == "completion":
        overrides["stop"] = suite.template.completion_stop
    return replace(suite.default_config, **overrides)


def run_identity(suite: Suite, info: ModelInfo, config: GenerationConfig) -> str:
    """Hash of what changes outputs: suite, its params and version, model, prompt mode, settings
    (and a chat template's counted tokens, which size chat prompts).

    Transport (URL, concurrency, timeouts, keys) is never part of it, nor are repeats or limit:
    asking for more repeats or a larger limit extends the same run.
    """
    identity = {
        "suite": suite.name,
        "version": suite.version,
        "params": suite.params(),
        "model": info.model_id,
        "prompt_mode": info.prompt_mode,
        "tokenizer": info.tokenizer,
        "config": config,
    }
    if config.thinking_budget is not None:  # not in the config's repr (see GenerationConfig)
        identity["thinking_budget"] = config.thinking_budget
    if info.prompt_mode == "chat" and info.chat_overhead is not None:
        # Chat prompts are sized around the template's tokens: a resumed run sized with another
        # count would mix haystacks. Completion runs (and chat on a server) keep their identity.
        identity["chat_overhead"] = info.chat_overhead
    return stable_hash(identity)


def check_output_budget(max_tokens: int | None, info: ModelInfo, model: str) -> None:
    """Refuse (one line, before anything is built or stored) a `--max-tokens` the model's context
    cannot hold beside any prompt; known only once the backend has answered `info()`."""
    held = info.context_length
    if max_tokens is not None and held is not None and max_tokens >= held:
        raise UsageError(
            f"--max-tokens {max_tokens} does not fit {visible(model)}: it holds {held} tokens "
            f"({info.context_source}) for prompt and answer together; use a smaller --max-tokens"
        )


def skip_reason(sample: Sample, info: ModelInfo, thinking_budget: int | None = None) -> str:
    """Return why `sample` cannot fit the backend, or "" when it fits or nothing tells us.

    `sample.length` counts the prompt and the answer's budget; a thinking budget comes on top
    (a sample that cannot hold it is skipped with the reason, never truncated to make room).
    """
    needs = sample.length + (thinking_budget or 0)
    if info.context_length is None or needs <= info.context_length:
        return ""
    # A context lowered to what the machine's (or card's) memory holds is a memory limit.
    memory = info.limit != "context"
    what = "prompt, thinking and answer" if thinking_budget else "prompt and answer"
    return (
        f"{'insufficient_memory' if memory else 'insufficient_context'}: needs {needs} "
        f"tokens ({what}), backend holds {info.context_length} ({info.context_source})"
    )


def thinking_of(sample: Sample, config: GenerationConfig) -> int | None:
    """Return the thinking budget of `sample`'s requests: its own, else the run's."""
    return sample.thinking_budget if sample.thinking_budget is not None else config.thinking_budget


def build_request(
    suite: Suite, sample: Sample, repeat: int, info: ModelInfo, config: GenerationConfig
) -> Request:
    """Render a sample into the request its model's prompt mode needs."""
    prompt, messages = suite.template.render(sample, info.prompt_mode)
    # Repeats must differ when sampling; with greedy decoding the seed changes nothing.
    seeded = replace(
        config,
        seed=config.seed + repeat,
        max_tokens=sample.output_budget(config.max_tokens),
        thinking_budget=thinking_of(sample, config),
    )
    return Request(
        sample_id=sample.id,
        repeat=repeat,
        mode=info.prompt_mode,
        prompt=prompt,
        messages=messages,
        config=seeded,
        prompt_tokens=sample.counted_prompt(),
        timeout_s=suite.timeout_s(sample),
        parts=suite.template.parts(sample, info.prompt_mode) if sample.context else None,
    )


def check_samples(suite: Suite, count: int, repeats: int) -> None:
    """Raise UsageError (nothing sent or stored) when the suite has no sample to make at all, or
    when `count` samples x `repeats` exceeds MAX_REQUESTS."""
    if not count and not suite.all_ids:  # a shard may hold none of many
        raise UsageError(
            f"{suite.name} built no sample with these options (a task whose data is not given is "
            f"left out): nothing to run; see `longscope list {suite.name}`"
        )
    if count * repeats > MAX_REQUESTS:
        raise UsageError(
            f"{count:,} samples x {repeats:,} repeats = {count * repeats:,} "
            f"requests: at most {MAX_REQUESTS:,} per run; use fewer lengths, samples or repeats "
            "(or --limit)"
        )


def check_unique_ids(samples: list[Sample]) -> None:
    """Raise UsageError naming both cells when two samples share an id (nothing sent or stored).

    Two grid cells that round to one id (depths 0.1 and 0.101, lengths 1k and 1024) would be sent
    twice and stored once, with the stored sample possibly not the one answered.
    """
    first: dict[str, int] = {}
    for position, sample in enumerate(samples):
        earlier = first.setdefault(sample.id, position)
        if earlier != position:
            raise UsageError(
                f"two samples share the id {sample.id!r}: {_describe(samples[earlier], earlier)} "
                f"and {_describe(sample, position)}; make the suite's parameters distinct "
                "(e.g. depths or lengths that differ after rounding)"
            )


def _describe(sample: Sample, position: int) -> str:
    """Return a short description of a sample's cell from its generic fields and scalar meta."""
    fields = [f"task {sample.task}", f"length {sample.length}"]
    for key, value in sample.meta.items():
        scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
        if scalar and len(fields) < 5 and key not in ("prompt_tokens", "context_tokens"):
            fields.append(f"{key} {value}")
    return f"cell #{position + 1} ({', '.join(fields)})"


@dataclass(frozen=True)
class PlannedCell:
    """A cell of the suite and how many of its samples this invocation builds (after `--limit`)."""

    cell: BuildCell
    count: int


def _cell_name(cell: BuildCell) -> str:
    return f"{cell.task or 'all'} at {cell.length}" if cell.length else cell.task or "all"


class Unit(NamedTuple):
    """Samples sent together (they share a context), each with its position and repeats to send."""

    members: tuple[tuple[int, Sample, tuple[int, ...]], ...]


class CellSelection:
    """A suite built whole (one list) seen as cells: one per grid length (`Suite.grid_length`),
    its samples in a fixed pseudo-random order (by a hash of each id), so the first `n` samples of
    a cell are a uniformly drawn subset of it whatever order the suite lists them in (a data file
    sorted by difficulty, depths listed in turn). Nothing is built again: the cells hold the
    source's samples. `limit` caps each cell's count (as `--limit` counts per cell)."""

    lazy = True

    def __init__(self, source: SampleSource, limit: int | None = None) -> None:
        self.suite, self.ctx = source.suite, source.ctx
        built = list(source.samples(source.cells[0], source.cells[0].count))
        groups: dict[int, list[Sample]] = {}
        for sample in built:
            groups.setdefault(self.suite.grid_length(sample), []).append(sample)
        self._groups = {
            n: sorted(group, key=lambda s: stable_hash(s.id)) for n, group in groups.items()
        }
        self.cells: tuple[BuildCell, ...] = tuple(
            BuildCell("", n, len(g) if limit is None else min(limit, len(g)))
            for n, g in sorted(self._groups.items())
            if n > 0  # a sample at no grid length (a no-context base sample) is in no cell
        )

    def samples(self, cell: BuildCell, count: int) -> Iterator[Sample]:
        """Return an iterator over the first `count` samples of `cell` (in the fixed order)."""
        return iter(self._groups.get(cell.length, [])[: max(0, count)])

    def sample_id(self, cell: BuildCell, index: int) -> str | None:
        """Return the id of sample `index` of `cell`."""
        group = self._groups.get(cell.length, [])
        return group[index].id if index < len(group) else None


class PreparedRun:
    """A run resolved up to sending: settings, identity, the cells to build and how to size them.

    Made once per invocation (`create`); `plan` reads it, `run` consumes it (`run.runner`).
    """

    def __init__(
        self,
        suite: Suite,
        backend: Backend,
        info: ModelInfo,
        options: RunOptions,
        config: GenerationConfig,
        source: SampleSource | CellSelection,
    ) -> None:
        self.suite, self.backend, self.info = suite, backend, info
        self.options, self.config, self.source = options, config, source
        self.run_id = run_identity(suite, info, config)
        self.made_s = 0.0
        """Seconds spent making samples before any was pulled (a suite without cells)."""
        limit = options.limit
        self.cells = tuple(
            PlannedCell(
                c, 0 if c.skipped else min(c.count, limit if limit is not None else c.count)
            )
            for c in source.cells
        )
        # Counted from the cells: nothing is made before the counts are known to be sane.
        check_samples(suite, sum(p.count for p in self.cells), options.repeats)
        if not source.lazy:
            # Made already: refused before anything is sent or stored, naming both cells.
            check_unique_ids(list(source.samples(source.cells[0], self.cells[0].count)))

    @classmethod
    async def create(cls, suite: Suite, backend: Backend, options: RunOptions) -> PreparedRun:
        """Return the prepared run: the suite's data checked first, then the model asked once."""
        suite.prepare()  # a bad data file is named before any server is asked
        # A suite built whole (no cells) is bounded before its build, which could take hours.
        least = suite.samples_at_least()
        if options.limit is not None:
            least = min(least, options.limit)
        if least:
            check_samples(suite, least, options.repeats)
        info = await backend.info()
        check_output_budget(options.max_tokens, info, backend.name)
        config = resolve_config(suite, info, options)
        ctx = BuildContext(
            backend.tokenizer(),
            info.prompt_mode,
            config,
            context_length=info.context_length,
            max_tokens_override=options.max_tokens,
            chat_overhead=info.chat_overhead,
            thinking_budget_override=options.thinking_budget,
        )
        started = time.perf_counter()
        source = SampleSource(suite, ctx)  # a suite without cells is built here, once
        prepared = cls(suite, backend, info, options, config, source)
        prepared.made_s = time.perf_counter() - started
        return prepared

    def with_counts(self, count: Callable[[BuildCell], int]) -> PreparedRun:
        """Return this run sending `count(cell)` samples of each cell (at most the cell's own
        count, none of a skipped one): one look of an adaptive run (run/adaptive.py)."""
        look = copy.copy(self)
        look.cells = tuple(
            PlannedCell(p.cell, 0 if p.cell.skipped else max(0, min(p.cell.count, count(p.cell))))
            for p in self.cells
        )
        return look

    def by_cells(self) -> PreparedRun:
        """Return this run with a suite built whole seen as cells, one per grid length
        (`CellSelection`); a suite built by cells is returned as it is."""
        if self.source.lazy:
            return self
        look = copy.copy(self)
        look.source = CellSelection(self.source, self.options.limit)
        look.cells = tuple(PlannedCell(c, c.count) for c in look.source.cells)
        return look

    @property
    def limit_per_cell(self) -> bool:
        """True when `--limit` counts per cell (task x length): the suite is built by cells."""
        return self.source.lazy

    def skipped_tasks(self) -> dict[str, str]:
        """Return {task: why} for the tasks whose cells cannot be built (their data not given)."""
        return {p.cell.task: p.cell.skipped for p in self.cells if p.cell.skipped}

    def request(self, sample: Sample, repeat: int) -> Request:
        """Return the request that sends `sample` (see `skip_reason` for whether it may be sent)."""
        return build_request(self.suite, sample, repeat, self.info, self.config)

    def skip_reason(self, sample: Sample) -> str:
        """Return why `sample` cannot be sent to this model, or "" when it can."""
        return skip_reason(sample, self.info, thinking_of(sample, self.config))

    def cell_done(self, planned: PlannedCell, done: set[tuple[str, int]]) -> bool:
        """Return True when every repeat of every sample of `planned` is done (known unbuilt)."""
        repeats = self.options.repeats
        for index in range(planned.count):
            sample_id = self.source.sample_id(planned.cell, index)
            if sample_id is None or any((sample_id, r) not in done for r in range(repeats)):
                return False
        return True

    def to_send(self, done: set[tuple[str, int]]) -> int:
        """Return how many (sample, repeat) pairs are left to send or skip (an upper bound when a
        cell's ids are unknown before it is built)."""
        total = 0
        for planned in self.cells:
            for index in range(planned.count):
                sample_id = self.source.sample_id(planned.cell, index)
                total += sum(1 for r in range(self.options.repeats) if (sample_id, r) not in done)
        return total

    def samples(self, done: set[tuple[str, int]] = frozenset()) -> Iterator[tuple[int, Sample]]:  # type: ignore[assignment]
        """Yield (position, sample) of every cell not wholly `done`, made as pulled.

        Cells take turns, one sample each (sample-major, as a suite's `build` lists them): a run
        cut short holds every cell's first samples. A position is the sample's place in that order
        over the whole grid, the same whatever `--limit` or resume leaves out.
        """
        width = len(self.cells)
        live = [
            (k, self.source.samples(p.cell, p.count))
            for k, p in enumerate(self.cells)
            if p.count and not self.cell_done(p, done)
        ]
        # Ids only (not the samples): memory holds what is in flight, not the grid.
        seen: dict[str, int] = {}
        index = 0
        while live:
            still = []
            for k, made in live:
                sample = next(made, None)
                if sample is None:
                    continue
                earlier = seen.get(sample.id)
                seen[sample.id] = k
                if earlier is not None:
                    raise UsageError(
                        f"two samples share the id {sample.id!r}: cells "
                        f"{_cell_name(self.cells[earlier].cell)} and "
                        f"{_cell_name(self.cells[k].cell)}; make the suite's parameters distinct"
                    )
                yield index * width + k, sample
                still.append((k, made))
            live = still
            index += 1

    def units(self, done: set[tuple[str, int]]) -> Iterator[Unit]:
        """Yield what is left to send, made as pulled: samples sharing a context together.

        A suite built at once (no cells) is grouped over its whole list, as its samples are made
        already; cells are made one sample at a time, and neighbours with one context go together.
        """
        repeats = range(self.options.repeats)

        def todo(position: int, sample: Sample) -> tuple[int, Sample, tuple[int, ...]] | None:
            left = tuple(r for r in repeats if (sample.id, r) not in done)
            return (position, sample, left) if left else None

        if not self.source.lazy:
            by_context: dict[str, list[tuple[int, Sample, tuple[int, ...]]]] = {}
            for position, sample in self.samples(done):
                member = todo(position, sample)
                if member is not None:
                    by_context.setdefault(stable_hash(sample.context, 24), []).append(member)
            for members in by_context.values():
                yield Unit(tuple(members))
            return
        current: list[tuple[int, Sample, tuple[int, ...]]] = []
        for position, sample in self.samples(done):
            member = todo(position, sample)
            if member is None:
                continue
            if current and current[-1][1].context != sample.context:
                yield Unit(tuple(current))
                current = []
            current.append(member)
        if current:
            yield Unit(tuple(current))
