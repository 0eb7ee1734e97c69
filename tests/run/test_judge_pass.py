"""The judge pass, exactly: what the judge is asked on each try, what is stored, which run.

Fast (no model): `OpenAIBackend` talks to the fault server, whose scripted replies are the
verdicts; `Recording` keeps every `Request` the judge pass made, as the backend received it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.base import Forwarding
from longscope.models.openai_api import OpenAIBackend
from longscope.run.judge import judge
from longscope.run.store import STORE_NAME, RunStore, StoreError
from longscope.suites import create_suite
from longscope.types import Generation, GenerationConfig, Message, Request

from ..models.fault_server import FaultServer, completion_body, text_completion_body
from .test_judge import qa_suite_and_samples

OPENING = 'Verdict: {"fluency":'


class Recording(Forwarding):
    """The real backend, passing every request through and keeping a copy."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.requests: list[Request] = []

    async def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        return await self.inner.generate(request)


def _stored(run_dir: Path) -> list[tuple]:
    with sqlite3.connect(run_dir / STORE_NAME) as db:
        return db.execute(
            "SELECT run_id, sample_id, repeat, judge, value, text, attempts, error "
            "FROM judgements ORDER BY rowid"
        ).fetchall()


def _one_judged(run_dir: Path, qwen_tokenizer, answer: str | None = None) -> None:
    """A run of two answers where only the second is judged (the first failed: never judged)."""
    suite, samples = qa_suite_and_samples(qwen_tokenizer)
    samples = sorted(samples, key=lambda sample: sample.id)
    with RunStore(run_dir) as store:
        store.put_run("j1", "hundred", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("j1", samples)
        # an answer of a sample the run does not hold (a merged store's leftover): never judged
        store.put_generation("j1", "0-not-a-sample", 0, Generation("stray", "ok"))
        failed = Generation("", "error", error="HTTP 503: busy")
        store.put_generation("j1", samples[0].id, 0, failed)
        text = samples[1].gold[0] if answer is None else answer
        store.put_generation("j1", samples[1].id, 0, Generation(text, "ok"))


def _judged_sample(run_dir: Path) -> tuple[str, str]:
    """Return the id and the judge prompt of the run's one judged sample."""
    with RunStore(run_dir, create=False) as store:
        run = store.run("j1")
        suite = create_suite("hundred", run["header"]["params"])
        samples = store.samples("j1")
        tasks = [
            (sid, suite.judge_task(samples[sid], g))
            for sid, _, g in store.generations("j1")
            if sid in samples
        ]
    judged = [(sid, task.prompt) for sid, task in tasks if task is not None]
    assert len(judged) == 1
    return judged[0]


def test_a_chat_judge_is_asked_three_times_then_the_failure_is_stored(
    tmp_path: Path, qwen_tokenizer
) -> None:
    _one_judged(tmp_path, qwen_tokenizer)
    sid, prompt = _judged_sample(tmp_path)
    with FaultServer() as server:
        server.script.extend([("ok", completion_body(f"no json {i}")) for i in (1, 2, 3)])
        backend = Recording(OpenAIBackend("m", base_url=server.url, backoff_base_s=0.01))
        assert judge(tmp_path, backend, "j1") == {"judged": 0, "failed": 1, "cached": 0}
    assert backend.requests == [
        Request(
            "judge",
            attempt,
            "chat",
            prompt="",
            messages=(Message("user", prompt),),
            config=GenerationConfig(max_tokens=256, temperature=temperature, seed=attempt),
        )
        for attempt, temperature in ((1, 0.0), (2, 0.7), (3, 0.7))
    ]
    assert _stored(tmp_path) == [
        ("j1", sid, 0, "openai:m", None, "no json 3", 3, "no valid verdict in the judge's reply")
    ]


def test_a_judge_error_is_retried_and_named_when_it_persists(
    tmp_path: Path, qwen_tokenizer
) -> None:
    _one_judged(tmp_path, qwen_tokenizer)
    sid, _ = _judged_sample(tmp_path)
    with FaultServer() as server:
        server.script.extend(
            [
                ("status", (400, "judge says no", {})),
                ("ok", completion_body('Good. {"fluency": 2, "correctness": 3}')),
            ]
        )
        backend = OpenAIBackend("m", base_url=server.url, backoff_base_s=0.01)
        assert judge(tmp_path, backend) == {"judged": 1, "failed": 0, "cached": 0}
        assert len(server.requests) == 2
    assert _stored(tmp_path) == [
        ("j1", sid, 0, "openai:m", 1.0, 'Good. {"fluency": 2, "correctness": 3}', 2, "")
    ]
    other = tmp_path / "other"
    _one_judged(other, qwen_tokenizer)
    with FaultServer() as server:
        server.script.extend([("status", (400, "judge says no", {}))] * 3)
        backend = OpenAIBackend("m", base_url=server.url, backoff_base_s=0.01)
        assert judge(other, backend) == {"judged": 0, "failed": 1, "cached": 0}
        assert len(server.requests) == 3
    [row] = _stored(other)
    assert row[4] is None and row[6] == 3
    assert row[7].startswith("judge error: ") and "judge says no" in row[7]


def test_a_completion_judge_gets_the_opening_and_its_reply_is_kept_as_said(
    tmp_path: Path, qwen_tokenizer
) -> None:
    _one_judged(tmp_path, qwen_tokenizer)
    sid, prompt = _judged_sample(tmp_path)
    with FaultServer() as server:
        server.script.extend(
            [
                ("ok", text_completion_body(" loud } noise")),  # has "}", unreadable
                ("ok", text_completion_body(' 1, "correctness": 0}')),
            ]
        )
        backend = Recording(
            OpenAIBackend("m", base_url=server.url, prompt_mode="completion", backoff_base_s=0.01)
        )
        assert judge(tmp_path, backend) == {"judged": 1, "failed": 0, "cached": 0}
    assert backend.requests == [
        Request(
            "judge",
            attempt,
            "completion",
            prompt=prompt + "\n" + OPENING,
            messages=(),
            config=GenerationConfig(
                max_tokens=48, temperature=temperature, seed=attempt, stop=("}",)
            ),
        )
        for attempt, temperature in ((1, 0.0), (2, 0.7))
    ]
    assert _stored(tmp_path) == [
        ("j1", sid, 0, "openai:m", 0.0, OPENING + ' 1, "correctness": 0}', 2, "")
    ]


def test_an_empty_answer_is_stored_as_0_with_no_attempt(tmp_path: Path, qwen_tokenizer) -> None:
    _one_judged(tmp_path, qwen_tokenizer, answer=" ")
    sid, _ = _judged_sample(tmp_path)
    with FaultServer() as server:
        assert judge(tmp_path, OpenAIBackend("m", base_url=server.url)) == {
            "judged": 1,
            "failed": 0,
            "cached": 0,
        }
    assert _stored(tmp_path) == [
        ("j1", sid, 0, "openai:m", 0.0, "empty answer: 0 without asking the judge", 0, "")
    ]


def test_the_named_run_is_judged_not_the_latest(tmp_path: Path, qwen_tokenizer) -> None:
    _one_judged(tmp_path, qwen_tokenizer)
    with RunStore(tmp_path, create=False) as store:
        run = store.run("j1")
        store.put_run("j2", "hundred", run["header"])  # the latest run, holding no answer
    with FaultServer() as server:
        server.script.append(("ok", completion_body('{"fluency": 2, "correctness": 3}')))
        counts = judge(tmp_path, OpenAIBackend("m", base_url=server.url), "j1")
    assert counts == {"judged": 1, "failed": 0, "cached": 0}
    assert [row[0] for row in _stored(tmp_path)] == ["j1"]


def test_a_run_scored_without_a_judge_is_refused_by_name(tmp_path: Path, qwen_tokenizer) -> None:
    _one_judged(tmp_path, qwen_tokenizer)
    with RunStore(tmp_path, create=False) as store:
        header = store.run("j1")["header"]
        store.put_run("j2", "ruler", {**header, "params": {}})
    with FaultServer() as server, pytest.raises(UsageError) as refused:
        judge(tmp_path, OpenAIBackend("m", base_url=server.url), "j2")
    assert str(refused.value) == "ruler runs are scored without a judge"


def test_no_run_there_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    with FaultServer() as server, pytest.raises(StoreError):
        judge(tmp_path, OpenAIBackend("m", base_url=server.url))
    assert list(tmp_path.iterdir()) == []
