"""NoLiMa prompts, character for character against the authors' template applied by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from longscope.suites.nolima.prompts import (
    BASE_SEED,
    DEFAULT_SYSTEM_PROMPT,
    LENGTHS,
    build_prompt,
    depth_grid,
    draw_characters,
    expand,
    instantiate,
    iter_cells,
    render,
    tokenize_book,
)
from longscope.suites.nolima.schema import parse_needle_set
from longscope.types import Message

from .rows import CharTokenizer, book, experiment, plain_experiment


def load(*rows: dict) -> tuple:
    return parse_needle_set(json.dumps(list(rows)), "needle_set.json")


def by_hand(haystack: str, question: str) -> str:
    """run_tests.py's DEFAULT_TASK_TEMPLATE, written out here with the values in place."""
    return (
        "You will answer a question based on the following book snippet:\n\n"
        + haystack
        + "\n\nUse the information provided in the book snippet to answer the question. "
        "Your answer should be short and based on either explicitly stated facts or strong, "
        "logical inferences.\n\nQuestion: "
        + question
        + "\n\n Return only the final answer with no additional explanation or reasoning."
    )


def test_expand_follows_run_tests_order_names_and_seeds() -> None:
    (row,) = load(experiment())
    cases = expand(row)
    assert [c.test_name for c in cases] == [
        "0137_T01_onehop",
        "0137_T02_onehop",
        "0137_T01_twohop",
        "0137_T02_twohop",
    ]
    first = cases[0]
    assert first.needle == "Long ago, {CHAR} painted a mural beside the Glass Harbour."
    assert first.question == "Which painter worked in Vellmar?"
    assert cases[3].question == "Which painter worked in the Low Fens?"
    assert all(c.seed == BASE_SEED + 137 for c in cases)
    assert first.gold_answers == ()


def test_only_the_last_placeholder_of_a_question_is_filled() -> None:
    # run_tests.py replaces on the original question each time (`question.replace`), so a
    # question with two placeholders keeps the first one: reproduced, not fixed.
    (row,) = load(experiment(questions={"onehop": "Who painted near {1} in {2}?"}))
    case = expand(row)[0]
    assert case.question == "Who painted near {1} in Vellmar?"
    # The needle's replacements accumulate.
    (row,) = load(experiment(needle="{CHAR} saw {1} and {2}."))
    assert expand(row)[0].needle == "{CHAR} saw the Glass Harbour and Vellmar."


def test_default_template_with_the_default_system_prompt() -> None:
    (row,) = load(experiment())
    case = expand(row)[0]
    instance = instantiate(case, "Bram")
    haystack = "A line of the book.\nAnother {brace} line.\n"
    prompt = render(case, instance, haystack, "chat")
    assert prompt.messages == (
        Message("system", "You are a helpful assistant"),
        Message("user", by_hand(haystack, "Which painter worked in Vellmar?")),
    )
    assert DEFAULT_SYSTEM_PROMPT == "You are a helpful assistant"
    assert instance.needle == "Long ago, Bram painted a mural beside the Glass Harbour."
    assert instance.gold_answers == ("Bram",)


def test_needle_set_system_mode_sends_the_rows_prompt_or_none() -> None:
    (row,) = load(plain_experiment())
    case = expand(row)[0]
    instance = instantiate(case, None)
    user = "Read this:\nHAY\nNow answer: What did the lantern maker hide below ground?"
    prompt = render(case, instance, "HAY", "chat", system="needle_set")
    assert prompt.messages == (Message("system", "Answer briefly."), Message("user", user))
    assert instance.gold_answers == ("brass owl", "owl")
    (row,) = load(experiment())
    bare = render(expand(row)[0], instantiate(expand(row)[0], "Orla"), "H", "chat", "needle_set")
    assert [m.role for m in bare.messages] == ["user"]


def test_completion_mode_sends_the_filled_template_alone() -> None:
    (row,) = load(experiment())
    case = expand(row)[0]
    prompt = render(case, instantiate(case, "Orla"), "HAY", "completion")
    assert prompt.prompt == by_hand("HAY", "Which painter worked in Vellmar?")
    assert prompt.messages == ()


def test_a_char_in_the_question_is_filled_with_the_drawn_name() -> None:
    (row,) = load(experiment(questions={"onehop": "Did {CHAR} ever visit {2}?"}))
    instance = instantiate(expand(row)[0], "Idris")
    assert instance.question == "Did Idris ever visit Vellmar?"
    with pytest.raises(ValueError, match="a character is needed"):
        instantiate(expand(row)[0], None)


def test_depth_grid_is_linspace_0_100_26() -> None:
    grid = depth_grid()
    assert len(grid) == 26
    assert grid == tuple((4.0 * k) / 100 for k in range(26))
    assert grid[0] == 0.0 and grid[13] == 0.52 and grid[-1] == 1.0


def test_lengths_are_the_run_configs_decimal_thousands() -> None:
    assert LENGTHS == (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)


def test_characters_are_drawn_as_numpys_seeded_global_generator_draws_them() -> None:
    names = ("Orla", "Bram", "Tamsin", "Idris")
    saved = np.random.get_state()
    try:
        np.random.seed(BASE_SEED + 137 + 2)  # async_evaluate.evaluate(): once per (test, book)
        expected = tuple(str(np.random.choice(list(names))) for _ in range(26))
    finally:
        np.random.set_state(saved)
    assert draw_characters(names, BASE_SEED + 137 + 2, 26) == expected
    assert len(set(expected)) > 1  # the draw changes with depth


def test_build_prompt_draws_the_books_character_for_the_depth() -> None:
    (row,) = load(experiment())
    case = expand(row)[1]
    tokenizer = CharTokenizer()
    text = book(lines=40)
    names = draw_characters(case.character_set, case.seed + 3, 26)
    prompt, instance, placement = build_prompt(
        case, tokenize_book(text, tokenizer), 3, 13, 400, tokenizer, "chat"
    )
    assert instance.character == names[13]
    assert placement.depth == 0.52
    needle = f"Long ago, {names[13]} painted a mural beside the Salt Bridge."
    assert needle in placement.text
    assert prompt.messages[-1].content == by_hand(
        placement.text, "Which painter worked in Kessrow?"
    )


def test_the_grid_is_tests_times_books_times_26_depths_per_length() -> None:
    rows = load(
        experiment(questions={**experiment()["questions"], "direct": "Who is by {1}?"}),
        plain_experiment(),
    )
    cases = [case for row in rows for case in expand(row)]
    assert len(cases) == 7  # 3 question types x 2 tests + 1
    cells = list(iter_cells(cases, books=5, lengths=(250, 1000)))
    # `direct` tests are left out of the published numbers, so not sent: 5 tests remain.
    assert len(cells) == 2 * 5 * 5 * 26
    assert not any(c.case.question_type == "direct" for c in cells)
    assert len(list(iter_cells(cases, books=5, lengths=(250,), include_direct=True))) == 7 * 5 * 26
    # The authors' order: lengths, then books, then tests, then depths.
    assert [c.depth_index for c in cells[:27]] == [*range(26), 0]
    assert cells[26].case.test_name == "0137_T02_onehop"
    assert cells[5 * 26].book_index == 1
    assert cells[0].sample_id == "0137_T01_onehop/book1/250/d000"
    assert cells[13].sample_id == "0137_T01_onehop/book1/250/d052"
    assert len({c.sample_id for c in cells}) == len(cells)
