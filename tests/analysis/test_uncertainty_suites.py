"""Every score of every suite's report carries a standard error, and effective length an interval."""

from __future__ import annotations

from pathlib import Path

from longscope.run.scoring import read_run

from .test_every_suite import runs  # noqa: F401  (the module fixture: one stored run per suite)


def test_every_shown_score_has_a_standard_error(runs: dict[str, Path]) -> None:  # noqa: F811
    for name, run_dir in runs.items():
        summary = read_run(run_dir).result
        record = summary.uncertainty
        assert record["unmatched"] == 0, name
        for view in summary.views:
            error = view.overall_error
            assert error is not None and (error.se is not None or error.clusters < 2), name
            assert set(view.length_errors) == set(view.by_length), name
            for breakdown in view.breakdowns:
                for group, cell in breakdown.cells.items():
                    if cell.score is None:
                        continue
                    # One cluster has no spread to measure: the SE is left empty, never 0.
                    assert cell.clusters is not None and cell.clusters >= 1, (name, group)
                    if cell.clusters >= 2:
                        assert cell.se is not None and cell.se_plain is not None, (name, group)
                    else:
                        assert cell.se is None, (name, group)
