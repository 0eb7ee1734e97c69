"""Where RULER's inputs come from (its `scripts/data/synthetic/json/` scripts), pinned by sha256.

One table: the file name the suite looks for in the cache, the canonical URL, the pinned sha256.
A `None` checksum is not pinned: it could not be looked up where this was written (no network);
the first download prints its sha256, to be pinned here. english_words.json's is RULER's own Git
LFS object id (the sha256 of the file), read from RULER's repository.
"""

from __future__ import annotations

from longscope.download import FileSource, Sources
from longscope.suites.ruler.tasks import RULER_REVISION

_COMMIT = RULER_REVISION.split("@")[1]

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
        None,
        "SQuAD v2 dev (qa_1)",
    ),
    FileSource(
        "hotpotqa.json",
        "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json",
        None,
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
        "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/tokenizers/"
        "punkt_tab.zip",
        None,
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
