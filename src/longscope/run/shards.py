"""Shards: one run split over several hosts (a Slurm array, a Kubernetes indexed job).

Every shard builds the same samples (building is deterministic), partitions them the same way and
runs only its own part; `run/merge.py` joins the shard stores into one run. The partition balances
estimated prefill cost, linear plus quadratic in prompt length (attention grows with the square of
the length), not sample count: one 128K sample costs more than a hundred 1K ones. Samples that share
a context stay on one shard, so that host's prefix cache serves all of them.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longscope.errors import UsageError
from longscope.suites.base import BuildContext, Suite
from longscope.types import Sample, stable_hash

QUADRATIC_AT = 32_768
"""Length at which the quadratic (attention) term equals the linear one (an estimate, not fitted:
for 7-8B models with 32 layers of width 4096, attention and weights cost the same near 32K)."""


@dataclass(frozen=True)
class Shard:
    """Part `index` (0-based) of `count`."""

    index: int
    count: int

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
            return _checked(int(env["SLURM_ARRAY_TASK_ID"]) - first, total, "SLURM_ARRAY_TASK_ID")
        if "JOB_COMPLETION_INDEX" in env:
            total = count or int(env.get("LONGSCOPE_SHARDS", "0"))
            if total < 1:
                raise UsageError(
                    "JOB_COMPLETION_INDEX is set but the shard count is not: pass --shard i/N "
                    "or set LONGSCOPE_SHARDS to the job's completions"
                )
            return _checked(int(env["JOB_COMPLETION_INDEX"]), total, "JOB_COMPLETION_INDEX")
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


def _checked(index: int, count: int, source: str) -> Shard:
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"{source} gives shard {index} of {count}: pass --shard i/N instead")
    return Shard(index, count)


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


def shard_loads(
    samples: Sequence[Sample], assignment: Mapping[str, int], count: int
) -> list[float]:
    """Return each shard's estimated prefill cost under `assignment`."""
    loads = [0.0] * count
    for sample in samples:
        loads[assignment[sample.id]] += prefill_cost(sample_tokens(sample))
    return loads


class ShardedSuite:
    """A suite seen through one shard: the same identity, only this shard's samples built.

    Everything but `build` is the wrapped suite's, so the run identity (suite, parameters, model,
    settings) is the same on every shard and their stores merge. `--limit` applies to the shard's
    own samples (the runner cuts after building).
    """

    def __init__(self, suite: Suite, shard: Shard) -> None:
        self._suite = suite
        self.shard = shard
        self.all_ids: list[str] = []
        self.assignment: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    def build(self, ctx: BuildContext) -> list[Sample]:
        """Return this shard's samples, in the order the whole suite builds them."""
        samples = self._suite.build(ctx)
        self.all_ids = [s.id for s in samples]
        self.assignment = partition(samples, self.shard.count)
        return [s for s in samples if self.assignment[s.id] == self.shard.index]

    def record(self) -> dict[str, Any]:
        """Return what merge needs to find gaps: the shard, and every sample id in build order."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "ids": self.all_ids,
            "assignment": [self.assignment[i] for i in self.all_ids],
        }
