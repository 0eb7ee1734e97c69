"""What the commands that read stored runs share beyond scoring them: the suite a run ran,
each run's difference from the first (`compare`), and published rows beside them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.run.scoring import ScoreResult
from longscope.summary import Summary


def stored_suite(run_dir: str | Path, run_id: str | None = None) -> str:
    """Return the name of the suite a stored run ran."""
    from longscope.run.store import RunStore

    with RunStore.open_readonly(run_dir) as store:
        return str(store.run(run_id)["suite"])


def attach_differences(
    rows: list[dict[str, Any]], run_dirs: Sequence[Path], results: Sequence[ScoreResult]
) -> None:
    """Give each run's row after the first its difference from the first run (`vs_reference`)."""
    from longscope.analysis.compare import compare_runs

    if len(results) < 2:
        return

    def side(path: Path, result: ScoreResult) -> tuple[Any, ...]:
        return (str(path), result.summary, result.rows, result.clusters or {})

    reference = side(run_dirs[0], results[0])
    # Rows are ranked, not in the order given: each run claims the first unclaimed row of its id.
    claimed = {next(i for i, r in enumerate(rows) if r.get("run_id") == results[0].run_id)}
    for path, result in zip(run_dirs[1:], results[1:], strict=True):
        made = compare_runs(reference, side(path, result))  # type: ignore[arg-type]
        for index, row in enumerate(rows):
            if index not in claimed and row.get("run_id") == result.run_id:
                row["vs_reference"] = made.as_dict()
                claimed.add(index)
                break


def published_rows(spec: str | Path) -> Any:
    """Return published rows (`analysis.published.Published`) from a file, or a suite's own
    shipped table by the suite's name (its `PUBLISHED` file or `published()`)."""
    from longscope.analysis.published import Published, read_published

    path = Path(spec)
    # A folder named like a suite (`ruler/` in the working folder) is not a table file.
    if path.suffix.lower() in (".json", ".csv") or path.is_file():
        return read_published(path)
    from longscope.suites import suite_factory

    factory = suite_factory(str(spec))
    if factory.PUBLISHED is not None:
        table = read_published(factory.PUBLISHED)
    else:
        table = factory.published()
    if not isinstance(table, Published):
        raise UsageError(f"{spec} ships no published rows: give a CSV or JSON file")
    # A suite's own table is that suite's scores, whatever its file says.
    return replace(table, suite=factory.name or str(spec))


def with_published(
    rows: list[dict[str, Any]],
    summaries: Sequence[Summary],
    published: Sequence[str],
    thresholds: Sequence[float],
) -> list[dict[str, Any]]:
    """Return the leaderboard `rows` of the runs with the published rows of `published` beside
    them, ranked (`compare --published`)."""
    from longscope.analysis.published import refuse_other_suites, runs_beside

    tables = [published_rows(spec) for spec in published]
    for spec, table in zip(published, tables, strict=True):
        refuse_other_suites(table, summaries, str(spec))
    runs_beside(rows, summaries, tables)
    # Published curve numbers over the lengths the (first) run measured, as its own are.
    measured = next((sorted(s.by_length) for s in summaries if s.by_length), None)
    for table in tables:
        rows += table.leaderboard_rows(thresholds, measured)
    # The runs take their places among the published rows; a run that is not comparable with
    # them, and rows without a score, come after the ranked ones.
    rows.sort(
        key=lambda r: (
            r["state"] == "no score",
            str(r.get("comparable", "yes")).startswith("no"),
            -(r.get("overall") or 0.0),
        )
    )
    return rows


__all__ = ["attach_differences", "published_rows", "stored_suite", "with_published"]
