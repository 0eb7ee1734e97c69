"""`compare`, `profile` and every report on stored runs of each suite: analyses read only the
typed summary, so 100-LongBench gets effective length, wAvg and LongScore like the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.run.scoring import read_run, score_run
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.summary import Summary
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

from ..cli_helper import longscope
from ..test_cli import FIXTURES, _stored_run


def hundred_run(run_dir: Path) -> None:
    """100-LongBench at 2K-8K: right up to 4K, wrong beyond (effective 4096, Base defined)."""
    suite = create_suite("hundred", {"lengths": [2048, 4096, 6144, 8192], "samples": 1})
    samples = suite.build(
        BuildContext(QwenTokenizer(), "completion", GenerationConfig(max_tokens=64))
    )
    with RunStore(run_dir) as store:
        store.put_run(
            "h1",
            "hundred",
            {"params": suite.params(), "model": "openai/x", "model_info": {"context_length": 8192}},
        )
        store.put_samples("h1", samples)
        for sample in samples:
            right = sample.meta["target_length"] <= 4096
            store.put_generation(
                "h1", sample.id, 0, Generation(sample.gold[0] if right else "0", "ok")
            )


def longbench_pro_run(run_dir: Path) -> None:
    from ..lbp_helper import score_predictions

    score_predictions(
        str(FIXTURES / "longbench_pro_mini.json"),
        FIXTURES / "longbench_pro_mini_predictions.jsonl",
        run_dir,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("suites")
    _stored_run(root / "longctx")
    hundred_run(root / "hundred")
    longbench_pro_run(root / "longbench-pro")
    for name in ("longctx", "hundred"):
        score_run(root / name)
    return {name: root / name for name in ("longctx", "hundred", "longbench-pro")}


def test_every_summary_is_typed_and_round_trips_through_summary_json(runs) -> None:
    for name, run_dir in runs.items():
        result = read_run(run_dir)
        assert isinstance(result.summary, Summary) and result.summary.suite == name
        stored = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        back = Summary.from_dict(stored)
        assert back.views == result.summary.views and back.overall == result.summary.overall
        assert back.completeness == result.summary.completeness


def test_compare_on_all_three_suites(runs) -> None:
    board = longscope("compare", *map(str, runs.values()), "--json")
    assert board.returncode == 0, board.stderr
    rows = {row["suite"]: row for row in json.loads(board.stdout)}
    assert set(rows) == {"longctx", "hundred", "longbench-pro"}
    hundred = rows["hundred"]
    assert hundred["effective"] == "4096" and hundred["claimed"] == 8192
    assert hundred["lengths"] == {"2048": 100.0, "4096": 100.0, "6144": 0.0, "8192": 0.0}
    # wAvg: weights 1..4 rising and falling over 100, 100, 0, 0
    assert (hundred["wAvg_inc"], hundred["wAvg_dec"]) == (30.0, 70.0)
    assert hundred["LongScore"] == -100.0  # base 2K/4K/6K = 66.67, 8K scores 0
    assert hundred["kv_retrieval"] == 50.0  # per-task columns, mean over the lengths
    lbp = rows["longbench-pro"]
    assert {"nonthinking overall", "nonthinking English", "nonthinking Chinese"} <= set(lbp)
    assert lbp["overall"] == lbp["nonthinking overall"]
    assert rows["longctx"]["effective"] == "<4096"
    table = longscope("compare", *map(str, runs.values()))
    assert table.returncode == 0, table.stderr
    assert "Traceback" not in table.stderr


def test_profile_on_every_suite(runs, tmp_path: Path) -> None:
    for name, run_dir in runs.items():
        out = tmp_path / f"{name}.json"
        made = longscope("profile", str(run_dir), "-o", str(out))
        assert made.returncode == 0, (name, made.stderr)
        profile = json.loads(out.read_text(encoding="utf-8"))
        assert profile["measured"], name
    hundred = json.loads((tmp_path / "hundred.json").read_text(encoding="utf-8"))
    assert hundred["effective_context"] == 4096 and hundred["claimed_context"] == 8192
    (measured,) = hundred["measured"]
    assert measured["suite"] == "hundred" and measured["wAvg_inc"] == 30.0
    # effective length per task category
    assert measured["effective_by_category"]["kv_retrieval"] == "4096"


@pytest.mark.parametrize("name", ["longctx", "hundred", "longbench-pro"])
def test_every_report_renders_each_suite(runs, name: str, tmp_path: Path) -> None:
    run_dir = str(runs[name])
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    done = longscope("report", run_dir, "--html", str(html), "--markdown", str(md))
    assert done.returncode == 0, done.stderr
    assert "Score vs length" in html.read_text(encoding="utf-8") or name == "longctx"
    assert md.read_text(encoding="utf-8").startswith(f"## {name}:")
    terminal = longscope("report", run_dir)
    assert terminal.returncode == 0 and "statuses:" in terminal.stdout
    as_json = json.loads(longscope("report", run_dir, "--json").stdout)
    assert as_json["suite"] == name and as_json["longscope"]["views"]
