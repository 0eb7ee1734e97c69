"""`-S data=hub` for LongBench v2: data.json at the pinned revision, fetched from the Hub's resolve
path (`$HF_ENDPOINT`), verified by sha256 and cached; a file that is not the pinned one is refused.

A real HTTP server on 127.0.0.1 serves a data.json the test makes; the downloader and the loader
are the product's own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.longbench_v2 import data as v2_data
from longscope.suites.longbench_v2.data import REVISION

from ...file_hub import FileHub as _Hub
from ...file_hub import serving
from .rows import question


@pytest.fixture
def hub() -> Iterator[str]:
    with serving() as url:
        yield url


def test_hub_data_is_the_pinned_file(
    hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = json.dumps([question(0), question(1, length="long")]).encode()
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _Hub.files[f"/datasets/THUDM/LongBench-v2/resolve/{REVISION}/data.json"] = body
    # Not the pinned bytes: refused in one line, nothing loaded.
    with pytest.raises(UsageError) as caught:
        create_suite("longbench-v2", {"data": "hub"}).prepare()
    assert "\n" not in str(caught.value)
    assert "checksum mismatch for THUDM/LongBench-v2's data.json" in str(caught.value)
    # The test's file standing for the pinned one (its own sha256): loaded and named by revision.
    monkeypatch.setattr(v2_data, "SHA256", hashlib.sha256(body).hexdigest())
    suite = create_suite("longbench-v2", {"data": "hub"})
    assert suite.version == f"longbench-v2-1/THUDM/LongBench-v2@{REVISION}"
    assert [r.id for r in suite.dataset.rows] == ["q0000", "q0001"]
