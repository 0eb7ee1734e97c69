"""`longscope data mrcr` and `-S data=hub`: OpenAI's files at the pinned revision, by sha256.

A real HTTP server on 127.0.0.1 serves parquet files the tests make, at the Hub's resolve paths
(`$HF_ENDPOINT/datasets/openai/mrcr/resolve/REVISION/2needle/2needle_0.parquet`); the downloader
and the suite's loader are the product's own.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscope.download import sources_of
from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.mrcr import data
from longscope.suites.mrcr.data import BEFORE_FIX, REVISION, UpstreamFile

from ...file_hub import FileHub as _Hub
from ...file_hub import serving
from .rows import mrcr_row

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def hub() -> Iterator[str]:
    with serving() as url:
        yield url


def _parquet(tmp_path: Path, name: str, rows: list[dict]) -> bytes:
    path = tmp_path / f"made-{name}"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path.read_bytes()


def test_the_pinned_table_names_six_files_at_one_revision() -> None:
    sources = sources_of("mrcr")
    assert sources.suite == "mrcr"
    assert [f.name for f in sources.files] == [
        f"{n}needle_{k}.parquet" for n in (2, 4, 8) for k in (0, 1)
    ]
    for f in sources.files:
        n = f.name[0]
        assert f.url.endswith(f"/datasets/openai/mrcr/resolve/{REVISION}/{n}needle/{f.name}")
        assert f.sha256 is not None and len(f.sha256) == 64
    assert len({f.sha256 for f in sources.files}) == 6


def test_hub_data_downloads_the_pinned_files_verifies_and_records_the_revision(
    hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = {
        "2needle_0.parquet": _parquet(tmp_path, "a", [mrcr_row(2, target=1)]),
        "2needle_1.parquet": _parquet(tmp_path, "b", [mrcr_row(2, target=2)]),
    }
    pinned = tuple(
        UpstreamFile(f"2needle/{name}", 2, hashlib.sha256(body).hexdigest())
        for name, body in made.items()
    )
    # The tests' files stand for OpenAI's: pinned by their own sha256, served at the Hub's paths.
    monkeypatch.setitem(data.REVISIONS, REVISION, pinned)
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name, body in made.items():
        _Hub.files[f"/datasets/openai/mrcr/resolve/{REVISION}/2needle/{name}"] = body
    suite = create_suite("mrcr", {"data": "hub", "needles": [2]})
    assert suite.version == f"mrcr-2/openai/mrcr@{REVISION}"
    assert [sid for sid, _ in suite.dataset.rows] == ["2n-0000", "2n-0001"]
    cached = tmp_path / "cache" / "longscope" / "data" / "mrcr" / "2needle_0.parquet"
    assert cached.read_bytes() == made["2needle_0.parquet"]
    # The same files given as a path are known as the same revision.
    assert create_suite("mrcr", {"data": str(cached.parent)}).version == suite.version
    # A second load reads the verified cache: nothing is asked of the server again.
    asked = len(_Hub.seen)
    create_suite("mrcr", {"data": "hub", "needles": [2]}).prepare()
    assert len(_Hub.seen) == asked
    # A cached file that changed is refused in one line, never read.
    cached.write_bytes(made["2needle_1.parquet"])
    with pytest.raises(UsageError, match="is not the pinned") as caught:
        create_suite("mrcr", {"data": "hub", "needles": [2]}).prepare()
    assert "\n" not in str(caught.value)


def test_a_revision_without_pinned_checksums_needs_to_be_allowed(
    hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(UsageError) as caught:
        create_suite("mrcr", {"data": "hub", "revision": BEFORE_FIX}).prepare()
    message = str(caught.value)
    assert "has no pinned checksums" in message and "-S allow_unpinned=true" in message
    assert _Hub.seen == []  # refused before anything was downloaded
    _Hub.files[f"/datasets/openai/mrcr/resolve/{BEFORE_FIX}/2needle.parquet"] = _parquet(
        tmp_path, "old", [mrcr_row(2)]
    )
    old = create_suite(
        "mrcr",
        {"data": "hub", "revision": BEFORE_FIX, "needles": [2], "allow_unpinned": True},
    )
    assert old.version == f"mrcr-2/openai/mrcr@{BEFORE_FIX}:unpinned"
    assert old.params()["revision"] == BEFORE_FIX


def test_cli_data_mrcr_refuses_a_file_that_is_not_the_pinned_one(hub: str, tmp_path: Path) -> None:
    _Hub.files["/2needle_0.parquet"] = _parquet(tmp_path, "x", [mrcr_row(2)])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "longscope.cli",
            "data",
            "mrcr",
            str(tmp_path / "out"),
            "--mirror",
            hub,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "checksum mismatch for openai/mrcr's 2needle/2needle_0.parquet" in lines[0]
    assert not (tmp_path / "out" / "2needle_0.parquet").exists()
