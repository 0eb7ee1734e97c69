"""Profiles as the router reads them: every field, the relative length of the most cautious suite,
and each kind of bad file refused in one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.router.profile import RouterProfile, load_profile


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return path


def test_every_field_is_read_and_relative_is_the_shortest_measured(tmp_path: Path) -> None:
    path = _write(tmp_path, {
        "profile_version": 1,
        "model": "gemma3-270m",
        "claimed_context": 32768,
        "effective_context": 8192,
        "measured": [
            {"suite": "a", "effective_length": 8192, "relative_effective_length": 12288},
            {"suite": "b", "effective_length": None, "relative_effective_length": None},
            {"suite": "c", "effective_length": 4096, "relative_effective_length": 6144},
        ],
        "date": "2026-11-27",
        "extra": "ignored",
    })  # fmt: skip
    assert load_profile(path) == RouterProfile(
        path=str(path),
        model="gemma3-270m",
        claimed=32768,
        absolute=8192,
        relative=6144,
        date="2026-11-27",
    )
    loaded = load_profile(str(path))
    assert loaded.path == str(path) and loaded.effective("absolute") == 8192
    assert loaded.effective("relative") == 6144


def test_no_relative_length_measured_is_none(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model": "m", "measured": [
        {"suite": "a", "effective_length": 4096, "relative_effective_length": None}]})  # fmt: skip
    loaded = load_profile(path)
    assert loaded.relative is None and loaded.absolute is None and loaded.claimed is None
    assert loaded.date == "" and loaded.effective("relative") is None


def test_bad_files_are_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    with pytest.raises(UsageError) as caught:
        load_profile(missing)
    assert str(caught.value) == f"cannot read profile {missing}: No such file or directory"
    path = tmp_path / "profile.json"
    cases = {
        b"  \n": f"profile {path} is empty",
        b"{\x00}": f"profile {path} is binary, not text (expected UTF-8 JSON or JSONL)",
        b'{"model": "\xff"}': f"profile {path} is not UTF-8 text (byte 11): save it as UTF-8",
        b"{not json": f"{path}: not valid JSON (Expecting property name enclosed in double "
        "quotes at line 1)",
        b'{"measured": []}': f"{path}: field 'model'",
    }
    for data, message in cases.items():
        path.write_bytes(data)
        with pytest.raises(UsageError) as caught:
            load_profile(path)
        assert str(caught.value).startswith(message), data
