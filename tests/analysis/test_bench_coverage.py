"""The coverage simulation's smoke size runs and prints a coverage for every interval."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_coverage_benchmark_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_coverage.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    coverage = {(r[1].strip(), r[2].strip()): float(r[4].strip().rstrip("%")) for r in rows}
    assert len(coverage) == 13  # with the small-cells scenario (stratified and before)
    # Seeded: the smoke size gives these every time; the clustered interval covers more than
    # the plain one where questions share documents.
    clustered = coverage[("clustered: 30 documents x 5 questions, rho 0.3", "clustered")]
    plain = coverage[
        ("clustered: 30 documents x 5 questions, rho 0.3", "plain (ignores documents)")
    ]
    assert clustered > plain
    assert all(70.0 <= value <= 100.0 for value in coverage.values())


def test_uncertainty_cost_benchmark_smoke() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_uncertainty_cost.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1560 requests" in done.stdout and "0 unmatched" in done.stdout
