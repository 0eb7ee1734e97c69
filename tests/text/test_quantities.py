"""Values a person reads as equal compare equal; values a person reads as different do not."""

import pytest

from longscope.text.quantities import (
    canonical_text,
    conflicts,
    parse_value,
    read_values,
    same_value,
)

SAME = [
    ("0.003 arc-seconds", "0.0030 arcsec"),
    ("0.003 arc-seconds", "3 milliarcseconds"),
    ("0.003 arc-seconds", "0.003角秒"),
    ("2,400 MHz", "2400 MHz"),
    ("2,400 MHz", "2400MHz"),
    ("2.4 GHz", "2,400 MHz"),
    ("2.4 GHz", "2.4千兆赫"),
    ("8,400 metric tons", "8400 tonnes"),
    ("8,400 metric tons", "8.4 million kg"),
    ("85 degrees Celsius", "85℃"),
    ("85 degrees Celsius", "185 °F"),
    ("85 degrees Celsius", "八十五摄氏度"),
    ("94 minutes", "1 hour and 34 minutes"),
    ("48 hours", "2 days"),
    ("18 months", "1.5 years"),
    ("18 months", "十八个月"),
    ("72", "seventy-two"),
    ("72", "七十二个"),
    ("144", "one hundred and forty-four"),
    ("12", "twelve"),
    ("5%", "5 percent"),
    ("5%", "百分之五"),
    ("$12 million", "$12M"),
    ("$12 million", "1200万美元"),
    ("$12 million", "twelve million dollars"),
    ("2.4 billion", "24亿"),
    ("2.4 billion", "$2.4bn"),
    ("December 1, 2034", "1 December 2034"),
    ("December 1, 2034", "2034-12-01"),
    ("December 1, 2034", "Dec. 1st, 2034"),
    ("December 1, 2034", "2034年12月1日"),
    ("December 25, 2034", "12/25/2034"),  # only one order is a date
    ("December 25, 2034", "25/12/2034"),
    ("March 2025", "2025年3月"),
    ("March 2025", "March 12, 2025"),
]

DIFFERENT = [
    ("0.003 arc-seconds", "0.03 arc-seconds"),
    ("2.4 GHz", "2.4 MHz"),
    ("8,400 metric tons", "8,400 kg"),
    ("94 minutes", "94 seconds"),
    ("2", "2 minutes"),  # a count is not a duration
    ("$12 million", "$12"),
    ("December 1, 2034", "December 2, 2034"),
    ("December 1, 2034", "December 2034"),  # the day is missing
    ("December 1, 2034", "03/04/2034"),  # ambiguous order: not read as a date
]


@pytest.mark.parametrize(("gold", "answer"), SAME)
def test_same_value(gold: str, answer: str) -> None:
    values = read_values(answer)
    assert any(same_value(parse_value(gold), v) for v in values), [v.canonical() for v in values]


@pytest.mark.parametrize(("gold", "answer"), DIFFERENT)
def test_different_value(gold: str, answer: str) -> None:
    assert not any(same_value(parse_value(gold), v) for v in read_values(answer))


@pytest.mark.parametrize(
    "text",
    [
        "Helios-7",
        "SOP-14",
        "PO #4472",
        "Policy 3.2",
        "assembly line 4",
        "第二阶段",
        "4号装配线",
        "phase-two",
        "no one knows",
        "一致",
    ],
)
def test_identifiers_and_labels_are_not_values(text: str) -> None:
    assert read_values(text) == []


def test_wrong_value_conflicts_only_within_its_kind() -> None:
    gold = parse_value("94 minutes")
    assert conflicts(gold, parse_value("96 minutes"))
    assert conflicts(gold, parse_value("96"))
    assert not conflicts(gold, parse_value("2.4 GHz"))  # another quantity, not another answer
    date = parse_value("December 1, 2034")
    assert conflicts(date, parse_value("2033"))
    assert not conflicts(date, parse_value("December 2034"))


def test_canonical_text_spells_each_value_once() -> None:
    assert canonical_text("2,400 MHz on 1 December 2034, ±5%") == "2400 mhz on 2034-12-01 , ± 5 %"
