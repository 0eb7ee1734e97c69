import pytest

from longscope.analysis.effective import effective_length
from longscope.analysis.profile import weighted_averages


@pytest.mark.parametrize(
    ("scores", "tokens", "label"),
    [
        (
            {4096: 95, 8192: 90, 16384: 80, 32768: 88},
            8192,
            "8192",
        ),  # must STAY above: 32K does not count
        ({4096: 95, 8192: 90}, 8192, ">8192"),
        ({4096: 60, 8192: 90}, None, "<4096"),
        ({}, None, "n/a"),
    ],
)
def test_effective_length_ruler_threshold(scores, tokens, label) -> None:
    result = effective_length(scores)
    assert (result.tokens, result.label, result.threshold) == (tokens, label, 85.6)


def test_weighted_averages_follow_ruler() -> None:
    # lengths 1, 2, 3 with scores 90, 60, 30: inc = (90 + 120 + 90) / 6, dec = (270 + 120 + 30) / 6
    assert weighted_averages({1: 90, 2: 60, 3: 30}) == (50.0, 70.0)
