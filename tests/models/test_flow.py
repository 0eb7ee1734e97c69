"""The flow-control policy on its own: caps, order, affinity, benching (no I/O, a given clock)."""

from __future__ import annotations

import pytest

from longscope.models.flow import (
    DeadlinePolicy,
    Dispatcher,
    EndpointState,
    default_token_cap,
    split_cap,
)


def _dispatcher(n: int = 2, cap: int = 10_000, max_requests: int = 8, **kw) -> Dispatcher:
    return Dispatcher([EndpointState(f"e{i}", cap, max_requests) for i in range(n)], **kw)


def test_longest_prefill_first_within_the_cap() -> None:
    d = _dispatcher(n=1, cap=10_000)
    small = d.submit("a", 1_000)
    big = d.submit("b", 9_000)
    mid = d.submit("c", 5_000)
    # 9,000 first; 5,000 does not fit beside it and the 1,000 may not overtake it
    assert [t for t, _ in d.grants(0.0)] == [big]
    assert d.grants(0.0) == []
    d.finish(big, 0, 1.0, failed=False)
    # then 5,000 and 1,000 together; a 4,000 fits beside them exactly (the cap is inclusive)
    last = d.submit("d", 4_000)
    assert [t for t, _ in d.grants(1.0)] == [mid, last, small]
    assert d.endpoints[0].outstanding_tokens == 10_000 == d.endpoints[0].max_tokens_seen


def test_one_request_above_the_cap_runs_alone() -> None:
    d = _dispatcher(n=1, cap=4_000)
    huge = d.submit("a", 6_000)
    other = d.submit("b", 10)
    assert [t for t, _ in d.grants(0.0)] == [huge]
    d.finish(huge, 0, 1.0, failed=False)
    assert [t for t, _ in d.grants(1.0)] == [other]


def test_siblings_follow_the_first_to_its_endpoint_after_its_prefill() -> None:
    d = _dispatcher(n=2)
    first = d.submit("doc", 3_000)
    second = d.submit("doc", 3_000)
    other = d.submit("x", 2_000)
    granted = dict((t.seq, i) for t, i in d.grants(0.0))
    assert first.seq in granted and second.seq not in granted
    # the other document goes to the endpoint with fewer outstanding tokens
    assert granted[other.seq] != granted[first.seq]
    d.finish(first, granted[first.seq], 1.0, failed=False)
    assert d.grants(1.0) == [(second, granted[first.seq])]


def test_failing_endpoint_is_benched_then_down_and_its_work_moves() -> None:
    d = _dispatcher(n=2, bench_after=2, bench_base_s=1.0, down_after=1)
    first = d.submit("a", 100)
    assert d.grants(0.0) == [(first, 0)]
    d.finish(first, 0, 0.1, failed=True, error="connection error")
    retry = d.submit("a", 100)
    # the key lost its affinity; the tie on load goes to the endpoint that did not fail
    assert d.grants(0.1) == [(retry, 1)]
    d.finish(retry, 1, 0.2, failed=False)
    d.endpoints[1].max_requests = 0  # only endpoint 0 may take the next one
    second = d.submit("b", 100)
    assert d.grants(0.2) == [(second, 0)]
    d.finish(second, 0, 0.3, failed=True, error="connection error")
    assert d.endpoints[0].benched_until == pytest.approx(1.3)  # two in a row: benched 1 s
    third = d.submit("c", 100)
    assert d.grants(1.0) == [] and d.next_return(1.0) == pytest.approx(1.3)
    assert d.grants(1.3) == [(third, 0)]  # back after the pause (half-open)
    d.finish(third, 0, 1.4, failed=True, error="connection error")
    assert d.endpoints[0].down and not d.all_down()
    d.endpoints[1].down = True
    assert d.all_down()
    fourth = d.submit("d", 1)
    assert d.grants(9.0) == [] and d.drain() == [fourth]
    stats = d.endpoints[0].stats()
    assert (stats["requests"], stats["failures"], stats["down"]) == (3, 3, True)


def test_bench_pause_doubles_and_endpoint_returns() -> None:
    d = _dispatcher(n=1, bench_after=1, bench_base_s=2.0, down_after=5)
    t = d.submit("a", 10)
    d.grants(0.0)
    d.finish(t, 0, 0.0, failed=True, error="timeout")
    assert d.endpoints[0].benched_until == pytest.approx(2.0)
    t2 = d.submit("a", 10)
    assert d.grants(1.0) == [] and d.next_return(1.0) == pytest.approx(2.0)
    assert d.grants(2.0) == [(t2, 0)]
    d.finish(t2, 0, 2.0, failed=True, error="timeout")
    assert d.endpoints[0].benched_until == pytest.approx(6.0)  # 2 s, then 4 s


def test_default_and_user_caps() -> None:
    assert default_token_cap([8192, None]) == [16384, 65536]
    assert split_cap(10, 3) == [4, 3, 3]
    with pytest.raises(ValueError):
        split_cap(0, 2)


def test_deadline_grows_with_prompt_length() -> None:
    policy = DeadlinePolicy(prefill_tps=1_000.0, decode_tps=10.0, base_s=30.0, slack=3.0)
    assert policy.deadline_s(1_000, 100, 120.0) == 120.0  # the suite's limit is the floor
    # 128K at 1,000 tok/s is 128 s of prefill: 30 + 3 * (131.072 + 10)
    assert policy.deadline_s(131_072, 100, 120.0) == pytest.approx(30 + 3 * 141.072)
    measured = DeadlinePolicy()
    measured.observe(4_000, 2.0)
    measured.observe(4_000, 4.0)  # the slowest rate seen counts: 1,000 tok/s
    assert measured.deadline_s(64_000, 0, None) == pytest.approx(30 + 3 * 64.0)
