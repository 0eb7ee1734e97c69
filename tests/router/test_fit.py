"""The orchestrator API: `fit` decides without a model, `route` sends through the same decision;
the runnable example in docs/router-api.md runs here with the embedded model."""

import json
import re
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.router import fit
from longscope.router.retrieve import GAP
from longscope.text.filler import filler_sentences
from longscope.types import Message

ROOT = Path(__file__).resolve().parents[2]


def _document(count: int, needle: str = "") -> str:
    import itertools

    sentences = list(itertools.islice(filler_sentences("en", 9), count))
    if needle:
        sentences.insert(count // 2, needle)
    return " ".join(sentences)


def test_a_task_that_fits_passes_as_it_is(qwen_tokenizer) -> None:
    messages = [Message("system", "Be brief."), Message("user", "What is 2 + 2?")]
    decision = fit(messages, 4096, qwen_tokenizer, max_tokens=64)
    assert decision.action == "pass" and decision.parts == (tuple(messages),)
    assert decision.budget == 4096 - 64 and decision.prompt_tokens < 40
    assert not decision.combine_answers


def test_a_long_task_naming_a_key_is_retrieved_in_its_own_message(qwen_tokenizer) -> None:
    document = _document(900, "The locker code for amber-falcon is 8812.")
    messages = [
        {"role": "system", "content": "Answer from the document."},
        {"role": "user", "content": document},
        {"role": "user", "content": "What is the locker code for amber-falcon?"},
    ]
    decision = fit(messages, 2048, qwen_tokenizer, max_tokens=32)
    assert decision.prompt_tokens > 4 * 2048 and decision.action == "retrieve"
    ((system, sent, question),) = decision.parts
    assert system.content == "Answer from the document." and question.content.endswith(
        "amber-falcon?"
    )
    assert "8812" in sent.content and GAP in sent.content
    (tokens,) = decision.part_tokens
    assert tokens <= decision.budget
    assert "amber" in decision.plan["combination"]["named"]
    assert "retrieve" in decision.reason and str(decision.prompt_tokens) in decision.reason


def test_an_aggregation_task_is_split_and_its_answers_need_combining(qwen_tokenizer) -> None:
    document = _document(900)
    prompt = f"Document:\n{document}\n\nQuestion: How many sentences mention rain?"
    decision = fit([Message("user", prompt)], 2048, qwen_tokenizer, max_tokens=32, context=document)
    assert decision.action == "split" and decision.combine_answers
    assert len(decision.parts) == len(decision.part_tokens) >= 4
    assert all(t <= decision.budget for t in decision.part_tokens)
    assert all(p[0].content.startswith("Document:\n") for p in decision.parts)
    assert all(p[0].content.endswith("How many sentences mention rain?") for p in decision.parts)


def test_truncate_when_asked_and_refuse_when_the_question_fills_the_budget(qwen_tokenizer) -> None:
    document = _document(900)
    long_question = "Why? " * 400
    cut = fit([Message("user", document + long_question)], 4096, qwen_tokenizer,
              strategy="truncate", context=document)  # fmt: skip
    assert cut.action == "truncate" and cut.part_tokens[0] <= cut.budget
    refused = fit([Message("user", document + long_question)], 700, qwen_tokenizer,
                  max_tokens=64, context=document)  # fmt: skip
    assert refused.action == "refuse" and refused.parts == () and "budget" in refused.reason


def test_profiles_and_bad_input_are_one_line(qwen_tokenizer, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"model": "m", "measured": [
        {"suite": "x", "effective_length": None, "relative_effective_length": 3072}]}))  # fmt: skip
    decision = fit(
        [Message("user", "hi")], str(path), qwen_tokenizer, basis="relative", max_tokens=72
    )
    assert decision.budget == 3000
    with pytest.raises(UsageError, match="no absolute effective length"):
        fit([Message("user", "hi")], str(path), qwen_tokenizer)
    with pytest.raises(UsageError, match="lacks 'content'"):
        fit([{"role": "user"}], 4096, qwen_tokenizer)
    with pytest.raises(UsageError, match="in none of the messages"):
        fit([Message("user", "hi")], 4096, qwen_tokenizer, context="absent")


@pytest.mark.model
def test_the_documented_agent_example_runs(monkeypatch, capsys) -> None:
    text = (ROOT / "docs" / "router-api.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(code, "docs/router-api.md", "exec"), scope)
    (small, small_generation), (large, large_generation) = scope["results"]
    assert small.action == "pass" and small_generation.route["decision"] == "pass"
    assert small_generation.status in ("ok", "length")
    assert large.action == "retrieve" and large.prompt_tokens > large.budget == 4096 - 16
    plan = large_generation.route
    assert plan["decision"] == "retrieve" and plan["combination"]["choice"] == "retrieve"
    document = scope["document"]
    spans = [kept["chars"] for kept in plan["retrieval"]["kept"]]
    assert any("4417" in document[a:b] for a, b in spans)
    assert large_generation.status in ("ok", "length") and large_generation.prompt_tokens <= 4080
    printed = capsys.readouterr().out
    assert "pass " in printed and "retrieve " in printed
