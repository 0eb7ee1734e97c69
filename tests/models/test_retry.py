"""The retry policy around a backend, exactly: how many attempts each request gets, what a member
of a group ends with, when `on_result` hears of it, and the deadline at its boundary (a stepped
clock, no sleeping). The scripted backend answers; its fault script decides each attempt."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from longscope.models.retry import Retrying, RetryPolicy, with_retries
from longscope.models.scripted import Failure, ScriptedBackend
from longscope.types import Generation, Request

from ..factories import request


def _request(prompt: str, timeout_s: float | None = None) -> Request:
    return request(prompt=prompt, timeout_s=timeout_s)


class _Script:
    """Each prompt's outcomes attempt by attempt (the last one repeats); `on_answer` runs as each
    request is answered (to step a clock or note what was handed over by then)."""

    def __init__(self, plan: dict[str, list[str]], on_answer: Callable[[str], None] | None = None):
        self.plan = plan
        self.on_answer = on_answer
        self.attempts: dict[str, int] = {}

    def __call__(self, request: Request, _number: int) -> Failure | None:
        attempt = self.attempts.get(request.prompt, 0)
        self.attempts[request.prompt] = attempt + 1
        if self.on_answer is not None:
            self.on_answer(request.prompt)
        outcomes = self.plan[request.prompt]
        status = outcomes[min(attempt, len(outcomes) - 1)]
        if status == "ok":
            return None
        return Failure(status, f"HTTP 503: {request.prompt} {attempt + 1}")  # type: ignore[arg-type]


class _Clock:
    """A perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(time, "perf_counter", fake)
    return fake


async def test_a_request_gets_max_retries_more_attempts_and_says_it_gave_up() -> None:
    down = ScriptedBackend("r", fault=_Script({"k": ["error"]}))
    retried = Retrying(down, RetryPolicy(2, 0.0))
    gave_up = await retried.generate(_request("k"))
    assert gave_up.status == "error" and gave_up.error == "gave up after 3 attempts: HTTP 503: k 3"
    assert len(down.requests) == 3 and retried.retries_done == 2
    # an answer that came after retries is returned as it is: no note on a success
    flaky = ScriptedBackend("r", answer="fine", fault=_Script({"k": ["timeout", "error", "ok"]}))
    recovered = await Retrying(flaky, RetryPolicy(2, 0.0)).generate(_request("k"))
    assert (recovered.status, recovered.text, recovered.error) == ("ok", "fine", "")
    assert len(flaky.requests) == 3


async def test_a_request_stops_when_the_pause_reaches_its_deadline(clock: _Clock) -> None:
    # every attempt takes 1 s; the deadline is 2 s: the first retry starts with 1 s left, the
    # second would start with 0 s left (a pause of 0 >= 0): no third attempt
    def step(_prompt: str) -> None:
        clock.now += 1.0

    down = ScriptedBackend("r", fault=_Script({"k": ["error"]}, on_answer=step))
    retried = Retrying(down, RetryPolicy(5, 0.0))
    generation = await retried.generate(_request("k", timeout_s=2.0))
    assert generation.error == "gave up after 2 attempts: HTTP 503: k 2"
    assert len(down.requests) == 2 and retried.retries_done == 1


def test_with_retries_applies_the_policy_it_is_given() -> None:
    scripted = ScriptedBackend("r", retry_policy=RetryPolicy(7, 0.0))
    given = RetryPolicy(2, 0.5, 4.0)
    wrapped = with_retries(scripted, given)
    assert isinstance(wrapped, Retrying) and wrapped.retry_policy == given
    assert with_retries(scripted).retry_policy == RetryPolicy(7, 0.0)


async def test_a_group_retries_only_the_members_worth_it_together() -> None:
    script = _Script(
        {
            "a": ["ok"],
            "b": ["error", "timeout", "ok"],
            "c": ["context_overflow"],
            "d": ["error", "error", "error", "ok"],
        }
    )
    inner = ScriptedBackend("r", answer="yes", fault=script, grouped=True)
    retried = Retrying(inner, RetryPolicy(2, 0.0))
    handed: list[tuple[int, str, str]] = []
    out = await retried.generate_group(
        [_request(p) for p in "abcd"], lambda i, g: handed.append((i, g.status, g.error))
    )
    assert [(g.status, g.text, g.error) for g in out] == [
        ("ok", "yes", ""),
        ("ok", "yes", ""),
        ("context_overflow", "", "HTTP 503: c 1"),
        ("error", "", "gave up after 3 attempts: HTTP 503: d 3"),
    ]
    # one group per round, each holding only the members still to retry
    assert inner.groups == [4, 2, 2] and retried.retries_done == 4
    assert handed == [
        (0, "ok", ""),
        (2, "context_overflow", "HTTP 503: c 1"),
        (1, "ok", ""),
        (3, "error", "gave up after 3 attempts: HTTP 503: d 3"),
    ]
    # no on_result: the same generations
    again = Retrying(
        ScriptedBackend("r", answer="yes", fault=_Script(dict(script.plan)), grouped=True),
        RetryPolicy(2, 0.0),
    )
    alone = await again.generate_group([_request(p) for p in "abcd"])
    assert [(g.status, g.text, g.error) for g in alone] == [
        (g.status, g.text, g.error) for g in out
    ]


async def test_a_final_member_is_handed_over_as_it_arrives() -> None:
    handed: list[tuple[int, str]] = []
    seen_when_answered: dict[str, list[int]] = {}

    def note(prompt: str) -> None:
        seen_when_answered.setdefault(prompt, [i for i, _ in handed])

    script = _Script({"a": ["ok"], "b": ["error", "ok"], "c": ["ok"]}, on_answer=note)
    inner = ScriptedBackend("r", answer="yes", fault=script)  # answers one by one, as they come
    retried = Retrying(inner, RetryPolicy(3, 0.0))
    out = await retried.generate_group(
        [_request(p) for p in "abc"], lambda i, g: handed.append((i, g.status))
    )
    assert [(g.status, g.error) for g in out] == [("ok", ""), ("ok", ""), ("ok", "")]
    # a was handed over before c was answered, in the same round; b after its retry
    assert seen_when_answered == {"a": [], "b": [0], "c": [0]}
    assert handed == [(0, "ok"), (2, "ok"), (1, "ok")]
    assert len(inner.requests) == 4 and retried.retries_done == 1


async def test_a_group_stops_at_its_shortest_deadline(clock: _Clock) -> None:
    # each round takes 1 s; a's deadline (2 s) is the only one: after round 2 a pause of 0 would
    # leave 0 s, so both members end there, each saying how many attempts it had
    def step(prompt: str) -> None:
        if prompt == "a":
            clock.now += 1.0

    inner = ScriptedBackend(
        "r", fault=_Script({"a": ["error"], "b": ["timeout"]}, on_answer=step), grouped=True
    )
    retried = Retrying(inner, RetryPolicy(5, 0.0))
    handed: list[tuple[int, Generation]] = []
    out = await retried.generate_group(
        [_request("a", timeout_s=2.0), _request("b")], lambda i, g: handed.append((i, g))
    )
    assert [(g.status, g.error) for g in out] == [
        ("error", "gave up after 2 attempts: HTTP 503: a 2"),
        ("timeout", "gave up after 2 attempts: HTTP 503: b 2"),
    ]
    assert inner.groups == [2, 2] and retried.retries_done == 2
    assert handed == [(0, out[0]), (1, out[1])]
