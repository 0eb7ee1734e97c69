"""LongScore (100-LongBench) to the reported precision, at its edges: no base length, a length
between the base lengths, no base lengths at all, and the stored form."""

from __future__ import annotations

from longscope.analysis.longscore import LongScore, longscore


def test_values_are_rounded_to_two_decimals() -> None:
    result = longscore({2048: 10.0, 4096: 20.0, 6144: 20.0, 8192: 12.345, 16384: 0.001})
    # base = 50/3 = 16.666...; lc = 100 * (S - base) / base
    assert result.base == 16.67
    assert result.lc == {8192: -25.93, 16384: -99.99}
    assert result.average == -62.96  # mean(-25.93, -99.99)
    assert result.raw_average == 6.17  # mean(12.345, 0.001)
    assert result.undefined == ""


def test_a_length_between_base_lengths_is_neither_base_nor_long() -> None:
    result = longscore({2048: 50.0, 3000: 0.0, 4096: 50.0, 6144: 50.0, 8192: 25.0})
    assert result.base == 50.0 and result.lc == {8192: -50.0} and result.raw_average == 25.0


def test_no_base_length_is_undefined_not_zero() -> None:
    assert longscore({8192: 50.0, 16384: 30.0}) == LongScore(
        None, {8192: 50.0, 16384: 30.0}, {}, None, 40.0, "no score at any base length"
    )
    # no base lengths at all: every length is a long one, and there is no base
    assert longscore({1024: 10.0, 2048: 30.0}, base_lengths=()) == LongScore(
        None, {1024: 10.0, 2048: 30.0}, {}, None, 20.0, "no score at any base length"
    )


def test_stored_form_has_string_lengths() -> None:
    data = longscore({2048: 40.0, 4096: 40.0, 6144: 40.0, 8192: 20.0}).as_dict()
    assert data == {
        "base": 40.0,
        "raw": {"2048": 40.0, "4096": 40.0, "6144": 40.0, "8192": 20.0},
        "lc": {"8192": -50.0},
        "average": -50.0,
        "raw_average": 20.0,
        "undefined": "",
    }


def test_below_the_floor_keeps_base_and_raw_average_and_gives_no_lc() -> None:
    raw = {2048: 4.0, 4096: 5.0, 6144: 5.0, 8192: 1.0, 16384: 2.0}
    # base = 14/3 = 4.666..., below the default floor of 5 points
    assert longscore(raw) == LongScore(
        4.67, raw, {}, None, 1.5, "base ability 4.67 is below the floor 5"
    )


def test_a_base_exactly_at_the_floor_is_defined() -> None:
    result = longscore({2048: 5.0, 4096: 5.0, 6144: 5.0, 8192: 2.5})
    assert result.undefined == "" and result.base == 5.0
    assert result.lc == {8192: -50.0} and result.average == -50.0


def test_average_and_raw_average_are_rounded_to_two_decimals() -> None:
    # base 100; lc -10, -10, -10.01 -> mean -10.00333; raw mean 89.99666
    result = longscore({2048: 100.0, 8192: 90.0, 16384: 90.0, 32768: 89.99}, base_lengths=(2048,))
    assert result.lc == {8192: -10.0, 16384: -10.0, 32768: -10.01}
    assert result.average == -10.0
    assert result.raw_average == 90.0
