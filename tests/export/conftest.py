"""One real run of the embedded model that every export test reads, and a provisional copy."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from longscope.models.registry import create_backend
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite

# Two lengths (an entry per length), one needle each, short answers: about a minute on 2 cores.
PARAMS = {"lengths": [1024, 2048], "depths": [0.5], "types": ["needle"]}


@pytest.fixture(scope="session")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LongCtx run of the embedded Gemma model, complete, stored as `longscope run` stores it."""
    out = tmp_path_factory.mktemp("export-run") / "run"
    backend = create_backend("llamacpp/gemma3-270m")
    result = run(
        create_suite("longctx", PARAMS), backend, RunOptions(output=out, max_tokens=16, quiet=True)
    )
    assert result.scores is not None and result.scores.summary.state == "complete"
    return out


@pytest.fixture(scope="session")
def provisional_run(real_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real run with one answer taken out of its store, as a run interrupted before it: the
    same identity, one request not run, so its scores are provisional."""
    out = tmp_path_factory.mktemp("export-provisional") / "run"
    out.mkdir()
    shutil.copy(real_run / "longscope.sqlite", out / "longscope.sqlite")
    db = sqlite3.connect(out / "longscope.sqlite")
    with db:
        first = db.execute(
            "SELECT sample_id FROM generations ORDER BY sample_id LIMIT 1"
        ).fetchone()
        db.execute("DELETE FROM generations WHERE sample_id = ?", first)
    db.close()
    return out
