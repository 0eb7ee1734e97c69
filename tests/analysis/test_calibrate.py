"""Difficulty calibration and labels used by reports, on predictions scored from the fixture."""

import json
from pathlib import Path

import pytest

from longscope.run.scoring import score_run
from longscope.suites.longbench_pro.calibrate import difficulty_labels

from ..lbp_helper import score_predictions, write_predictions

DATA = Path(__file__).parents[1] / "fixtures" / "longbench_pro_mini.json"


def _run(tmp_path: Path, name: str, right: set[str]) -> Path:
    """A predictions run answering the T3.2 (accuracy) rows right for the ids in `right`."""
    score_predictions(str(DATA), write_predictions(DATA, tmp_path, name, right), tmp_path / name)
    return tmp_path / name


def test_labels_follow_the_papers_rule(tmp_path: Path) -> None:
    everyone = {"mini-T3.2-en"}
    high = [
        _run(tmp_path, f"high{i}", everyone | {"mini-T3.2-zh", "mini-T3.1-en"}) for i in range(3)
    ]
    mid = [
        _run(tmp_path, f"mid{i}", everyone | ({"mini-T3.2-zh"} if i < 2 else set()))
        for i in range(3)
    ]
    low = [_run(tmp_path, f"low{i}", everyone) for i in range(3)]
    labels = difficulty_labels(
        {
            "high": [score_run(d) for d in high],
            "mid": [score_run(d) for d in mid],
            "low": [score_run(d) for d in low],
        }
    )["labels"]
    assert labels["mini-T3.2-en#nonthinking"] == "Easy"  # every tier solves it
    assert labels["mini-T3.2-zh#nonthinking"] == "Moderate"  # 2 mid solve, 0 low
    assert labels["mini-T3.1-en#nonthinking"] == "Hard"  # all high, no mid
    assert labels["mini-T3.1-zh#nonthinking"] == "Extreme"  # nobody


def test_report_uses_calibrated_labels(tmp_path: Path) -> None:
    run = _run(tmp_path, "r", {"mini-T3.2-en"})
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps(
            {
                "labels_version": 1,
                "labels": {
                    "mini-T3.2-en#nonthinking": "Extreme",
                    "mini-T3.2-zh#nonthinking": "Extreme",
                    "mini-T3.1-en#nonthinking": "Extreme",
                    "mini-T3.1-zh#nonthinking": "Extreme",
                },
            }
        )
    )
    summary = score_run(run, scoring={"difficulty_labels": str(labels)}).to_dict()
    assert summary["modes"]["nonthinking"]["average_difficulty_metric"] == {"Extreme": 0.25}
    assert summary["longscope"]["difficulty_source"] == str(labels)


def test_calibration_needs_all_three_tiers(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one run for each"):
        difficulty_labels({"high": [score_run(_run(tmp_path, "h", set()))], "mid": [], "low": []})


def test_report_takes_the_labels_as_a_suite_option(tmp_path: Path) -> None:
    """`longscope report RUN -S difficulty_labels=FILE` (was --difficulty-labels)."""
    from ..cli_helper import longscope

    run = _run(tmp_path, "r", {"mini-T3.2-en"})
    labels = tmp_path / "labels.json"
    names = ("mini-T3.2-en", "mini-T3.2-zh", "mini-T3.1-en", "mini-T3.1-zh")
    table = {f"{n}#nonthinking": "Extreme" for n in names}
    labels.write_text(json.dumps({"labels_version": 1, "labels": table}), encoding="utf-8")
    done = longscope("report", str(run), "-S", f"difficulty_labels={labels}", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["modes"]["nonthinking"]["average_difficulty_metric"] == {"Extreme": 0.25}
