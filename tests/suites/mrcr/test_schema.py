"""MRCR rows and bins: the card's schema checked row by row, OpenAI's bin edges to the token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.mrcr.data import read_rows
from longscope.suites.mrcr.schema import BINS, bin_label, bin_of, bins_of_lengths

from .rows import mrcr_row, write_jsonl


@pytest.mark.parametrize(
    ("tokens", "upper"),
    [
        (4096, 8192),  # OpenAI's first bin is closed on the left: [4096, 8192]
        (8192, 8192),  # and every upper edge is included
        (8193, 16384),
        (131072, 131072),
        (131073, 262144),
        (1048576, 1048576),
        (100, 8192),  # counted in another tokenizer a row may fall under 4096: first bin
        (2_000_000, 1048576),
    ],
)
def test_bins_follow_openais_edges(tokens: int, upper: int) -> None:
    assert bin_of(tokens) == upper


def test_bins_are_named_as_the_boards_name_them() -> None:
    assert [bin_label(b) for b in BINS] == [
        "8k",
        "16k",
        "32k",
        "64k",
        "128k",
        "256k",
        "512k",
        "1M",
    ]
    # A length names the bin holding it: 4k and 8k the first, 128k the (64k, 128k] bin.
    assert bins_of_lengths([4096, 8192]) == (8192,)
    assert bins_of_lengths([131072, 131073]) == (131072, 262144)


def test_rows_load_with_ids_per_needle_count(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rows.jsonl", [mrcr_row(2), mrcr_row(4, target=3), mrcr_row(2, target=1)]
    )
    rows = read_rows([path])
    assert [sid for sid, _ in rows] == ["2n-0000", "4n-0000", "2n-0001"]
    first = rows[0][1]
    assert first.chat()[-1].role == "user" and first.answer.startswith(
        first.random_string_to_prepend
    )
    assert [sid for sid, _ in read_rows([path], needles=(4,))] == ["4n-0000"]


def test_a_chat_given_as_a_list_is_read_as_the_json_text(tmp_path: Path) -> None:
    row = mrcr_row(2)
    listed = {**row, "prompt": json.loads(row["prompt"])}
    a = read_rows([write_jsonl(tmp_path / "a.jsonl", [row])])[0][1]
    b = read_rows([write_jsonl(tmp_path / "b.jsonl", [listed])])[0][1]
    assert a.chat() == b.chat() and len(a.chat()) == len(listed["prompt"])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"prompt": "[{not json"}, "row 2: field 'prompt': not a JSON chat"),
        ({"prompt": "[]"}, "row 2: field 'prompt': expected a non-empty list"),
        (
            {
                "prompt": json.dumps(
                    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
                )
            },
            "row 2: field 'prompt': the chat must end with the user's request",
        ),
        (
            {"prompt": json.dumps([{"role": "tool", "content": "a"}])},
            "row 2: field 'prompt': message 0: field 'role'",
        ),
        ({"answer": None}, "row 2: field 'answer'"),
        ({"random_string_to_prepend": None}, "row 2: field 'random_string_to_prepend'"),
        ({"n_needles": 0}, "row 2: field 'n_needles'"),
    ],
)
def test_a_bad_row_is_named_with_its_file_and_row(
    tmp_path: Path, change: dict, expected: str
) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2), {**mrcr_row(2), **change}])
    with pytest.raises(UsageError) as caught:
        read_rows([path])
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and expected in message
    assert "\n" not in message


def test_no_row_with_the_needles_asked_for_is_one_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2)])
    with pytest.raises(UsageError, match="holds no row with 8 needles"):
        read_rows([path], needles=(8,))


def test_unicode_and_control_text_round_trip_as_data(tmp_path: Path) -> None:
    odd = "Tapirs 🦛 über 漢字 \u202eRTL\u202c <b>not markup</b> \x00 end"
    row = mrcr_row(2, target=1, prefix="Ωπ9", needle=("poem", odd))
    path = write_jsonl(tmp_path / "rows.jsonl", [row])
    loaded = read_rows([path])[0][1]
    assert loaded.prompt == row["prompt"]  # the chat is kept as the text it came as
    assert [m.content for m in loaded.chat()] == [m["content"] for m in json.loads(row["prompt"])]
    assert odd in loaded.chat()[-1].content and loaded.answer.startswith("Ωπ9")
