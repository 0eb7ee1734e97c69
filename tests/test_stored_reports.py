"""Reports of runs stored by an earlier version stay byte-identical (issue 41: the registry, the
run's assembly and the score path change structure, not results).

tests/fixtures/stored_runs/ holds small runs of four suites stored by the code before issue 41
(with the scripted model: right, wrong and failed answers, repeats, skipped lengths) and what
`report` printed for each then: the terminal table, JSON, Markdown and HTML. Each is reported
again, from a copy, with today's code, and must match byte for byte. A change that alters a
number on purpose re-records them (`tests/fixtures/stored_runs/make_runs.py --reports-only`, the
runs kept as first stored) and says so here:
- re-recorded with main at f5e6782 (before issue 41's changes, after others'): the length AUC's
  standard error (longctx 10.2 -> 12.5, RULER's) from the uncertainty work merged meanwhile;
- re-recorded with main at 165d6c7 (the last main before issue 41 merged): the HTML charts of
  issue 42 (the y axis from -4 to 104, so a line at 100% shows); and the LongBench Pro run stored
  again by 5c4c041 without T4's summaries (`-S task=`): a Summary score's last digits come from
  the embedding model's vectors, which differ between CPU vendors (issue 47), so with them these
  bytes held only on the CPU that recorded them. The test runs in make test's second pass, as if
  on another CPU, to keep it so.

tests/fixtures/stored_runs/legacy/ holds runs in layouts that only older versions wrote, which
issue 41's removal of legacy readers must keep reading (the stored-run migration test):
- `longbench-pro-rouge-parity`: the LongBench Pro run above with `rouge_parity: true` in its stored
  params, as `score --predictions ... --rouge-parity` stored it before `official_parity` (98cf90f);
  `-S rouge_parity` is no option any more, and the run must still report with official parity on.
  Its reports were recorded by main at 427b670, before the removal.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.stored_runs.make_runs import HERE, RUN_DIR, RUNS, report

LEGACY = HERE / "legacy"

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU


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


@pytest.mark.parametrize("name", sorted(p.name for p in LEGACY.iterdir() if p.is_dir()))
def test_a_run_in_an_older_layout_reports_the_same_bytes(name: str, tmp_path: Path) -> None:
    stored = LEGACY / name
    run_dir = tmp_path / name
    shutil.copytree(stored, run_dir, ignore=shutil.ignore_patterns("expected"))
    made = report(run_dir)
    for file, text in made.items():
        expected = (stored / "expected" / file).read_text(encoding="utf-8")
        assert text == expected.replace(RUN_DIR, str(run_dir)), f"{name}/{file} differs"
    if name == "longbench-pro-rouge-parity":  # the earlier name still switches parity on
        assert "official parity: True" in made["report.json"]
