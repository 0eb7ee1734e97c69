"""`compare --published mrcr`: the shipped rows, keyed as runs are, each kind kept apart."""

from __future__ import annotations

from longscope.api import published_rows
from longscope.suites.mrcr.schema import BINS


def test_board_rows_are_bins_and_googles_mrcr_v2_is_never_a_bin() -> None:
    table = published_rows("mrcr")
    assert "contextarena.ai" in table.source and "Gemini 3 Pro" in table.source
    board = [r for r in table.rows if r.mode == "2-needle"]
    google = [r for r in table.rows if r.mode == "Google MRCR v2, 8-needle"]
    assert len(board) + len(google) == len(table.rows) and board and google
    for row in board:
        # Keyed by bin upper edge in tokens, as a run's by-length curve is.
        assert row.lengths and set(row.lengths) <= set(BINS), row.model
        assert all(0 <= v <= 100 for v in row.lengths.values())
        assert not row.cells
    gpt41 = next(r for r in board if r.model == "openai/gpt-4.1")
    assert gpt41.lengths[131072] == 55.5 and gpt41.lengths[1048576] == 42.1
    for row in google:
        # Google's own data, averaged up to 128K: shown apart, never placed on the bin curve.
        assert not row.lengths and set(row.cells) == {"mrcr_v2_8needle"}
    gemini3 = next(r for r in google if r.model == "gemini-3-pro-preview")
    assert gemini3.cells["mrcr_v2_8needle"] == {"128k average": 77.0, "1M pointwise": 26.3}
