"""Stored runs written where people already keep results: Inspect logs, Every Eval Ever records,
Hugging Face `.eval_results` YAML, MLflow runs.

Each format is one module and uses that format's own library, imported only when the format is
asked for (a missing one: one line with the install command, exit 2). Runs are read read-only;
every export carries the run's identity, its completeness (a provisional run is marked so, never
exported as final) and a determinism record (`record.ExportRun.determinism`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.export.record import ExportRun, load_runs
from longscope.files import disk_full, is_disk_full
from longscope.plugins import Registry

_BUILTIN = {
    "inspect": "longscope.export.inspect_log:write",
    "eee": "longscope.export.eee:write",
    "hf": "longscope.export.hf:write",
    "mlflow": "longscope.export.mlflow_run:write",
}
FORMATS: Registry[Callable[[ExportRun, Any], Any]] = Registry(
    "export format", "longscope.exports", lambda: _BUILTIN
)
"""Format name -> its `write(run, out)` (returns where it wrote): the built-in ones, the
`longscope.exports` entry-point group, and `FORMATS.register` at run time."""

FINAL_ONLY = frozenset({"hf"})
"""Formats that show every value as final (a model page's results): a provisional run is refused
there unless `--provisional` is given. A plug-in format of that kind refuses `not run.final` itself."""


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
    chosen: str = ""
    """Which run of a directory holding several was exported ("" when it holds one)."""

    def line(self) -> str:
        """Return `run 7ac536fbd9f8 (complete) -> exports/inspect/....eval`."""
        return f"run {self.run_id[:12]} ({self.state}) -> {self.where}"


def export(
    run_dirs: Sequence[str | Path],
    fmt: str,
    out: str | Path | None = None,
    *,
    run_id: str | None = None,
    model_id: str | None = None,
    provisional: bool = False,
) -> list[Exported]:
    """Write each run directory's run in format `fmt` under `out` (default `exports/FORMAT`).

    `run_id`: which run of a directory holding several (a prefix; default: the latest).
    `model_id`: the model's Hub id (`Qwen/Qwen2.5-7B-Instruct`) when the run does not say it.
    `provisional`: export an incomplete run to a format that shows values as final (`hf`).
    MLflow's `out` may be a tracking URI (`http://...`, `sqlite:///...`, `databricks`); a
    folder there becomes a local store (`sqlite:///FOLDER/mlflow.db`, artifacts beside it).
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}: use {', '.join(FORMATS.table())}")
    if not run_dirs:
        raise UsageError("no run directory given: longscope export RUN_DIR... --format FORMAT")
    write = FORMATS.get(fmt)
    target = str(out) if out is not None else str(Path("exports") / fmt)
    runs = load_runs([Path(d) for d in run_dirs], run_id, model_id)
    if fmt in FINAL_ONLY and not provisional:
        for run in runs:  # refused before anything is written
            if not run.final:
                why = run.completeness()["incomplete"] or "nothing scored"
                raise UsageError(
                    f"{run.run_dir}: run {run.run_id[:12]} is {run.state} ({why}); --format "
                    f"{fmt} shows every value as final: finish the run (or merge its shards), "
                    "or pass --provisional to export it marked PROVISIONAL"
                )
    folder = None if fmt == "mlflow" else _folder(Path(target))
    done = []
    for run in runs:
        try:
            where = write(run, target if folder is None else folder)
        except Exception as exc:  # each format's library reports a full disk in its own types
            if is_disk_full(exc):
                local = target.removeprefix("sqlite:///") if "://" in target else target
                raise disk_full(local) from exc
            if not isinstance(exc, OSError):
                raise
            # permissions, a file in the way: one line
            raise UsageError(
                f"cannot write the {fmt} export to {exc.filename or target}: {exc.strerror or exc}"
            ) from None
        chosen = ""
        if run.runs_in_folder > 1 and run_id is None:
            chosen = (
                f"{run.run_dir} holds {run.runs_in_folder} runs: exported the latest, "
                f"{run.run_id[:12]} (choose another with --run-id)"
            )
        incomplete = run.completeness()["incomplete"] if not run.final else ""
        done.append(Exported(run.run_dir, run.run_id, run.state, str(where), incomplete, chosen))
    return done


def _folder(path: Path) -> Path:
    """Return `path` as an output folder (made by the writer), refusing a file in one line."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"-o {path} is a file, not a folder: give a folder to export into")
    return path


__all__ = ["FORMATS", "ExportRun", "Exported", "export"]
