"""`-S data=hub` for GraphWalks: OpenAI's files at the pinned revision, fetched from the Hub's
resolve paths (`$HF_ENDPOINT`), verified by sha256, cached; a changed file is refused.

A real HTTP server on 127.0.0.1 serves parquet files the tests make; the downloader and the loader
are the product's own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.graphwalks import data as gw_data
from longscope.suites.graphwalks.data import REVISION, UpstreamFile
from longscope.suites.graphwalks.schema import LONG, SHORT

from ...file_hub import FileHub as _Hub
from ...file_hub import serving
from .rows import graphwalks_row, write_parquet


@pytest.fixture
def hub() -> Iterator[str]:
    with serving() as url:
        yield url


def test_hub_data_is_the_pinned_files_verified_and_cached(
    hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = {
        "graphwalks_128k_and_shorter.parquet": write_parquet(
            tmp_path / "a.parquet", [graphwalks_row("parents", seed=1), graphwalks_row("bfs")]
        ).read_bytes(),
        "graphwalks_256k_to_1mil.parquet": write_parquet(
            tmp_path / "b.parquet", [graphwalks_row("bfs", seed=5)]
        ).read_bytes(),
    }
    sets = {"graphwalks_128k_and_shorter.parquet": SHORT, "graphwalks_256k_to_1mil.parquet": LONG}
    # The tests' files stand for OpenAI's: pinned by their own sha256, served at the Hub's paths.
    monkeypatch.setattr(
        gw_data,
        "FILES",
        tuple(UpstreamFile(n, sets[n], hashlib.sha256(b).hexdigest()) for n, b in made.items()),
    )
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name, body in made.items():
        _Hub.files[f"/datasets/openai/graphwalks/resolve/{REVISION}/{name}"] = body
    suite = create_suite("graphwalks", {"data": "hub"})
    assert suite.version == f"graphwalks-1/openai/graphwalks@{REVISION}"
    assert [(i, s) for i, s, _ in suite.dataset.rows] == [
        ("parents-0000", SHORT), ("bfs-0000", SHORT), ("bfs-0001", LONG)
    ]  # fmt: skip
    short = create_suite("graphwalks", {"data": "hub", "files": "128k"})
    assert len(short.dataset.rows) == 2
    asked = len(_Hub.seen)
    create_suite("graphwalks", {"data": "hub"}).prepare()
    assert len(_Hub.seen) == asked  # read from the verified cache
    cached = tmp_path / "cache" / "longscope" / "data" / "graphwalks"
    (cached / "graphwalks_256k_to_1mil.parquet").write_bytes(made[next(iter(made))])
    with pytest.raises(UsageError) as caught:
        create_suite("graphwalks", {"data": "hub"}).prepare()
    assert "\n" not in str(caught.value)
    assert "is not the pinned openai/graphwalks's" in str(caught.value)
