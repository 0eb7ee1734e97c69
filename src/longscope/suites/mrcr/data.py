"""Where MRCR's rows come from: a local file or folder, or OpenAI's Hub files at a pinned revision.

The dataset changed upstream on 2025-12-05 (about 10% of rows had too many needles, about 5% a
wrong gold; those rows were replaced and the files moved from `2needle.parquet` to
`2needle/2needle_0.parquet` and `_1`). A run records which data it scored: `openai/mrcr@REVISION`
when every file is a pinned file of that revision (sha256), else the files' own digest. Files named
like OpenAI's that are not the pinned revision are refused unless `-S allow_unpinned=true`.

`longscope data mrcr` and `-S data=hub` download the pinned files over HTTPS from the Hub's
resolve URLs (`$HF_ENDPOINT`, as huggingface_hub reads it, else huggingface.co) into the suite's
cache, resumable and verified by sha256 (`longscope.download`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longscope.download import FileSource, Sources, fetch, suite_cache
from longscope.errors import UsageError, describe_error
from longscope.files import sha256_of
from longscope.jsonl import iter_jsonl, iter_parquet
from longscope.suites.mrcr.schema import NEEDLES, Row

REPO = "openai/mrcr"
REVISION = "f4c69fae7cf81f7ca26b9fee34b392a50f6b8a1d"
"""The pinned revision: after the 2025-12-05 fix (two files per needle count, `date_added`)."""
BEFORE_FIX = "204b0d4e8d9ca5c0a90bf942fdb2a5969094adc0"
"""The revision as first published (2025-04, `{n}needle.parquet`; HELM pins it). No checksums are
pinned for it here: scoring it needs `-S allow_unpinned=true`."""


@dataclass(frozen=True)
class UpstreamFile:
    path: str
    """Path in the Hub repository."""
    needles: int
    sha256: str | None

    @property
    def name(self) -> str:
        """The file's name in the cache folder (flat: `2needle_0.parquet`)."""
        return self.path.rsplit("/", 1)[-1]


REVISIONS: dict[str, tuple[UpstreamFile, ...]] = {
    # sha256 of each file at REVISION, as pinned by a public harness that downloads these URLs
    # (not re-computed here: no network where this was written; a mismatch is refused, one line).
    REVISION: (
        UpstreamFile(
            "2needle/2needle_0.parquet",
            2,
            "1c297b254bf64a31856b74918cd7db889a214503e0b67daa834e84f20df6aa93",
        ),
        UpstreamFile(
            "2needle/2needle_1.parquet",
            2,
            "a5a1dc9ccc945623253d04d33c03d89aee2d676c88955ce368da2ab16a0ce94d",
        ),
        UpstreamFile(
            "4needle/4needle_0.parquet",
            4,
            "4d4fa3d11ce064749de3cd039eef1a621e30a81c2c9b3e64f1df37f8afeaf312",
        ),
        UpstreamFile(
            "4needle/4needle_1.parquet",
            4,
            "8dfdb94a208cf3eee73c4e7ac6ee8a5ccb7236c6934c13c6c5f67c0a9928cdf3",
        ),
        UpstreamFile(
            "8needle/8needle_0.parquet",
            8,
            "65df601a2e0ae4a3cfb56920a6ef99f26c0de37c6b1018695e8aed684e6a94c1",
        ),
        UpstreamFile(
            "8needle/8needle_1.parquet",
            8,
            "c80b19573bff1d38e1c157d6a0bdf9cfd1a8ab6372296174c9a7015e164189e3",
        ),
    ),
    BEFORE_FIX: tuple(UpstreamFile(f"{n}needle.parquet", n, None) for n in NEEDLES),
}
UPSTREAM_NAMES = {f.name for files in REVISIONS.values() for f in files}
SUFFIXES = (".parquet", ".jsonl")


@dataclass(frozen=True)
class Dataset:
    rows: tuple[tuple[str, Row], ...]
    """(sample id, row) in file order."""
    identity: str
    """What was scored: `openai/mrcr@REVISION`, or the files' digest (part of the run identity)."""
    pinned: bool
    """Every file is a pinned file of the named revision (its sha256 checked)."""


def endpoint() -> str:
    """Return the Hub's address: `$HF_ENDPOINT` (as huggingface_hub reads it), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def upstream_files(revision: str, needles: Sequence[int] = ()) -> tuple[UpstreamFile, ...]:
    """Return the Hub files of `revision` holding `needles` (all when empty)."""
    files = REVISIONS.get(revision) or tuple(
        UpstreamFile(f"{n}needle/{n}needle_{k}.parquet", n, None) for n in NEEDLES for k in (0, 1)
    )
    return tuple(f for f in files if not needles or f.needles in needles)


def sources(revision: str = REVISION, needles: Sequence[int] = ()) -> Sources:
    """Return MRCR's downloads: the parquet files of `revision` from the Hub, pinned by sha256."""
    base = f"{endpoint()}/datasets/{REPO}/resolve/{revision}"
    return Sources(
        "mrcr",
        tuple(
            FileSource(f.name, f"{base}/{f.path}", f.sha256, f"{REPO}'s {f.path} at {revision[:8]}")
            for f in upstream_files(revision, needles)
        ),
    )


