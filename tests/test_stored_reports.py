"""Reports of runs stored by an earlier version stay byte-identical (issue 41: the registry, the
run's assembly and the score path change structure, not results).

tests/fixtures/stored_runs/ holds small runs of four suites stored by the code before issue 41
(with the scripted model: right, wrong and failed answers, repeats, skipped lengths) and what
`report` printed for each then: the terminal table, JSON, Markdown and HTML. Each is reported
again, from a copy, with today's code, and must match byte for byte. A change that alters a
number on purpose re-records them (`tests/fixtures/stored_runs/make_runs.py --reports-only`, the
runs kept as first stored) and says so here:
- re-recorded with main at f5e6782 (before issue 41's changes, after others'): the length AUC's
  standard error (longctx 10.2 -> 12.5, RULER's) from the uncertainty work merged meanwhile, and
  LongBench Pro's summary-task cosines in their last digits from issue 47 (embedding numerics made
  the same on every CPU, so these bytes do not depend on the machine: bench_embedding_stability).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.stored_runs.make_runs import HERE, RUN_DIR, RUNS, report


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_run_stored_before_reports_the_same_bytes(name: str, tmp_path: Path) -> None:
    stored = HERE / name
    run_dir = tmp_path / name
    shutil.copytree(stored, run_dir, ignore=shutil.ignore_patterns("expected"))
    made = report(run_dir)
    for file, text in made.items():
        expected = (stored / "expected" / file).read_text(encoding="utf-8")
        assert text == expected.replace(RUN_DIR, str(run_dir)), f"{name}/{file} differs"
    # the recorded reports are of scored runs, not empty tables
    assert '"overall"' in made["report.json"] or '"headline"' in made["report.json"]
