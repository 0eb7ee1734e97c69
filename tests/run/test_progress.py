"""The progress bar's ETA: from the plan's prompt tokens and the rates the answers show, from the
first answer on (rich's own estimate, from the last 30 s of answers, read `-:--:--` throughout a
run whose answers came 40 s apart)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from longscope.run.progress import DECODE_PER_PREFILL, RunProgress, TokenEta, _EtaColumn
from longscope.types import Generation

A, B = 0.001, 0.05  # seconds per prompt token and per output token of the model below


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def answer(prompt: int, output: int) -> Generation:
    return Generation("x", "ok", prompt_tokens=prompt, completion_tokens=output,
                      latency_s=A * prompt + B * output)  # fmt: skip


def serve(eta: TokenEta, clock: Clock, prompt: int, output: int) -> None:
    """One request sent and answered, one at a time, as a model taking A and B per token."""
    eta.sending()
    clock.now += A * prompt + B * output
    eta.add(answer(prompt, output), planned=prompt)


def test_the_first_answer_gives_an_eta_and_it_is_the_time_left() -> None:
    clock = Clock()
    eta = TokenEta(10, planned_tokens=10 * 1000, clock=clock)
    assert eta.seconds_left() is None  # nothing answered yet: no guess
    serve(eta, clock, 1000, 20)  # 2 s
    assert eta.seconds_left() == pytest.approx(9 * 2.0)
    clock.now += 5  # counts down between answers, never below 0
    assert eta.seconds_left() == pytest.approx(13.0)
    clock.now += 60
    assert eta.seconds_left() == 0.0


def test_the_longest_prompts_first_are_not_taken_for_the_rest() -> None:
    """Counted in requests, 1 of 4 done in 5.5 s would forecast 16.5 s more; the plan says the
    three left are short, and the fitted rates give each its time."""
    clock = Clock()
    eta = TokenEta(4, planned_tokens=4000 + 3 * 1000, clock=clock)
    serve(eta, clock, 4000, 30)  # 5.5 s
    serve(eta, clock, 1000, 10)  # 1.5 s: two shapes, so both rates are fitted
    assert eta.rates() == pytest.approx((A, B))
    left = 2 * (A * 1000 + B * (30 + 10) / 2)  # the mean output so far for the two left
    assert eta.seconds_left() == pytest.approx(left)
    serve(eta, clock, 1000, 20)
    serve(eta, clock, 1000, 20)
    assert eta.seconds_left() == 0.0


def test_concurrency_counts_as_it_did_so_far() -> None:
    """Two answers at once: the elapsed time, not the latencies, sets the pace."""
    clock = Clock()
    eta = TokenEta(6, planned_tokens=6 * 1000, clock=clock)
    eta.sending()
    clock.now += 2.0
    eta.add(answer(1000, 20), planned=1000)
    eta.add(answer(1000, 20), planned=1000)  # both took 2 s, side by side
    assert eta.seconds_left() == pytest.approx(2.0 * 4 / 2)


def test_until_the_rates_are_told_apart_the_stated_ratio_weighs_output() -> None:
    clock = Clock()
    assert TokenEta(3).ratio == DECODE_PER_PREFILL
    eta = TokenEta(3, planned_tokens=2000 + 2 * 500, decode_per_prefill=10.0, clock=clock)
    serve(eta, clock, 2000, 100)  # one shape only: b = 10 a
    assert eta.rates() == (1.0, 10.0)
    done, left = 2000 + 10 * 100, 1000 + 10 * 2 * 100
    assert eta.seconds_left() == pytest.approx((A * 2000 + B * 100) * left / done)


def test_skipped_requests_take_no_time_and_without_a_plan_the_mean_prompt_stands_in() -> None:
    clock = Clock()
    eta = TokenEta(4, clock=clock)
    eta.add(Generation("", "skipped", error="does not fit"))
    assert eta.seconds_left() is None  # nothing reached the model yet
    serve(eta, clock, 1000, 20)
    assert eta.seconds_left() == pytest.approx(2 * 2.0)


def test_the_bar_shows_the_eta_from_the_first_answer() -> None:
    clock = Clock()
    eta = TokenEta(3, planned_tokens=3000, clock=clock)
    column = _EtaColumn(eta)
    assert column.render(None).plain == "ETA -"  # type: ignore[arg-type]
    progress = RunProgress(3, quiet=True, eta=eta)
    progress.sending()
    clock.now = 42.0  # answers 40 s apart: rich's window would still show -:--:--
    progress.advance(Generation("x", "ok", prompt_tokens=1000, completion_tokens=5,
                                latency_s=42.0), planned=1000)  # fmt: skip
    assert column.render(None).plain == "ETA 1m 24s"  # type: ignore[arg-type]
    shown = Console(file=io.StringIO(), width=100)
    shown.print(column.render(None))  # type: ignore[arg-type]
    assert "ETA 1m 24s" in shown.file.getvalue()  # type: ignore[attr-defined]
