"""`longscope data`: downloads from a real HTTP server on 127.0.0.1 serving small fixture files.

The server is the standard library's, with range requests and one injected fault (a connection
closed half way through a body); the downloader under test is the product's own.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from longscope.download import FileSource, Sources, fetch, fetch_file, sources_of
from longscope.errors import UsageError

BODY = b"".join(
    f"line {i}: RULER's input, served by a local test server\n".encode() for i in range(4000)
)
SHA = hashlib.sha256(BODY).hexdigest()


class _Files(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    cut_once: ClassVar[set[str]] = set()
    """Paths whose next response closes the connection half way through the body."""
    ranges: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if self.path == "/drip.bin":  # a mirror that drips 2 bytes every 0.25 s, for ever
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            try:
                for _ in range(1 << 19):
                    self.wfile.write(b"ab")
                    self.wfile.flush()
                    time.sleep(0.25)
            except OSError:  # the client gave up
                pass
            return
        body = self.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404)
            return
        start = 0
        header = self.headers.get("Range")
        if header:
            self.ranges.append(header)
            start = int(header.split("=")[1].split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        part = body[start:]
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        if self.path.lstrip("/") in self.cut_once:
            self.cut_once.discard(self.path.lstrip("/"))
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(part)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Files.files = {"words.json": BODY, "other.json": b'{"not": "the pinned file"}'}
    _Files.cut_once = set()
    _Files.ranges = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _source(url: str, sha: str | None = SHA, name: str = "english_words.json") -> FileSource:
    return FileSource(name, url, sha, "the test words file")


def test_download_verifies_the_pinned_checksum_and_lands_whole(server, tmp_path) -> None:
    done = fetch(Sources("t", (_source(f"{server}/words.json"),)), tmp_path)
    assert [d.state for d in done] == ["downloaded"]
    assert (tmp_path / "english_words.json").read_bytes() == BODY
    assert done[0].sha256 == SHA and done[0].pinned
    assert not list(tmp_path.glob("*.part"))
    # Already there and matching: nothing is fetched again.
    again = fetch_file(_source(f"{server}/gone.json"), tmp_path)
    assert again.state == "cached"


def test_checksum_mismatch_refuses_and_removes_the_file(server, tmp_path) -> None:
    with pytest.raises(UsageError) as exc:
        fetch_file(_source(f"{server}/other.json"), tmp_path)
    message = str(exc.value)
    assert "checksum mismatch" in message and SHA in message and "\n" not in message
    assert not any(tmp_path.iterdir())  # neither the file nor a .part is left


def test_an_interrupted_download_is_kept_and_resumed_with_a_range(server, tmp_path) -> None:
    _Files.cut_once = {"words.json"}
    with pytest.raises(UsageError) as exc:
        fetch_file(_source(f"{server}/words.json"), tmp_path)
    assert "interrupted" in str(exc.value) and "again to resume" in str(exc.value)
    part = tmp_path / "english_words.json.part"
    kept = part.stat().st_size
    assert 0 < kept < len(BODY)
    done = fetch_file(_source(f"{server}/words.json"), tmp_path)
    assert done.state == "resumed" and _Files.ranges == [f"bytes={kept}-"]
    assert (tmp_path / "english_words.json").read_bytes() == BODY and not part.exists()


def test_a_partial_file_from_elsewhere_is_completed(server, tmp_path) -> None:
    (tmp_path / "english_words.json.part").write_bytes(BODY[:1000])
    done = fetch_file(_source(f"{server}/words.json"), tmp_path)
    assert done.state == "resumed" and _Files.ranges == ["bytes=1000-"]
    assert (tmp_path / "english_words.json").read_bytes() == BODY


def test_a_corrupt_partial_file_fails_the_checksum(server, tmp_path) -> None:
    (tmp_path / "english_words.json.part").write_bytes(b"x" * 1000)
    with pytest.raises(UsageError, match="checksum mismatch"):
        fetch_file(_source(f"{server}/words.json"), tmp_path)
    assert not (tmp_path / "english_words.json").exists()


def test_offline_says_what_to_download_and_where(tmp_path) -> None:
    # A port nothing listens on: the connection is refused at once.
    with pytest.raises(UsageError) as exc:
        fetch_file(_source("http://127.0.0.1:9/words.json"), tmp_path)
    message = str(exc.value)
    assert "http://127.0.0.1:9/words.json" in message
    assert str(tmp_path / "english_words.json") in message


def test_offline_lists_every_file_to_fetch_by_hand_in_one_line(tmp_path) -> None:
    sources = Sources(
        "t",
        (_source("http://127.0.0.1:9/a.json", name="a.json"), _source("http://127.0.0.1:9/b.json")),
        by_hand=("essays.json: build it with the suite's script",),
    )
    with pytest.raises(UsageError) as exc:
        fetch(sources, tmp_path)
    message = str(exc.value)
    assert "\n" not in message and str(tmp_path) in message
    for part in ("127.0.0.1:9/a.json as a.json", "b.json as english_words.json", "essays.json"):
        assert part in message


def test_unpinned_file_is_kept_and_reported_unpinned(server, tmp_path) -> None:
    done = fetch_file(_source(f"{server}/other.json", sha=None, name="squad.json"), tmp_path)
    assert done.state == "downloaded" and not done.pinned
    assert done.sha256 == hashlib.sha256(b'{"not": "the pinned file"}').hexdigest()


def test_rulers_table_names_its_inputs() -> None:
    sources = sources_of("ruler")
    names = {f.name for f in sources.files}
    assert {"squad.json", "hotpotqa.json", "english_words.json", "punkt_tab.zip"} <= names
    words = next(f for f in sources.files if f.name == "english_words.json")
    assert words.sha256 == "affcd6d45fdf3cc843d585c99c97ad615094e760e6c4756b654bab6c73bc2eca"
    assert any("PaulGrahamEssays.json" in line for line in sources.by_hand)
    with pytest.raises(UsageError, match="no data to download"):
        sources_of("longctx")


def test_cli_data_ruler_from_a_mirror_refuses_a_mismatch_in_one_line(server, tmp_path) -> None:
    # The mirror serves a file under the pinned name whose content is not RULER's: exit 2.
    _Files.files = {"squad.json": b"{}", "hotpotqa.json": b"[]", "english_words.json": BODY}
    done = subprocess.run(
        [sys.executable, "-m", "longscope.cli", "data", "ruler", str(tmp_path), "--mirror", server],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "checksum mismatch" in lines[0] and "english_words" in lines[0]
    assert (tmp_path / "squad.json").read_bytes() == b"{}"  # unpinned, kept: earlier files stay


def test_ruler_runs_find_the_cached_inputs(tmp_path, monkeypatch) -> None:
    from longscope.suites.ruler.suite import RulerSuite

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "longscope" / "data" / "ruler"
    folder.mkdir(parents=True)
    (folder / "PaulGrahamEssays.json").write_text(json.dumps({"text": "An essay. It is short."}))
    suite = RulerSuite.from_params({"tasks": "niah_single_2,qa_1"})
    assert suite.data["essays"] == str(folder / "PaulGrahamEssays.json")
    assert "niah_single_2" not in suite.skipped()
    assert "longscope data ruler" in suite.skipped()["qa_1"]
    assert str(folder) in suite.skipped()["qa_1"]


def test_hub_dataset_without_the_package_is_one_line(tmp_path, monkeypatch) -> None:
    from longscope.download import HubSource, fetch_hub

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(UsageError, match="pip install huggingface_hub"):
        fetch_hub(HubSource("org/data", "abc123", "a dataset"), Path(tmp_path))


def test_a_dripping_mirror_meets_the_overall_deadline(server, tmp_path) -> None:
    source = FileSource("drip.bin", f"{server}/drip.bin", None, "a dripping file")
    started = time.perf_counter()
    with pytest.raises(UsageError) as stopped:
        fetch_file(source, tmp_path, timeout=1.0)
    took = time.perf_counter() - started
    # Each read comes within the read timeout; the rate it keeps does not: stopped just past the
    # first second, the part kept for a resume.
    assert 1.0 <= took < 5
    message = str(stopped.value)
    assert message.startswith(f"download of a dripping file from {server}/drip.bin was interrupted")
    assert "slower than 16,384 bytes/s on average after the first 1 s" in message
    assert "run the same command again to resume" in message
    assert (tmp_path / "drip.bin.part").exists() and not (tmp_path / "drip.bin").exists()
