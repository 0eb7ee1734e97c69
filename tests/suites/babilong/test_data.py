"""BABILong's local-folder loader, on folders built here in each Hub set's own layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.babilong.data import (
    HUNDRED,
    THOUSAND,
    find_file,
    identity,
    iter_rows,
    samples_for,
    upstream_path,
)
from longscope.suites.babilong.schema import LENGTHS, Row, check_length


def rows(n: int, task: str = "qa1") -> list[dict[str, str]]:
    return [
        {"input": f"Noise {i}. Mary went to the office.", "question": "Where is Mary?",
         "target": "office", "task": task}  # an extra field is ignored
        for i in range(n)
    ]  # fmt: skip


def test_hundred_layout_json_array(tmp_path: Path) -> None:
    path = tmp_path / "data" / "qa1" / "4k.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rows(3)), encoding="utf-8")
    found = find_file(tmp_path, "qa1", "4k")
    assert found == path
    got = list(iter_rows(found))
    assert [r.input for r in got] == [f"Noise {i}. Mary went to the office." for i in range(3)]
    assert got[0] == Row(
        input="Noise 0. Mary went to the office.", question="Where is Mary?", target="office"
    )


def test_hundred_layout_json_lines_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "data" / "qa2" / "0k.json"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(r) for r in rows(5, "qa2")) + "\n", encoding="utf-8")
    assert [r.input[:7] for r in iter_rows(find_file(tmp_path, "qa2", "0k"), limit=2)] == [
        "Noise 0",
        "Noise 1",
    ]


def test_thousand_layout_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "8k"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows(4)), folder / "qa1-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist(rows(2, "qa10")), folder / "qa10-00000-of-00001.parquet")
    found = find_file(tmp_path, "qa1", "8k")
    assert found.name == "qa1-00000-of-00001.parquet"  # qa1-* does not pick up qa10-*
    assert len(list(iter_rows(found))) == 4


def test_missing_split_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no qa3 at 16k .*drop it from --lengths"):
        find_file(tmp_path, "qa3", "16k")


def test_bad_row_names_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "data" / "qa1" / "1k.json"
    path.parent.mkdir(parents=True)
    bad = rows(2)
    del bad[1]["target"]
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(UsageError, match=r"1k\.json: row 2: field 'target': missing"):
        list(iter_rows(path))


def test_not_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "data" / "qa1" / "1k.json"
    path.parent.mkdir(parents=True)
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(UsageError, match="not valid JSON"):
        list(iter_rows(path))


def test_unknown_length_and_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown BABILong length '3k'"):
        check_length("3k")
    with pytest.raises(UsageError, match="is not a folder"):
        find_file(tmp_path / "nope", "qa1", "0k")


def test_which_set_each_length_reads() -> None:
    # The authors' published runs: 1000 rows up to 32k, 100 rows from 64k on.
    assert [samples_for(n).rows_per_split for n in LENGTHS] == [1000] * 7 + [100] * 6
    assert samples_for("128k") is HUNDRED
    assert samples_for("0k").tasks_at("0k") == 20
    assert THOUSAND.tasks_at("4k") == 5 and HUNDRED.tasks_at("4k") == 10
    assert upstream_path(HUNDRED, "qa3", "1M") == "data/qa3/1M.json"
    assert upstream_path(THOUSAND, "qa3", "2k") == "2k/qa3-*.parquet"


def test_identity_follows_the_bytes(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text("[]", encoding="utf-8")
    first = identity({"qa1/0k": a})
    assert identity({"qa1/0k": a}) == first
    a.write_text("[ ]", encoding="utf-8")
    assert identity({"qa1/0k": a}) != first
