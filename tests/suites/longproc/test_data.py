"""LongProc's data: pinned by git blob id (and sha256 when downloaded), read as the authors read it,
the published runs' rows selected as HELMET selects them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.longproc.data import (
    COMMIT,
    TASKS,
    Folder,
    blob_id,
    cache_name,
    item_of,
    pinned,
    prompt_template,
    raw_rows,
    render,
    selected,
    sources,
)

from .rows import write_data


def test_blob_ids_are_gits() -> None:
    # `printf "hello\n" | git hash-object --stdin`, and the empty file
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_the_pinned_table_covers_every_file_each_task_reads() -> None:
    table = pinned()
    for task in TASKS:
        assert f"{task}/prompts.yaml" in table
    assert "pseudo_to_code/pseudo_to_code_8k.json" not in table  # the authors give none
    assert sum(p.startswith("html_to_tsv/webpage/") for p in table) == 255
    assert all(len(f.blob) == 40 for f in table.values())
    known = [f for f in table.values() if f.sha256]
    assert all(len(f.sha256 or "") == 64 for f in known) and len(known) >= len(table) - 4


def test_downloads_are_the_pinned_commits_raw_files_with_their_checksums() -> None:
    files = {f.name: f for f in sources().files}
    page = files[cache_name("html_to_tsv/webpage/W111_0.5k_1.html")]
    assert page.url == (
        f"https://raw.githubusercontent.com/princeton-pli/LongProc/{COMMIT}/data/"
        "html_to_tsv/webpage/W111_0.5k_1.html"
    )
    assert page.sha256 == pinned()["html_to_tsv/webpage/W111_0.5k_1.html"].sha256
    assert {name.split("--")[0] for name in files} == set(TASKS)


def test_the_published_runs_rows_are_100_of_each_file_and_all_is_every_row() -> None:
    order = selected(250, "helmet")
    assert len(order) == 100 and len(set(order)) == 100 and max(order) < 250
    assert sorted(selected(3, "helmet")) == [0, 1, 2]
    assert selected(5, "all") == [0, 1, 2, 3, 4]


@pytest.mark.slow
def test_the_published_runs_rows_are_datasets_shuffle_with_seed_42() -> None:
    order = selected(250, "helmet")
    datasets = pytest.importorskip("datasets")  # a slow import
    table = datasets.Dataset.from_list([{"i": i} for i in range(250)])
    assert order == [r["i"] for r in table.shuffle(seed=42).select(range(100))]
    assert selected(3, "helmet") == [r["i"] for r in datasets.Dataset.from_list(
        [{"i": i} for i in range(3)]).shuffle(seed=42)]  # fmt: skip


def test_files_not_of_the_pinned_commit_are_refused_then_allowed_by_digest(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    with pytest.raises(UsageError) as refused:
        Folder(data, allow_unpinned=False).read("path_traversal/prompts.yaml")
    assert "is not princeton-pli/LongProc's data/path_traversal/prompts.yaml" in str(refused.value)
    assert "-S allow_unpinned=true" in str(refused.value)
    folder = Folder(data, allow_unpinned=True)
    folder.read("path_traversal/prompts.yaml")
    first = folder.identity()
    assert first.startswith("unpinned:")
    (data / "path_traversal" / "prompts.yaml").write_text("USER_PROMPT: other\n")
    other = Folder(data, allow_unpinned=True)
    other.read("path_traversal/prompts.yaml")
    assert other.identity() != first


def test_a_pinned_file_is_known_by_its_blob(tmp_path: Path, monkeypatch) -> None:
    data = write_data(tmp_path / "data")
    text = (data / "tom_tracking" / "prompts.yaml").read_bytes()
    real = pinned()["tom_tracking/prompts.yaml"]
    monkeypatch.setitem(
        pinned(), "tom_tracking/prompts.yaml", type(real)(real.path, blob_id(text), None, None)
    )
    folder = Folder(data, allow_unpinned=False)
    folder.read("tom_tracking/prompts.yaml")
    assert folder.identity() == f"princeton-pli/LongProc@{COMMIT}"


def test_the_flat_download_cache_is_read_like_the_repository_layout(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    flat = tmp_path / "cache"
    flat.mkdir()
    for path in data.rglob("*"):
        if path.is_file():
            (flat / cache_name(str(path.relative_to(data)))).write_bytes(path.read_bytes())
    assert Folder(flat, True).read("html_to_tsv/webpage/W0_2k_1.html").startswith(b"<ul>")


def test_a_missing_file_names_itself_and_how_to_get_the_data(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as missing:
        raw_rows(Folder(tmp_path, True), "tom_tracking", "2k")
    assert str(missing.value).startswith(f"LongProc data {tmp_path} has no tom_tracking/tom_")
    assert "longscope data longproc" in str(missing.value)


def test_a_bad_row_is_named_with_its_file_and_number(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    path = data / "path_traversal" / "path_traversal_2k.json"
    rows = json.loads(path.read_text())
    del rows[1]["answer_nl"]
    path.write_text(json.dumps(rows))
    with pytest.raises(UsageError) as bad:
        raw_rows(Folder(data, True), "path_traversal", "2k")
    assert str(bad.value).startswith("path_traversal/path_traversal_2k.json: row 1:")
    assert "answer_nl" in str(bad.value)


def test_prompts_are_the_template_formatted_with_the_row_as_theirs(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data")
    folder = Folder(data, True)
    template = prompt_template(folder, "html_to_tsv")
    rows = raw_rows(folder, "html_to_tsv", "0.5k")
    item = item_of(folder, "html_to_tsv", 0, rows[0])
    prompt = render(template, item.fields)
    # The page's own braces stay as they are; the template's {{rows}} becomes {rows}.
    assert "<li>Pear {not a field} $2</li>" in prompt and "{rows}" in prompt
    assert "About fruit: (1) name; (2) price\n```tsv\nname\tprice\n" in prompt
    assert item.reference == rows[0].gt  # type: ignore[attr-defined]


def test_the_suite_refuses_to_start_without_data() -> None:
    with pytest.raises(UsageError, match="longproc needs -S data=DIR"):
        create_suite("longproc", {})
