"""A store holding a run's header and nothing else is no result: reading it says so, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.run.header import run_header
from longscope.run.scoring import read_run
from longscope.run.store import RunStore, StoreError
from longscope.suites import create_suite
from tests.cli_helper import longscope


@pytest.fixture
def header_only(tmp_path: Path) -> Path:
    suite = create_suite("longctx", {"lengths": [1024]})
    with RunStore(tmp_path / "run") as store:
        store.put_run("abc123def456", "longctx", run_header(suite, "openai/m"))
    return tmp_path / "run"


def test_reading_a_run_that_stored_no_samples_says_so(header_only: Path) -> None:
    with pytest.raises(StoreError) as caught:
        read_run(header_only)
    assert str(caught.value) == (
        f"run abc123def456 in {header_only} stored no samples (it stopped before its first "
        "request): nothing to score or report; run the same command again to send them"
    )


@pytest.mark.parametrize("command", ["report", "score"])
def test_report_and_score_of_it_exit_2_in_one_line(header_only: Path, command: str) -> None:
    done = longscope(command, str(header_only))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: run abc123def456 in ") and "stored no samples" in line
    assert "none of 0 requests" not in done.stdout
