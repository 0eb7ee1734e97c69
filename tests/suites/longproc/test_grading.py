"""LongProc's evaluators, rule by rule: hand cases derived from the authors' code
(princeton-pli/LongProc@78e873ae, `longproc/*_evaluator.py`, `longproc_data.py`), each expected
value worked out from their rule, not from ours."""

from __future__ import annotations

import pytest

from longscope.suites.longproc.grading import (
    extract_cpp,
    extract_with_tag,
    grade_html_to_tsv,
    grade_path_traversal,
    grade_tom_tracking,
    normalize_belief,
    normalize_cell,
    table_scores,
)

# --- tags -----------------------------------------------------------------------------------------


def test_tag_extraction_takes_the_first_open_and_first_close_tag() -> None:
    assert extract_with_tag("a <Route> x </Route> b <Route>y</Route>", "Route") == "x"
    assert extract_with_tag("<Route> x", "Route") is None
    assert extract_with_tag("x </Route>", "Route") is None
    # Closing before opening: their slice from after <Route> to the earlier </Route> is empty.
    assert extract_with_tag("</Route> <Route> x", "Route") == ""


# --- HTML to TSV ----------------------------------------------------------------------------------

GOLD = "name\tprice\nApple\t$1\nPear\t$2\nFig\t$3\nKiwi\t$4"


def test_cells_are_lowered_stripped_of_punctuation_articles_and_every_space() -> None:
    assert normalize_cell("The Big  Apple, Inc.") == "bigappleinc"
    assert normalize_cell("$1.50 / a unit") == "150unit"
    assert normalize_cell("Theatre") == "theatre"  # `the` only as a word


def test_row_f1_counts_whole_rows_in_any_order() -> None:
    # 3 predicted rows: 2 in the gold (order free, case and punctuation free), 1 not.
    p, r, f1, error = table_scores("NAME\tPRICE\npear\t$2\napple.\t1\nPlum\t$9", GOLD)
    assert error is None
    assert p == pytest.approx(2 / 3) and r == pytest.approx(2 / 4)
    assert f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))


def test_header_names_are_not_compared_but_the_column_count_is() -> None:
    assert table_scores("a\tb\nApple\t$1", GOLD)[:3] == (1.0, 0.25, pytest.approx(0.4))
    # Another number of columns: their pandas comparison raises, every metric is 0.
    p, r, f1, error = table_scores("name\tprice\tx\nApple\t$1\tz\nPear\t$2\tz", GOLD)
    assert (p, r, f1) == (0.0, 0.0, 0.0) and "length must be 2" in str(error)


def test_a_last_row_of_another_width_is_dropped_and_others_become_na_rows() -> None:
    # "the end" (1 field) is dropped as an end marker; "Fig" (1 field, not last) becomes N/A.
    p, r, _, error = table_scores("name\tprice\nApple\t$1\nFig\nPear\t$2\nthe end", GOLD)
    assert error is None and p == pytest.approx(2 / 3) and r == pytest.approx(2 / 4)


def test_a_table_without_rows_or_with_duplicate_names_scores_zero_with_the_error() -> None:
    assert table_scores("name\tprice", GOLD)[3] == "no row after the header"
    # The only row is dropped (another width): no predicted row left to divide by.
    assert table_scores("name\tprice\nApple", GOLD)[:3] == (0.0, 0.0, 0.0)
    assert "duplicate" in str(table_scores("x\tx\nApple\t$1", GOLD)[3])


def test_the_tsv_block_is_read_greedily_to_the_last_fence() -> None:
    answer = "Sure.\n```tsv\nname\tprice\nApple\t$1\n```\nand\n```tsv\nPear\t$2\n```"
    graded = grade_html_to_tsv(answer, GOLD)
    # Greedy: the block runs to the last ```; the 1-field lines between become N/A rows.
    assert graded.parsed is not None and graded.parsed.endswith("Pear\t$2")
    assert graded.metrics["recall"] == pytest.approx(2 / 4)
    assert graded.score == graded.metrics["f1"]


def test_an_unclosed_block_is_read_to_the_next_opening_and_no_block_reads_everything() -> None:
    assert grade_html_to_tsv("```tsv\nname\tprice\nApple\t$1\nPear\t$2\n", GOLD).metrics[
        "recall"
    ] == pytest.approx(0.5)
    whole = grade_html_to_tsv(GOLD, GOLD)
    assert whole.score == 1.0 and whole.metrics["extraction_rate"] == 1.0
    failed = grade_html_to_tsv("I cannot do that.", GOLD)
    assert failed.score == 0.0 and failed.metrics["extraction_rate"] == 0.0


