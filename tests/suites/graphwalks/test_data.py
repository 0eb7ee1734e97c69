"""GraphWalks' data: rows in the card's schema from JSONL or Parquet, bad rows named, the
revision pinned (OpenAI-named files that are not the pinned ones refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.files import sha256_of
from longscope.suites.graphwalks import data as gw_data
from longscope.suites.graphwalks.data import REPO, REVISION, identify, load_local, sources
from longscope.suites.graphwalks.schema import LONG, SHORT

from .rows import graphwalks_row, write_jsonl, write_parquet


def test_rows_load_from_jsonl_and_parquet_alike(tmp_path: Path) -> None:
    rows = [graphwalks_row("parents", seed=1), graphwalks_row("bfs", seed=2), graphwalks_row()]
    a = load_local(write_jsonl(tmp_path / "r.jsonl", rows), (), False)
    b = load_local(write_parquet(tmp_path / "r.parquet", rows), (), False)
    assert [r[2] for r in a.rows] == [r[2] for r in b.rows]
    assert [r[0] for r in a.rows] == ["parents-0000", "bfs-0000", "parents-0001"]
    assert a.rows[1][2].answer_nodes == tuple(rows[1]["answer_nodes"])
    assert a.identity.startswith("file:r.jsonl:") and not a.pinned
    assert a.rows[0][1] is None  # not one of OpenAI's files: its set comes from its tokens


def test_the_cards_answer_column_name_is_read_and_types_are_lowercased(tmp_path: Path) -> None:
    row = graphwalks_row("bfs")
    row = {**{k: v for k, v in row.items() if k != "answer_nodes"}, "answer": ["ab"]}
    row["problem_type"] = "BFS"
    loaded = load_local(write_jsonl(tmp_path / "r.jsonl", [row]), ("bfs",), False)
    assert loaded.rows[0][2].answer_nodes == ("ab",) and loaded.rows[0][2].problem_type == "bfs"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"problem_type": "dfs"}, "field 'problem_type'"),
        ({"answer_nodes": "abcd"}, "field 'answer_nodes'"),
        ({"prompt": ""}, "field 'prompt'"),
    ],
)
def test_a_bad_row_is_named_with_its_file_and_number(tmp_path: Path, change, says) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [graphwalks_row(), {**graphwalks_row(), **change}])
    with pytest.raises(UsageError) as caught:
        load_local(path, (), False)
    assert str(caught.value).startswith(f"{path}: row 2: {says}")


def test_a_filter_that_leaves_nothing_says_so(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [graphwalks_row("parents")])
    with pytest.raises(UsageError, match="holds no row of type bfs"):
        load_local(path, ("bfs",), False)


def test_a_file_named_like_openais_but_not_pinned_is_refused(tmp_path: Path) -> None:
    # Like the pre-fix file: named as OpenAI names it, other bytes.
    path = write_parquet(tmp_path / "graphwalks_128k_and_shorter.parquet", [graphwalks_row()])
    with pytest.raises(UsageError) as caught:
        load_local(path, (), False)
    line = str(caught.value)
    assert "not the pinned revision" in line and "2026-02-27" in line
    assert "allow_unpinned=true" in line and "\n" not in line
    loaded = load_local(path, (), True)  # asked for: scored, recorded as not the pinned data
    assert not loaded.pinned and loaded.identity.startswith("file:")
    assert loaded.rows[0][1] == SHORT  # its file says its set


def test_pinned_files_are_known_by_their_sha256(tmp_path: Path, monkeypatch) -> None:
    short = write_parquet(tmp_path / "graphwalks_128k_and_shorter.parquet", [graphwalks_row()])
    long = write_parquet(tmp_path / "graphwalks_256k_to_1mil.parquet", [graphwalks_row("bfs")])
    pinned = tuple(
        gw_data.UpstreamFile(p.name, s, sha256_of(p)) for p, s in ((short, SHORT), (long, LONG))
    )
    monkeypatch.setattr(gw_data, "FILES", pinned)
    assert identify([short, long], False) == (f"{REPO}@{REVISION}", True)
    loaded = load_local(tmp_path, (), False)
    assert loaded.identity == f"{REPO}@{REVISION}"
    assert {r[1] for r in loaded.rows} == {SHORT, LONG}


def test_sources_are_the_pinned_revisions_files() -> None:
    files = sources().files
    assert [f.name for f in files] == [
        "graphwalks_128k_and_shorter.parquet",
        "graphwalks_256k_to_1mil.parquet",
    ]
    assert all(f"/resolve/{REVISION}/" in f.url and len(f.sha256 or "") == 64 for f in files)
    assert [f.name for f in sources("128k").files] == ["graphwalks_128k_and_shorter.parquet"]
