"""Where RULER's inputs come from (its `scripts/data/synthetic/json/` scripts), pinned by sha256.

One table: the file name the suite looks for in the cache, the canonical URL (HTTPS), the pinned
sha256. Where the checksums come from (none could be computed here: no network):
- SQuAD v2 dev and HotpotQA dev distractor: the `download_checksums` Hugging Face `datasets`
  recorded for the same URLs (huggingface/datasets, `datasets/squad_v2/dataset_infos.json` and
  `datasets/hotpot_qa/dataset_infos.json`; 4,370,528 and 46,320,117 bytes). RULER's own script
  fetches HotpotQA over plain HTTP; the host serves the same path over HTTPS.
- english_words.json: RULER's own Git LFS object id (the sha256 of the file), from its repository.
- punkt_tab.zip: nltk_data at one commit (the URL names it, so its bytes cannot change), with
  the sha256 its index records (4,319,076 bytes), as projects that pin the same commit cite it.
A `None` checksum would be a file not pinned: `longscope data` says "not pinned" beside it and a
run records its sha256 as such; RULER's table has none.

A run records which of these files it read, with their sha256 (`input_record`), and refuses a
file in the cache that is not the pinned one: it cannot be scored as RULER's data with exit 0.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from longscope.download import FileSource, Sources
from longscope.errors import UsageError
from longscope.files import sha256_of
from longscope.suites.ruler.tasks import RULER_REVISION

_COMMIT = RULER_REVISION.split("@")[1]
NLTK_DATA_COMMIT = "550b6625bcef1f2abff2ff770a5a0d272c9c6b2a"

ESSAYS = "PaulGrahamEssays.json"
FILES = {
    "essays": ESSAYS,
    "squad": "squad.json",
    "hotpotqa": "hotpotqa.json",
    "words": "english_words.json",
}
"""Suite parameter -> the file name in the cache folder (RULER's own names)."""
PUNKT = "nltk_data"
"""The folder under the cache holding `tokenizers/punkt_tab/english/` (RULER's essay splitter)."""

TABLE = (
    FileSource(
        "squad.json",
        "https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v2.0.json",
        "80a5225e94905956a6446d296ca1093975c4d3b3260f1d6c8f68bc2ab77182d8",
        "SQuAD v2 dev (qa_1)",
    ),
    FileSource(
        "hotpotqa.json",
        "https://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
        "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        "HotpotQA dev distractor (qa_2)",
    ),
    FileSource(
        "english_words.json",
        f"https://media.githubusercontent.com/media/NVIDIA/RULER/{_COMMIT}/scripts/data/"
        "synthetic/json/english_words.json",
        "affcd6d45fdf3cc843d585c99c97ad615094e760e6c4756b654bab6c73bc2eca",
        "RULER's english_words.json (cwe)",
    ),
    FileSource(
        "punkt_tab.zip",
        f"https://raw.githubusercontent.com/nltk/nltk_data/{NLTK_DATA_COMMIT}/packages/"
        "tokenizers/punkt_tab.zip",
        "e57f64187974277726a3417ca6f181ec5403676c717672eef6a748a7b20e0106",
        "nltk's punkt_tab sentence model (RULER's essay splitter)",
        unzip=("punkt_tab/english/", f"{PUNKT}/tokenizers"),
    ),
)


def sources() -> Sources:
    """Return RULER's downloads, and how to build the essays (no single file holds them)."""
    return Sources(
        "ruler",
        TABLE,
        by_hand=(
            f"{ESSAYS}: RULER gathers the Paul Graham essays from about 200 web pages "
            f"(scripts/data/synthetic/json/download_paulgraham_essay.py in NVIDIA/RULER@{_COMMIT[:7]},"
            " with html2text and beautifulsoup4); run it and copy its PaulGrahamEssays.json here",
        ),
    )


PINNED = {source.name: source for source in TABLE}
"""File name in the cache -> its source (URL and pinned sha256)."""


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_of(Path(path))


def digest_of(path: str | Path) -> str:
    """Return the sha256 of a file, read once per version of it (size and mtime) in a process."""
    try:
        status = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _digest(str(path), status.st_size, status.st_mtime_ns)


def pinned_of(param: str) -> FileSource | None:
    """Return the pinned source of a suite parameter's file (`squad`), None if none is pinned."""
    name = FILES.get(param)
    return PINNED.get(name) if name else None


def check_cached(param: str, path: str | Path) -> None:
    """Refuse (one line) a file taken from the data cache that is not the pinned one: a changed,
    truncated or fabricated file must not be scored as RULER's data."""
    source = pinned_of(param)
    if source is None or source.sha256 is None:
        return
    digest = digest_of(path)
    if digest != source.sha256:
        raise UsageError(
            f"{path} is not the pinned {source.what} (sha256 {digest[:16]}..., pinned "
            f"{source.sha256[:16]}...): remove it and run `longscope data ruler` again, or give "
            f"a file of your own with -S {param}=FILE"
        )


def input_record(param: str, path: str | Path) -> dict[str, Any]:
    """Return what a run records of one input file: its name, sha256, and whether it is the
    pinned file (`pinned`: true, false, or null where nothing is pinned, like the essays)."""
    digest = digest_of(path)
    source = pinned_of(param)
    pinned = None if source is None or source.sha256 is None else digest == source.sha256
    return {"file": Path(path).name, "sha256": digest, "pinned": pinned}
