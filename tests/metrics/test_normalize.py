import pytest

from longscope.metrics.normalize import answer_tokens, normalize_answer, word_count


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("8,400 metric tons", "8400 tons"),
        ("8400 tonnes", "8400 tons"),
        ("2.4GHz", "2.4 ghz"),
        ("2.4 GHz", "2.4 ghz"),
        ("December 1, 2034", "2034-12-01"),
        ("1 December 2034", "2034-12-01"),
        ("Dec. 1st, 2034", "2034-12-01"),
        ("2034-12-1", "2034-12-01"),
        ("2034年12月1日", "2034-12-01"),
        ("March 2025", "2025-03"),
        ("2025年3月提出", "2025-03提出"),
        ("85 degrees Celsius", "85 °c"),
        ("85°C", "85 °c"),
        ("85℃", "85 °c"),
        ("85摄氏度", "85 °c"),
        ("0.003 arc-seconds", "0.003 arcsec"),
        ("94分钟", "94 minutes"),
        ("48 hrs", "48 hours"),
        ("200ms", "200 ms"),
        ("1,234,567", "1234567"),
    ],
)
def test_normalize_answer_accepts_variants(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_invalid_dates_are_left_alone() -> None:
    assert normalize_answer("2034-13-45") == "2034-13-45"


def test_answer_tokens_split_cjk_per_character() -> None:
    assert answer_tokens("8,400公吨") == ["8400", "tons"]
    assert answer_tokens("沿海地区") == ["沿", "海", "地", "区"]


def test_word_count_counts_chinese_by_two_characters() -> None:
    assert word_count("The answer is 94 minutes.") == 5
    assert word_count("九十四分钟") == 3
