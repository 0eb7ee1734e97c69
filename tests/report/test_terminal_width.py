"""Wide tables (compare, longscore) fit the terminal: split into parts, key columns repeated."""

from __future__ import annotations

import io

from longscope.report.terminal import print_leaderboard, print_split, safe_console


def _console(width: int) -> tuple:
    buffer = io.StringIO()
    return safe_console(file=buffer, width=width, force_terminal=False), buffer


def _leaderboard_rows() -> list[dict]:
    lengths = {str(n * 1024): round(90 - 3.5 * i, 1) for i, n in enumerate((4, 8, 16, 32, 64, 128))}
    return [
        {
            "model": f"openai/Qwen2.5-7B-Instruct-{k}",
            "suite": "ruler",
            "state": "complete",
            "overall": 80.0 - k,
            "claimed": 131072,
            "effective": 32768,
            "wAvg_inc": 70.1,
            "wAvg_dec": 75.3,
            "lengths": lengths,
        }
        for k in range(2)
    ]


def test_at_80_columns_every_line_fits_and_every_column_is_shown() -> None:
    console, buffer = _console(80)
    print_leaderboard(_leaderboard_rows(), console)
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    for header in ("overall", "claimed", "effective", "wAvg_inc", "wAvg_dec", "4K", "64K", "128K"):
        assert f" {header} " in text, header
    parts = [line for line in text.splitlines() if line.startswith("Leaderboard")]
    assert len(parts) >= 2 and parts[0] == f"Leaderboard (1/{len(parts)})"
    # The model names the rows in every part; the headline score is in the first.
    assert text.count("openai/Qwen2.5-7B-Instruct-0") == len(parts)
    first = text.split(parts[1])[0]
    assert " overall " in first and "80.0" in first


def test_a_wide_terminal_prints_one_table() -> None:
    console, buffer = _console(200)
    print_leaderboard(_leaderboard_rows(), console)
    text = buffer.getvalue()
    assert "Leaderboard\n" in text and "(1/" not in text


def test_a_part_is_split_exactly_where_the_next_column_would_overflow() -> None:
    # Key column "#": 1 + 3 = 4, plus the left border 1 -> 5. Each "ccc" column: 3 + 3 = 6.
    rows = [["1", "aaa", "bbb", "ccc"]]
    for width, parts in ((23, 1), (22, 2), (11, 3)):
        console, buffer = _console(width)
        print_split(console, "T", ["#"], ["aaa", "bbb", "ccc"], rows)
        titles = [line for line in buffer.getvalue().splitlines() if line.startswith("T")]
        assert len(titles) == parts, (width, titles)
