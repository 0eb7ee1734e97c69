"""NoLiMa's published tables: shipped as the README has them, each row checked by NoLiMa's rules."""

from __future__ import annotations

import pytest

from longscope.suites.nolima.published import (
    PUBLISHED_SOURCE,
    PublishedRow,
    _flags,
    effective_label,
    published_hard_rows,
    published_rows,
)


def by_model() -> dict[str, PublishedRow]:
    return {row.model: row for row in published_rows()}


def test_the_main_table_as_published() -> None:
    rows = by_model()
    assert len(rows) == 18
    gpt = rows["GPT-4o"]
    assert (gpt.claimed, gpt.effective, gpt.base, gpt.threshold) == ("128K", "8K", 99.3, 84.4)
    assert gpt.scores == {1000: 98.1, 2000: 98.0, 4000: 95.7, 8000: 89.2, 16000: 81.6, 32000: 69.7}
    maverick = rows["Llama 4 Maverick"]
    assert maverick.pending == (8000, 16000, 32000) and 8000 not in maverick.scores
    assert maverick.added_later and not gpt.added_later
    assert "7532e4eebf095c5540dc256900a63968da58a9d0" in PUBLISHED_SOURCE


def test_every_published_row_follows_nolimas_own_rules() -> None:
    flagged = {row.model: row.flags for row in published_rows() if row.flags}
    assert flagged == {}


@pytest.mark.parametrize(
    ("model", "label"),
    [("GPT-4o", "8K"), ("Llama 3.1 8B", "1K"), ("Gemma 3 4B", "<1K"), ("Gemini Flash 2.0", "4K")],
)
def test_effective_lengths_follow_from_scores_and_base(model: str, label: str) -> None:
    row = by_model()[model]
    assert effective_label(row.scores, row.base) == label


def test_a_row_that_breaks_the_rules_is_flagged_not_corrected() -> None:
    row = by_model()["Llama 3.1 8B"]  # 1K: 65.7 against a bar of 65.195
    wrong = PublishedRow(**{**row.__dict__, "effective": "2K", "threshold": 70.0})
    flags = _flags(wrong)
    assert any("stated threshold 70.0" in f for f in flags)
    assert any("stated effective length 2K but its scores give 1K" in f for f in flags)
    # A base just high enough to lift the bar over 65.7 turns 1K into <1K.
    higher = PublishedRow(**{**row.__dict__, "base": 77.4, "threshold": 65.8})
    assert any("give <1K" in f for f in _flags(higher))


def test_the_hard_table_as_published() -> None:
    rows = published_hard_rows()
    assert [(r.model, r.setting) for r in rows][:2] == [
        ("Llama 3.3 70B", "w/o CoT"),
        ("Llama 3.3 70B", "w/ CoT"),
    ]
    assert rows[2].setting is None and rows[2].base == 99.9
    assert rows[2].scores == {4000: 92.0, 8000: 78.0, 16000: 60.1, 32000: 31.1}
