"""Shards: `i/N` parsing, job-array defaults, a deterministic partition balanced by prefill cost."""

from __future__ import annotations

import pytest

from longscope.errors import UsageError
from longscope.run.shards import (
    Shard,
    parse_shard,
    partition,
    prefill_cost,
    resolve_shard,
    shard_from_env,
    shard_loads,
)
from longscope.types import Sample


def _sample(i: int, tokens: int, context: str | None = None) -> Sample:
    return Sample(
        id=f"s{i:03d}",
        task="t",
        language="en",
        context=context if context is not None else f"document {i}",
        question="q",
        gold=("a",),
        length=tokens,
        meta={"prompt_tokens": tokens},
    )


def test_parse_shard() -> None:
    assert parse_shard("0/4") == Shard(0, 4)
    assert parse_shard(" 3/4 ") == Shard(3, 4)
    for bad in ("4/4", "-1/4", "1/0", "1", "a/b", "1/2/3"):
        with pytest.raises(UsageError, match="expected i/N"):
            parse_shard(bad)


def test_shard_from_slurm_and_kubernetes() -> None:
    slurm = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "8"}
    assert shard_from_env(slurm) == Shard(4, 8)  # --array=1-8: task 5 is shard 4 of 8
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"}) == Shard(
        0, 2
    )
    assert shard_from_env({"JOB_COMPLETION_INDEX": "2"}, count=3) == Shard(2, 3)
    assert shard_from_env({"JOB_COMPLETION_INDEX": "2", "LONGSCOPE_SHARDS": "4"}) == Shard(2, 4)
    assert shard_from_env({}) is None
    with pytest.raises(UsageError, match="LONGSCOPE_SHARDS"):
        shard_from_env({"JOB_COMPLETION_INDEX": "2"})
    with pytest.raises(UsageError, match="shard 3 of 3"):
        shard_from_env({"JOB_COMPLETION_INDEX": "3"}, count=3)


def test_the_option_wins_over_the_environment() -> None:
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    assert resolve_shard("0/3", env) == Shard(0, 3)
    assert resolve_shard(None, env) == Shard(1, 2)
    assert resolve_shard(None, {}) is None


def test_partition_balances_cost_not_count() -> None:
    # one 128K sample against 64 1K samples: by count, 32/33 per shard; by cost the 128K one is
    # 64 times the length and ~200 times the cost of all the small ones together.
    samples = [_sample(0, 131_072)] + [_sample(i, 1_024) for i in range(1, 65)]
    assignment = partition(samples, 2)
    big = assignment["s000"]
    assert all(assignment[s.id] != big for s in samples[1:])
    loads = shard_loads(samples, assignment, 2)
    assert loads[big] == pytest.approx(prefill_cost(131_072))
    assert prefill_cost(131_072) == 131_072 + 131_072**2 / 32_768  # linear plus quadratic


def test_partition_is_deterministic_balanced_and_keeps_contexts_together() -> None:
    lengths = [8_192, 16_384, 32_768, 65_536, 131_072, 4_096] * 10
    samples = [_sample(i, n) for i, n in enumerate(lengths)]
    # two samples over one context (a document's two questions) must land together
    samples.append(_sample(100, 65_536, context="document 3"))
    first = partition(samples, 4)
    assert first == partition(list(reversed(samples)), 4)  # order of building does not matter
    assert first["s100"] == first["s003"]
    loads = shard_loads(samples, first, 4)
    assert max(loads) / min(loads) < 1.1
    assert sorted(set(first.values())) == [0, 1, 2, 3]
