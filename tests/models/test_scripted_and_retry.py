"""The scripted backend (answers by rule, latency, faults) and the one retry policy around any
backend: retried faults recover, final ones stay, the deadline bounds the retries."""

from __future__ import annotations

import time

import pytest

from longscope.errors import UsageError
from longscope.models.registry import create_backend
from longscope.models.retry import Retrying, RetryPolicy, with_retries
from longscope.models.scripted import Failure, ScriptedBackend, answers, every, from_pattern
from longscope.types import GenerationConfig, Request

from ..factories import request


def _request(text: str = "The key is K7.", timeout_s: float | None = None) -> Request:
    return request(prompt=text, timeout_s=timeout_s)


async def test_answers_by_rule_with_latency() -> None:
    backend = ScriptedBackend("r", answer=from_pattern(r"key is (\w+)"), latency_s=0.05)
    started = time.perf_counter()
    generation = await backend.generate(_request())
    assert generation.text == "K7" and generation.status == "ok"
    assert time.perf_counter() - started >= 0.05 and generation.latency_s >= 0.05
    rules = ScriptedBackend("r", answer=answers((r"door", "open"), default="?"))
    assert (await rules.generate(_request("the door"))).text == "open"
    assert (await rules.generate(_request("a wall"))).text == "?"
    # an answer past the output budget is cut, as a server cuts it
    long = ScriptedBackend("r", answer="word " * 50)
    cut = await long.generate(_request())
    assert cut.status == "length" and cut.completion_tokens == 8


async def test_faults_and_the_retry_policy() -> None:
    flaky = ScriptedBackend("r", answer="ok", fault=every(2))
    first, second = await flaky.generate(_request()), await flaky.generate(_request())
    assert (first.status, second.status) == ("ok", "error")
    assert "scripted fault on request 2" in second.error
    # every 2nd request fails: a retry of the failed one succeeds
    retried = Retrying(ScriptedBackend("r", answer="ok", fault=every(2)), RetryPolicy(3, 0.0))
    results = [await retried.generate(_request()) for _ in range(3)]
    assert [g.status for g in results] == ["ok", "ok", "ok"] and retried.retries_done == 2
    # always failing: the policy gives up after max_retries and says so
    down = Retrying(
        ScriptedBackend("r", fault=lambda _r, _n: Failure("error", "HTTP 503: down")),
        RetryPolicy(2, 0.0),
    )
    gave_up = await down.generate(_request())
    assert gave_up.status == "error" and gave_up.error == "gave up after 3 attempts: HTTP 503: down"
    # a final outcome is never retried
    overflow = Retrying(
        ScriptedBackend("r", fault=lambda _r, _n: Failure("context_overflow", "too long")),
        RetryPolicy(5, 0.0),
    )
    assert (await overflow.generate(_request())).status == "context_overflow"
    assert overflow.retries_done == 0


async def test_retries_stop_at_the_request_deadline() -> None:
    down = Retrying(
        ScriptedBackend("r", fault=lambda _r, _n: Failure("error", "HTTP 503")),
        RetryPolicy(max_retries=50, backoff_base_s=0.2, backoff_cap_s=0.2),
    )
    started = time.perf_counter()
    generation = await down.generate(_request(timeout_s=0.3))
    # 50 retries 0.2 s apart would take 10 s; the 0.3 s deadline ends them (slack for a slow machine).
    assert generation.status == "error" and time.perf_counter() - started < 5.0


def test_every_backend_gets_the_policy_unless_it_retries_itself() -> None:
    scripted = ScriptedBackend("r", retry_policy=RetryPolicy(7, 0.0))
    wrapped = with_retries(scripted)
    # the backend's declared policy is the one applied, and a wrapped backend is not wrapped twice
    assert isinstance(wrapped, Retrying) and wrapped.retry_policy == RetryPolicy(7, 0.0)
    assert with_retries(wrapped) is wrapped

    class SelfRetrying(ScriptedBackend):
        retries_itself = True

    itself = SelfRetrying("r")
    assert with_retries(itself) is itself


def test_scripted_from_model_options() -> None:
    backend = create_backend(
        "scripted/x", {"pattern": r"key is (\w+)", "fail_every": 3, "context_length": 512}
    )
    assert isinstance(backend, ScriptedBackend) and backend.name == "scripted/x"
    with pytest.raises(UsageError, match="unknown scripted option"):
        create_backend("scripted/x", {"colour": "red"})
    with pytest.raises(UsageError, match="bad -M fail_status=broken"):
        create_backend("scripted/x", {"fail_every": 2, "fail_status": "broken"})


def test_prompt_fit_counts_bos_and_the_chat_template_for_every_suite() -> None:
    from longscope.suites.base import CHAT_MARGIN_TOKENS, BuildContext, prompt_fit
    from longscope.text.tokenizers import QwenTokenizer

    tokenizer = QwenTokenizer()
    words = len(tokenizer.encode("Question: why?"))
    base = BuildContext(tokenizer, "completion", GenerationConfig())
    assert prompt_fit(base, "Question: why?").reserved == words + 1  # BOS
    known = BuildContext(tokenizer, "chat", GenerationConfig(), chat_overhead=9)
    assert prompt_fit(known, "Question: why?").counted == words + 9
    server = BuildContext(tokenizer, "chat", GenerationConfig())
    fit = prompt_fit(server, "Question: why?")
    assert (fit.counted, fit.margin) == (words, CHAT_MARGIN_TOKENS)


def test_hundred_summaries_honour_max_tokens() -> None:
    from pathlib import Path

    from longscope.suites import create_suite
    from longscope.suites.base import BuildContext
    from longscope.text.tokenizers import QwenTokenizer

    fixtures = Path(__file__).parents[1] / "fixtures"
    params = {
        "tasks": ["single_doc_sum"],
        "lengths": [2048],
        "samples": 1,
        "sources": {"single_doc_sum": str(fixtures / "longbench_v1_gov_report.jsonl")},
    }
    suite = create_suite("hundred", params)
    ctx = BuildContext(QwenTokenizer(), "completion", GenerationConfig(max_tokens=64))
    assert {s.max_tokens for s in suite.build(ctx)} == {256}  # a summary's own budget
    told = BuildContext(
        QwenTokenizer(), "completion", GenerationConfig(max_tokens=40), max_tokens_override=40
    )
    (sample,) = suite.build(told)
    assert sample.max_tokens == 40 and sample.length == sample.prompt_tokens + 40
