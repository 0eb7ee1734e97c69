"""Stored runs written where people already keep results: Inspect logs, Every Eval Ever records,
Hugging Face `.eval_results` YAML, MLflow runs.

Each format is one module and uses that format's own library, imported only when the format is
asked for (a missing one: one line with the install command, exit 2). Runs are read read-only;
every export carries the run's identity, its completeness (a provisional run is marked so, never
exported as final) and a determinism record (`record.ExportRun.determinism`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from longscope.errors import UsageError
from longscope.export.record import ExportRun, load_runs
from longscope.files import disk_full, is_disk_full

FORMATS = {
    "inspect": "longscope.export.inspect_log",
    "eee": "longscope.export.eee",
    "hf": "longscope.export.hf",
    "mlflow": "longscope.export.mlflow_run",
}
"""Format name -> the module whose `write(run, out)` writes it."""


@dataclass(frozen=True)
class Exported:
    """One run written in one format: where it went, and whether its numbers are final."""

    run_dir: Path
    run_id: str
    state: str
    where: str
    """A file, a folder, or (MLflow) the tracking URI and run id."""
    note: str = ""
    """The incomplete line of a provisional run ("" when complete)."""

    def line(self) -> str:
        """Return `run 7ac536fbd9f8 (complete) -> exports/inspect/....eval`."""
        return f"run {self.run_id[:12]} ({self.state}) -> {self.where}"


def export(
    run_dirs: Sequence[str | Path], fmt: str, out: str | Path | None = None
) -> list[Exported]:
    """Write each run directory's run in format `fmt` under `out` (default `exports/FORMAT`).

    MLflow's `out` may be a tracking URI (`http://...`, `sqlite:///...`); a folder there becomes
    a local store (`sqlite:///FOLDER/mlflow.db`, artifacts beside it).
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}: use {', '.join(FORMATS)}")
    if not run_dirs:
        raise UsageError("no run directory given: longscope export RUN_DIR... --format FORMAT")
    writer = importlib.import_module(FORMATS[fmt])
    target = str(out) if out is not None else str(Path("exports") / fmt)
    done = []
    for run in load_runs([Path(d) for d in run_dirs]):
        try:
            where = writer.write(run, target if fmt == "mlflow" else Path(target))
        except Exception as exc:  # each format's library reports a full disk in its own types
            if is_disk_full(exc):
                local = target.removeprefix("sqlite:///") if "://" in target else target
                raise disk_full(local) from exc
            raise
        done.append(
            Exported(
                run.run_dir,
                run.run_id,
                run.state,
                str(where),
                run.completeness()["incomplete"] if not run.final else "",
            )
        )
    return done


__all__ = ["FORMATS", "ExportRun", "Exported", "export"]
