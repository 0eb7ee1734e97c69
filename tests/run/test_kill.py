"""kill -9 at seeded random moments of `run`: nothing half-written, no duplicates, exact resume.

The runs go to the fault server (small latency, no faults) in its own process, so a kill lands
anywhere in a run that lasts a fraction of a second: during the store's creation, between batched
commits, while scoring. The runs themselves are forked from this process (no interpreter start per
kill), which is what makes 24 kills take seconds. Each output directory is killed until a run there
finishes on its own, which must store exactly the clean run's rows.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longscope.models.openai_api import OpenAIBackend
from longscope.run.runner import RunOptions, run
from longscope.run.store import RunLock, RunStore
from longscope.suites import create_suite

KILLS = 24
SEED = 20240610
DEPTHS = [round(0.02 + 0.04 * i, 2) for i in range(24)]


@pytest.fixture(scope="module")
def server_url() -> str:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.models.fault_server", "--latency", "0.01"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    yield url
    proc.kill()
    proc.wait()


def _run(url: str, out: Path) -> None:
    suite = create_suite("longctx", {"lengths": [1024], "depths": DEPTHS, "types": ["needle"]})
    backend = OpenAIBackend("m", base_url=url, context_length=8192, concurrency=4)
    run(suite, backend, RunOptions(output=out, quiet=True))


def _child(url: str, out: str) -> None:
    _run(url, Path(out))
    os._exit(0)


def _rows(run_dir: Path) -> list[tuple]:
    with RunStore.open_readonly(run_dir) as store:  # also runs SQLite's quick check
        run_id = store.run()["run_id"]
        return [(sid, rep, g.status, g.text, g.error) for sid, rep, g in store.generations(run_id)]


def _check_after_kill(run_dir: Path, clean: dict[str, tuple]) -> int:
    """Assert the killed run left only whole files; return how many generations it stored."""
    files = {p.name: p for p in run_dir.iterdir()} if run_dir.exists() else {}
    if "longscope.sqlite" not in files:
        return 0
    try:
        rows = _rows(run_dir)
    except Exception as exc:  # a store killed before its first run row is allowed; damage is not
        assert "holds no run yet" in str(exc), exc
        return 0
    assert len(rows) == len({(r[0], r[1]) for r in rows}), "duplicate rows"
    for row in rows:
        assert row == clean[row[0]], (row, clean[row[0]])
    db = sqlite3.connect(f"{(run_dir / 'longscope.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    for name in ("longscope.sqlite", "summary.json"):
        assert name not in files or files[name].stat().st_size > 0, f"{name} left empty"
    if "summary.json" in files:
        text = files["summary.json"].read_text()
        assert text and json.loads(text)["run_id"], "summary.json left empty or half-written"
    # the killed writer's lock is free again
    with RunLock(run_dir):
        pass
    return len(rows)


def test_kill_9_at_random_moments_then_resume_reaches_the_clean_rows(
    server_url: str, tmp_path: Path
) -> None:
    reference = tmp_path / "reference"
    _run(server_url, reference)
    clean = {row[0]: row for row in _rows(reference)}
    assert len(clean) == len(DEPTHS) and {r[2] for r in clean.values()} == {"ok"}
    started = time.perf_counter()
    _run(server_url, tmp_path / "warm")  # the tokenizer is loaded: a run as a child sees it
    duration = time.perf_counter() - started

    rng = random.Random(SEED)
    fork = multiprocessing.get_context("fork")
    kills, landed_mid_run, round_ = 0, 0, 0
    # Kills that land mid-run are what this test is about. Their share depends on the machine
    # (how long a run sends against its start and end): a fast one gets fewer per kill, so it
    # goes on killing, up to 4x as many, until 3 have landed.
    while kills < KILLS or (landed_mid_run < 3 and kills < 4 * KILLS):
        # One output directory is killed again and again until a run finishes on its own.
        out, stored, finished = tmp_path / f"killed{round_}", 0, False
        while not finished:
            child = fork.Process(target=_child, args=(server_url, str(out)))
            child.start()
            child.join(rng.uniform(0.0, duration))
            finished = not child.is_alive()
            if not finished:
                os.kill(child.pid, signal.SIGKILL)
                kills += 1
            child.join()
            now = _check_after_kill(out, clean)
            assert now >= stored, "a kill lost committed rows"
            landed_mid_run += 0 < now < len(DEPTHS) and now > stored
            stored = now
        assert child.exitcode == 0
        assert _rows(out) == _rows(reference)
        round_ += 1
    assert landed_mid_run >= 3, "kills must land between commits, not only at the start or end"
