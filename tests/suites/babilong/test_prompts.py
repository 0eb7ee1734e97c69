"""BABILong's prompts against the authors' assembly (run_model_on_babilong.py + prompts.py@7a6efee).

The expected text is built here by hand, the way their `get_formatted_input` fills
`DEFAULT_TEMPLATE`, on rows built in the dataset's schema; one prompt is typed out in full.
"""

from __future__ import annotations

import itertools

import pytest

from longscope.errors import UsageError
from longscope.suites.babilong.prompts import (
    MAX_NEW_TOKENS,
    PROMPTS,
    PromptConfig,
    build_prompt,
)
from longscope.suites.babilong.schema import TASKS, Row

ROW = Row(
    input="\n  The hallway is south of the kitchen. It was {a} dark night.\nThe bedroom is north of "
    "the kitchen.  \n",
    question="What is the kitchen south of? ",
    target="bedroom",
)


def by_hand(instruction: str, examples: str, post_prompt: str, row: Row) -> str:
    """The authors' assembly: template filled, the context stripped, then the whole stripped."""
    text = (
        instruction
        + "\n\n"
        + examples
        + "\n\n"
        + post_prompt
        + "\n\n<context>\n"
        + row.input.strip()
        + "\n</context>\n\nQuestion: "
        + row.question
    )
    return text.strip()


QA4_TYPED = (
    "I will give you context with the facts about different people, their location and actions, "
    "hidden in some random text and a question. You need to answer the question based only on the "
    "information from the facts.\n\n"
    "<example>\nThe hallway is south of the kitchen. The bedroom is north of the kitchen. "
    "What is the kitchen south of?\nAnswer: bedroom\n</example>\n"
    "<example>\nThe garden is west of the bedroom. The bedroom is west of the kitchen. "
    "What is west of the bedroom?\nAnswer: garden\n</example>\n\n"
    "Your answer should contain only one word - location. Do not write anything else after that."
    "\n\n<context>\nThe hallway is south of the kitchen. It was {a} dark night.\nThe bedroom is "
    "north of the kitchen.\n</context>\n\nQuestion: What is the kitchen south of?"
)


def test_one_prompt_typed_out_in_full() -> None:
    built = build_prompt("qa4", ROW.input, ROW.question, PromptConfig(chat_template=False))
    assert built.text == QA4_TYPED
    assert built.mode == "completion"
    assert built.messages == ()


@pytest.mark.parametrize("task", TASKS)
def test_every_task_every_piece_choice_matches_the_authors_assembly(task: str) -> None:
    pieces = PROMPTS[task]
    for use_i, use_e, use_p in itertools.product((True, False), repeat=3):
        config = PromptConfig(instruction=use_i, examples=use_e, post_prompt=use_p)
        built = build_prompt(task, ROW.input, ROW.question, config)
        expected = by_hand(
            pieces.instruction if use_i else "",
            pieces.examples if use_e else "",
            pieces.post_prompt if use_p else "",
            ROW,
        )
        assert built.text == expected, (task, use_i, use_e, use_p)
        parts = built.parts
        assert parts.head + parts.context + parts.tail == built.text
        assert parts.context == ROW.input.strip()


def test_no_pieces_leaves_the_context_first() -> None:
    config = PromptConfig(instruction=False, examples=False, post_prompt=False)
    built = build_prompt("qa1", " Mary went to the office. ", "Where is Mary?", config)
    assert (
        built.text == "<context>\nMary went to the office.\n</context>\n\nQuestion: Where is Mary?"
    )
    assert built.parts.head == "<context>\n"


def test_without_examples_the_template_blank_lines_stay() -> None:
    config = PromptConfig(examples=False)
    built = build_prompt("qa6", "x", "Is John in the garden?", config)
    instruction, post = PROMPTS["qa6"].instruction, PROMPTS["qa6"].post_prompt
    assert built.text.startswith(instruction + "\n\n\n\n" + post + "\n\n<context>\nx\n")


def test_chat_mode_is_one_user_message_after_an_optional_system_message() -> None:
    plain = build_prompt("qa1", "ctx", "Where is Mary?", PromptConfig())
    assert plain.mode == "chat"
    assert [(m.role, m.content) for m in plain.messages] == [("user", plain.text)]
    system = build_prompt(
        "qa1", "ctx", "Where is Mary?", PromptConfig(system_prompt="You are a helpful assistant.")
    )
    assert [(m.role, m.content) for m in system.messages] == [
        ("system", "You are a helpful assistant."),
        ("user", plain.text),
    ]


def test_the_authors_quirks_are_kept() -> None:
    # Each fragment typed from babilong/prompts.py@7a6efee; fixing any would change the prompt.
    for task in ("qa10", "qa11", "qa12", "qa13", "qa14", "qa15", "qa16", "qa20"):
        assert PROMPTS[task].examples.endswith("</example>\n<context>\n"), task
    assert "a question.You need to answer" in PROMPTS["qa2"].instruction
    assert "Answer: yes\n</example><example>\n" in PROMPTS["qa17"].examples
    assert "bigger than the chocolate.The suitcase" in PROMPTS["qa18"].examples
    assert PROMPTS["qa1"].post_prompt == (
        "Always return your answer in the following format: The most recent location of "
        "\u2019person\u2019 is \u2019location\u2019. Do not write anything else after that."
    )
    assert PROMPTS["qa8"].examples.count("<example>") == 3
    assert "Answer: apple,milk\n" in PROMPTS["qa8"].examples


def test_config_names_are_the_authors_file_names() -> None:
    assert PromptConfig().name == (
        "instruction_yes_examples_yes_post_prompt_yes_chat_template_yes_system_prompt_no"
    )
    bare = PromptConfig(False, False, False, False, "")
    assert (
        bare.name == "instruction_no_examples_no_post_prompt_no_chat_template_no_system_prompt_no"
    )
    assert MAX_NEW_TOKENS == 20


def test_unknown_task_is_one_clear_line() -> None:
    with pytest.raises(UsageError, match="unknown BABILong task 'qa0'"):
        build_prompt("qa0", "c", "q", PromptConfig())
