"""One MRCR answer scores the same whether its thinking arrives inline or through a server's
reasoning parser (issue 40.1): the scored text is the model's visible answer on every server.

Constructed bodies cover the shapes servers send (vLLM's and SGLang's parsers, llama.cpp's
`--reasoning-format`, hosted APIs without thinking); the end-to-end test runs `longscope run mrcr`
twice against llama.cpp's real server (llama-cpp-python's, SmolLM2 135M), once with the model's
output as it comes and once split the way vLLM's parser splits it (tests/models/parser_proxy.py).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from longscope.models.openai_api import parse_choices
from longscope.suites.mrcr.grading import grade

from ..cli_helper import longscope
from ..suites.mrcr.rows import mrcr_row, write_jsonl
from .parser_proxy import ParserProxy, parsed_like_vllm

PREFIX = "aYooSG8CQg"
GOLD = PREFIX + "This poem about tapirs, number 2, tells of tapirs."


def _body(content: str | None, **extra: Any) -> bytes:
    message = {"role": "assistant", "content": content, **extra}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps({"choices": [choice], "usage": {}}).encode()


@pytest.mark.parametrize("separator", ["\n\n", "\n", "", " \n"])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_inline_and_parsed_thinking_score_the_same(separator: str, field: str) -> None:
    output = f"<think>The 2nd poem.</think>{separator}{GOLD}"
    reasoning, content = parsed_like_vllm(output)
    inline = parse_choices(_body(output), "chat")[0]
    parsed = parse_choices(_body(content, **{field: reasoning}), "chat")[0]
    assert inline.text == parsed.text == GOLD
    assert inline.reasoning == parsed.reasoning == "The 2nd poem."
    # The answer is the gold itself: 1.0 both ways (a parser's leading "\n\n" scored 0 before).
    assert grade(parsed.text, GOLD, PREFIX).ratio == grade(inline.text, GOLD, PREFIX).ratio == 1.0


@pytest.mark.parametrize("thought", ["", "  ", "\n"])
def test_blank_thinking_is_thinking_in_both_shapes(thought: str) -> None:
    # llama.cpp's SmolLM2 wrote `<think>  </think>`: a parser hands back "  " as the reasoning.
    output = f"<think>{thought}</think>\n\n{GOLD}"
    reasoning, content = parsed_like_vllm(output)
    inline = parse_choices(_body(output), "chat")[0]
    parsed = parse_choices(_body(content, reasoning_content=reasoning), "chat")[0]
    assert (inline.text, inline.reasoning) == (parsed.text, parsed.reasoning) == (GOLD, "")


def test_an_empty_reasoning_field_still_says_thinking_was_set_apart() -> None:
    # vLLM's parser on `<think></think>\n\nANSWER` answers reasoning "" and content "\n\nANSWER".
    reasoning, content = parsed_like_vllm(f"<think></think>\n\n{GOLD}")
    assert reasoning == "" and content == f"\n\n{GOLD}"
    assert parse_choices(_body(content, reasoning_content=reasoning), "chat")[0].text == GOLD


def test_a_hosted_answer_without_thinking_is_scored_as_sent() -> None:
    # No thinking anywhere: the content is the answer exactly, leading space and all, as the
    # card's `grade` sees it (a leading space misses the random string: 0).
    assert parse_choices(_body(" " + GOLD), "chat")[0].text == " " + GOLD
    assert parse_choices(_body(GOLD, reasoning_content=None), "chat")[0].text == GOLD


def test_thinking_never_closed_is_no_answer_in_either_shape() -> None:
    output = "<think>The 2nd poem is " + GOLD
    reasoning, content = parsed_like_vllm(output)
    assert content is None
    assert parse_choices(_body(output), "chat")[0].text == ""
    assert parse_choices(_body(content, reasoning_content=reasoning), "chat")[0].text == ""


# --- llama.cpp's real server, behind a proxy that shows its output in both shapes ---------------

GRAMMAR = (
    'root ::= "<think>" [a-z] [a-z ]{1,10} "</think>\\n\\n" "'
    + PREFIX
    + 'This poem about " [a-z ]{1,12}'
)


@pytest.fixture(scope="module")
def smol_server(tmp_path_factory: pytest.TempPathFactory):
    from longscope.models.registry import resolve_model_path

    from ..llama_server import start_server, stop, wait_ready

    log = tmp_path_factory.mktemp("parser-server") / "server.log"
    proc, url = start_server(resolve_model_path("smollm2-135m"), log, n_ctx=8192, alias="smol")
    try:
        wait_ready(proc, url, log)
        yield url
    finally:
        stop(proc)


def _run(proxy: ParserProxy, data: Path, out: Path) -> tuple[str, str, float, list[str]]:
    done = longscope(
        "run", "mrcr", "--model", "openai/smol", "--base-url", proxy.url,
        "-M", "context_length=8192", "-S", f"data={data}", "--lengths", "4k", "-o", str(out),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    db = sqlite3.connect(out / "longscope.sqlite")
    text, reasoning = db.execute("SELECT text, reasoning FROM generations").fetchone()
    (value,) = db.execute("SELECT value FROM scores").fetchone()
    db.close()
    notes = json.loads((out / "summary.json").read_text())["longscope"]["notes"]
    return text, reasoning, value, notes


@pytest.mark.model
def test_one_model_output_scores_the_same_inline_and_through_a_parser(
    smol_server: str, tmp_path: Path
) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2, target=2, words=3, turns=2)])
    with ParserProxy(smol_server, GRAMMAR) as proxy:
        inline = _run(proxy, data, tmp_path / "inline")
        proxy.shape = "parser"
        parsed = _run(proxy, data, tmp_path / "parser")
    (output,) = (a["choices"][0]["message"]["content"] for a in proxy.answers.values())
    assert output.startswith("<think>") and "</think>\n\n" + PREFIX in output
    assert inline[:3] == parsed[:3]
    text, reasoning, value, notes = parsed
    assert text.startswith(PREFIX + "This poem about") and reasoning and "<think>" not in text
    row = mrcr_row(2, target=2, words=3, turns=2)
    assert value == pytest.approx(grade(text, row["answer"], PREFIX).ratio) and value > 0
    (note,) = [n for n in notes if n.startswith("scored text:")]
    assert "1 of 1 answers had thinking set apart" in note and "reasoning_content" in note
