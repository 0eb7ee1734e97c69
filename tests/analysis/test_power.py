"""`plan`'s detectable differences: the formula by hand, and the plan's table and JSON."""

from __future__ import annotations

import json

import pytest

from longscope.analysis.power import detectable, detectable_lines
from longscope.types import Sample

from ..cli_helper import longscope
from ..factories import sample


def _sample(sid: str, length: int, context: str) -> Sample:
    return sample(sid, context=context, length=length)


def test_detectable_difference_counts_clusters_not_samples() -> None:
    # 100 samples at 4K on 100 documents; 100 at 8K on 25 documents (4 questions each).
    samples = [_sample(f"a{i}", 4096, f"doc a{i}") for i in range(100)]
    samples += [_sample(f"b{i}", 8192, f"doc b{i // 4}") for i in range(100)]
    at_4k, at_8k, every = detectable(samples, None)
    # (1.96 + 0.84) x 50 x sqrt(2 / 100) = 19.81; with 25 clusters twice that.
    assert (at_4k.samples, at_4k.clusters) == (100, 100)
    assert at_4k.difference == pytest.approx(19.81, abs=0.01)
    assert (at_8k.samples, at_8k.clusters) == (100, 25)
    assert at_8k.difference == pytest.approx(2 * 19.81, abs=0.02)
    # One score: t(99) = 1.9842 x 50 / 10 = 9.92 points either side (9.8 with 1.96).
    assert at_4k.halfwidth == pytest.approx(9.921, abs=0.001)
    assert every.length is None and every.clusters == 125
    lines = detectable_lines([at_4k, at_8k, every])
    assert lines[2].split() == ["4096", "100", "100", "9.9", "19.8"]
    assert lines[-1].split()[0] == "all"


def test_plan_prints_the_detectable_difference_per_length() -> None:
    scripted = ("--model", "scripted/reader", "-M", "context_length=8192", "-S", "tiers=1")
    made = longscope("plan", "longctx", *scripted, "--json")
    assert made.returncode == 0, made.stderr
    power = json.loads(made.stdout)["detectable"]
    # LongCtx's tier 1: 4 tasks on 4 haystacks: a paired difference under 99 points is unseen.
    assert [(p["length"], p["samples"], p["clusters"]) for p in power] == [(4096, 4, 4)]
    assert power[0]["difference"] == pytest.approx(2.8016 * 50 * (2 / 4) ** 0.5, abs=0.01)
    table = longscope("plan", "longctx", *scripted)
    assert "two models differing by D or more" in table.stdout


def test_nothing_to_send_has_no_power_rows() -> None:
    """A plan whose samples are all done or skipped sends nothing: no table, no crash."""
    from longscope.analysis.power import detectable, detectable_lines

    assert detectable([], None) == []
    assert detectable_lines([]) == []
