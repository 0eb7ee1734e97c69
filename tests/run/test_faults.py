"""A run against a misbehaving OpenAI-compatible server ends, and stores every request's outcome.

The fault server answers each prompt deterministically, so a faulty run's stored answers and scores
can be compared with a clean run's. Every fault kind plays at 30% of requests.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.run.runner import RunOptions, RunResult, run
from longscope.suites import create_suite

from ..models.fault_server import FAULTS, MALFORMED, USAGE_FAULTS, FaultServer

DEPTHS = [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95]
REQUEST_TIMEOUT_S = 0.5


def _suite(depths: list[float] = DEPTHS, lengths: list[int] = [1024]):  # noqa: B006
    return create_suite("longctx", {"lengths": lengths, "depths": depths, "types": ["needle"]})


def _backend(server: FaultServer, **kwargs) -> OpenAIBackend:
    options = {
        "base_url": server.url,
        "context_length": 8192,
        "concurrency": 8,
        "max_retries": 5,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
        "request_timeout_s": REQUEST_TIMEOUT_S,
        **kwargs,
    }
    return OpenAIBackend("m", **options)


def _run(server: FaultServer, out: Path, **kwargs) -> RunResult:
    return run(_suite(), _backend(server, **kwargs), RunOptions(output=out, quiet=True))


def _rows(run_dir: Path) -> dict[str, tuple[str, str, str]]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    rows = db.execute("SELECT sample_id, status, text, error FROM generations").fetchall()
    db.close()
    return {sid: (status, text, error) for sid, status, text, error in rows}


def _scores(result: RunResult) -> dict[str, float]:
    return {row.sample["id"]: row.score.value for row in result.scores.rows if row.score}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    out = tmp_path_factory.mktemp("clean") / "run"
    with FaultServer(faults=("500",), rate=0.0) as server:
        result = _run(server, out)
    rows = _rows(out)
    assert len(rows) == len(DEPTHS) and all(r[0] == "ok" for r in rows.values())
    return rows, _scores(result)


@pytest.mark.parametrize("kind", FAULTS)
def test_each_fault_at_30_percent_ends_scored_or_recorded_with_its_reason(
    kind: str, tmp_path: Path, clean: tuple[dict, dict]
) -> None:
    clean_rows, clean_scores = clean
    with FaultServer(faults=(kind,), rate=0.3, seed=7, hang_s=3.0) as server:
        result = _run(server, tmp_path)
        injected = len(server.injected)
    assert injected > 0, "the seed must inject at least one fault"
    rows = _rows(tmp_path)
    assert set(rows) == set(clean_rows)
    for sample_id, (status, text, error) in rows.items():
        if status == "ok":
            # a usable answer: exactly the clean run's (usage faults change only token counts)
            assert text == clean_rows[sample_id][1]
        else:
            # five retries at 30% rarely all fail; when they do, the reason is kept, not the text
            assert status in ("error", "timeout") and text == "" and error, rows[sample_id]
    assert sum(r[0] == "ok" for r in rows.values()) >= len(DEPTHS) - 1
    scores = _scores(result)
    assert scores == {sid: clean_scores[sid] for sid in scores}
    if kind in USAGE_FAULTS:
        assert all(r[0] == "ok" for r in rows.values())


def test_every_answer_unusable_ends_the_run_with_every_reason_recorded(tmp_path: Path) -> None:
    with FaultServer(faults=MALFORMED, rate=1.0, seed=3) as server:
        result = _run(server, tmp_path, max_retries=1)
    rows = _rows(tmp_path)
    assert len(rows) == len(DEPTHS)
    assert all(status == "error" and text == "" for status, text, _ in rows.values())
    assert all(
        e.startswith("gave up after 2 attempts: unusable answer: ") for *_, e in rows.values()
    )
    assert result.scores.to_dict()["statuses"]["error"] == len(DEPTHS)


def test_all_503_records_every_request_as_an_error(tmp_path: Path) -> None:
    with FaultServer(faults=("503",), rate=1.0) as server:
        _run(server, tmp_path, max_retries=2)
    rows = _rows(tmp_path)
    assert {r[0] for r in rows.values()} == {"error"}
    assert all("HTTP 503: server error 503" in r[2] for r in rows.values())


def test_hung_server_costs_the_request_timeout_not_the_suite_limit(tmp_path: Path) -> None:
    # Every first attempt hangs for 30 s; LongCtx allows 122 s per 1K-token request. Each hang
    # must cost one request timeout (0.5 s), after which the retry is answered at once.
    with FaultServer(faults=("500",), rate=0.0) as server:
        server.script.extend([("sleep", 30.0)] * len(DEPTHS))
        started = time.perf_counter()
        _run(server, tmp_path, concurrency=len(DEPTHS))
        elapsed = time.perf_counter() - started
    rows = _rows(tmp_path)
    assert all(status == "ok" for status, *_ in rows.values())
    # The run (suite, tokenizer, store, scoring) took 1.5 s on a 2-core VM; a hang waited out
    # would take 30 s. The bound sits between, with room for a slow or loaded machine.
    assert REQUEST_TIMEOUT_S <= elapsed < 15.0, elapsed


@pytest.mark.parametrize(
    ("grid", "cells"),
    [
        ({"depths": [0.1, 0.101]}, ("cell #1 (task needle, length 1024", "cell #2 (")),
        ({"lengths": [1024, 1024], "depths": [0.5]}, ("cell #1 (", "cell #2 (")),
    ],
)
def test_colliding_sample_ids_are_refused_before_anything_is_sent_or_stored(
    grid: dict, cells: tuple[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with FaultServer() as server:
        with pytest.raises(UsageError) as caught:
            run(_suite(**grid), _backend(server), RunOptions(output=out, quiet=True))
        posts = [r for r in server.requests if r["path"].endswith("completions")]
    message = str(caught.value)
    assert "two samples share the id" in message and "\n" not in message
    assert all(cell in message for cell in cells), message
    assert posts == [] and not out.exists()
