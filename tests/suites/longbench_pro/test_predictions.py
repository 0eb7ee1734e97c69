"""Scoring predictions made elsewhere against the hand-written fixture, with hand-scored values."""

import json
from pathlib import Path

import pytest

from ...lbp_helper import score_predictions

FIXTURES = Path(__file__).parents[2] / "fixtures"
DATA = FIXTURES / "longbench_pro_mini.json"
PREDICTIONS = FIXTURES / "longbench_pro_mini_predictions.jsonl"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    return score_predictions(str(DATA), PREDICTIONS, tmp_path_factory.mktemp("pred"))


def test_every_hand_scored_prediction(scored) -> None:
    expected = {}
    for line in PREDICTIONS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        mode = "thinking" if row.get("thinking") else "nonthinking"
        expected.setdefault(f"{row['id']}#{mode}", []).append(row["expected"])
    got: dict[str, list[float]] = {}
    for row in sorted(scored.rows, key=lambda r: (r.sample["id"], r.repeat)):
        got.setdefault(row.sample["id"], []).append(row.score.value if row.score else 0.0)
    assert got.keys() == expected.keys()
    for sample_id, values in expected.items():
        assert got[sample_id] == pytest.approx(values, abs=1e-5), sample_id


def test_summary_has_the_official_keys_and_bon(scored) -> None:
    summary = scored.to_dict()["modes"]["nonthinking"]
    extras = scored.to_dict()["longscope"]["modes"]["nonthinking"]
    assert list(summary)[:7] == [
        "date",
        "total_questions_num",
        "inference_iterations",
        "total_samples_num",
        "fail_samples_num",
        "inference_inconsistent_samples_num",
        "average_overall_metric",
    ]
    assert summary["total_questions_num"] == 17 and summary["total_samples_num"] == 18
    assert summary["inference_iterations"] == 2  # 18 rows are not N x 50: the most any question has
    assert summary["inference_inconsistent_samples_num"] == 16  # every question but T11.1-en
    assert summary["fail_samples_num"] == 1  # the empty prediction
    assert extras["official_would_refuse"][:2] == [
        "18 nonthinking rows are not N x 50 questions (official: AssertionError)",
        "no rows for primary_task T9. Version & Code Diff Analysis (official: KeyError)",
    ]
    assert "T9. Version & Code Diff Analysis" not in summary["average_primary_task_metric"]
    # T11.1: run 1 right, run 2 wrong -> mean 0.5; best of 2 keeps the 1.0 (fractions, as there)
    task = "T11.1 Long-Range Entity & Commitment Tracking"
    assert extras["average_secondary_task_metric"][task] == 0.5
    assert extras["BoN-2"]["secondary_task"][task] == 1.0
    assert "thinking" in scored.to_dict()["modes"]


def test_unknown_prediction_id_names_file_row_and_field(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "mini-T1.1-en", "prediction": "x"}\n{"id": "nope", "prediction": "y"}\n')
    from longscope.errors import UsageError

    with pytest.raises(UsageError, match=r"bad.jsonl: row 2: field 'id': 'nope' is not in"):
        score_predictions(str(DATA), bad, tmp_path / "out")
