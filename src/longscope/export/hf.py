"""Hugging Face `.eval_results/*.yaml`: the evaluation results a model page shows.

The Hub's format (hub-docs `docs/hub/eval-results.md` and `eval_results.yaml`) is a YAML list of
entries, each `dataset: {id, task_id, revision}`, `value`, and optional `date` (an ISO-8601
string), `source: {url, name, user, org}` and `notes`. One entry per suite view and length, plus
the overall score; `task_id` names the length (`4096`) or `overall`. A run has no public URL, so
`source` is left out and `notes` carry the source run id, the completeness counts (a provisional
run says PROVISIONAL first) and the determinism record in one line.

`dataset.id` must be a Hub dataset tagged Benchmark for the Hub to link a leaderboard; longscope's
suites have none registered, so it is `longscope/SUITE` and the user points it at the benchmark
(e.g. `caskcsg/LongBench-Pro`) before opening a pull request on the model repo.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from longscope.export.record import ExportRun, metric_points
from longscope.files import write_atomic

FOLDER = ".eval_results"


def entries(run: ExportRun) -> list[dict[str, Any]]:
    """Return the `.eval_results` entries of `run`: overall and each length, per view."""
    dataset = f"longscope/{run.suite}"
    revision = str(run.header.get("suite_version") or "")
    note = run.describe()
    out = []
    for point in metric_points(run.summary, breakdowns=False):
        task = point.key if point.kind == "length" else "overall"
        entry: dict[str, Any] = {
            "dataset": {
                "id": dataset,
                "task_id": f"{point.view}-{task}" if point.view else task,
                **({"revision": revision} if revision else {}),
            },
            "value": round(point.value, 4),
            "date": run.created_iso,
            "notes": note,
        }
        out.append(entry)
    return out


def write(run: ExportRun, out: Path) -> Path:
    """Write `run`'s entries to `out/MODEL/.eval_results/SUITE-RUNID.yaml`; return the path."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", run.model.split("/", 1)[-1]).strip("_") or "model"
    path = out / model / FOLDER / f"{run.suite}-{run.run_id[:12]}.yaml"
    text = yaml.safe_dump(entries(run), sort_keys=False, allow_unicode=True, width=100)
    write_atomic(path, text)
    return path
