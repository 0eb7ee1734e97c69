"""`-S data=hub`: NoLiMa's files from a real HTTP server on 127.0.0.1 standing in for the Hub."""

from __future__ import annotations

import functools
import hashlib
import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.nolima import data
from longscope.suites.nolima.data import FILES, REPO, REVISION, UpstreamFile, load_hub
from tests.serving import serving_thread

from .rows import experiment, prose, write_dataset


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A built dataset served at the Hub's resolve path of the pinned revision; the cache in
    tmp_path. Yields the served folder."""
    served = tmp_path / "srv" / "datasets" / REPO / "resolve" / REVISION
    write_dataset(
        served,
        [experiment()],
        {f"rand_book_{i}.txt": prose(200, offset=i) for i in range(1, 6)},
    )
    for f in FILES:  # every file the download asks for exists (invented text)
        target = served / f.path
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("[]" if f.path.endswith(".json") else "invented\n", "utf-8")
    handler = functools.partial(_Quiet, directory=str(tmp_path / "srv"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = serving_thread(httpd)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield served
    httpd.shutdown()
    httpd.server_close()


def _cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "longscope" / "data" / "nolima"


def test_a_download_that_is_not_the_pinned_file_is_refused(hub: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"checksum mismatch for amodaresi/NoLiMa's .*removed"):
        load_hub()
    # The unpinned main set came first and landed in its own folder, as the dataset lays it out;
    # the mismatching pinned file is not kept.
    assert (_cache(tmp_path) / "needlesets" / "needle_set.json").is_file()
    assert not (_cache(tmp_path) / "needlesets" / "needle_set_hard.json").exists()


def test_pinned_files_match_and_unpinned_ones_keep_their_first_digest(
    hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pin the served books and hard set as this revision's, as the real table pins the real ones.
    pins = {
        f.path: hashlib.sha256((hub / f.path).read_bytes()).hexdigest() if f.sha256 else None
        for f in FILES
    }
    monkeypatch.setattr(data, "FILES", tuple(UpstreamFile(p, s) for p, s in pins.items()))
    monkeypatch.setattr(data, "PINNED", pins)
    loaded = load_hub()
    assert loaded.source == f"{REPO}@{REVISION}" and len(loaded.books) == 5
    assert [e.id for e in loaded.experiments] == ["0137"]
    # The main set had no pin: its first download's digest is recorded, and a changed copy is
    # refused from then on.
    main = _cache(tmp_path) / "needlesets" / "needle_set.json"
    main.write_text(main.read_text("utf-8").replace("Orla", "Ola"), "utf-8")
    with pytest.raises(UsageError, match="changed since its first download"):
        load_hub()
