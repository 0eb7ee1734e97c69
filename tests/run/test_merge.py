"""Shard + merge equals the unsharded run, on the embedded model (a tiny LongCtx grid)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.registry import create_backend
from longscope.run.merge import endpoint_history, merge_runs, record_endpoints, record_shard
from longscope.run.runner import RunOptions, RunResult, run_async
from longscope.run.scoring import score_run
from longscope.run.shards import Shard, ShardedSuite
from longscope.run.store import RunStore
from longscope.suites import create_suite

pytestmark = pytest.mark.model

GRID = {"lengths": [1024, 2048], "depths": [0.5], "types": ["needle"]}


def _volatile_free(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("timing", "run_id", "created")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, RunResult]]:
    """One unsharded run and its two shards, with one loaded model."""
    root = tmp_path_factory.mktemp("merge")
    backend = create_backend("llamacpp/gemma3-270m")

    async def main() -> dict[str, tuple[Path, RunResult]]:
        out: dict[str, tuple[Path, RunResult]] = {}
        try:
            whole = root / "whole"
            out["whole"] = (
                whole,
                await run_async(create_suite("longctx", GRID), backend, _opts(whole)),
            )
            for index in (0, 1):
                path = root / f"shard{index}"
                suite = ShardedSuite(create_suite("longctx", GRID), Shard(index, 2))
                result = await run_async(suite, backend, _opts(path))
                record_shard(path, result.run_id, suite)
                out[f"shard{index}"] = (path, result)
        finally:
            await backend.aclose()
        return out

    return asyncio.run(main())


def _opts(path: Path) -> RunOptions:
    # 16-token answers: merging compares stored rows, whatever their length, and the default
    # 200-token budget was most of this module's time (four runs' worth of decoding).
    return RunOptions(output=path, quiet=True, max_tokens=16)


def test_shards_share_the_identity_and_split_the_samples(runs) -> None:
    whole, s0, s1 = runs["whole"][1], runs["shard0"][1], runs["shard1"][1]
    assert whole.run_id == s0.run_id == s1.run_id
    assert s0.sent + s1.sent == whole.sent == 2
    assert s0.sent == s1.sent == 1  # the 2K sample costs more than the 1K one: one each


def test_merge_equals_the_unsharded_run_and_is_idempotent(runs, tmp_path: Path) -> None:
    whole_dir, whole = runs["whole"]
    out = tmp_path / "merged"
    report = merge_runs(out, [runs["shard1"][0], runs["shard0"][0]])
    assert report.run_id == whole.run_id
    assert (report.samples, report.generations, report.added) == (2, 2, 2)
    assert (report.overlaps, report.conflicts, report.missing_shards) == (0, [], [])
    assert report.missing_samples == [] and report.unfinished == 0
    merged = report.scores
    assert merged is not None
    assert _volatile_free(merged.to_dict()) == _volatile_free(whole.scores.to_dict())
    with RunStore.open_readonly(out) as a, RunStore.open_readonly(whole_dir) as b:
        # every stored field of every sample, in build order
        assert list(a.samples(whole.run_id).items()) == list(b.samples(whole.run_id).items())
        texts = [(s, r, g.status, g.text) for s, r, g in a.generations(whole.run_id)]
        assert texts == [(s, r, g.status, g.text) for s, r, g in b.generations(whole.run_id)]
        assert a.scores(whole.run_id) == b.scores(whole.run_id)
    assert endpoint_history(out, whole.run_id) == []
    again = merge_runs(out, [runs["shard0"][0], runs["shard1"][0]])
    assert again.added == 0 and again.generations == 2
    assert _volatile_free(score_run(out).to_dict()) == _volatile_free(whole.scores.to_dict())


def test_merge_reports_gaps_and_overlaps(runs, tmp_path: Path) -> None:
    half = merge_runs(tmp_path / "half", [runs["shard0"][0]])
    assert half.missing_shards == [1]
    with RunStore.open_readonly(runs["shard1"][0]) as store:
        absent = list(store.samples(runs["shard1"][1].run_id))
    assert half.missing_samples == absent
    assert "gaps: shard(s) 1 not merged" in half.describe()
    # the unsharded run overlaps both shards with the same answers (greedy decoding)
    both = merge_runs(tmp_path / "both", [runs["whole"][0], runs["shard0"][0], runs["shard1"][0]])
    assert both.overlaps == 2 and both.conflicts == [] and both.generations == 2


def test_merge_keeps_each_shards_endpoint_figures_once(runs, tmp_path: Path) -> None:
    shard0, result = runs["shard0"]
    copy = tmp_path / "shard0"
    shutil.copytree(shard0, copy)
    figures = [{"endpoint": "http://gpu1:8000/v1", "requests": 1, "prompt_tokens": 900}]
    record_endpoints(copy, result.run_id, figures)
    out = tmp_path / "out"
    merge_runs(out, [copy, runs["shard1"][0]])
    merge_runs(out, [copy, runs["shard1"][0]])
    assert endpoint_history(out, result.run_id) == [figures]


def test_merge_refuses_another_run_with_one_line(runs, tmp_path: Path) -> None:
    other = tmp_path / "other"
    with RunStore(other) as store:
        store.put_run("f" * 16, "longctx", {"suite": "longctx"})
    with pytest.raises(UsageError) as caught:
        merge_runs(tmp_path / "out", [runs["shard0"][0], other])
    message = str(caught.value)
    assert "\n" not in message and "only stores of one run" in message and "ffffffffffff" in message
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="both the output and an input"):
        merge_runs(runs["shard0"][0], [runs["shard0"][0]])
