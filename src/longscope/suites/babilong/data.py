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
download RMT-team/babilong --repo-type dataset --revision REV --local-dir DIR`), both side by
side, or each in a subfolder named as the set (`DIR/babilong-1k-samples`, `DIR/babilong`: the
layout `longscope data babilong` and `-S data=hub` write into the suite's cache). A length reads the
set the authors read there first (`samples_for`), else the other. Only the file of a (task, length)
the run sends is opened; a JSON-lines file is read as far as the run reads it, a JSON array or a
Parquet file whole.

sha256 of the upstream files: not pinned yet (no network where this was written). The Hub
revisions are commits, which fix every file's content (the Hub's LFS pointers carry each file's
sha256); a run records the sha256 of every file it read in its identity (`identity`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.files import parse_json, sha256_of
from longscope.jsonl import iter_jsonl, iter_parquet
from longscope.sources import HubSource, Sources
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
    folder: str
    """The set's subfolder in the suite's cache (and in a local folder holding both sets)."""

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
    folder="babilong",
)
THOUSAND = HubSet(
    repo="RMT-team/babilong-1k-samples",
    revision="c50a37d2a9a07076336701c290118cd980f5c5b3",
    rows_per_split=1000,
    lengths=("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k"),
    all_tasks_at=("0k",),
    other_tasks=5,
    folder="babilong-1k-samples",
)

LICENCE = "BABILong (RMT-team): Apache-2.0; background text PG-19: Apache-2.0; facts bAbI: BSD"
"""The data's licences (booydar/babilong's README and dataset metadata), recorded in every run."""

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


def _in_layout(root: Path, task: str, length: str, parquet_first: bool) -> Path | None:
    """Return the file of `task` at `length` directly under `root` in either set's layout."""
    json_files = [root / "data" / task / f"{length}.json", root / task / f"{length}.json"]
    found = [p for p in json_files if p.is_file()][:1]
    parquet = sorted((root / length).glob(f"{task}-*.parquet"))
    if len(parquet) > 1:
        # One split is one file upstream; several would be a partial or mixed download.
        raise UsageError(
            f"BABILong data {root / length}: {len(parquet)} files for {task}; keep one"
        )
    ordered = [*parquet, *found] if parquet_first else [*found, *parquet]
    return ordered[0] if ordered else None


def set_of(path: Path) -> HubSet:
    """Return the set a data file belongs to: its set's subfolder, else its layout (Parquet: the
    1000-row set; JSON: the 100-row set)."""
    for hub in (THOUSAND, HUNDRED):
        if hub.folder in path.parts:
            return hub
    return THOUSAND if path.suffix == ".parquet" else HUNDRED


def find_file(root: Path, task: str, length: str) -> Path:
    """Return the file holding `task` at `length` under `root`, in either set's layout: the set the
    authors read at `length` first (its subfolder, then its layout), else the other."""
    check_task(task)
    check_length(length)
    if not root.is_dir():
        raise UsageError(
            f"BABILong data {root} is not a folder: give the downloaded dataset's folder"
        )
    wanted = samples_for(length)
    other = HUNDRED if wanted is THOUSAND else THOUSAND
    for place in (root / wanted.folder, root / other.folder, root):
        if place.is_dir():
            found = _in_layout(place, task, length, parquet_first=wanted is THOUSAND)
            if found is not None:
                return found
    raise UsageError(
        f"BABILong data {root}: no {task} at {length} (looked for data/{task}/{length}.json and "
        f"{length}/{task}-*.parquet): download that config or drop it from --lengths"
    )


def count_rows(path: Path) -> int | None:
    """Return how many rows a data file holds when that is cheap to know (a Parquet file's
    metadata, a JSON file up to `COUNT_UP_TO` bytes), else None."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception:  # no pyarrow or an unreadable file: reading it later names the problem
            return None
    if path.stat().st_size > COUNT_UP_TO:
        return None
    try:
        return sum(1 for _ in _json_rows(path))
    except UsageError:
        return None  # named, with its row, when the run reads the file


COUNT_UP_TO = 64 << 20
"""JSON files up to this size are counted to size a cell (`plan`); longer ones (256k and beyond)
are not parsed before the run reads them, and their cell counts the set's rows per split."""


def hub_set_for(task: str, length: str) -> HubSet | None:
    """Return the Hub set `task` at `length` is read from: the one the authors read there when
    it holds the task, else the other one that does (qa6-qa10 at 1k-32k: the 100-row set), else
    None (qa11-qa20 past 0k: no set holds them)."""
    wanted = samples_for(length)
    other = HUNDRED if wanted is THOUSAND else THOUSAND
    number = int(check_task(task)[2:])
    for hub in (wanted, other):
        if length in hub.lengths and number <= hub.tasks_at(length):
            return hub
    return None


def hub_sources(cells: Iterable[tuple[str, str]]) -> Sources:
    """Return the Hub files holding `cells` ((task, length) pairs): each set's files at its pinned
    revision, into its subfolder of the suite's cache (`hub_set_for` says which set)."""
    patterns: dict[str, list[str]] = {THOUSAND.folder: [], HUNDRED.folder: []}
    for task, length in cells:
        hub = hub_set_for(task, length)
        if hub is None:
            continue
        # Either layout: the JSON files the dataset card describes, or the Hub's Parquet export.
        found = [f"{length}/{task}-*.parquet"]
        if hub is HUNDRED:
            found += [f"data/{task}/{length}.json", f"{task}/{length}.json"]
        patterns[hub.folder] += found
    return Sources(
        "babilong",
        hub=tuple(
            HubSource(
                hub.repo,
                hub.revision,
                f"{hub.repo} at {hub.revision[:12]}",
                folder=hub.folder,
                patterns=tuple(dict.fromkeys(patterns[hub.folder])),
            )
            for hub in (THOUSAND, HUNDRED)
            if patterns[hub.folder]
        ),
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
