"""Shards: one run split over several hosts (a Slurm array, a Kubernetes indexed job).

Every shard builds the same samples (building is deterministic), partitions them the same way and
runs only its own part (a suite built by cells, RULER, is split by whole cells, and a shard makes
only its own); `run/merge.py` joins the shard stores into one run. The partition balances
estimated prefill cost, linear plus quadratic in prompt length (attention grows with the square of
the length), not sample count: one 128K sample costs more than a hundred 1K ones. Samples that share
a context stay on one shard, so that host's prefix cache serves all of them.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from longscope.models.base import UsageError
from longscope.suites.base import (
    BuildCell,
    BuildContext,
    PromptTemplate,
    Suite,
)
from longscope.summary import Summary
from longscope.types import (
    Generation,
    GenerationConfig,
    Judgement,
    JudgeTask,
    Sample,
    Score,
    ScoredRow,
    stable_hash,
)

MAX_SHARDS = 10_000
"""More shards than any job array runs (Slurm's default MaxArraySize is 1001): a larger count is
a typo, and the partition keeps one load per shard."""
QUADRATIC_AT = 32_768
"""Length at which the quadratic (attention) term equals the linear one (an estimate, not fitted:
for 7-8B models with 32 layers of width 4096, attention and weights cost the same near 32K)."""


@dataclass(frozen=True)
class Shard:
    """Part `index` (0-based) of `count`."""

    index: int
    count: int
    source: str = field(default="", compare=False)
    """The environment variable it came from (a job array), "" for `--shard`."""

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """Return the shard written `i/N` (0 <= i < N); raise UsageError saying what is wrong."""
    head, sep, tail = text.strip().partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index = count = -1
    if not sep or count < 1 or not 0 <= index < count:
        raise UsageError(f"bad shard {text!r}: expected i/N with 0 <= i < N, e.g. 0/4")
    if count > MAX_SHARDS:
        raise UsageError(f"bad shard {text!r}: at most {MAX_SHARDS:,} shards")
    return Shard(index, count)


def shard_from_env(env: Mapping[str, str] | None = None, count: int | None = None) -> Shard | None:
    """Return the shard a job array implies, or None outside one.

    Slurm: `SLURM_ARRAY_TASK_ID` counted from `SLURM_ARRAY_TASK_MIN`, out of `SLURM_ARRAY_TASK_COUNT`.
    Kubernetes indexed jobs: `JOB_COMPLETION_INDEX` out of `count` (the job's completions, which
    Kubernetes does not put in the environment: pass it, or set `LONGSCOPE_SHARDS`).
    """
    env = os.environ if env is None else env
    try:
        if "SLURM_ARRAY_TASK_ID" in env and "SLURM_ARRAY_TASK_COUNT" in env:
            first = int(env.get("SLURM_ARRAY_TASK_MIN", "0"))
            total = count or int(env["SLURM_ARRAY_TASK_COUNT"])
            return _checked(
                int(env["SLURM_ARRAY_TASK_ID"]) - first, total, "SLURM_ARRAY_TASK_ID", env=True
            )
        if "JOB_COMPLETION_INDEX" in env:
            total = count or int(env.get("LONGSCOPE_SHARDS", "0"))
            if total < 1:
                raise UsageError(
                    "JOB_COMPLETION_INDEX is set but the shard count is not: pass --shard i/N "
                    "or set LONGSCOPE_SHARDS to the job's completions"
                )
            return _checked(
                int(env["JOB_COMPLETION_INDEX"]), total, "JOB_COMPLETION_INDEX", env=True
            )
    except UsageError:
        raise  # already says what is wrong (a UsageError is a ValueError: not wrapped again)
    except ValueError as exc:
        raise UsageError(
            f"bad shard variables in the environment ({exc}): pass --shard i/N"
        ) from exc
    return None


def resolve_shard(option: str | None, env: Mapping[str, str] | None = None) -> Shard | None:
    """Return the shard of `--shard i/N` if given, else the one a job array implies, else None."""
    if option:
        return parse_shard(option)
    return shard_from_env(env)


def _checked(index: int, count: int, source: str, *, env: bool = False) -> Shard:
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"{source} gives shard {index} of {count}: pass --shard i/N instead")
    if count > MAX_SHARDS:
        raise UsageError(
            f"{source} gives {count} shards: at most {MAX_SHARDS:,}; pass --shard i/N instead"
        )
    return Shard(index, count, source if env else "")


def prefill_cost(tokens: int, quadratic_at: int = QUADRATIC_AT) -> float:
    """Return the estimated prefill cost of a prompt: linear plus quadratic in its length."""
    return tokens + tokens * tokens / quadratic_at


def sample_tokens(sample: Sample) -> int:
    """Return a sample's prompt length: the suite's count, else its target length."""
    return sample.counted_prompt() or max(1, sample.length)


def partition(
    samples: Sequence[Sample], count: int, quadratic_at: int = QUADRATIC_AT
) -> dict[str, int]:
    """Return {sample id: shard index}: balanced by prefill cost, deterministic, contexts together.

    Longest-processing-time-first: units (samples sharing a context) in decreasing cost, each to the
    shard with the least cost so far (ties to the lowest index): within 4/3 of the best balance.
    """
    units: dict[str, list[Sample]] = {}
    for sample in samples:
        units.setdefault(stable_hash(sample.context, 24), []).append(sample)
    costed = sorted(
        (
            (
                -sum(prefill_cost(sample_tokens(s), quadratic_at) for s in members),
                min(s.id for s in members),
                key,
            )
            for key, members in units.items()
        )
    )
    loads = [(0.0, i) for i in range(count)]
    assignment: dict[str, int] = {}
    for negative, _, key in costed:
        load, index = heapq.heappop(loads)
        for member in units[key]:
            assignment[member.id] = index
        heapq.heappush(loads, (load - negative, index))
    return assignment


def partition_cells(
    cells: Sequence[BuildCell], count: int, quadratic_at: int = QUADRATIC_AT
) -> dict[int, int]:
    """Return {cell index: shard index} for the runnable cells: whole cells, balanced by their
    estimated prefill cost (samples x cost at the cell's length), longest first, deterministic."""
    costed = sorted(
        (-c.count * prefill_cost(max(1, c.length), quadratic_at), k)
        for k, c in enumerate(cells)
        if not c.skipped
    )
    loads = [(0.0, i) for i in range(count)]
    assignment: dict[int, int] = {}
    for negative, k in costed:
        load, index = heapq.heappop(loads)
        assignment[k] = index
        heapq.heappush(loads, (load - negative, index))
    return assignment


def shard_loads(
    samples: Sequence[Sample], assignment: Mapping[str, int], count: int
) -> list[float]:
    """Return each shard's estimated prefill cost under `assignment`."""
    loads = [0.0] * count
    for sample in samples:
        loads[assignment[sample.id]] += prefill_cost(sample_tokens(sample))
    return loads


class ShardedSuite(Suite):
    """A suite seen through one shard: the same identity, only this shard's samples built.

    Every declared member but the build and the shard's own (`shard`, `all_ids`, `record`,
    `describe`) is the wrapped suite's, forwarded one by one, so the run identity (suite,
    parameters, model, settings) is the same on every shard and their stores merge. `--limit`
    applies to the shard's own samples (per cell for a suite built by cells, whose shards make only
    their own cells).
    """

    def __init__(self, suite: Suite, shard: Shard) -> None:
        self._suite = suite
        self.shard = shard
        self.all_ids: list[str] = []
        self.assignment: dict[str, int] = {}

    def iter_cell(self, ctx: BuildContext, task: str, length: int, count: int) -> Iterator[Sample]:
        return self._suite.iter_cell(ctx, task, length, count)

    def cells(self, ctx: BuildContext) -> list[BuildCell] | None:
        """Return the cells of this shard, and note every sample id of the whole run (unbuilt);
        None when the suite has no lazy build (then `build` makes this shard's samples)."""
        # A suite built by cells is split by whole cells: a shard makes only its own cells
        # (a cell's samples hang together: RULER draws them from one random stream).
        whole = self._suite.cells(ctx)
        if whole is None:
            return None
        cells = list(whole)
        assigned = partition_cells(cells, self.shard.count)
        self.all_ids, self.assignment = [], {}
        runnable = [(k, c) for k, c in enumerate(cells) if not c.skipped]
        for index in range(max((c.count for _, c in runnable), default=0)):
            for k, cell in runnable:
                sample_id = cell.sample_id(index) if index < cell.count else None
                if sample_id is not None:
                    self.all_ids.append(sample_id)
                    self.assignment[sample_id] = assigned[k]
        return [c for k, c in enumerate(cells) if c.skipped or assigned[k] == self.shard.index]

    # Read when asked, not copied: a suite's version may load its data (longbench-pro's revision).
    @property  # type: ignore[override]
    def name(self) -> str:
        return self._suite.name

    @property  # type: ignore[override]
    def version(self) -> str:
        return self._suite.version

    @property  # type: ignore[override]
    def template(self) -> PromptTemplate:
        return self._suite.template

    @property  # type: ignore[override]
    def default_config(self) -> GenerationConfig:
        return self._suite.default_config

    @property  # type: ignore[override]
    def default_repeats(self) -> int:
        return self._suite.default_repeats

    def params(self) -> dict[str, Any]:
        return self._suite.params()

    def prepare(self) -> None:
        self._suite.prepare()

    def timeout_s(self, sample: Sample) -> float:
        return self._suite.timeout_s(sample)

    def grid_length(self, sample: Sample) -> int:
        return self._suite.grid_length(sample)

    def samples_at_least(self) -> int:
        """Return this shard's part of the whole suite's least count (its requests' bound)."""
        return self._suite.samples_at_least() // self.shard.count

    def score(
        self, sample: dict[str, Any], generation: Generation, judgement: Judgement | None = None
    ) -> Score:
        if judgement is None:  # a suite not judged may not take one
            return self._suite.score(sample, generation)
        return self._suite.score(sample, generation, judgement)

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return self._suite.summarize(rows)

    @property  # type: ignore[override]
    def cluster_key(self) -> Callable[[dict[str, Any]], Hashable] | None:
        return self._suite.cluster_key

    @property  # type: ignore[override]
    def JUDGED(self) -> bool:
        return self._suite.JUDGED

    @property  # type: ignore[override]
    def needs_judge(self) -> bool:
        return self._suite.needs_judge

    def judge_task(self, sample: dict[str, Any], generation: Generation) -> JudgeTask | None:
        return self._suite.judge_task(sample, generation)

    def parse_verdict(self, kind: str, text: str) -> float | None:
        return self._suite.parse_verdict(kind, text)

    def build(self, ctx: BuildContext) -> list[Sample]:
        """Return this shard's samples, in the order the whole suite builds them."""
        samples = self._suite.build(ctx)
        self.all_ids = [s.id for s in samples]
        self.assignment = partition(samples, self.shard.count)
        return [s for s in samples if self.assignment[s.id] == self.shard.index]

    def describe(self) -> str:
        """Return `shard 1/4: 29 of 88 samples` (after `build`), as every output shows it."""
        mine = sum(1 for i in self.all_ids if self.assignment.get(i) == self.shard.index)
        return f"shard {self.shard}: {mine} of {len(self.all_ids)} samples"

    def record(self) -> dict[str, Any]:
        """Return what merge needs to find gaps: the shard, and every sample id in build order."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "ids": self.all_ids,
            "assignment": [self.assignment[i] for i in self.all_ids],
        }
