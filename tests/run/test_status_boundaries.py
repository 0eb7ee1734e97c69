"""Statuses, resume and the fit decision at their boundaries, in the default test suite.

- Which statuses are final on resume (ok, length, context_overflow) and which are redone (skipped,
  timeout, error), in the store and through a real run on the embedded model.
- Which statuses are scored: a `length` answer (cut at max_tokens) earns its points.
- A request whose prompt and answer equal the context length fits (`<=`, not `<`); one token more
  does not. Checked on `skip_reason` and on the embedded model with n_ctx exactly at the grid length.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from longscope.models.base import ModelInfo
from longscope.run.prepared import skip_reason
from longscope.run.runner import RunOptions, run
from longscope.run.store import RunStore
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.types import RETRYABLE, SCORABLE, STATUSES, Generation, Sample

from ..factories import make_suite

FINAL = {"ok": True, "length": True, "context_overflow": True}
REDONE = {"skipped": False, "timeout": False, "error": False}


def test_every_status_is_either_final_or_redone() -> None:
    assert set(STATUSES) == set(FINAL) | set(REDONE)
    assert frozenset(REDONE) == RETRYABLE
    assert frozenset({"ok", "length"}) == SCORABLE


@pytest.mark.parametrize("status", STATUSES)
def test_resume_keeps_final_statuses_and_redoes_the_rest(tmp_path: Path, status: str) -> None:
    sample = Sample("s1", "needle", "en", "ctx", "q?", ("a",), 1024)
    with RunStore(tmp_path) as store:
        store.put_run("r", "longctx", {"params": {}})
        store.put_samples("r", [sample])
        store.put_generation("r", "s1", 0, Generation("first", status, error="why"))
        final = FINAL.get(status, False)
        assert (("s1", 0) in store.done_keys("r")) is final
        store.put_generation("r", "s1", 0, Generation("second", "ok"))
        [(_, _, kept)] = store.generations("r")
        assert (kept.text, kept.status) == (("first", status) if final else ("second", "ok"))


def _info(context_length: int | None) -> ModelInfo:
    return ModelInfo("m", context_length, "n_ctx", "completion", "gemma3-270m")


@pytest.mark.parametrize(
    ("length", "context_length", "fits"),
    [(4096, 4096, True), (4097, 4096, False), (4095, 4096, True), (10**6, None, True)],
)
def test_fit_decision_at_exactly_the_context_length(length, context_length, fits) -> None:
    sample = Sample("s", "needle", "en", "", "q", ("a",), length)
    reason = skip_reason(sample, _info(context_length))
    if fits:
        assert reason == ""
    else:
        assert reason == (
            f"insufficient_context: needs {length} tokens (prompt and answer), "
            f"backend holds {context_length} (n_ctx)"
        )


def _fast(output: Path) -> RunOptions:
    """Run options for the model tests: a 16-token answer keeps each generation short."""
    return RunOptions(output=output, quiet=True, max_tokens=16)


def _suite() -> LongCtxSuite:
    return make_suite(LongCtxSuite, lengths=(1024,), depths=(0.5,), types=("needle",))


def _generations(run_dir: Path) -> list[tuple]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    try:
        return db.execute(
            "SELECT sample_id, status, text, prompt_tokens FROM generations"
        ).fetchall()
    finally:
        db.close()


@pytest.mark.model
def test_a_grid_length_equal_to_n_ctx_runs_and_resume_keeps_overflow(tmp_path: Path) -> None:
    from longscope.models.registry import create_backend

    backend = create_backend("llamacpp/gemma3-270m", {"n_ctx": 1024})
    first = run(_suite(), backend, _fast(tmp_path))
    assert first.scores.header["model_info"]["context_length"] == 1024
    # 1024 tokens of prompt and answer in a 1024-token window: sent, not skipped
    assert (first.sent, first.skipped) == (1, 0)
    [(sample_id, status, _, prompt_tokens)] = _generations(tmp_path)
    # A timeout (a machine loaded past the task's 2-minute limit) was still sent, not skipped.
    assert status in ("ok", "length", "timeout")
    if status != "timeout":
        assert 0 < prompt_tokens <= 1024 - 16
    points = first.scores.to_dict()["per_sample"][sample_id]["points"]
    assert 0 <= points <= 5

    # An earlier attempt that overflowed the window is an answer about the model: kept on resume.
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    with db:
        db.execute("UPDATE generations SET status='context_overflow', text=''")
    db.close()
    again = run(_suite(), backend, _fast(tmp_path))
    assert again.sent == 0 and _generations(tmp_path)[0][1] == "context_overflow"
    assert again.scores.to_dict()["total"] == 0.0


@pytest.mark.model
def test_a_grid_length_one_over_n_ctx_is_skipped_with_the_reason(tmp_path: Path) -> None:
    from longscope.models.registry import create_backend

    suite = make_suite(LongCtxSuite, lengths=(1280,), depths=(0.5,), types=("needle",))
    backend = create_backend("llamacpp/gemma3-270m", {"n_ctx": 1024})
    result = run(suite, backend, _fast(tmp_path))
    assert (result.sent, result.skipped) == (0, 1)
    [(_, status, _, _)] = _generations(tmp_path)
    assert status == "skipped"
    assert result.scores.to_dict()["total"] == 0.0
