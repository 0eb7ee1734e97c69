"""Where BABILong's rows come from: the authors' Hub datasets at a pinned revision, or a local folder.

Two sets, both with a config per length and a split per task (fields `input`, `question`,
`target`; see `schema`):

- `RMT-team/babilong`: 100 rows per task and length, JSON files `data/{task}/{length}.json`
  (dataset card at the pinned revision: `0k` holds qa1-qa20, `1k` and longer qa1-qa10), lengths
  0k ... 512k, 1M, 10M;
- `RMT-team/babilong-1k-samples`: 1000 rows (some splits 999), Parquet files
  `{length}/{task}-*.parquet`, lengths 0k ... 128k (`0k` holds qa1-qa20, longer ones qa1-qa5).

The authors' published runs read the 1000-row set up to 32k and the 100-row set from 64k on
(their scripts' `DATASET_NAME`; the row counts of their result files in `babilong_evals/`).
`samples_for(length)` says which set a length reads by default.

A local folder (`-S data=DIR`) holds either set in its own layout, as downloaded (`hf
download RMT-team/babilong --repo-type dataset --revision REV --local-dir DIR`), or both side by
side. Only the file of a (task, length) the run sends is opened, and it is read row by row.
sha256 of the upstream files: not pinned yet (no network where this was written); the first
download fills `UPSTREAM_SHA256`, and until then a run records the digest of the files it read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import parse_json, sha256_of
from longscope.jsonl import iter_jsonl, iter_parquet
from longscope.suites.babilong.schema import LENGTHS, Row, check_length, check_task, parse_row


@dataclass(frozen=True)
class HubSet:
    """One of the authors' evaluation sets on the Hugging Face hub."""

    repo: str
    revision: str
    """The pinned revision (a commit of the dataset repository)."""
    rows_per_split: int
    lengths: tuple[str, ...]
    all_tasks_at: tuple[str, ...]
    """Lengths whose config holds all 20 tasks (the others hold `other_tasks`)."""
    other_tasks: int
    """How many tasks (qa1 ... qaN) the other lengths hold."""

    def tasks_at(self, length: str) -> int:
        """Return how many tasks (qa1 ... qaN) this set holds at `length`."""
        return 20 if length in self.all_tasks_at else self.other_tasks


HUNDRED = HubSet(
    repo="RMT-team/babilong",
    revision="ee0d588794c7ac098062ee0d247c733d62e94fe2",
    rows_per_split=100,
    lengths=tuple(LENGTHS),
    all_tasks_at=("0k",),
    other_tasks=10,
)
THOUSAND = HubSet(
    repo="RMT-team/babilong-1k-samples",
    revision="c50a37d2a9a07076336701c290118cd980f5c5b3",
    rows_per_split=1000,
    lengths=("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k"),
    all_tasks_at=("0k",),
    other_tasks=5,
)

UPSTREAM_SHA256: dict[tuple[str, str], str] = {}
"""sha256 of each upstream file, by (repo, path at the pinned revision): filled on first download."""

THOUSAND_UP_TO = 32_000
"""The longest length (tokens) the authors' published runs read from the 1000-row set."""


def samples_for(length: str) -> HubSet:
    """Return the set the authors' published runs read at `length` (1000 rows up to 32k, else 100)."""
    return THOUSAND if LENGTHS[check_length(length)] <= THOUSAND_UP_TO else HUNDRED


def upstream_path(hub: HubSet, task: str, length: str) -> str:
    """Return the path of `task` at `length` inside `hub`'s repository (Parquet: a glob)."""
    if hub is THOUSAND:
        return f"{length}/{task}-*.parquet"
    return f"data/{task}/{length}.json"


def find_file(root: Path, task: str, length: str) -> Path:
    """Return the file holding `task` at `length` under `root`, in either set's layout."""
    check_task(task)
    check_length(length)
    if not root.is_dir():
        raise UsageError(
            f"BABILong data {root} is not a folder: give the downloaded dataset's folder"
        )
    for candidate in (root / "data" / task / f"{length}.json", root / task / f"{length}.json"):
        if candidate.is_file():
            return candidate
    parquet = sorted((root / length).glob(f"{task}-*.parquet"))
    if parquet:
        if len(parquet) > 1:
            # One split is one file upstream; several would be a partial or mixed download.
            raise UsageError(
                f"BABILong data {root / length}: {len(parquet)} files for {task}; keep one"
            )
        return parquet[0]
    raise UsageError(
        f"BABILong data {root}: no {task} at {length} (looked for data/{task}/{length}.json and "
        f"{length}/{task}-*.parquet): download that config or drop it from --lengths"
    )


def _json_rows(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as handle:
        start = handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start != b"[":
        yield from iter_jsonl(path, "BABILong data file")
        return
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read BABILong data file {path}: {exc}") from exc
    rows = parse_json(text, str(path))
    yield from enumerate(rows, start=1)


def iter_rows(path: Path, limit: int | None = None) -> Iterator[Row]:
    """Yield the validated rows of one data file in file order, at most `limit` of them."""
    raw_rows = iter_parquet(path) if path.suffix == ".parquet" else _json_rows(path)
    count = 0
    for number, raw in raw_rows:
        if limit is not None and count >= limit:
            return
        yield parse_row(raw, f"{path}: row {number}")
        count += 1
    if count == 0:
        raise UsageError(f"BABILong data file {path} has no rows")


def identity(files: dict[str, Path]) -> str:
    """Return what a run read: one digest over (name, sha256) of each file, by name."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(json.dumps([name, sha256_of(files[name])]).encode())
    return f"babilong-files:{digest.hexdigest()[:16]}"
