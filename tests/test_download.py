"""`longscope data`: downloads from a real HTTP server on 127.0.0.1 serving small fixture files.

The server is the standard library's, with range requests and one injected fault (a connection
closed half way through a body); the downloader under test is the product's own.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from longscope.download import FileSource, Sources, fetch, fetch_file, sources_of
from longscope.errors import UsageError
from tests.serving import serving_thread

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
    thread = serving_thread(httpd)
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


def test_a_part_the_server_no_longer_serves_is_removed(server, tmp_path) -> None:
    (tmp_path / "english_words.json.part").write_bytes(BODY[:1000])
    with pytest.raises(UsageError, match="answered HTTP 404"):
        fetch_file(_source(f"{server}/gone.json"), tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_download_that_is_not_a_zip_is_removed(server, tmp_path) -> None:
    source = FileSource(
        "punkt_tab.zip", f"{server}/other.json", None, "a model", unzip=("x/", "nltk_data")
    )
    with pytest.raises(UsageError, match="is not a zip archive: it was removed"):
        fetch_file(source, tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_planted_link_as_the_partial_file_is_not_written_through(server, tmp_path) -> None:
    target = tmp_path / "kept.txt"
    target.write_text("the user's file")
    (tmp_path / "english_words.json.part").symlink_to(target)
    with pytest.raises(UsageError, match=r"english_words\.json\.part is a symbolic link"):
        fetch_file(_source(f"{server}/words.json"), tmp_path)
    assert target.read_text() == "the user's file"


def test_rulers_table_pins_every_file_over_https() -> None:
    from longscope.suites.ruler.sources import NLTK_DATA_COMMIT, TABLE

    pins = {f.name: f.sha256 for f in TABLE}
    assert pins == {
        # huggingface/datasets' recorded download checksums for the same URLs
        "squad.json": "80a5225e94905956a6446d296ca1093975c4d3b3260f1d6c8f68bc2ab77182d8",
        "hotpotqa.json": "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        "english_words.json": "affcd6d45fdf3cc843d585c99c97ad615094e760e6c4756b654bab6c73bc2eca",
        "punkt_tab.zip": "e57f64187974277726a3417ca6f181ec5403676c717672eef6a748a7b20e0106",
    }
    assert all(f.url.startswith("https://") for f in TABLE)
    punkt = next(f for f in TABLE if f.name == "punkt_tab.zip")
    assert f"/nltk_data/{NLTK_DATA_COMMIT}/" in punkt.url  # a commit, not a moving branch


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
    # The mirror serves files under the pinned names whose content is not RULER's: exit 2 at the
    # first (every file is pinned now), and the wrong file is not left behind.
    _Files.files = {"squad.json": b"{}", "hotpotqa.json": b"[]", "english_words.json": BODY}
    done = subprocess.run(
        [sys.executable, "-m", "longscope.cli", "data", "ruler", str(tmp_path), "--mirror", server],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "checksum mismatch" in lines[0] and "SQuAD" in lines[0]
    assert "the download was removed" in lines[0] and not (tmp_path / "squad.json").exists()


def test_a_fabricated_file_in_the_cache_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from longscope.suites.ruler.suite import RulerSuite

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "longscope" / "data" / "ruler"
    folder.mkdir(parents=True)
    fake = folder / "squad.json"
    fake.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "paragraphs": [
                            {
                                "context": "Made up.",
                                "qas": [
                                    {
                                        "question": "What?",
                                        "answers": [{"text": "up"}],
                                        "is_impossible": False,
                                    }
                                ],
                            }
                        ]
                    }
                ]
            }
        )
    )
    suite = RulerSuite.from_params({"tasks": "qa_1"})
    with pytest.raises(UsageError) as caught:
        suite.prepare()
    assert str(caught.value).startswith(f"{fake} is not the pinned SQuAD v2 dev (qa_1) (sha256 ")
    assert "run `longscope data ruler` again" in str(caught.value)
    # The same file given on purpose is used, and recorded as not the pinned one.
    given = RulerSuite.from_params({"tasks": "qa_1", "squad": str(fake)})
    given.prepare()
    digest = hashlib.sha256(fake.read_bytes()).hexdigest()
    record = given.params()["inputs"]
    assert record == {"squad": {"file": "squad.json", "sha256": digest, "pinned": False}}
    # A stored run keeps the record it was made with, even where the file changed since.
    fake.write_text("{}")
    assert RulerSuite.from_params(given.params()).params()["inputs"] == record


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


def test_cli_run_ruler_refuses_a_fabricated_cached_file_before_sending(tmp_path) -> None:
    from tests.models.fault_server import FaultServer

    folder = tmp_path / "longscope" / "data" / "ruler"
    folder.mkdir(parents=True)
    (folder / "squad.json").write_text(json.dumps({"data": []}))
    with FaultServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "longscope.cli", "run", "ruler", "-m", "openai/m",
             "--base-url", server.url, "-M", "context_length=8192", "--lengths", "4k",
             "-S", "samples=1", "-S", "tasks=qa_1", "-o", str(tmp_path / "run"), "-q"],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
        )  # fmt: skip
        assert server.requests == []
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith(("error", "Traceback"))]
    assert line.startswith(f"error: {folder / 'squad.json'} is not the pinned SQuAD v2 dev")


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
