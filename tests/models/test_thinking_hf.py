"""Budget forcing in the hf engine on the CPU path with a tiny random-weight model: it never
closes its thinking (it has never seen `</think>`), so every request is forced."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from longscope.models.thinking import THINKING_FORMATS
from longscope.types import GenerationConfig, Request

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

THINK = THINKING_FORMATS["think"]
PROMPT = "The quick brown fox jumps over the lazy dog. The secret number is 4821. " * 8


@pytest.fixture(scope="module")
def tiny() -> tuple:
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    return tiny_qwen2(vocab_size=len(tok), device="cpu"), tok


def _backend(tiny: tuple, **kwargs: Any) -> Any:
    from longscope.models.hf import HFBackend

    model, tok = tiny
    return HFBackend("tiny", model=model, tokenizer=tok, prompt_mode="completion", **kwargs)


def _request(thinking: int | None, answer: int = 6, prompt: str = PROMPT + "<think>") -> Request:
    config = GenerationConfig(max_tokens=answer, temperature=0.0, thinking_budget=thinking)
    return Request("s", 0, "completion", prompt=prompt, config=config)


def _forced_ids(tok: Any) -> list[int]:
    return list(tok.encode(THINK.forced, add_special_tokens=False))


@pytest.mark.parametrize("graph", [True, False], ids=["static", "eager"])
def test_forcing_feeds_the_close_from_the_cache_and_answers_within_budget(
    tiny: tuple, graph: bool
) -> None:
    _, tok = tiny
    backend = _backend(tiny, cuda_graph=graph)
    gen = asyncio.run(backend.generate(_request(thinking=10)))
    use = gen.budget
    assert use is not None and use.forced and use.thinking_tokens == 10
    assert use.answer_tokens <= 6 and gen.completion_tokens == 10 + use.answer_tokens
    assert gen.status == ("length" if use.answer_cut else "ok")
    assert gen.reasoning and "Final Answer" not in gen.text
    # What a fresh forward pass over prompt + thinking + forced close writes is the answer: the
    # engine went on from its cache exactly as if it had read all of that as a prompt.
    model, _ = tiny
    request = _request(thinking=10)
    prompt = backend.encode_request(request)
    head = torch.tensor([prompt])
    out = model.generate(head, max_new_tokens=10, do_sample=False, eos_token_id=2, pad_token_id=0)
    thought = out[0, head.shape[1] :].tolist()
    assert len(thought) == 10 and gen.reasoning == tok.decode(thought).strip()
    ids = torch.tensor([prompt + thought + _forced_ids(tok)])
    out = model.generate(ids, max_new_tokens=6, do_sample=False, eos_token_id=2, pad_token_id=0)
    expected = [t for t in out[0, ids.shape[1] :].tolist() if t != 2]
    assert gen.text == tok.decode(expected, skip_special_tokens=False).strip()
    steps = backend.engine.last_decode.get("steps")
    if not graph:  # eager: one forward call per token decoded after the single prefill
        assert steps is not None and steps <= 10 + len(_forced_ids(tok)) + 6


def test_batched_budgeted_and_plain_requests_decode_together(tiny: tuple) -> None:
    backend = _backend(tiny)
    requests = [_request(thinking=8), _request(None, answer=12), _request(thinking=4, answer=3)]
    gens = asyncio.run(backend.generate_group(requests))
    alone = [asyncio.run(backend.generate(r)) for r in requests]
    assert [g.text for g in gens] == [g.text for g in alone]
    assert gens[1].budget is None
    assert gens[0].budget is not None and gens[0].budget.thinking_tokens == 8
    assert gens[2].budget is not None and gens[2].budget.answer_tokens <= 3


def test_a_request_the_prompt_does_not_open_may_answer_without_thinking(tiny: tuple) -> None:
    backend = _backend(tiny)
    gen = asyncio.run(backend.generate(_request(thinking=8, prompt=PROMPT)))
    use = gen.budget
    # The random model writes no `<think>` first: what it writes is its answer, within the
    # whole output budget (thinking 8 + answer 6).
    assert use is not None and not use.forced and use.thinking_tokens == 0
    assert use.answer_tokens == 14 and gen.status == "length" and gen.reasoning == ""


def test_without_a_budget_an_unclosed_thought_the_prompt_opened_is_no_answer(tiny: tuple) -> None:
    backend = _backend(tiny)
    gen = asyncio.run(backend.generate(_request(None, answer=8)))
    assert gen.status == "length" and gen.text == "" and gen.reasoning and gen.budget is None
    plain = asyncio.run(backend.generate(_request(None, answer=8, prompt=PROMPT)))
    assert plain.text and not plain.reasoning
