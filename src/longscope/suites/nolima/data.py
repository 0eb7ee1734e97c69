"""Where NoLiMa's data lives, how a local copy is laid out, and the licence printed on first use.

The dataset is `amodaresi/NoLiMa` on the Hugging Face Hub. The authors' `data/download_NoLiMa_data.sh`
(adobe-research/NoLiMa@7532e4eebf095c5540dc256900a63968da58a9d0) fetches, from the `main` branch:

    needlesets/needle_set.json             the main set: one-hop and two-hop questions
    needlesets/needle_set_hard.json        NoLiMa-Hard: the 10 hardest question-needle pairs
    needlesets/needle_set_MC.json          multiple choice
    needlesets/needle_set_ONLYDirect.json  direct (literal) questions only
    needlesets/needle_set_w_CoT.json       chain-of-thought prompts
    needlesets/needle_set_w_Distractor.json  with a distractor sentence (not run by the suite yet)
    haystack/rand_shuffle/rand_book_{1..5}.txt  the five shuffled books (the haystacks)

A local copy (`-S data=DIR`) keeps that layout: `DIR/needlesets/*.json` and
`DIR/haystack/rand_shuffle/rand_book_*.txt`. The books are taken in the order of their number
(upstream: `os.listdir`, whose order the file system decides; the book's index is part of the seed).

Pinning: `REVISION` is the Hub revision a public reproduction pins for these files, with the
sha256 of some of them (`needle_set_hard.json` and the five books). They were not recomputed here
(no network where this was written). Files with `sha256=None` must be filled on the first download
(`digest_report` prints what to paste); until then a run records the files' own digests.

Licence: the needle sets and code are under the Adobe Research License (non-commercial research
only); the books' licences are in the dataset's `haystack/LICENSES.md`. The data is never shipped
with longscope; the licence is printed on first use and recorded in the run.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from longscope.errors import UsageError
from longscope.files import decode_text, write_atomic
from longscope.sources import FileSource, Sources
from longscope.suites.nolima.schema import Experiment, parse_needle_set

REPO = "amodaresi/NoLiMa"
REVISION = "378115b1f136b6ba78f90f78682bc55f70ec3ddd"
"""The Hub revision a public reproduction pins (to be confirmed on the first download)."""
CODE_REVISION = "7532e4eebf095c5540dc256900a63968da58a9d0"
"""The authors' repository (adobe-research/NoLiMa) as read for the scorer, prompts and tables."""

LICENCE_NAME = "Adobe Research License (non-commercial research only)"
LICENCE_FILE = "LICENSE.adobe-research.txt"
BOOKS_DIR = "haystack/rand_shuffle"
NEEDLES_DIR = "needlesets"

NEEDLE_SETS: dict[str, str] = {
    "main": "needle_set.json",
    "hard": "needle_set_hard.json",
    "mc": "needle_set_MC.json",
    "direct": "needle_set_ONLYDirect.json",
    "cot": "needle_set_w_CoT.json",
    "distractor": "needle_set_w_Distractor.json",
}
"""Needle-set names (`-S needle_set=...`) to their files. `main` is what the README's table ran."""


@dataclass(frozen=True)
class UpstreamFile:
    path: str
    """Path in the Hub repository (and under a local `-S data=DIR`)."""
    sha256: str | None
    """None: not pinned yet; fill it from the first download."""

    def url(self, revision: str = REVISION) -> str:
        """Return the file's Hub resolve URL at `revision`."""
        return f"https://huggingface.co/datasets/{REPO}/resolve/{revision}/{self.path}"


