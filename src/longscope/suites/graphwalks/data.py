"""Where GraphWalks' rows come from: a local file or folder, or OpenAI's Hub files at a pinned revision.

The data changed upstream on 2026-02-27: 24 of the 400 `parents` rows of
`graphwalks_128k_and_shorter.parquet` had the root node in their gold, and the BFS wording was made
exact ("only return the nodes that are both reachable and exactly at that depth"). A run records
which data it scored: `openai/graphwalks@REVISION` when every file is a pinned file (sha256), else
the files' own digest. Files named like OpenAI's that are not the pinned revision (such as the
pre-fix files) are refused unless `-S allow_unpinned=true`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longscope.download import fetch, suite_cache
from longscope.errors import UsageError, describe_error
from longscope.files import sha256_of
from longscope.jsonl import iter_jsonl, iter_parquet
from longscope.sources import FileSource, Sources
from longscope.suites.graphwalks.schema import LONG, SHORT, Row

REPO = "openai/graphwalks"
REVISION = "f338bb265735a56a79f4b0f5def722c9c3268ead"
"""The pinned revision, after the 2026-02-27 fix (`date_added`, the corrected `parents` golds).
Its sha256s are the ones a public harness pins for these URLs (not re-computed here: no network
where this was written; a mismatch is refused with one line)."""


@dataclass(frozen=True)
class UpstreamFile:
    name: str
    set: str
    """The model cards' set of its rows (`<128k`, `>128k`)."""
    sha256: str


FILES: tuple[UpstreamFile, ...] = (
    UpstreamFile(
        "graphwalks_128k_and_shorter.parquet",
        SHORT,
        "54036036c91d8e04bb2a5fcd9e36f8e2a852cacece5dfc2b1ee40e3a6182b516",
    ),
    UpstreamFile(
        "graphwalks_256k_to_1mil.parquet",
        LONG,
        "537879431c72a42e3b500f80efc3047e7facb90390b6063d33679b4320985911",
    ),
)
SET_CHOICES = ("all", "128k", "1M")
"""`-S set=`: both files, the short one (<128k) or the long one (>128k)."""
SUFFIXES = (".parquet", ".jsonl")


@dataclass(frozen=True)
class Dataset:
    rows: tuple[tuple[str, str | None, Row], ...]
    """(sample id, the row's set when its file says it, else None, row) in file order."""
    identity: str
    """What was scored: `openai/graphwalks@REVISION`, or the files' digest (part of the run id)."""
    pinned: bool


def endpoint() -> str:
    """Return the Hub's address: `$HF_ENDPOINT` (as huggingface_hub reads it), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def upstream_files(which: str = "all") -> tuple[UpstreamFile, ...]:
    """Return OpenAI's files of the `-S set=` choice."""
    wanted = {"all": (SHORT, LONG), "128k": (SHORT,), "1M": (LONG,)}[which]
    return tuple(f for f in FILES if f.set in wanted)


def sources(which: str = "all") -> Sources:
    """Return GraphWalks' downloads: the parquet files of the pinned revision, by sha256."""
    base = f"{endpoint()}/datasets/{REPO}/resolve/{REVISION}"
    return Sources(
        "graphwalks",
        tuple(
            FileSource(f.name, f"{base}/{f.name}", f.sha256, f"{REPO}'s {f.name} at {REVISION[:8]}")
            for f in upstream_files(which)
        ),
    )


def data_files(path: Path) -> list[Path]:
    """Return the data files at `path`: the file itself, or a folder's .parquet/.jsonl files."""
    if not path.exists():
        raise UsageError(
            f"GraphWalks data {path} does not exist: give a .parquet/.jsonl file or folder"
        )
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise UsageError(f"{path}: unknown data format {path.suffix!r}: use .parquet or .jsonl")
        return [path]
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not found:
        raise UsageError(f"{path} holds no .parquet or .jsonl file")
    return found


def _raw_rows(path: Path) -> Iterator[tuple[int, Any]]:
    if path.suffix.lower() == ".jsonl":
        yield from iter_jsonl(path, "GraphWalks data file")
        return
    yield from iter_parquet(path)


def read_rows(
    files: Sequence[Path], problem_types: Sequence[str] = ()
) -> tuple[tuple[str, str | None, Row], ...]:
    """Return (sample id, set, row) of every row of `problem_types` (all when empty), in order.

    Ids count rows per problem type across the files (`bfs-0000`); a row's set is its file's when
    the file is one of OpenAI's (by name), else None (decided later from its tokens).
    """
    sets = {f.name: f.set for f in FILES}
    out: list[tuple[str, str | None, Row]] = []
    counts: dict[str, int] = {}
    for path in files:
        for number, raw in _raw_rows(path):
            if not isinstance(raw, dict):
                raise UsageError(
                    f"{path}: row {number}: expected an object with GraphWalks' fields"
                )
            try:
                row = Row.model_validate(raw)
            except ValidationError as exc:
                raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
            if problem_types and row.problem_type not in problem_types:
                continue
            index = counts.get(row.problem_type, 0)
            counts[row.problem_type] = index + 1
            out.append((f"{row.problem_type}-{index:04d}", sets.get(path.name), row))
    if not out:
        which = f" of type {','.join(problem_types)}" if problem_types else ""
        raise UsageError(f"GraphWalks data holds no row{which}: {', '.join(map(str, files))}")
    return tuple(out)


def identify(files: Sequence[Path], allow_unpinned: bool) -> tuple[str, bool]:
    """Return (identity, pinned) of local files; refuse OpenAI-named files that are not pinned."""
    pinned = {f.sha256: f.name for f in FILES}
    digests = [(path, sha256_of(path)) for path in files]
    if all(pinned.get(d) == p.name for p, d in digests):
        return f"{REPO}@{REVISION}", True
    for path, digest in digests:
        if path.name in pinned.values() and digest not in pinned and not allow_unpinned:
            raise UsageError(
                f"{path} is named like {REPO}'s files but is not the pinned revision "
                f"{REVISION[:12]} (sha256 {digest[:16]}...; 24 'parents' golds were fixed "
                "upstream on 2026-02-27): use `longscope data graphwalks` for the pinned files, "
                "or pass -S allow_unpinned=true to score it anyway (recorded as unpinned)"
            )
    combined = hashlib.sha256("".join(d for _, d in digests).encode()).hexdigest()[:16]
    label = files[0].name if len(files) == 1 else f"{len(files)} files"
    return f"file:{label}:{combined}", False


def load_local(path: str | Path, problem_types: Sequence[str], allow_unpinned: bool) -> Dataset:
    """Load `-S data=PATH` (a file, or a folder of them) and say what it is."""
    files = data_files(Path(path))
    identity, pinned = identify(files, allow_unpinned)
    return Dataset(read_rows(files, problem_types), identity, pinned)


def load_hub(which: str, problem_types: Sequence[str]) -> Dataset:
    """Load `-S data=hub`: the pinned files from the cache, downloaded there when missing."""
    folder = suite_cache("graphwalks")
    fetch(sources(which), folder)  # verifies what is cached, downloads what is not
    files = [folder / f.name for f in upstream_files(which)]
    return Dataset(read_rows(files, problem_types), f"{REPO}@{REVISION}", True)


__all__ = [
    "FILES",
    "REPO",
    "REVISION",
    "SET_CHOICES",
    "Dataset",
    "UpstreamFile",
    "data_files",
    "identify",
    "load_hub",
    "load_local",
    "read_rows",
    "sources",
    "upstream_files",
]
