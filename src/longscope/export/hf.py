"""Hugging Face `.eval_results/*.yaml`: the evaluation results a model page shows, built with
`huggingface_hub`'s own `EvalResultEntry` and written by its `eval_result_entries_to_yaml`.

The Hub's format (hub-docs `docs/hub/eval-results.md`) is a YAML list of entries, each
`dataset: {id, task_id, revision}`, `value`, and optional `date`, `source` and `notes`. One entry
per suite view and length, plus the overall score; `task_id` names the length (`4096`) or
`overall`. `revision` is the dataset's revision where the suite reads a published data set, else
a checksum of the samples the run asked (a generated suite's data). A run has no public URL, so
`source` is left out and `notes` carry the source run id, the completeness counts and the
determinism record in one line.

The Hub shows every entry as a final result: a provisional run (failed or unanswered requests, a
shard) is refused unless asked for (`export --provisional`), and then its notes say PROVISIONAL
first.

`dataset.id` must be a Hub dataset tagged Benchmark for the Hub to link a leaderboard; longscope's
suites have none registered, so it is `longscope/SUITE` and the user points it at the benchmark
(e.g. `caskcsg/LongBench-Pro`) before opening a pull request on the model repo.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from longscope.export.record import ExportRun, metric_points
from longscope.files import write_atomic

FOLDER = ".eval_results"
# The Hub shows every value as final: `export` refuses a provisional run unless asked
# (export.FINAL_ONLY names this format).


def entries(run: ExportRun) -> list[Any]:
    """Return the `.eval_results` entries of `run` (`huggingface_hub.EvalResultEntry`): overall
    and each length, per view."""
    from huggingface_hub import EvalResultEntry

    dataset = f"longscope/{run.suite}"
    revision = dataset_revision(run)
    note = run.describe()
    out = []
    for point in metric_points(run.summary, breakdowns=False):
        task = point.key if point.kind == "length" else "overall"
        out.append(
            EvalResultEntry(
                dataset_id=dataset,
                task_id=f"{point.view}-{task}" if point.view else task,
                value=round(point.value, 4),
                dataset_revision=revision,
                date=run.created_iso,
                notes=note,
            )
        )
    return out


def dataset_revision(run: ExportRun) -> str:
    """Return the revision of the data the run read: the suite's stated data revision (the part
    of its version after `/`, `REPO@REVISION` read as REVISION), else `sha256:` of the samples
    asked (ids, context hashes, questions, gold) for a suite that generates its data."""
    version = str(run.header.get("suite_version") or "")
    _, slash, data = version.partition("/")
    if slash and data:
        return data.rpartition("@")[2] or data
    samples = {
        row.sample["id"]: [
            row.sample["id"],
            run.context_hashes.get(row.sample["id"], ""),
            str(row.sample.get("question") or ""),
            [str(g) for g in row.sample.get("gold") or []],
        ]
        for row in run.scores.rows
    }
    text = json.dumps([samples[k] for k in sorted(samples)], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def write(run: ExportRun, out: Path) -> Path:
    """Write `run`'s entries to `out/MODEL/.eval_results/SUITE-RUNID.yaml`; return the path."""
    from huggingface_hub import eval_result_entries_to_yaml

    # The served model's name, one safe path part: never `..`, never a folder above `out`.
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", run.served_id.rsplit("/", 1)[-1]).strip("_.")
    path = out / (name or "model") / FOLDER / f"{run.suite}-{run.run_id[:12]}.yaml"
    data = eval_result_entries_to_yaml(entries(run))
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))
    return path