# sha256 values as pinned by a public reproduction that downloads these URLs at REVISION (not
# recomputed here). A mismatch must be refused with one line, never silently accepted.
FILES: tuple[UpstreamFile, ...] = (
    UpstreamFile(f"{NEEDLES_DIR}/needle_set.json", None),
    UpstreamFile(
        f"{NEEDLES_DIR}/needle_set_hard.json",
        "8b4f17e3980503c2c2f6a72072d14df4caeec0d34d464d69c9ab73e1f1a8747c",
    ),
    UpstreamFile(f"{NEEDLES_DIR}/needle_set_MC.json", None),
    UpstreamFile(f"{NEEDLES_DIR}/needle_set_ONLYDirect.json", None),
    UpstreamFile(f"{NEEDLES_DIR}/needle_set_w_CoT.json", None),
    UpstreamFile(f"{NEEDLES_DIR}/needle_set_w_Distractor.json", None),
    UpstreamFile(
        f"{BOOKS_DIR}/rand_book_1.txt",
        "1f7bdc697141b888565c851e6c34dbd649aaf580280eae92199561c4f0e93dab",
    ),
    UpstreamFile(
        f"{BOOKS_DIR}/rand_book_2.txt",
        "e77a1c8c52b31b0cb02b4b78af2e4f662ef7baaf0cfca52d84b33c710e353357",
    ),
    UpstreamFile(
        f"{BOOKS_DIR}/rand_book_3.txt",
        "3a45fdf98871e0a0e4924037661646b6ec20ecea490e2195fbd7103582782010",
    ),
    UpstreamFile(
        f"{BOOKS_DIR}/rand_book_4.txt",
        "9cf0ee84b8969c7a6a3b607d241af6b4f4dd4d6ab13ae8464d8cd4787ad5f618",
    ),
    UpstreamFile(
        f"{BOOKS_DIR}/rand_book_5.txt",
        "0424d75836f692d04c07c14dad362828e89ff69c802c7021774a32ec289a62b9",
    ),
    UpstreamFile("haystack/LICENSES.md", None),
)
PINNED: dict[str, str | None] = {f.path: f.sha256 for f in FILES}

_BOOK = re.compile(r"^rand_book_(\d+)\.txt$")


@dataclass(frozen=True)
class Book:
    """One haystack: a shuffled book's text, its index in the seed, and its digest."""

    name: str
    index: int
    """0-based position among the books (added to the seed of every test)."""
    text: str
    sha256: str


@dataclass(frozen=True)
class NoLiMaData:
    """A needle set and the books, read from a local folder in the dataset's layout."""

    needle_set: str
    experiments: tuple[Experiment, ...]
    books: tuple[Book, ...]
    digests: dict[str, str]
    """Relative path -> sha256 of every file read."""
    pinned: bool
    """Every file read has a pinned sha256 and matches it."""
    unpinned: tuple[str, ...]
    """Files read that have no pinned sha256 yet, or (with `allow_unpinned`) differ from it."""
    from_revision: bool = False
    """Downloaded from the Hub at `REVISION` (a commit: what it serves there never changes), every
    pinned file matching its pin and every other one the digest recorded at its first download."""

    @property
    def source(self) -> str:
        """Return what a run records as its data: `REPO@REVISION`, or the files' own digest."""
        if self.pinned or self.from_revision:
            return f"{REPO}@{REVISION}"
        joined = "\n".join(f"{path} {digest}" for path, digest in sorted(self.digests.items()))
        return "local:sha256:" + hashlib.sha256(joined.encode()).hexdigest()


def _read(folder: Path, relative: str, what: str, allow_unpinned: bool) -> tuple[str, str, bool]:
    path = folder / relative
    if not path.is_file():
        raise UsageError(
            f"NoLiMa data folder {folder} has no {relative} ({what}); the folder must keep the "
            f"dataset's layout (needlesets/, {BOOKS_DIR}/)"
        )
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    digest = hashlib.sha256(data).hexdigest()
    pinned = PINNED.get(relative)
    if pinned is not None and digest != pinned and not allow_unpinned:
        raise UsageError(
            f"{path} is not the pinned {REPO}@{REVISION[:12]} file (sha256 {digest[:16]}..., "
            f"expected {pinned[:16]}...): download it again, point -S data at the right folder, "
            "or pass -S allow_unpinned=true to score other files (recorded by their own digest)"
        )
    return decode_text(data, path, what), digest, pinned is not None and digest == pinned


def load_local(folder: Path, needle_set: str = "main", allow_unpinned: bool = False) -> NoLiMaData:
    """Return a needle set and the books from a folder in the dataset's own layout.

    A file named like a pinned one must match its pin unless `allow_unpinned` (hand-made fixtures,
    a newer revision): then the run is recorded by the files' own digests, never as the pin.
    """
    if needle_set not in NEEDLE_SETS:
        raise UsageError(
            f"unknown NoLiMa needle set {needle_set!r}: choose one of {', '.join(NEEDLE_SETS)}"
        )
    if not folder.is_dir():
        raise UsageError(f"NoLiMa data folder {folder} does not exist or is not a folder")
    relative = f"{NEEDLES_DIR}/{NEEDLE_SETS[needle_set]}"
    text, digest, matched = _read(folder, relative, f"the {needle_set} needle set", allow_unpinned)
    digests = {relative: digest}
    unpinned = [] if matched else [relative]
    experiments = parse_needle_set(text, str(folder / relative))
    books_dir = folder / BOOKS_DIR
    numbered = sorted(
        (int(m.group(1)), p.name)
        for p in (books_dir.iterdir() if books_dir.is_dir() else ())
        if (m := _BOOK.match(p.name))
    )
    if not numbered:
        raise UsageError(f"NoLiMa data folder {folder} has no {BOOKS_DIR}/rand_book_*.txt")
    books = []
    for index, (_, name) in enumerate(numbered):
        book_path = f"{BOOKS_DIR}/{name}"
        book_text, book_digest, matched = _read(
            folder, book_path, "a haystack book", allow_unpinned
        )
        digests[book_path] = book_digest
        if not matched:
            unpinned.append(book_path)
        books.append(Book(name, index, book_text, book_digest))
    return NoLiMaData(
        needle_set=needle_set,
        experiments=experiments,
        books=tuple(books),
        digests=digests,
        pinned=not unpinned,
        unpinned=tuple(sorted(unpinned)),
    )


