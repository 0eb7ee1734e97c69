"""Thinking budgets on real chat templates (issue 40.6): the forced continuation rendered with the
template the server uses (Qwen3, DeepSeek-R1, gpt-oss: tests/fixtures/chat_templates/, sources and
revisions in its README), sent as a chat continuation only where the template writes the
assistant's text whole, else as a completion of the rendered prompt; an empty answer after a
forced close is never scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longscope.errors import UsageError
from longscope.models.openai_api import OpenAIBackend
from longscope.models.thinking import THINKING_FORMATS, continuation, render_chat
from longscope.types import GenerationConfig, Message, Request

from .fault_server import FaultServer, completion_body, text_completion_body

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "chat_templates"
QWEN3 = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
R1_PATH = TEMPLATES / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
R1 = R1_PATH.read_text(encoding="utf-8")
GPT_OSS = (TEMPLATES / "openai-gpt-oss-120b.jinja").read_text(encoding="utf-8")
ASKED = [{"role": "user", "content": "What is 6 x 7?"}]
THOUGHT = "six sevens are forty-two"


def _prefix(fmt_name: str) -> str:
    fmt = THINKING_FORMATS[fmt_name]
    return f"{fmt.open}\n{THOUGHT}{fmt.forced}"


def test_qwen3_writes_the_text_back_whole_so_the_turn_is_continued_in_chat() -> None:
    for name in ("qwen3", "think"):
        prefix = _prefix(name)
        rendered = render_chat(QWEN3, [*ASKED, {"role": "assistant", "content": prefix}],
                               add_generation_prompt=False)  # fmt: skip
        # The template split the message at </think> and wrote it back: the cut a server makes
        # after the final message's text finds it.
        assert prefix.strip() in rendered and THOUGHT in rendered
        assert continuation(QWEN3, ASKED, prefix, THINKING_FORMATS[name]).mode == "chat"


def test_qwen3_reformatting_the_thinking_sends_the_rendered_prompt() -> None:
    # The model wrote a blank line after <think>: Qwen3 strips it, the text is no longer whole.
    prefix = "<think>\n\n" + THOUGHT + THINKING_FORMATS["qwen3"].forced
    plan = continuation(QWEN3, ASKED, prefix, THINKING_FORMATS["qwen3"])
    assert plan.mode == "completion"
    assert (
        plan.prompt
        == "<|im_start|>user\nWhat is 6 x 7?<|im_end|>\n<|im_start|>assistant\n" + prefix
    )


def test_deepseek_r1_drops_the_thinking_so_the_rendered_prompt_is_completed() -> None:
    prefix = _prefix("think")
    rendered = render_chat(R1, [*ASKED, {"role": "assistant", "content": prefix}],
                           add_generation_prompt=False)  # fmt: skip
    assert THOUGHT not in rendered and rendered.endswith("Final Answer: <｜end▁of▁sentence｜>")
    plan = continuation(R1, ASKED, prefix, THINKING_FORMATS["think"])
    assert plan.mode == "completion" and "does not write the assistant's text whole" in plan.reason
    # The generation prompt opens the thinking itself: it goes on inside it, never opened twice.
    assert plan.prompt == (
        "<｜User｜>What is 6 x 7?<｜Assistant｜><think>\n"
        + THOUGHT
        + THINKING_FORMATS["think"].forced
    )


def test_gpt_oss_refuses_channel_markers_so_the_rendered_prompt_is_completed() -> None:
    fmt = THINKING_FORMATS["gpt-oss"]
    prefix = fmt.open + THOUGHT + fmt.forced
    plan = continuation(GPT_OSS, ASKED, prefix, fmt)
    assert plan.mode == "completion" and "refuses it (You have passed a message containing" in (
        plan.reason
    )
    assert plan.prompt.startswith("<|start|>system<|message|>You are ChatGPT")
    assert plan.prompt.endswith(
        "<|start|>user<|message|>What is 6 x 7?<|end|><|start|>assistant" + prefix
    )


def test_a_template_that_cannot_render_the_conversation_is_one_line() -> None:
    broken = "{{ raise_exception('only one user turn, please') }}"
    with pytest.raises(UsageError) as refused:
        continuation(broken, ASKED, _prefix("think"), THINKING_FORMATS["think"])
    assert str(refused.value) == (
        "-M chat_template: the template cannot render the conversation (only one user turn, "
        "please): give the template the server uses"
    )


# --- the backend: which endpoint the continuation goes to -----------------------------------------


def _raw(body: dict[str, Any], tokens: int) -> tuple[str, Any]:
    body["usage"]["completion_tokens"] = tokens
    return ("raw", (200, "application/json", json.dumps(body).encode()))


def _chat(**config: Any) -> Request:
    return Request("s", 0, "chat", messages=(Message("user", "What is 6 x 7?"),),
                   config=GenerationConfig(**{"max_tokens": 8, **config}))  # fmt: skip


async def test_a_deepseek_continuation_goes_to_completions_with_the_rendered_prompt() -> None:
    first = completion_body(THOUGHT, finish="length")  # the template opened <think> itself
    with FaultServer() as server:
        server.script.extend([_raw(first, 16), _raw(text_completion_body(" 42"), 2)])
        backend = OpenAIBackend.from_options(
            "m", {"chat_template": str(R1_PATH), "thinking_opened": True},
            base_url=server.url, max_retries=0,
        )  # fmt: skip
        gen = await backend.generate(_chat(thinking_budget=16))
    first_sent, second_sent = server.requests
    assert first_sent["path"] == "/v1/chat/completions"
    assert second_sent["path"] == "/v1/completions" and "messages" not in second_sent["body"]
    assert second_sent["body"]["prompt"] == (
        "<｜User｜>What is 6 x 7?<｜Assistant｜><think>\n"
        + THOUGHT
        + THINKING_FORMATS["think"].forced
    )
    assert (gen.text, gen.reasoning, gen.status) == ("42", THOUGHT, "ok")
    assert gen.budget is not None and gen.budget.forced


async def test_an_empty_answer_after_a_forced_close_is_an_error_not_a_score() -> None:
    # No template given: the chat continuation goes out, and the server (whose template dropped
    # the thinking and closed the turn) answers nothing.
    with FaultServer() as server:
        server.script.extend(
            [_raw(completion_body("<think>" + THOUGHT, finish="length"), 16),
             _raw(completion_body(""), 0)]
        )  # fmt: skip
        gen = await OpenAIBackend("m", base_url=server.url, max_retries=0).generate(
            _chat(thinking_budget=16)
        )
    assert server.requests[1]["body"]["continue_final_message"] is True
    assert gen.status == "error" and gen.text == ""
    assert gen.error.startswith("the continuation after the forced close answered nothing")


def test_an_unreadable_template_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"-M chat_template=.*cannot read it as a UTF-8 Jinja"):
        OpenAIBackend.from_options("m", {"chat_template": str(tmp_path / "none.jinja")},
                                   base_url="http://127.0.0.1:9/v1")  # fmt: skip
