"""NoLiMa's answer checking and its length-level rules, exactly as the authors' code has them.

Source: adobe-research/NoLiMa@7532e4eebf095c5540dc256900a63968da58a9d0,
`evaluation/async_evaluate.py` (`NoLiMa_Tester._evaluate_response`), `evaluation/run_config/*.yaml`
(every published configuration uses `metric: contains`), `evaluation/gather_results.ipynb` (a test's
result is the mean of its per-depth 0/1 metrics; tests whose result file name contains `direct` are
left out), and the README (base score and effective length).

The four metrics take the raw response and a list of gold answers. None of them normalises case,
punctuation or whitespace inside the text: `contains` is a case-sensitive substring test, the `EM`
family strips only the ends of the response. With a `{CHAR}` needle the gold list is the one drawn
name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from longscope.analysis.effective import EffectiveLength, effective_length

Metric = Literal["EM", "contains", "lastline_EM", "lastline_contains"]
METRICS: tuple[Metric, ...] = ("EM", "contains", "lastline_EM", "lastline_contains")
PUBLISHED_METRIC: Metric = "contains"
"""The metric of every run configuration in the repository (`metric: contains`)."""

BASE_LENGTHS: tuple[int, ...] = (250, 500, 1000)
"""The short lengths whose scores make the base score (README: "short contexts (250, 500, and 1K)")."""
EFFECTIVE_FRACTION = 0.85
"""Effective length: the longest context where the score stays at or above 85% of the base score."""
HALF_FRACTION = 0.5
"""The README italicises scores below 50% of the base score."""


def _last_line(response: str) -> str:
    return response.strip().split("\n")[-1]


def exact_match(response: str, gold_answers: Sequence[str]) -> int:
    """Return 1 when the stripped response equals one gold answer (`EM`), else 0."""
    return int(response.strip() in gold_answers)


def contains(response: str, gold_answers: Sequence[str]) -> int:
    """Return 1 when some gold answer occurs in the response, case-sensitively (`contains`)."""
    return int(any(gold in response for gold in gold_answers))


def lastline_exact_match(response: str, gold_answers: Sequence[str]) -> int:
    """Return 1 when the response's last line (after stripping its ends) is a gold answer."""
    return int(_last_line(response) in gold_answers)


def lastline_contains(response: str, gold_answers: Sequence[str]) -> int:
    """Return 1 when some gold answer occurs in the response's last line (`lastline_contains`)."""
    return int(any(gold in _last_line(response) for gold in gold_answers))


_BY_NAME = {
    "EM": exact_match,
    "contains": contains,
    "lastline_EM": lastline_exact_match,
    "lastline_contains": lastline_contains,
}


def score_response(response: str, gold_answers: Sequence[str], metric: Metric) -> int:
    """Return the authors' 0/1 metric `metric` of `response` against `gold_answers`."""
    if metric not in _BY_NAME:
        raise ValueError(f"unknown NoLiMa metric {metric!r}; choose one of {', '.join(METRICS)}")
    # Upstream the gold list goes through json.dumps/json.loads; a bare string there would make
    # `in` a substring test. The suite always passes a list: refuse a string rather than guess.
    if isinstance(gold_answers, str):
        raise TypeError("gold_answers must be a sequence of answers, not one string")
    return _BY_NAME[metric](response, gold_answers)


def in_published_score(test_name: str) -> bool:
    """Return whether a test counts in the README's numbers (gather_results drops `direct` ones).

    The authors' test name is `{experiment id}_{test id}_{question type}`; their notebook skips
    every result file whose name contains `direct`, so a `direct` question type never counts.
    """
    return "direct" not in test_name


@dataclass(frozen=True)
class BaseScore:
    """NoLiMa's base score of a sweep and the short lengths it was read from."""

    score: float | None
    """The best score among the measured short lengths; None when none was measured."""
    lengths: tuple[int, ...]
    """The short lengths (of 250, 500 and 1000) the sweep measured."""
    missing: tuple[int, ...]
    """The short lengths it did not measure: a base read from fewer is not NoLiMa's."""


def base_score(scores: Mapping[int, float]) -> BaseScore:
    """Return the base score: the best of the scores at 250, 500 and 1000 tokens.

    The README defines it as the model's accuracy "at short contexts (250, 500, and 1K)" and the
    repository has no code for it. It cannot be their mean: Jamba 1.5 Mini's row (base 92.4,
    1K 76.3) would need 250 and 500 to average 100.45, above any score. The best of the three
    fits every published row (each base is at least its 1K score).
    """
    used = tuple(length for length in BASE_LENGTHS if length in scores)
    missing = tuple(length for length in BASE_LENGTHS if length not in scores)
    best = max((scores[length] for length in used), default=None)
    return BaseScore(best, used, missing)


def effective_threshold(base: float) -> float:
    """Return the bar a length must reach: 85% of the base score (the README's `Thr.`)."""
    return base * EFFECTIVE_FRACTION


def below_half(score: float, base: float) -> bool:
    """Return whether a score fell below 50% of the base score (the README's italics)."""
    return score < base * HALF_FRACTION


SWEEP_START = 1000
"""The README's effective lengths run over 1K and up (`<1K` when 1K already fails)."""


def effective(scores: Mapping[int, float]) -> EffectiveLength | None:
    """Return NoLiMa's effective length of a {length: score (0-100)} sweep, or None without a
    base (no short length measured, or a base of 0: every length would pass a bar of 0).

    The bar is 85% of the base score; the sweep is every scored length from 1K up, and a length
    counts only when it and every shorter one of the sweep reach the bar (the README's "maintains").
    """
    base = base_score(scores).score
    if base is None or base <= 0:
        return None
    threshold = effective_threshold(base)
    sweep = {length: score for length, score in scores.items() if length >= SWEEP_START}
    return effective_length(sweep, threshold)
