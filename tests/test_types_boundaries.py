"""Identities that outlive a version: a run's id and stored hashes must not change, or resume
would redo (or mix up) everything stored by the previous release."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from longscope.types import GenerationConfig, Sample, stable_hash


def test_stable_hash_is_pinned() -> None:
    # sorted keys, compact separators, UTF-8 (not \\u escapes), str() for other objects
    assert stable_hash({"b": [1, "é"], "a": None}) == "f8f17faab95c0248"
    assert stable_hash({"b": [1, "é"], "a": None}, 8) == "f8f17faa"
    assert stable_hash({"a": None, "b": [1, "é"]}) == "f8f17faab95c0248"
    assert stable_hash({"when": Path("x")}) == "10490b4eed052070"
    assert len(stable_hash("x", 64)) == 64


def test_public_sample_drops_only_the_context() -> None:
    sample = Sample("i", "t", "en", "the long context", "q", ("g1", "g2"), 4096, {"k": 1})
    public = sample.public()
    expected = dataclasses.asdict(sample)
    del expected["context"]
    expected["gold"] = ["g1", "g2"]
    assert public == expected and "context" not in public
    assert isinstance(public["gold"], list) and public["meta"] == {"k": 1}


# --- a sample's output budget and counted prompt: what the runner sends and checks ---------------
def _sample(**fields: object) -> Sample:
    return Sample("i", "t", "en", "context", "q", ("g",), 4096, **fields)  # type: ignore[arg-type]


def test_output_budget_is_the_samples_own_else_the_suites() -> None:
    assert _sample(max_tokens=64).output_budget(200) == 64
    # a budget of 0 is a budget (not "unset"): the request must not fall back to 200 tokens
    assert _sample(max_tokens=0).output_budget(200) == 0
    assert _sample().output_budget(200) == 200
    # `meta` is the suite's own: a budget there (as suites kept it before the typed field) is
    # not read (issue 41: no legacy readers)
    assert _sample(meta={"max_tokens": 128}).output_budget(200) == 200


def test_counted_prompt_is_the_typed_count_else_0() -> None:
    assert _sample(prompt_tokens=3897).counted_prompt() == 3897
    assert _sample(prompt_tokens=1).counted_prompt() == 1
    assert _sample().counted_prompt() == 0
    assert _sample(meta={"prompt_tokens": 3896}).counted_prompt() == 0


def test_score_fraction_is_value_over_max_and_0_without_a_max() -> None:
    from longscope.types import Score

    assert Score(3.0, 5.0).fraction == 0.6
    # LongCtx's wrong-conclusion penalty stays negative
    assert Score(-5.0, 5.0).fraction == -1.0
    assert Score(1.0, 0.0).fraction == 0.0


def test_request_text_is_the_prompt_or_the_messages_one_per_line() -> None:
    from longscope.types import Message, Request

    assert Request("s", 0, "completion", prompt="P", messages=(Message("user", "M"),)).text == "P"
    chat = Request(
        "s", 0, "chat", prompt="P", messages=(Message("system", "a"), Message("user", "b"))
    )
    assert chat.text == "a\nb"


def test_the_default_answer_budget_is_200_tokens() -> None:
    # What every run gets without --max-tokens, and what the suites size their prompts for (the
    # embedded-model tests pass smaller budgets to save decoding time).
    assert GenerationConfig().max_tokens == 200
    assert GenerationConfig(thinking_budget=100).output_ceiling() == 300