def _raw_rows(path: Path) -> Iterator[tuple[int, Any]]:
    if path.suffix.lower() == ".jsonl":
        yield from iter_jsonl(path, "MRCR data file")
        return
    yield from iter_parquet(path)


def data_files(path: Path) -> list[Path]:
    """Return the data files at `path`: the file itself, or a folder's .parquet/.jsonl files."""
    if not path.exists():
        raise UsageError(f"MRCR data {path} does not exist: give a .parquet/.jsonl file or folder")
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise UsageError(f"{path}: unknown data format {path.suffix!r}: use .parquet or .jsonl")
        return [path]
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not found:
        raise UsageError(f"{path} holds no .parquet or .jsonl file")
    return found


def read_rows(files: Sequence[Path], needles: Sequence[int] = ()) -> tuple[tuple[str, Row], ...]:
    """Return (sample id, row) of every row with `needles` (all when empty), in file order.

    Ids count rows per needle count across the files (`2n-0000`), as the Hub's files are ordered.
    """
    out: list[tuple[str, Row]] = []
    counts: dict[int, int] = {}
    for path in files:
        for number, raw in _raw_rows(path):
            if not isinstance(raw, dict):
                raise UsageError(f"{path}: row {number}: expected an object with MRCR's fields")
            try:
                row = Row.model_validate(raw)
            except ValidationError as exc:
                raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
            if needles and row.n_needles not in needles:
                continue
            index = counts.get(row.n_needles, 0)
            counts[row.n_needles] = index + 1
            out.append((f"{row.n_needles}n-{index:04d}", row))
    if not out:
        which = f" with {','.join(map(str, needles))} needles" if needles else ""
        raise UsageError(f"MRCR data holds no row{which}: {', '.join(map(str, files))}")
    return tuple(out)


def identify(files: Sequence[Path], revision: str, allow_unpinned: bool) -> tuple[str, bool]:
    """Return (identity, pinned) of local files; refuse OpenAI-named files that are not `revision`.

    Every file a pinned file of `revision` -> `openai/mrcr@REVISION`. A file named like one of
    OpenAI's (`2needle_0.parquet`, `2needle.parquet`) that is not -> refused unless
    `allow_unpinned`. Any other file is the user's own data, known by its digest.
    """
    pinned = {f.sha256: f for f in REVISIONS.get(revision, ()) if f.sha256}
    digests = [(path, sha256_of(path)) for path in files]
    if pinned and all(d in pinned and pinned[d].name == p.name for p, d in digests):
        return f"{REPO}@{revision}", True
    for path, digest in digests:
        if path.name in UPSTREAM_NAMES and digest not in pinned and not allow_unpinned:
            raise UsageError(
                f"{path} is named like {REPO}'s files but is not the pinned revision "
                f"{revision[:12]} (sha256 {digest[:16]}...; the data changed upstream on "
                "2025-12-05): use `longscope data mrcr` for the pinned files, or pass "
                "-S allow_unpinned=true to score it anyway (recorded as unpinned)"
            )
    combined = hashlib.sha256("".join(d for _, d in digests).encode()).hexdigest()[:16]
    label = files[0].name if len(files) == 1 else f"{len(files)} files"
    return f"file:{label}:{combined}", False


def load_local(
    path: str | Path, revision: str, needles: Sequence[int], allow_unpinned: bool
) -> Dataset:
    """Load `-S data=PATH` (a file, or a folder of them) and say what it is."""
    files = data_files(Path(path))
    identity, pinned = identify(files, revision, allow_unpinned)
    return Dataset(read_rows(files, needles), identity, pinned)


def load_hub(revision: str, needles: Sequence[int], allow_unpinned: bool) -> Dataset:
    """Load `-S data=hub`: the files of `revision` from the cache, downloaded there when missing."""
    wanted = upstream_files(revision, needles)
    if any(f.sha256 is None for f in wanted) and not allow_unpinned:
        raise UsageError(
            f"revision {revision[:12]} of {REPO} has no pinned checksums here (the pinned one is "
            f"{REVISION[:12]}, after the 2025-12-05 fix): pass -S allow_unpinned=true to score "
            "it anyway (recorded as unpinned)"
        )
    folder = suite_cache("mrcr")
    fetch(sources(revision, needles), folder)  # verifies what is cached, downloads what is not
    files = [folder / f.name for f in wanted]
    pinned = all(f.sha256 is not None for f in wanted)
    identity = f"{REPO}@{revision}" + ("" if pinned else ":unpinned")
    return Dataset(read_rows(files, needles), identity, pinned)


__all__ = [
    "BEFORE_FIX",
    "REPO",
    "REVISION",
    "REVISIONS",
    "Dataset",
    "UpstreamFile",
    "data_files",
    "endpoint",
    "identify",
    "load_hub",
    "load_local",
    "read_rows",
    "sources",
    "upstream_files",
]
