"""LongBench v2's data: data.json (a JSON list) or JSONL, rows validated, the pinned file known."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.longbench_v2 import data as v2_data
from longscope.suites.longbench_v2.data import REPO, REVISION, load_local, sources

from .rows import question, write_json, write_jsonl


def test_json_and_jsonl_read_alike(tmp_path: Path) -> None:
    rows = [question(0), question(1, length="medium", difficulty="hard")]
    a = load_local(write_json(tmp_path / "data.json", rows))
    b = load_local(write_jsonl(tmp_path / "data.jsonl", rows))
    assert a.rows == b.rows and [r.id for r in a.rows] == ["q0000", "q0001"]
    assert a.rows[1].length == "medium" and a.rows[0].choices[1] == "Oskel"
    assert a.identity.startswith("file:data.json:")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"answer": "E"}, "field 'answer'"),
        ({"difficulty": "medium"}, "field 'difficulty'"),
        ({"length": "huge"}, "field 'length'"),
        ({"choice_C": None}, "field 'choice_C'"),
    ],
)
def test_a_bad_row_is_named(tmp_path: Path, change: dict, says: str) -> None:
    path = write_json(tmp_path / "data.json", [question(0), {**question(1), **change}])
    with pytest.raises(UsageError) as caught:
        load_local(path)
    assert str(caught.value).startswith(f"{path}: row 2: {says}")


def test_duplicate_ids_and_non_lists_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="appears twice"):
        load_local(write_json(tmp_path / "d.json", [question(0), question(0)]))
    (tmp_path / "o.json").write_text('{"_id": "x"}', "utf-8")
    with pytest.raises(UsageError, match="expected a JSON list"):
        load_local(tmp_path / "o.json")


def test_the_pinned_file_is_known_by_its_sha256(tmp_path: Path, monkeypatch) -> None:
    path = write_json(tmp_path / "data.json", [question(0)])
    from longscope.files import sha256_of

    monkeypatch.setattr(v2_data, "SHA256", sha256_of(path))
    assert load_local(path).identity == f"{REPO}@{REVISION}"


def test_sources_are_the_pinned_revisions_file() -> None:
    (file,) = sources().files
    assert file.name == "data.json" and f"/resolve/{REVISION}/data.json" in file.url
    assert file.sha256 == "15d61c22d92c96900b3c4948b6aeea218d3214b676a65df48e7b8555604c7fe2"