def sources() -> Sources:
    """Return the files `longscope data nolima` downloads: the dataset at `REVISION`."""
    base = f"{endpoint()}/datasets/{REPO}/resolve/{REVISION}"
    return Sources(
        "nolima",
        tuple(
            FileSource(f.path, f"{base}/{f.path}", f.sha256, f"{REPO}'s {f.path} at {REVISION[:8]}")
            for f in FILES
        ),
    )


def endpoint() -> str:
    """Return the Hub's address: `$HF_ENDPOINT` (as huggingface_hub reads it), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


FIRST_DIGESTS = "first-download-sha256.json"
"""In the cache folder: the sha256 of each unpinned file at its first download, checked after."""


def check_first_digests(folder: Path, digests: dict[str, str]) -> None:
    """Record the digests of files that have no pin the first time; refuse a file changed since.

    A file without a pinned sha256 is trusted as its first download from the pinned revision
    gave it; a later copy that differs (edited, replaced) is refused in one line.
    """
    record = folder / FIRST_DIGESTS
    known: dict[str, str] = {}
    if record.is_file():
        try:
            loaded = json.loads(record.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UsageError(
                f"{record} is unreadable ({type(error).__name__}): remove it and the NoLiMa "
                "files beside it, then download again"
            ) from None
        known = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
    for path, digest in sorted(digests.items()):
        if PINNED.get(path) is not None:
            continue
        if path in known and known[path] != digest:
            raise UsageError(
                f"{folder / path} changed since its first download (sha256 {digest[:16]}..., "
                f"recorded {known[path][:16]}...): remove it and run `longscope data nolima`"
            )
        known.setdefault(path, digest)
    write_atomic(record, json.dumps(known, indent=1, sort_keys=True) + "\n")


def load_hub(needle_set: str = "main", allow_unpinned: bool = False) -> NoLiMaData:
    """Load `-S data=hub`: the dataset at `REVISION` from the cache, downloaded when missing.

    Pinned files are checked against their sha256 by the download; the others against the
    digest recorded at their first download (`check_first_digests`).
    """
    from longscope.download import fetch, suite_cache

    folder = suite_cache("nolima")
    fetch(sources(), folder)
    data = load_local(folder, needle_set, allow_unpinned)
    check_first_digests(folder, data.digests)
    mismatched = any(PINNED.get(path) is not None for path in data.unpinned)
    return replace(data, from_revision=not mismatched)


def digest_report(data: NoLiMaData) -> str:
    """Return the lines to paste into `FILES` for files read that have no pinned sha256 yet."""
    return "\n".join(
        f'UpstreamFile("{path}", "{data.digests[path]}"),'
        for path in data.unpinned
        if PINNED.get(path) is None
    )


def licence_text() -> str:
    """Return the Adobe Research License, as the authors' repository ships it."""
    return (importlib.resources.files("longscope.suites.nolima") / LICENCE_FILE).read_text("utf-8")


def licence_notice() -> str:
    """Return what is printed on first use: what the data is under, then the licence itself."""
    return (
        f"NoLiMa ({REPO}): needle sets and code under the {LICENCE_NAME}; the books' licences are "
        f"in the dataset's haystack/LICENSES.md. longscope does not ship this data.\n\n"
        + licence_text()
    )


def notice_on_first_use(state_dir: Path) -> str | None:
    """Return the licence notice the first time it is asked for under `state_dir`, then None."""
    marker = state_dir / "nolima-licence-shown"
    if marker.exists():
        return None
    write_atomic(marker, LICENCE_NAME + "\n")
    return licence_notice()
