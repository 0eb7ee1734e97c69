"""An adaptive run's time figures (run/adaptive_time.py) on requests built here: the time in flight,
the rates its latencies show, and the full grid's time as `plan` estimates it.

The end-to-end checks (a run's record, its report, the CLI) are in test_adaptive.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from longscope.run.adaptive_time import (
    SentRequest,
    describe_time,
    in_flight_seconds,
    measured_pace,
    timing_of,
)
from longscope.run.plan import Plan, PlanCell, Rates


def test_in_flight_seconds_counts_overlapping_requests_once() -> None:
    # Two in flight together over 0-3 s, a pause (another invocation later), then 5-6 s.
    spans = [(5.5, 5.7), (1.0, 3.0), (0.0, 2.0), (5.0, 6.0)]
    assert in_flight_seconds(spans) == pytest.approx((3.0 - 0.0) + (6.0 - 5.0))
    assert in_flight_seconds([]) == 0.0


def _serial(rows: list[tuple[int, int, int]], prefill: float, decode: float) -> list[SentRequest]:
    """Requests (length, prompt, output) sent one after another at exact rates."""
    made, clock = [], 1000.0
    for length, prompt, output in rows:
        latency = prompt / prefill + output / decode
        clock += latency
        made.append(SentRequest(length, prompt, output, latency, clock, True))
    return made


ROWS = [(1024, 1000, 12), (1024, 1040, 40), (2048, 2010, 8), (2048, 2100, 30), (1024, 990, 3)]


def test_measured_pace_recovers_the_rates_that_made_the_latencies() -> None:
    serial = _serial(ROWS, 2000.0, 40.0)
    made = measured_pace(serial)
    wall = sum(r.latency_s for r in serial)
    assert made.prompt_tps == pytest.approx(sum(p for _, p, _ in ROWS) / wall, rel=1e-12)
    assert made.output_tps == pytest.approx(sum(o for *_, o in ROWS) / wall, rel=1e-12)
    assert made.rates.source == "measured"
    assert made.rates.prefill_tps == pytest.approx(2000.0, rel=1e-9)
    assert made.rates.decode_tps == pytest.approx(40.0, rel=1e-9)
    # The same requests two at a time (each with its twin): twice the throughput.
    paired = measured_pace(serial + serial)
    assert paired.rates.prefill_tps == pytest.approx(4000.0, rel=1e-9)
    assert paired.rates.decode_tps == pytest.approx(80.0, rel=1e-9)
    # Failed requests (no answer, a timeout's latency) take no part in the rates.
    failed = SentRequest(4096, 4000, 0, 30.0, 2000.0, False)
    assert measured_pace([*serial, failed]) == made
    assert measured_pace([failed]) is None


def _one_length(noise: float, spread: int) -> list[SentRequest]:
    """Twenty requests at one length, each writing 128 tokens (the embedded model's docs run),
    their prompts `spread` tokens apart, latencies give or take `noise` seconds."""
    made, clock = [], 0.0
    for i in range(20):
        prompt = 880 + spread * (i % 3)
        latency = prompt / 400.0 + 128 / 22.0 + noise * ((i * 7) % 5 - 2)
        clock += latency
        made.append(SentRequest(1024, prompt, 128, latency, clock, True))
    return made


def test_latencies_that_do_not_tell_prefill_from_decode_give_no_rates() -> None:
    # Every request alike, or prompts a few tokens apart in a second's noise: no split.
    for noise, spread in ((0.0, 0), (0.3, 3)):
        made = measured_pace(_one_length(noise, spread))
        assert made.rates is None and made.prompt_tps > 0 and made.output_tps > 0
    # The same few tokens apart without noise do tell them apart.
    exact = measured_pace(_one_length(0.0, 3)).rates
    assert exact.prefill_tps == pytest.approx(400.0) and exact.decode_tps == pytest.approx(22.0)


def test_the_full_grids_time_is_its_tokens_at_rates_as_plan_estimates_them() -> None:
    sent = _serial(ROWS, 2000.0, 40.0)
    grid = {1024: 40, 2048: 40, 4096: 40}
    outputs = {n: [o for m, _, o in ROWS if m == n] for n in (1024, 2048)}
    overall = sum(o for *_, o in ROWS) / len(ROWS)
    expected_output = round(
        40 * sum(outputs[1024]) / 3 + 40 * sum(outputs[2048]) / 2 + 40 * overall
    )
    stated = Rates(1500.0, 25.0, "stated")
    made = timing_of(sent, grid, 300_000, stated, endpoints=2)
    assert made.grid_output_tokens == expected_output
    assert made.sent_output_tokens == sum(o for *_, o in ROWS)
    assert made.wall_s == pytest.approx(sum(r.latency_s for r in sent))
    # `plan`'s ETA for the same tokens, rates and endpoints.
    cells = (PlanCell(1024, 120, 300_000, expected_output, 0),)
    assert made.grid_eta_s == Plan("run", cells, 0, 2, stated, None, None).eta_s
    assert made.grid_eta_s == pytest.approx((300_000 / 1500 + expected_output / 25) / 2)
    # No rates given: this run's, which already hold its endpoints and concurrency.
    own = timing_of(sent, grid, 300_000, endpoints=2)
    assert own.rates == measured_pace(sent).rates and own.grid_eta_range_s is None
    assert own.grid_eta_s == pytest.approx(300_000 / 2000 + expected_output / 40)
    # Nothing answered in measurable time: no rates, no estimate.
    instant = [replace(r, latency_s=0.0) for r in sent]
    assert timing_of(instant, grid, 300_000).grid_eta_s is None
    assert timing_of(instant, grid, 300_000).grid_eta_range_s is None


def test_without_rates_the_full_grids_time_is_given_between_the_ends_that_hold_it() -> None:
    # All at one length: the time is all prompt or all output as far as these requests show.
    sent = _one_length(0.3, 3)
    grid, grid_prompt = {1024: 20, 2048: 20, 4096: 20}, 20 * (883 + 1900 + 3950)
    made = timing_of(sent, grid, grid_prompt)
    assert made.rates is None and made.grid_eta_s is None
    wall = sum(r.latency_s for r in sent)
    prompt, output = sum(r.prompt_tokens for r in sent), 20 * 128
    assert made.grid_output_tokens == 60 * 128
    low, high = made.grid_eta_range_s
    assert low == pytest.approx(wall * 60 * 128 / output, rel=1e-12)
    assert high == pytest.approx(wall * grid_prompt / prompt, rel=1e-12)
    # The full grid's true time at the rates that made the latencies lies between the two.
    truth = grid_prompt / 400.0 + 60 * 128 / 22.0
    assert low < truth < high


def test_the_time_line_says_which_rates_and_that_it_is_an_estimate() -> None:
    record = {
        "grid_prompt_tokens": 8_100_000,
        "wall_s": 190.0,
        "grid_output_tokens": 96_000,
        "rates": {"prefill_tps": 9000.0, "decode_tps": 48.5, "source": "measured"},
        "pace": {"prompt_tps": 1480.2, "output_tps": 21.04},
        "endpoints": 2,
        "grid_eta_s": 1264.0,
        "grid_eta_range_s": None,
    }
    assert describe_time(record) == (
        "time: requests in flight for 3m 10s; the full grid: about 21m 04s at this run's "
        "measured rates (prefill 9,000 tok/s, decode 48.5 tok/s), an estimate for its 8,100,000 "
        "prompt and about 96,000 output tokens"
    )
    stated = describe_time({**record, "rates": {**record["rates"], "source": "stated"}})
    assert "at the stated rates (prefill 9,000 tok/s, decode 48.5 tok/s) on 2 endpoints," in stated
    assert describe_time({**record, "wall_s": 0.42}).startswith(
        "time: requests in flight for 0.4s;"
    )
    ranged = {**record, "rates": None, "grid_eta_s": None, "grid_eta_range_s": [812.5, 5472.0]}
    assert describe_time(ranged) == (
        "time: requests in flight for 3m 10s; the full grid: about 13m 32s to 1h 31m at this "
        "run's measured rates, which do not tell prefill from decode time (all of it at 21.0 "
        "output tok/s, or at 1,480 prompt tok/s), an estimate for its 8,100,000 prompt and about "
        "96,000 output tokens"
    )
    none = describe_time({**ranged, "pace": None, "grid_eta_range_s": None})
    assert none == (
        "time: requests in flight for 3m 10s; the full grid's time is not estimated: no answered "
        "request took measurable time (state --prefill-rate and --decode-rate)"
    )
    # A record written before the time was kept (or edited to nonsense) shows no time line.
    assert describe_time({"grid_prompt_tokens": 1}) == ""
    assert describe_time({**record, "wall_s": "soon"}) == ""
