"""A profile's measurement from an adaptive run's decision (analysis.profile.adaptive_measurement)."""

from __future__ import annotations

from longscope.analysis.profile import adaptive_measurement


def _record(kind: str, decided: bool = True, **rule: float) -> dict:
    return {
        "decided": decided,
        "stopped": "decided" if decided else "budget",
        "effective": "8192" if decided else "undecided",
        "effective_tokens": 8192 if decided else None,
        "interval": ["8192", "8192"] if decided else ["4096", "16384"],
        "confidence": 0.95,
        "rule": {"kind": kind, "threshold": 85.6, "fraction": 0.9, **rule},
        "rule_text": "the rule",
        "method": "asymptotic",
        "non_monotone": [],
        "sent_prompt_tokens": 10,
        "grid_prompt_tokens": 100,
    }


def test_an_absolute_decision_is_the_profiles_effective_length() -> None:
    made = adaptive_measurement(_record("absolute"), 85.6, 0.9)
    assert made["effective_length"] == 8192 and made["effective_label"] == "8192"
    assert "relative_effective_length" not in made
    (interval,) = made["intervals"].values()
    assert (interval["low"], interval["high"]) == ("8192", "8192")


def test_a_relative_decision_fills_the_relative_length() -> None:
    made = adaptive_measurement(_record("relative"), 85.6, 0.9)
    assert made["relative_effective_length"] == 8192 and "effective_length" not in made


def test_a_decision_at_another_bar_or_undecided_gives_no_length() -> None:
    other = adaptive_measurement(_record("absolute", threshold=80.0), 85.6, 0.9)
    assert other["effective_length"] is None
    assert other["effective_label"] == "not decided at this bar"
    open_ = adaptive_measurement(_record("absolute", decided=False), 85.6, 0.9)
    assert open_["effective_length"] is None and open_["effective_label"] == "undecided"
    assert open_["adaptive"]["interval"] == ["4096", "16384"]
