"""The plan's arithmetic and wording (the counts against real servers are in test_endpoints.py)."""

from __future__ import annotations

import pytest

from longscope.run.plan import Plan, PlanCell, Rates, cost_of, format_duration


def _plan(**kw) -> Plan:
    cells = (
        PlanCell(length=8192, requests=30, prompt_tokens=240_000, output_tokens=6_000, skipped=0),
        PlanCell(length=131072, requests=3, prompt_tokens=390_000, output_tokens=600, skipped=27),
    )
    base = dict(run_id="r", cells=cells, already_done=5, endpoints=2, rates=None)
    return Plan(**{**base, "price_in": None, "price_out": None, **kw})


def test_totals_eta_and_cost() -> None:
    plan = _plan(rates=Rates(10_000.0, 50.0, "stated"), price_in=0.5, price_out=2.0)
    assert (plan.requests, plan.skipped, plan.prompt_tokens, plan.output_tokens) == (
        33,
        27,
        630_000,
        6_600,
    )
    # (630,000 / 10,000 + 6,600 / 50) / 2 endpoints = (63 + 132) / 2
    assert plan.eta_s == pytest.approx(97.5)
    assert plan.cost == pytest.approx((630_000 * 0.5 + 6_600 * 2.0) / 1e6)
    line = plan.forecast()
    assert line.startswith("plan: 33 requests (27 skipped, 5 done), 630,000 prompt tokens")
    assert "ETA 1m 38s on 2 endpoint(s) (stated: prefill 10,000 tok/s" in line
    assert line.endswith("<= $0.33")
    assert "131072" in plan.table() and plan.as_dict()["output_tokens_max"] == 6_600


def test_no_rates_no_prices_no_eta_no_cost() -> None:
    plan = _plan()
    assert plan.eta_s is None and plan.cost is None
    assert "ETA" not in plan.forecast() and "$" not in plan.forecast()


def test_cost_and_duration_formats() -> None:
    assert cost_of(1_000_000, 1_000_000, 3.0, 15.0) == 18.0
    assert cost_of(2_000_000, 0, None, 15.0) == 0.0
    assert format_duration(0.4) == "0s"
    assert format_duration(59.6) == "1m 00s"
    assert format_duration(3_725) == "1h 02m"
