"""Grouped requests take the one path every request takes: the retry policy and the runner's
deadline cover them (issue 24: the runner used to find `generate_group` through the retry
wrapper's `__getattr__` and call the backend directly, so a group was never retried and never cut
off).

The backend is the product's scripted backend with `grouped=true` (a document's repeats answered
together, as the hf engine or `n` on a server answers them); the suite is the plug-in echo suite.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from longscope.models.retry import RetryPolicy, with_retries
from longscope.models.scripted import Failure, ScriptedBackend, from_pattern
from longscope.run import runner
from longscope.run.runner import RunOptions, run_async
from longscope.run.store import RunStore
from longscope.types import Request
from tests.plugin.echo_suite import EchoSuite

PATTERN = r"The key is (\w+)\."
REPEATS = 3


class QuickEcho(EchoSuite):
    """The echo suite with a task limit of 0.3 s (a hung group is cut off within a second)."""

    def timeout_s(self, sample: object) -> float:
        return 0.3


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> type[EchoSuite]:
    """Register the echo suite for this test only (scoring reads the run's suite by name)."""
    from longscope import suites
    from longscope.suites import register_suite

    monkeypatch.setattr(suites.REGISTRY, "_registered", dict(suites.REGISTRY._registered))
    monkeypatch.setattr(suites.REGISTRY, "_loaded", dict(suites.REGISTRY._loaded))
    register_suite("echo", QuickEcho)
    return QuickEcho


def _suite(factory: type[EchoSuite]) -> EchoSuite:
    return factory.from_params({"lengths": [256, 512], "samples": 2})


def _stored(run_dir: Path, run_id: str) -> list[tuple[str, int, str, str, str]]:
    with RunStore(run_dir, create=False) as store:
        rows = store.generations(run_id)
    return sorted((s, r, g.status, g.text, g.error) for s, r, g in rows)


def test_a_group_that_fails_transiently_is_retried_as_a_group(
    tmp_path: Path, echo: type[EchoSuite]
) -> None:
    """Repeats 0 and 1 of every sample fail on their first attempt: the policy asks them again,
    together (one group of 2 per document), and every stored row is the right answer."""
    asked: set[tuple[str, int]] = set()

    def first_attempt_fails(request: Request, _number: int) -> Failure | None:
        key = (request.sample_id, request.repeat)
        if request.repeat < 2 and key not in asked:
            asked.add(key)
            return Failure("error", "HTTP 503: warming up")
        return None

    inner = ScriptedBackend(
        "grouped",
        answer=from_pattern(PATTERN),
        fault=first_attempt_fails,
        grouped=True,
        retry_policy=RetryPolicy(max_retries=3, backoff_base_s=0.0),
    )
    backend = with_retries(inner)
    result = asyncio.run(
        run_async(_suite(echo), backend, RunOptions(tmp_path, repeats=REPEATS, quiet=True))
    )
    rows = _stored(tmp_path, result.run_id)
    assert len(rows) == 4 * REPEATS and result.sent == 4 * REPEATS
    assert {(status, error) for _, _, status, _, error in rows} == {("ok", "")}
    # every answer is the key its sample hides (the suite's own gold, through its score)
    assert all(text == f"K{sid.split('-')[1]}x{sid.split('-')[2]}" for sid, _, _, text, _ in rows)
    assert result.scores is not None and result.scores.summary.overall == 100.0
    # four documents of 3 repeats went as groups of 3; their 2 failed members again as groups of 2
    assert sorted(inner.groups) == [2, 2, 2, 2, 3, 3, 3, 3]
    assert backend.retries_done == 8


def test_a_group_that_hangs_is_cut_off_by_the_runner_deadline(
    tmp_path: Path, echo: type[EchoSuite], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grouped backend that never answers: the runner's deadline (task limit 0.3 s + grace,
    for each of the group's 3 members) ends every group, and every row is stored as `timeout`."""
    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.1)
    inner = ScriptedBackend("hung", answer=from_pattern(PATTERN), latency_s=3600.0, grouped=True)
    backend = with_retries(inner)
    started = time.perf_counter()
    result = asyncio.run(
        run_async(_suite(echo), backend, RunOptions(tmp_path, repeats=REPEATS, quiet=True))
    )
    took = time.perf_counter() - started
    rows = _stored(tmp_path, result.run_id)
    assert len(rows) == 4 * REPEATS
    assert {status for _, _, status, _, _ in rows} == {"timeout"}
    assert all(error == "no answer within 1s (task limit 0s)" for *_, error in rows), rows[0]
    assert sorted(inner.groups) == [3, 3, 3, 3]
    assert took < 30  # cut off after (0.3 + 0.1) x 3 s, not after the backend's hour
    assert result.scores is not None and result.scores.summary.statuses == {"timeout": 12}


def test_serial_runs_send_groups_of_one(tmp_path: Path, echo: type[EchoSuite]) -> None:
    """`--serial` takes the same path with groups of one, in order."""
    inner = ScriptedBackend("serial", answer=from_pattern(PATTERN), grouped=True)
    result = asyncio.run(
        run_async(
            _suite(echo),
            with_retries(inner),
            RunOptions(tmp_path, repeats=2, quiet=True, serial=True),
        )
    )
    assert inner.groups == [1] * 8
    assert [(r.sample_id, r.repeat) for r in inner.requests] == [
        (f"echo-{length}-{i}", repeat)
        for length in (256, 512)
        for i in range(2)
        for repeat in range(2)
    ]
    assert result.scores is not None and result.scores.summary.overall == 100.0
