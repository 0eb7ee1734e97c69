"""kill -9 during a grouped run keeps every answer received (issue 21, defect 8).

A document's repeats travel as one group; against a server that ignores `n` (llama.cpp's) each
repeat is its own request. The runner used to store a group's answers only once the whole group
was done, so a kill lost every answer of the groups in flight (8 answered seconds before the kill,
in one kill of the smoke grid). The benchmark's smoke size runs the real product against a server
that logs when it wrote each answer; an answer written well before the kill must be in the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_answers_received_before_a_kill_are_stored(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_kill_loss.py"), "--smoke",
         "--early", "0.5"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # The killed runs' folders are the script's scratch, gone when it ends (as in test_benchmarks).
    assert list(tmp_path.iterdir()) == []
    made = json.loads(done.stdout.splitlines()[-1])
    assert made["kills"] >= 3, made  # the kills landed while the runs were sending
    assert made["answered_before_kills"] > 0
    assert made["lost_early"] == 0, made
    # What a kill may lose is what was still on its way: a handful, never a group's worth each.
    assert made["lost_per_kill_max"] <= 8, made
