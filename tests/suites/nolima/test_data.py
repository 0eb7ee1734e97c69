"""NoLiMa's data: a local folder in the dataset's layout, pins, and the licence on first use."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.nolima.data import (
    FILES,
    LICENCE_NAME,
    REPO,
    REVISION,
    digest_report,
    licence_text,
    load_local,
    notice_on_first_use,
)

from .rows import book, experiment, plain_experiment, write_dataset


def test_a_local_folder_in_the_datasets_layout_loads(tmp_path: Path) -> None:
    books = {f"rand_book_{n}.txt": book(lines=5 + n) for n in (10, 2, 1)}
    folder = write_dataset(tmp_path / "nolima", [experiment(), plain_experiment()], books)
    data = load_local(folder, allow_unpinned=True)
    assert [e.id for e in data.experiments] == ["0137", "0902"]
    # Books in the order of their number (not the file system's): the index enters the seed.
    assert [(b.name, b.index) for b in data.books] == [
        ("rand_book_1.txt", 0),
        ("rand_book_2.txt", 1),
        ("rand_book_10.txt", 2),
    ]
    assert data.books[2].text == books["rand_book_10.txt"]
    assert data.books[0].sha256 == hashlib.sha256(books["rand_book_1.txt"].encode()).hexdigest()
    # Hand-made files are not the pinned ones: the run records their own digest.
    assert not data.pinned
    assert data.unpinned == (
        "haystack/rand_shuffle/rand_book_1.txt",
        "haystack/rand_shuffle/rand_book_10.txt",
        "haystack/rand_shuffle/rand_book_2.txt",
        "needlesets/needle_set.json",
    )
    assert data.source.startswith("local:sha256:")
    # Only files without any pin are offered for pinning (a differing book is not the pin).
    digest = data.digests["needlesets/needle_set.json"]
    assert digest_report(data).splitlines() == [
        'UpstreamFile("haystack/rand_shuffle/rand_book_10.txt", '
        f'"{data.digests["haystack/rand_shuffle/rand_book_10.txt"]}"),',
        f'UpstreamFile("needlesets/needle_set.json", "{digest}"),',
    ]


def test_a_file_named_like_a_pinned_one_must_match_its_pin(tmp_path: Path) -> None:
    folder = write_dataset(tmp_path, [experiment()], {"rand_book_1.txt": "not the book\n"})
    pattern = r"rand_book_1\.txt is not the pinned amodaresi/NoLiMa@378115b1f136 file"
    with pytest.raises(UsageError, match=pattern) as caught:
        load_local(folder)
    assert "-S allow_unpinned=true" in str(caught.value)
    assert load_local(folder, allow_unpinned=True).unpinned[0].endswith("rand_book_1.txt")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "absent", "does not exist or is not a folder"),
        (lambda root: root, "has no needlesets/needle_set.json"),
        (
            lambda root: write_dataset(root, [experiment()], {}),
            "has no haystack/rand_shuffle/rand_book_*.txt",
        ),
    ],
)
def test_an_incomplete_folder_is_named_in_one_line(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        load_local(make(tmp_path))
    assert "\n" not in str(caught.value)


def test_unknown_needle_set_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="choose one of main, hard, mc, direct, cot, distractor"):
        load_local(tmp_path, needle_set="easy")


def test_the_hard_set_is_read_from_its_own_file(tmp_path: Path) -> None:
    folder = write_dataset(tmp_path, [experiment()], {"rand_book_3.txt": book()})
    (folder / "needlesets" / "needle_set_hard.json").write_text("[]", "utf-8")
    # needle_set_hard.json has a pinned digest: a hand-made one is refused, not scored.
    with pytest.raises(UsageError, match=r"needle_set_hard\.json is not the pinned"):
        load_local(folder, needle_set="hard")


def test_every_file_is_pinned_to_one_revision_of_the_authors_dataset() -> None:
    assert REPO == "amodaresi/NoLiMa"
    assert len(REVISION) == 40
    urls = [f.url() for f in FILES]
    prefix = f"https://huggingface.co/datasets/{REPO}/resolve/{REVISION}/"
    assert all(u.startswith(prefix) for u in urls)
    books = [f for f in FILES if f.path.startswith("haystack/rand_shuffle/")]
    assert [f.path.rsplit("/", 1)[1] for f in books] == [f"rand_book_{n}.txt" for n in range(1, 6)]
    assert all(f.sha256 is None or len(f.sha256) == 64 for f in FILES)


def test_the_licence_is_shown_once_and_says_non_commercial(tmp_path: Path) -> None:
    first = notice_on_first_use(tmp_path / "state")
    assert first is not None
    assert LICENCE_NAME in first
    assert "noncommercial research purposes only" in first
    assert first.endswith(licence_text())
    assert licence_text().startswith("**ADOBE RESEARCH LICENSE**")
    assert notice_on_first_use(tmp_path / "state") is None