# --- path traversal -------------------------------------------------------------------------------

ROUTE = "From A, take a bus to B.\nFrom B, take a train to C.\nFrom C, take a plane to D."


def test_a_route_scores_one_only_when_it_equals_the_reference() -> None:
    graded = grade_path_traversal(f"<Route>\n{ROUTE}\n</Route>", ROUTE)
    assert graded.score == 1.0 and graded.metrics["partial_accuracy"] == 1.0


def test_partial_credit_counts_the_first_wrong_line_too() -> None:
    wrong = ROUTE.replace("train", "ferry")
    graded = grade_path_traversal(f"<Route>{wrong}</Route>", ROUTE)
    # Line 1 differs: their loop breaks at i=1, then `i += 1`: 2 of 3 lines.
    assert graded.score == 0.0 and graded.metrics["partial_accuracy"] == pytest.approx(2 / 3)
    assert graded.error == {"line": 1, "gt": ROUTE.split("\n")[1], "pr": wrong.split("\n")[1]}


def test_a_route_that_stops_early_gets_its_share_and_a_longer_one_gets_full_partial() -> None:
    short = "\n".join(ROUTE.split("\n")[:2])
    assert grade_path_traversal(f"<Route>{short}</Route>", ROUTE).metrics[
        "partial_accuracy"
    ] == pytest.approx(2 / 3)
    longer = grade_path_traversal(f"<Route>{ROUTE}\nFrom D, take a bus to E.</Route>", ROUTE)
    assert longer.score == 0.0 and longer.metrics["partial_accuracy"] == 1.0


def test_a_route_without_tags_is_a_parsing_error() -> None:
    graded = grade_path_traversal(ROUTE, ROUTE)
    assert graded.score == 0.0 and graded.metrics["extraction_rate"] == 0.0
    assert graded.error == "Parsing error"


# --- ToM tracking ---------------------------------------------------------------------------------

TRACE = (
    "Ann's belief on the key:\n"
    "- Step 0: (initial state) {Ann location: hall; key location: hall's box; Ann sees key: True}\n"
    "- Step 1: (Ann location changed) {Ann location: den; key location: hall's box}\n"
    "- Step 2: (Ann location unchanged) {Ann location: den; key location: den's shelf}\n"
    "Final Answer: hall's box"
)


def test_belief_lines_drop_filler_words_and_punctuation() -> None:
    assert normalize_belief("Step 1: Ann's belief is in the hall’s box.") == "1 anns halls box"
    assert normalize_belief("Ann thinks the key is on the table") == "ann key table"


def test_a_trace_is_right_when_every_dash_line_matches_after_normalizing() -> None:
    loose = TRACE.replace("Step 1: (", "step 1 (").replace("hall's box}", "halls box};")
    graded = grade_tom_tracking(loose + "\nextra prose", TRACE)
    assert graded.score == 1.0 and graded.metrics["partial_accuracy"] == 1.0


def test_partial_credit_is_the_share_before_the_first_wrong_line() -> None:
    wrong = TRACE.replace("den's shelf", "hall's box")
    graded = grade_tom_tracking(wrong, TRACE)
    assert graded.score == 0.0 and graded.metrics["partial_accuracy"] == pytest.approx(2 / 3)
    assert graded.error is not None and graded.error["line"] == 2


def test_a_short_trace_gets_its_length_over_the_references() -> None:
    short = "\n".join(TRACE.split("\n")[:2])
    assert grade_tom_tracking(short, TRACE).metrics["partial_accuracy"] == pytest.approx(1 / 3)


def test_only_the_first_indented_dash_line_counts_as_in_their_code() -> None:
    lines = TRACE.split("\n")
    indented = "\n".join([lines[0], *("  " + line for line in lines[1:4])])
    # Kept (strip starts with -), joined, stripped once: only the first loses its indent.
    assert grade_tom_tracking(indented, TRACE).metrics["partial_accuracy"] == pytest.approx(1 / 3)


# --- pseudocode to C++: extraction -----------------------------------------------------------------


def test_cpp_extraction_accepts_cpp_and_cplusplus_fences_greedily() -> None:
    assert extract_cpp("```cpp\nint main() {}\n```") == "\nint main() {}\n"
    assert extract_cpp("```c++\nint x;\n```\ntext\n```cpp\nint y;\n```") == (
        "\nint x;\n```\ntext\n```cpp\nint y;\n"
    )
    assert extract_cpp("```python\nprint(1)\n```") is None
