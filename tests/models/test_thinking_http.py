"""A thinking budget over HTTP: the fault server's protocol (what is sent, what comes back), and
llama.cpp's real server (llama-cpp-python's, on 127.0.0.1) with the embedded instruct model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longscope.models.openai_api import OpenAIBackend
from longscope.models.thinking import THINKING_FORMATS
from longscope.types import GenerationConfig, Message, Request

from .fault_server import FaultServer, completion_body

THINK = THINKING_FORMATS["think"]


def _backend(server: FaultServer, **kwargs: Any) -> OpenAIBackend:
    defaults = {"base_url": server.url, "max_retries": 1, "backoff_base_s": 0.01}
    return OpenAIBackend("m", **{**defaults, **kwargs})


def _chat(**config: Any) -> Request:
    return Request(
        "s", 0, "chat", messages=(Message("user", "hi"),),
        config=GenerationConfig(**{"max_tokens": 8, **config}),
    )  # fmt: skip


def _text_body(text: str, finish: str, completion_tokens: int) -> tuple[str, Any]:
    body = {
        "id": "x", "object": "text_completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens,
                  "total_tokens": 10 + completion_tokens},
    }  # fmt: skip
    return ("raw", (200, "application/json", json.dumps(body).encode()))


def _chat_body(content: str, finish: str, tokens: int, reasoning: str | None = None) -> Any:
    body = completion_body(content, reasoning=reasoning, finish=finish)
    body["usage"]["completion_tokens"] = tokens
    return ("raw", (200, "application/json", json.dumps(body).encode()))


async def test_thinking_that_runs_out_is_closed_by_a_continuation_request() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("<think>still going", "length", 32), _chat_body("42", "stop", 2)]
        )
        gen = await _backend(server).generate(_chat(thinking_budget=32))
    first, second = (r["body"] for r in server.requests)
    assert first["max_tokens"] == 32 and "continue_final_message" not in first
    # The second goes on from what the model wrote, closed by the family's forced text.
    assert second["max_tokens"] == 8
    assert second["messages"][-1] == {
        "role": "assistant", "content": "<think>still going" + THINK.forced,
    }  # fmt: skip
    assert second["continue_final_message"] is True and second["add_generation_prompt"] is False
    assert (gen.text, gen.reasoning, gen.status) == ("42", "still going", "ok")
    use = gen.budget
    assert use is not None and (use.thinking_tokens, use.forced, use.answer_tokens) == (32, True, 2)
    assert not use.answer_cut and gen.completion_tokens == 34


@pytest.mark.parametrize("closed", [False, True])
async def test_thinking_reopened_after_the_forced_close_is_never_the_answer(closed: bool) -> None:
    again = "<think>wait, let me reconsider everything" + ("</think> 43" if closed else "")
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("<think>still going", "length", 32), _chat_body(f"42\n{again}", "stop", 9)]
        )
        gen = await _backend(server).generate(_chat(thinking_budget=32))
    assert gen.text == ("42\n43" if closed else "42")
    assert gen.reasoning == "still going\nwait, let me reconsider everything"


async def test_thinking_reopened_after_the_models_own_close_is_never_the_answer() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("<think>a</think>The ans", "length", 12),
             _chat_body("wer<think>no, hmm", "length", 8)]
        )  # fmt: skip
        gen = await _backend(server).generate(_chat(thinking_budget=12))
    assert (gen.text, gen.reasoning) == ("The answer", "a\nno, hmm")


async def test_without_a_budget_reopened_thinking_is_never_the_answer() -> None:
    with FaultServer() as server:
        server.script.append(_chat_body("<think>a</think>b\n<think>c", "stop", 5))
        gen = await _backend(server).generate(_chat())
    assert (gen.text, gen.reasoning) == ("b", "a\nc")


async def test_a_continued_answer_times_both_requests() -> None:
    # Each request takes at least 0.15 s at the server: the answer's latency spans both, not only
    # the continuation (and is never left at zero).
    with FaultServer(latency_s=0.15) as server:
        server.script.extend(
            [_chat_body("<think>still going", "length", 32), _chat_body("42", "stop", 2)]
        )
        gen = await _backend(server).generate(_chat(thinking_budget=32))
    assert len(server.requests) == 2 and gen.text == "42"
    assert 0.3 <= gen.latency_s < 5


async def test_a_server_reasoning_parser_is_rebuilt_into_the_continuation() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("", "length", 16, reasoning="hmm"), _chat_body("7", "length", 8)]
        )
        gen = await _backend(server).generate(_chat(thinking_budget=16))
    assert server.requests[1]["body"]["messages"][-1]["content"] == "<think>\nhmm" + THINK.forced
    assert gen.status == "length" and gen.budget is not None and gen.budget.answer_cut


async def test_an_answer_cut_by_the_thinking_budget_goes_on_within_its_own() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_text_body("<think>ok</think>The ans", "length", 12), _text_body("wer", "stop", 1)]
        )
        backend = _backend(server, prompt_mode="completion")
        request = Request("s", 0, "completion", prompt="Q: x\nA:",
                          config=GenerationConfig(max_tokens=8, thinking_budget=12))  # fmt: skip
        gen = await backend.generate(request)
    second = server.requests[1]["body"]
    assert second["prompt"] == "Q: x\nA:<think>ok</think>The ans"
    assert gen.text == "The answer" and gen.reasoning == "ok"
    use = gen.budget
    assert use is not None and not use.forced and use.answer_tokens <= 8


async def test_an_answer_within_the_thinking_budget_needs_one_request() -> None:
    with FaultServer() as server:
        server.script.append(_chat_body("<think>a</think>b", "stop", 5))
        gen = await _backend(server).generate(_chat(thinking_budget=64))
    assert len(server.requests) == 1 and (gen.text, gen.reasoning) == ("b", "a")
    assert gen.budget is not None and not gen.budget.forced


@pytest.mark.parametrize(
    ("via", "field", "value"),
    [("vllm", "thinking_token_budget", 24), ("sglang", "custom_params", {"thinking_budget": 24})],
)
async def test_a_server_budget_parameter_is_sent_once(via: str, field: str, value: Any) -> None:
    with FaultServer() as server:
        server.script.append(_chat_body("42", "stop", 30, reasoning="x " * 40))
        gen = await _backend(server, thinking_via=via).generate(_chat(thinking_budget=24))
    (sent,) = (r["body"] for r in server.requests)
    assert sent[field] == value and sent["max_tokens"] == 24 + 8
    assert gen.text == "42" and gen.budget is not None and gen.budget.thinking_budget == 24


async def test_repeats_with_a_budget_are_not_sent_as_n() -> None:
    with FaultServer() as server:
        server.script.extend([_chat_body("<think>a</think>b", "stop", 5)] * 2)
        backend = _backend(server)
        requests = [_chat(thinking_budget=64), _chat(thinking_budget=64)]
        gens = await backend.generate_group(requests)
    assert len(gens) == 2 and all("n" not in r["body"] for r in server.requests)


# --- llama.cpp's real server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def smol_server(tmp_path_factory: pytest.TempPathFactory):
    from longscope.models.registry import resolve_model_path

    from ..llama_server import start_server, stop, wait_ready

    log = tmp_path_factory.mktemp("think-server") / "server.log"
    proc, url = start_server(resolve_model_path("smollm2-135m"), log, n_ctx=2048, alias="smol")
    try:
        wait_ready(proc, url, log)
        yield url
    finally:
        stop(proc)


TEMPLATE = (Path(__file__).parent.parent / "fixtures" / "think_chatml.jinja").read_text()


@pytest.mark.model
async def test_llama_cpp_server_forced_close_and_answer(smol_server: str) -> None:
    import jinja2

    prompt = jinja2.Template(TEMPLATE).render(
        messages=[{"role": "user", "content": "Name three colours of the rainbow."}],
        add_generation_prompt=True,
    )
    backend = OpenAIBackend(
        "smol", base_url=smol_server, prompt_mode="completion", context_length=2048
    )
    request = Request("s", 0, "completion", prompt=prompt,
                      config=GenerationConfig(max_tokens=6, temperature=0.0, thinking_budget=5,
                                              stop=("<|im_end|>",)))  # fmt: skip
    gen = await backend.generate(request)
    await backend.aclose()
    use = gen.budget
    assert use is not None and use.forced and use.thinking_tokens == 5
    assert gen.reasoning and gen.status in ("ok", "length")
    assert 0 < use.answer_tokens <= 6 and use.answer_cut == (gen.status == "length")


async def test_a_model_that_does_not_think_answers_within_the_whole_output_budget() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("Once upon", "length", 12), _chat_body(" a time", "length", 8)]
        )
        gen = await _backend(server).generate(_chat(thinking_budget=12))
    second = server.requests[1]["body"]
    assert second["messages"][-1]["content"] == "Once upon"
    use = gen.budget
    assert use is not None and not use.forced and use.thinking_tokens == 0
    # All 12 tokens of the first answer were answer: 8 of the whole 20 are left.
    assert second["max_tokens"] == 8 and use.answer_tokens == 12 + 8
    assert gen.text == "Once upon a time" and gen.status == "length" and use.answer_cut


async def test_without_a_budget_a_thought_the_prompt_opened_and_never_closed_is_no_answer() -> None:
    with FaultServer() as server:
        server.script.extend(
            [_text_body("still thinking", "length", 8), _text_body("a</think>b", "stop", 4)]
        )
        backend = _backend(server, prompt_mode="completion")
        config = GenerationConfig(max_tokens=8)
        request = Request("s", 0, "completion", prompt="Q?<think>", config=config)
        unclosed = await backend.generate(request)
        closed = await backend.generate(request)
    assert (unclosed.text, unclosed.reasoning, unclosed.status) == ("", "still thinking", "length")
    assert (closed.text, closed.reasoning) == ("b", "a")


@pytest.mark.model
async def test_llama_cpp_server_continues_a_chat_through_the_rendered_template(
    smol_server: str,
) -> None:
    # llama-cpp-python's server renders only the GGUF's own template (no --jinja, no template
    # file): the first request is a chat; DeepSeek-R1's template drops past thinking, so the
    # forced continuation goes to /v1/completions as that template renders it, to the real server.
    template = Path(__file__).parent.parent / "fixtures" / "chat_templates"
    backend = OpenAIBackend.from_options(
        "smol",
        {"chat_template": str(template / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"),
         "thinking_opened": True, "context_length": 2048},
        base_url=smol_server,
    )  # fmt: skip
    request = Request("s", 0, "chat", messages=(Message("user", "Name a colour."),),
                      config=GenerationConfig(max_tokens=6, temperature=0.0,
                                              thinking_budget=4))  # fmt: skip
    gen = await backend.generate(request)
    await backend.aclose()
    use = gen.budget
    assert use is not None and use.forced and use.thinking_tokens == 4
    # An answer came back from the completion of the rendered prompt (or, had it been empty, an
    # error: never an empty answer scored).
    assert (gen.status in ("ok", "length") and gen.text) or gen.status == "error"
    assert gen.reasoning and "<think>" not in gen.text


@pytest.mark.parametrize("opened", [False, True])
async def test_an_empty_block_a_parser_set_apart_leaves_the_answer_within_the_budget(
    opened: bool,
) -> None:
    # vLLM's parser on `<think></think>\n\n42` answers reasoning "" and content "\n\n42" (issue 40.1):
    # the budget path must score "42", as the path without a budget does, whether or not the
    # template opened the thinking (a template that opens it used to turn the answer into thought).
    with FaultServer() as server:
        server.script.append(_chat_body("\n\n42", "stop", 5, reasoning=""))
        gen = await _backend(server, thinking_opened=opened).generate(_chat(thinking_budget=64))
        server.script.append(_chat_body("\n\n42", "stop", 5, reasoning=""))
        plain = await _backend(server, thinking_opened=opened).generate(_chat())
    assert (gen.text, gen.reasoning, gen.status) == ("42", "", "ok") == (
        plain.text, plain.reasoning, plain.status,
    )  # fmt: skip
    assert len(server.requests) == 2 and gen.budget is not None and not gen.budget.forced


async def test_an_empty_block_a_parser_set_apart_then_cut_goes_on_as_an_answer() -> None:
    # The same shape cut at the budget: the model closed its (empty) thinking and began its answer,
    # so the continuation goes on from the answer, never forcing a close on a thought that ended.
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("\n\nThe ans", "length", 16, reasoning=""), _chat_body("wer", "stop", 1)]
        )
        gen = await _backend(server, thinking_opened=True).generate(_chat(thinking_budget=16))
    continued = server.requests[1]["body"]["messages"][-1]["content"]
    assert THINK.forced not in continued and continued.endswith("The ans")
    assert (gen.text, gen.reasoning) == ("The answer", "")
    assert gen.budget is not None and not gen.budget.forced


@pytest.mark.parametrize("answered", [False, True])
async def test_a_harmony_parser_is_rebuilt_without_the_think_familys_newlines(
    answered: bool,
) -> None:
    # gpt-oss writes `<|channel|>analysis<|message|>hmm<|end|>` with no newline around its
    # thinking (harmony); a parser's split is rebuilt as written, never with `<think>`'s "\n".
    harmony = THINKING_FORMATS["gpt-oss"]
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("The ans" if answered else "", "length", 16, reasoning="hmm"),
             _chat_body("wer" if answered else "7", "stop", 2)]
        )  # fmt: skip
        backend = _backend(server, thinking="gpt-oss")
        gen = await backend.generate(_chat(thinking_budget=16))
    final = "<|start|>assistant<|channel|>final<|message|>"
    expected = (
        f"{harmony.open}hmm{harmony.close}{final}The ans" if answered
        else f"{harmony.open}hmm{harmony.forced}"
    )  # fmt: skip
    assert server.requests[1]["body"]["messages"][-1]["content"] == expected
    assert (gen.text, gen.reasoning) == (("The answer" if answered else "7"), "hmm")


async def test_a_continuation_whose_parser_sets_apart_nothing_is_all_answer() -> None:
    # The continuation goes on after the close (forced here); a parser that answers reasoning ""
    # for it must not leave the rebuilt empty block's close marker in the answer.
    with FaultServer() as server:
        server.script.extend(
            [_chat_body("", "length", 16, reasoning="hmm"),
             _chat_body("42", "stop", 2, reasoning="")]
        )  # fmt: skip
        gen = await _backend(server, thinking_opened=True).generate(_chat(thinking_budget=16))
    assert (gen.text, gen.reasoning) == ("42", "hmm")
