"""A shard says it is one, and merge says when the merged run is not whole (issue 21, defects 2, 4
and the merge items of 9).

A shard used to print "total 100.0/100", `complete: true` and exit 0 like a whole run; `merge`
exited 0 with requests never answered, and reported shards as missing that an unsharded input
already covered. The real CLI in a subprocess, on the scripted model (exact, instant).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .cli_helper import longscope
from .test_cli_scale import GRID, SCRIPTED, _run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("honest-shards")
    paths = {"whole": root / "whole", "s0": root / "s0", "s1": root / "s1"}
    assert _run(paths["whole"]).returncode == 0
    made = _run(paths["s0"], "--shard", "0/2")
    assert made.returncode == 0, made.stderr  # its own requests all answered
    paths["s0_stdout"] = made.stdout  # type: ignore[assignment]
    slurm = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    made = _run(paths["s1"], env=slurm)
    assert made.returncode == 0, made.stderr
    paths["s1_stderr"] = made.stderr  # type: ignore[assignment]
    return paths


def _shard(run_dir: Path) -> dict:
    made = longscope("report", str(run_dir), "--json")
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)["completeness"]


def test_a_shard_says_so_in_its_headline_json_report_and_compare(runs, tmp_path: Path) -> None:
    record = _shard(runs["s0"])
    mine = record["shard"]["samples"]
    assert record["shard"] == {"index": 0, "count": 2, "samples": mine, "of": 4}
    assert 1 <= mine <= 3 and record["complete"] is False
    said = f"shard 0/2: {mine} of 4 samples"
    assert f"provisional ({said})" in runs["s0_stdout"]
    assert f"{said}: provisional until `longscope merge`" in runs["s0_stdout"]
    html = tmp_path / "r.html"
    made = longscope("report", str(runs["s0"]), "--html", str(html))
    assert made.returncode == 0, made.stderr
    assert said in html.read_text(encoding="utf-8")
    assert said in made.stderr
    compared = longscope("compare", str(runs["whole"]), str(runs["s0"]), "--json")
    rows = json.loads(compared.stdout)
    assert [r.get("shard") for r in rows if r["state"] == "provisional"] == [said[6:]]
    assert longscope("compare", str(runs["whole"]), str(runs["s0"])).stderr.count("incomplete") == 1
    # The whole run is not a shard and says nothing of the kind.
    assert "shard" not in _shard(runs["whole"])


def test_the_plan_line_names_the_shard(tmp_path: Path) -> None:
    made = longscope("plan", "longctx", *SCRIPTED, *GRID, "--shard", "1/2")
    assert made.returncode == 0, made.stderr
    assert "shard 1/2: " in made.stdout and " of 4 samples; plan: " in made.stdout
    assert json.loads(
        longscope("plan", "longctx", *SCRIPTED, *GRID, "--shard", "1/2", "--json").stdout
    )["shard"].startswith("shard 1/2: ")


def test_a_shard_from_the_environment_is_announced_before_anything_is_sent(runs) -> None:
    lines = runs["s1_stderr"].splitlines()
    announced = next(i for i, x in enumerate(lines) if "from SLURM_ARRAY_TASK_ID" in x)
    forecast = next(i for i, x in enumerate(lines) if x.startswith("shard 1/2: "))
    assert announced < forecast
    assert "plan: " in lines[forecast]


def test_merge_exits_3_while_requests_were_never_answered(runs, tmp_path: Path) -> None:
    # A shard killed mid-run: its samples are stored, one of its answers is not.
    killed = tmp_path / "s1-killed"
    killed.mkdir()
    db = sqlite3.connect(runs["s1"] / "longscope.sqlite")
    db.execute("VACUUM INTO ?", (str(killed / "longscope.sqlite"),))
    db.close()
    db = sqlite3.connect(killed / "longscope.sqlite")
    db.execute("DELETE FROM generations WHERE rowid = (SELECT MIN(rowid) FROM generations)")
    db.commit()
    db.close()
    made = longscope("merge", str(tmp_path / "merged"), str(runs["s0"]), str(killed))
    assert made.returncode == 3, (made.stdout, made.stderr)
    assert "gaps: 1 request(s) never answered" in made.stdout
    # The same shards whole merge complete, exit 0.
    whole = longscope("merge", str(tmp_path / "whole"), str(runs["s0"]), str(runs["s1"]))
    assert whole.returncode == 0, whole.stdout


def test_an_unsharded_run_covers_the_shards_it_is_merged_with(runs, tmp_path: Path) -> None:
    made = longscope("merge", str(tmp_path / "merged"), str(runs["whole"]), str(runs["s0"]))
    assert made.returncode == 0, made.stdout
    assert "gaps" not in made.stdout
    assert _shard(tmp_path / "merged")["complete"] is True
