"""GraphWalks' grade against hand cases from the card (huggingface.co/datasets/openai/graphwalks):
the last line's `Final Answer: [...]`, set precision/recall/F1, empty and malformed lists."""

from __future__ import annotations

import pytest

from longscope.suites.graphwalks.grading import grade, parse_final_answer, set_scores

CASES = [
    # (response, gold, f1, parse failure or "") - the card's example graph: uvwx -> alke,
    # abcd -> uvwx, abcd -> efgh, efgh -> uvwx.
    ("Final Answer: [uvwx, efgh]", ("uvwx", "efgh"), 1.0, ""),  # BFS from abcd, depth 1
    ("Final Answer: [efgh, uvwx]", ("uvwx", "efgh"), 1.0, ""),  # a set: order is free
    ("Final Answer:[uvwx,efgh]", ("uvwx", "efgh"), 1.0, ""),  # ` ?`: the space is optional
    ("Final Answer: [uvwx, uvwx, efgh]", ("uvwx", "efgh"), 1.0, ""),  # duplicates count once
    ("Final Answer: []", (), 1.0, ""),  # BFS from alke: the empty list answers the empty gold
    ("Final Answer: [ ]", (), 1.0, ""),  # [] not [""]: blank items dropped
    ("Final Answer: []", ("abcd", "efgh"), 0.0, ""),  # parents of uvwx, answered empty
    ("Final Answer: [abcd]", (), 0.0, ""),  # parents of abcd: none, one answered
    ("Final Answer: [alke]", ("abcd", "efgh"), 0.0, ""),  # disjoint: 0, never the snippet's 1
    ("Let me think.\nFinal Answer: [abcd, efgh]", ("abcd", "efgh"), 1.0, ""),  # work, then line
    ("Final Answer: [abcd, efgh]\n", ("abcd", "efgh"), 0.0, "no 'Final Answer:'"),  # empty last
    ("Final Answer: [abcd, efgh]\nDone.", ("abcd", "efgh"), 0.0, "no 'Final Answer:'"),
    ("The parents are abcd and efgh.", ("abcd", "efgh"), 0.0, "no 'Final Answer:'"),
    ("", ("abcd",), 0.0, "no 'Final Answer:'"),
    ("Final Answer: abcd, efgh", ("abcd", "efgh"), 0.0, "without a [list]"),  # malformed
    ("Final Answer: [abcd, efgh", ("abcd", "efgh"), 0.0, "without a [list]"),  # unclosed
    ("final answer: [abcd, efgh]", ("abcd", "efgh"), 0.0, "no 'Final Answer:'"),  # case counts
]


@pytest.mark.parametrize(("response", "gold", "f1", "failure"), CASES)
def test_the_cards_extraction_and_f1(response: str, gold: tuple, f1: float, failure: str) -> None:
    graded = grade(response, gold)
    assert graded.f1 == pytest.approx(f1)
    assert graded.parsed.failed == bool(failure)
    assert failure in graded.parsed.failure


def test_partial_answers_score_set_precision_recall_and_f1() -> None:
    # Parents of uvwx are abcd and efgh: one right, one wrong, one missed.
    graded = grade("Final Answer: [abcd, alke]", ("abcd", "efgh"))
    assert (graded.precision, graded.recall) == (0.5, 0.5) and graded.f1 == pytest.approx(0.5)
    # Three answered, both golds among them: P = 2/3, R = 1, F1 = 2PR/(P+R) = 0.8.
    graded = grade("Final Answer: [abcd, efgh, uvwx]", ("abcd", "efgh"))
    assert graded.precision == pytest.approx(2 / 3) and graded.recall == 1.0
    assert graded.f1 == pytest.approx(0.8)


def test_the_first_item_is_read_without_the_line_prefix() -> None:
    # The card's snippet strips "[]" off the whole match, leaving "Final Answer: [abcd" as the
    # first item; read literally, a perfect answer would score 0.5. The list inside is read.
    parsed = parse_final_answer("Final Answer: [abcd, efgh]")
    assert parsed.nodes == ("abcd", "efgh")
    assert grade("Final Answer: [abcd, efgh]", ("abcd", "efgh")).f1 == 1.0


def test_the_list_is_matched_greedily_to_the_last_bracket_as_the_card_does() -> None:
    assert parse_final_answer("Final Answer: [a] or [b]").nodes == ("a] or [b",)


def test_set_scores_of_empty_sets() -> None:
    assert set_scores(set(), set()) == (1.0, 1.0, 1.0)
    assert set_scores({"a"}, set()) == (0.0, 0.0, 0.0)
    assert set_scores(set(), {"a"}) == (0.0, 0.0, 0.0)


# The card's code at the pinned revision (post 2026-02-27), written out as an independent oracle:
# `get_list` and the grading lines of "Extraction and Grading", literally.
def _card_get_list(response: str) -> tuple[list[str], bool]:
    import re

    line = response.split("\n")[-1]
    if "Final Answer:" not in line:
        return [], True
    list_part = re.search(r"Final Answer: ?\[.*\]", line)
    if list_part:
        result_list = list_part.group(0).strip("[]").split(",")
        return [item.strip() for item in result_list if item.strip()], False
    return [], True


def _card_f1(sampled: list[str], truth: tuple[str, ...]) -> float:
    sampled_set, truth_set = set(sampled), set(truth)
    n_overlap = len(sampled_set & truth_set)
    n_golden, n_sampled = len(truth_set), len(sampled_set)
    recall = n_overlap / n_golden if n_golden > 0 else 0
    precision = n_overlap / n_sampled if n_sampled > 0 else 0
    return 2 * (recall * precision) / (recall + precision) if recall + precision > 0 else 1


def _repaired(items: list[str]) -> list[str]:
    # Deviation 1: the card's strip("[]") leaves "Final Answer: [" (or "Final Answer:[") on the
    # first item; the brackets' content is what it means to read.
    if items and items[0].startswith("Final Answer:"):
        first = items[0].removeprefix("Final Answer:").removeprefix(" ").removeprefix("[").strip()
        return [first, *items[1:]] if first else items[1:]
    return items


@pytest.mark.parametrize(("response", "gold", "f1", "failure"), CASES)
def test_the_grade_is_the_cards_code_but_for_its_two_stated_deviations(
    response: str, gold: tuple, f1: float, failure: str
) -> None:
    items, failed = _card_get_list(response)
    graded = grade(response, gold)
    assert graded.parsed.failed == failed
    if failed:
        assert graded.f1 == 0.0  # deviation 2: a failed parse scores 0 (the card's `else 1`: 1)
        return
    assert list(graded.parsed.nodes) == _repaired(items)
    card = _card_f1(_repaired(items), gold)
    if set(_repaired(items)) & set(gold) or not (set(_repaired(items)) or set(gold)):
        assert graded.f1 == pytest.approx(card)  # any overlap, or empty for empty: the card's F1
    else:
        assert (card, graded.f1) == (1, 0.0)  # deviation 2: no overlap is 0, not the `else 1`


def test_read_literally_the_card_scores_a_perfect_two_node_answer_half() -> None:
    # Why deviation 1 exists: the card's own snippet on a perfect answer.
    items, _ = _card_get_list("Final Answer: [abcd, efgh]")
    assert items == ["Final Answer: [abcd", "efgh"]
    assert _card_f1(items, ("abcd", "efgh")) == pytest.approx(0.5)
