"""RULER's weighted averages to the reported precision, and an empty sweep."""

from __future__ import annotations

from longscope.analysis.effective import weighted_averages


def test_weighted_averages_round_to_two_decimals() -> None:
    # inc = (1*100 + 2*0 + 3*0) / 6 = 16.666..., dec = (3*100 + 2*0 + 1*0) / 6 = 50
    assert weighted_averages({1024: 100.0, 2048: 0.0, 4096: 0.0}) == (16.67, 50.0)
    # lengths are weighted in length order, whatever order the mapping has
    assert weighted_averages({4096: 0.0, 1024: 0.0, 2048: 100.0}) == (33.33, 33.33)


def test_an_empty_sweep_has_no_weighted_average() -> None:
    assert weighted_averages({}) == (0.0, 0.0)
