"""Every analysis threshold tested on the threshold: RULER's 85.6, the calibration rules, LongScore.

Each case is a value a user reads off a report; the comments name the mutant each one kills.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.analysis.effective import RULER_THRESHOLD, effective_length, relative_threshold
from longscope.analysis.longscore import longscore
from longscope.run.scoring import score_run
from longscope.suites.longbench_pro.calibrate import difficulty_labels
from longscope.suites.longbench_pro.scoring import SUMMARY_PASS, solved

from ..lbp_helper import score_predictions

DATA = Path(__file__).parents[1] / "fixtures" / "longbench_pro_mini.json"


@pytest.mark.parametrize(
    ("scores", "tokens", "label"),
    [
        # exactly 85.6 passes ("at or above"): kills `<` -> `<=`
        ({4096: 85.6, 8192: 85.6}, 8192, ">8192"),
        ({4096: 90.0, 8192: 85.6, 16384: 85.59}, 8192, "8192"),
        # a hair below fails at the first length
        ({4096: 85.59, 8192: 99.0}, None, "<4096"),
        # lengths are read in order, not in the order the mapping was written
        ({16384: 90.0, 4096: 90.0, 8192: 10.0}, 4096, "4096"),
    ],
)
def test_effective_length_exactly_at_ruler_threshold(scores, tokens, label) -> None:
    assert RULER_THRESHOLD == 85.6
    result = effective_length(scores)
    assert (result.tokens, result.label, result.threshold) == (tokens, label, 85.6)


def test_effective_length_at_a_relative_threshold() -> None:
    threshold = relative_threshold(80.0)
    assert threshold == pytest.approx(72.0)
    assert relative_threshold(80.0, 0.5) == pytest.approx(40.0)
    result = effective_length({4096: 80.0, 8192: 72.0, 16384: 71.9}, threshold)
    assert (result.tokens, result.label) == (8192, "8192")


def test_solved_at_the_summary_pass_mark_and_at_one() -> None:
    assert SUMMARY_PASS == 0.65
    assert not solved(0.65, "summary") and solved(0.6501, "summary")
    assert solved(1.0, "accuracy") and not solved(0.999, "accuracy")
    # a summary score of 0.9 solves; the same value on an exact-match metric does not
    assert solved(0.9, "summary") and not solved(0.9, "f1")


def _run(tmp_path: Path, name: str, right: set[str]) -> Path:
    """A predictions run answering the (accuracy-metric) rows in `right` correctly."""
    rows = {r["id"]: r for r in json.loads(DATA.read_text(encoding="utf-8"))}
    lines = []
    for rid in ROWS.values():
        answer = rows[rid]["answer"][0] if rid in right else "Z"
        lines.append(json.dumps({"id": rid, "prediction": f"[Answer] {answer}"}))
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text("\n".join(lines) + "\n", encoding="utf-8")
    score_predictions(str(DATA), preds, tmp_path / name)
    return tmp_path / name


ROWS = {"A": "mini-T3.2-en", "B": "mini-T3.2-zh", "C": "mini-T3.1-en", "D": "mini-T3.1-zh"}


def test_calibration_rules_at_exactly_one_solver_per_tier(tmp_path: Path) -> None:
    # Solvers per tier, row by row (3 models each):
    #   A: high 1            -> Extreme (at most one high-tier model): kills `<= 1` -> `< 1`
    #   B: high 2, mid 1     -> Hard
    #   C: high 2, mid 2, low 1 -> Moderate
    #   D: 2 in every tier   -> Easy: kills `<= 1` -> `<= 2`
    tiers = {
        "high": [{"A", "B", "C", "D"}, {"B", "C", "D"}, set()],
        "mid": [{"A", "B", "C", "D"}, {"A", "C", "D"}, {"A"}],
        "low": [{"A", "B", "C", "D"}, {"A", "B", "D"}, {"A", "B"}],
    }
    results = {
        tier: [
            score_run(_run(tmp_path, f"{tier}{i}", {ROWS[k] for k in right}))
            for i, right in enumerate(runs)
        ]
        for tier, runs in tiers.items()
    }
    labels = difficulty_labels(results)["labels"]
    assert {k: labels[f"{rid}#nonthinking"] for k, rid in ROWS.items()} == {
        "A": "Extreme",
        "B": "Hard",
        "C": "Moderate",
        "D": "Easy",
    }


def test_longscore_at_the_base_floor_and_its_sign() -> None:
    # Base ability exactly at the floor is defined; below it is not.
    at_floor = longscore({2048: 5.0, 4096: 5.0, 6144: 5.0, 8192: 2.5})
    assert at_floor.base == 5.0 and at_floor.lc == {8192: -50.0} and at_floor.average == -50.0
    below = longscore({2048: 4.99, 4096: 4.99, 6144: 4.99, 8192: 2.5})
    assert below.average is None and "below the floor 5" in below.undefined
    # a longer length scoring above base is a positive LongScore; base lengths are not averaged in
    up = longscore({2048: 40.0, 4096: 50.0, 6144: 60.0, 8192: 55.0, 16384: 45.0})
    assert up.base == 50.0 and up.lc == {8192: 10.0, 16384: -10.0} and up.average == 0.0
    assert up.raw_average == 50.0


def test_labels_file_round_trip_and_each_bad_file_in_one_line(tmp_path: Path) -> None:
    from longscope.errors import UsageError
    from longscope.suites.longbench_pro.calibrate import LABELS_VERSION, load_labels

    good = tmp_path / "labels.json"
    good.write_text(
        json.dumps({"labels_version": LABELS_VERSION, "labels": {"r#nonthinking": "Hard", 3: 4}})
    )
    assert load_labels(good) == {"r#nonthinking": "Hard", "3": "4"}
    wrong = f"is not a longscope difficulty-labels file (version {LABELS_VERSION})"
    for name, data in (
        ("list.json", [1]),
        ("version.json", {"labels_version": LABELS_VERSION + 1, "labels": {}}),
        ("labels.json", {"labels_version": LABELS_VERSION, "labels": ["Hard"]}),
        ("none.json", {"labels": {}}),
    ):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError) as info:
            load_labels(path)
        assert str(info.value) == f"{path} {wrong}"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(UsageError, match=rf"^{broken}: not valid JSON"):
        load_labels(broken)
    with pytest.raises(
        UsageError, match=rf"^labels file {tmp_path / 'missing.json'} does not exist"
    ):
        load_labels(tmp_path / "missing.json")
