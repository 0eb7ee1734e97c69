"""Paired differences between runs on the same samples; unpaired runs say so."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from longscope.analysis.compare import compare_runs
from longscope.analysis.uncertainty import with_uncertainty
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.summary import simple_summary
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig, Score, ScoredRow

from ..cli_helper import longscope


def _rows(values: dict[str, float], question: str = "q") -> list[ScoredRow]:
    """One request per sample `sN-LENGTH`, scored `value` of 1, on the document of its number."""
    rows = []
    for sid, value in values.items():
        length = int(sid.split("-")[1])
        sample = {"id": sid, "task": "t", "question": f"{question} {sid}", "gold": ["a"]}
        sample |= {"language": "en", "length": length, "meta": {}}
        rows.append(ScoredRow(sample, 0, Generation("a", "ok"), Score(value, 1.0)))
    return rows


def _side(name: str, rows: list[ScoredRow]):
    summary = with_uncertainty(simple_summary("toy", "Toy", rows), rows)
    return (name, summary, rows, {r.sample["id"]: r.sample["id"] for r in rows})


def test_paired_difference_per_length_by_hand() -> None:
    a = {"s1-4096": 1, "s2-4096": 0, "s3-4096": 1, "s4-8192": 0, "s5-8192": 0, "s6-8192": 1}
    b = {"s1-4096": 1, "s2-4096": 1, "s3-4096": 1, "s4-8192": 1, "s5-8192": 0, "s6-8192": 1}
    made = compare_runs(_side("A", _rows(a)), _side("B", _rows(b)))
    assert made.paired and "paired by sample id on 6 samples" in made.note
    # At 4K the differences are 0, 100, 0: mean 33.3, SE = s / sqrt(3) = 57.74 / 1.732 = 33.3.
    at_4k = made.by_length[4096]
    assert at_4k.value == pytest.approx(100 / 3)
    assert at_4k.se == pytest.approx(100 / 3)
    assert at_4k.within_noise  # t(2) x 33.3 = 143 points either side
    # Overall: differences 0, 100, 0, 100, 0, 0 -> mean 33.3; one sample per cluster, so:
    # s^2 = (4 * 33.3^2 + 2 * 66.7^2) / 5 = 2666.7; SE = sqrt(2666.7 / 6) = 21.08.
    assert made.overall.value == pytest.approx(100 / 3)
    assert made.overall.se == pytest.approx(math.sqrt(2666.666 / 6), abs=1e-2)
    # Length AUC over 4K and 8K weighs each length's mean difference 1/2: 33.3 at each -> 33.3.
    # Each request weighs 1/6; residuals from its length's mean: 4K -33.3 +66.7 -33.3, 8K +66.7
    # -33.3 -33.3: (4 x 33.3^2 + 2 x 66.7^2) / 36 = 370.4. Lengths are strata of 3 samples each:
    # x 3/2 -> 555.6, SE 23.57 (sum_n a_n^2 s_n^2 / n_n = 2 x 0.25 x 3333.3 / 3).
    assert made.auc is not None and made.auc.value == pytest.approx(100 / 3)
    assert made.auc.se == pytest.approx(math.sqrt(2 * 0.25 * (20000 / 6) / 3), abs=1e-2)
    assert made.as_dict()["auc"]["within_noise"]


def test_a_consistent_gain_is_not_noise_when_paired_but_is_when_unpaired() -> None:
    # B gets 10 more samples right out of 60, the same 30 both get right: paired, the SE is
    # that of the 10 changed answers only; unpaired, the two runs' own SEs add up.
    a = {f"s{i}-4096": 1.0 if i < 30 else 0.0 for i in range(60)}
    b = {f"s{i}-4096": 1.0 if i < 40 else 0.0 for i in range(60)}
    paired = compare_runs(_side("A", _rows(a)), _side("B", _rows(b)))
    assert paired.paired and not paired.overall.within_noise
    other_questions = compare_runs(_side("A", _rows(a)), _side("B", _rows(b, question="other")))
    assert not other_questions.paired and "unpaired" in other_questions.note
    assert other_questions.overall.value == pytest.approx(paired.overall.value, abs=0.01)
    # Paired: 16.7 +- 4.9 (answers that agree cancel); unpaired: 16.7 +- 8.9, interval holds 0.
    assert other_questions.overall.se > 1.5 * paired.overall.se
    assert other_questions.overall.within_noise


def _hundred(run_dir: Path, right_until: int, seed: int = 0) -> None:
    """100-LongBench at 2K and 4K, right up to `right_until`; model `mRIGHT_UNTIL-SEED`."""
    suite = create_suite("hundred", {"lengths": [2048, 4096], "samples": 2, "seed": seed})
    built = suite.build(
        BuildContext(QwenTokenizer(), "completion", GenerationConfig(max_tokens=64))
    )
    with RunStore(run_dir) as store:
        store.put_run(
            f"r{right_until}{seed}",
            "hundred",
            {"params": suite.params(), "model": f"m{right_until}-{seed}"},
        )
        store.put_samples(f"r{right_until}{seed}", built)
        for s in built:
            right = s.meta["target_length"] <= right_until
            store.put_generation(
                f"r{right_until}{seed}", s.id, 0, Generation(s.gold[0] if right else "0", "ok")
            )
    score_run(run_dir)


def test_compare_prints_and_writes_the_differences(tmp_path: Path) -> None:
    _hundred(tmp_path / "a", 2048)
    _hundred(tmp_path / "b", 4096)
    _hundred(tmp_path / "c", 4096, seed=9)
    board = longscope("compare", *(str(tmp_path / n) for n in "abc"), "--json")
    assert board.returncode == 0, board.stderr
    rows = {row["model"]: row for row in json.loads(board.stdout)}
    assert "vs_reference" not in rows["m2048-0"]
    paired = rows["m4096-0"]["vs_reference"]
    assert paired["paired"] and paired["by_length"]["2048"]["difference"] == 0
    assert paired["by_length"]["4096"]["difference"] == 100
    assert paired["by_length"]["2048"]["within_noise"]
    # Another data seed: other samples under the same ids, so no pairing.
    assert not rows["m4096-9"]["vs_reference"]["paired"]
    table = longscope("compare", *(str(tmp_path / n) for n in "abc"))
    assert "Difference from" in table.stdout and "unpaired" in table.stdout
