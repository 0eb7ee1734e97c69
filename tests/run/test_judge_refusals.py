"""A judged run whose judge cannot be reached is refused before its generations are sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.run.spec import Judging
from tests.cli_helper import longscope
from tests.models.fault_server import FaultServer

HUNDRED = ["run", "hundred", "-S", "metric=judge", "-S", "samples=1", "-q"]


def test_an_empty_judge_url_is_refused_with_the_spec() -> None:
    with pytest.raises(UsageError, match=r"^empty --judge-base-url: give the server's URL"):
        Judging("openai/j", "")
    with pytest.raises(UsageError, match=r"^bad --judge-base-url 'ftp://x'"):
        Judging(None, "ftp://x")


def test_run_with_an_empty_judge_url_sends_nothing(tmp_path: Path) -> None:
    with FaultServer() as server:
        done = longscope(*HUNDRED, "-m", "openai/m", "--base-url", server.url,
                         "-M", "context_length=8192", "--judge-base-url", "",
                         "-o", str(tmp_path / "run"))  # fmt: skip
        assert server.requests == []
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "error: empty --judge-base-url: give the server's URL, e.g. http://127.0.0.1:8000/v1"
    ]
    assert not (tmp_path / "run").exists()


def test_run_with_a_judge_that_has_no_endpoint_sends_nothing(tmp_path: Path) -> None:
    done = longscope(*HUNDRED, "-m", "scripted/x", "-M", "answer=ok", "--judge-model",
                     "openai/j", "-o", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: judge openai/j has no endpoint: give --judge-base-url URL")
    assert not (tmp_path / "run").exists()  # nothing generated, nothing stored
