"""Hub rows when the Hub cannot be reached (issue 39.12): one line at once, not half a minute of
retry lines; the Hub's address is probed once and offline mode (the cache only) is used after."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.hub import hub_unreachable, load_hub_rows

from .conftest import free_port
from .models.fault_server import FaultServer


def _offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    # A port nothing listens on: refused at once, as a machine offline is.
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{free_port()}", HF_HOME=str(tmp_path / "hf"))
    return env


def test_data_hub_offline_is_one_line_at_once(tmp_path: Path) -> None:
    started = time.perf_counter()
    made = subprocess.run(
        [sys.executable, "-m", "longscope.cli", "run", "longbench-pro", "-S", "data=hub",
         "--model", "scripted/x", "-o", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, env=_offline_env(tmp_path),
    )  # fmt: skip
    took = time.perf_counter() - started
    lines = [x for x in made.stderr.splitlines() if x.strip()]
    assert made.returncode == 2 and len(lines) == 1, made.stderr[-2000:]
    assert lines[0].startswith("error: cannot reach the Hub at http://127.0.0.1:")
    assert "Connection refused" in lines[0] and "caskcsg/LongBench-Pro is not in the local cache"
    assert "pass -S data=FILE" in lines[0]
    # No retries: the import of `datasets` is most of it (28 s of retries before).
    assert took < 20 and not (tmp_path / "run").exists()


def test_the_probe_takes_any_http_answer_as_reachable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with FaultServer() as server:  # answers HEAD with 501: an answer all the same
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        assert hub_unreachable() is None
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert "Connection refused" in (hub_unreachable() or "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the user's offline mode: no probe at all
    assert hub_unreachable() is None


def test_offline_mode_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = pytest.importorskip("datasets.config")
    before = config.HF_HUB_OFFLINE
    for key, value in _offline_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(UsageError, match="not in the local cache"):
        load_hub_rows("org/none")
    assert "HF_HUB_OFFLINE" not in os.environ and config.HF_HUB_OFFLINE is before
