"""The command line beyond one server: shards and merge, plan, several endpoints, their refusals.

The library behind these (flow control, benching, merge) is tested on real llama.cpp servers in
tests/run/; here the commands a user types are checked end to end, in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .cli_helper import longscope
from .hostile_server import HostileServer, fails_never

# The scripted model quotes the needle's measurement wherever it is asked: right on the needle
# task, wrong on the three others of tier 1, so equal scores are not equal by accident.
SCRIPTED = (
    "--model", "scripted/reader", "-M", r"pattern=(\d\.\d+ arc-seconds)",
    "-M", "context_length=8192",
)  # fmt: skip
GRID = ("-S", "tiers=1")


def _run(out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "longscope.cli",
            "run",
            "longctx",
            *SCRIPTED,
            *GRID,
            "-q",
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _scores(run_dir: Path) -> dict:
    made = longscope("report", str(run_dir), "--json")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    return {k: v for k, v in summary.items() if k not in ("timing", "run_id", "created")}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shards")
    paths = {"whole": root / "whole", "s0": root / "s0", "s1": root / "s1"}
    assert _run(paths["whole"]).returncode == 0
    assert _run(paths["s0"], "--shard", "0/2").returncode == 0
    # The second shard from a Slurm array's environment, as `sbatch --array=0-1` sets it.
    slurm = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    made = _run(paths["s1"], env=slurm)
    assert made.returncode == 0, made.stderr
    return paths


def test_shards_merged_score_exactly_as_the_whole_run(shards, tmp_path: Path) -> None:
    whole = _scores(shards["whole"])
    assert whole["total"] == 25.0
    s0, s1 = _scores(shards["s0"]), _scores(shards["s1"])
    assert s0["completeness"]["scored"] + s1["completeness"]["scored"] == 4
    assert min(s0["completeness"]["scored"], s1["completeness"]["scored"]) >= 1
    merged = longscope("merge", str(tmp_path / "merged"), str(shards["s1"]), str(shards["s0"]))
    assert merged.returncode == 0, merged.stderr
    assert "merged 2 store(s)" in merged.stdout and "4 generations (4 new)" in merged.stdout
    assert _scores(tmp_path / "merged") == whole
    again = longscope("merge", str(tmp_path / "merged"), str(shards["s0"]), str(shards["s1"]))
    assert again.returncode == 0 and "4 generations (0 new)" in again.stdout
    assert _scores(tmp_path / "merged") == whole


def test_merging_one_shard_of_two_names_the_gap_and_exits_3(shards, tmp_path: Path) -> None:
    half = longscope("merge", str(tmp_path / "half"), str(shards["s0"]))
    assert half.returncode == 3
    assert "gaps: shard(s) 1 not merged" in half.stdout


def test_plan_counts_what_run_then_sends_and_prices_it(tmp_path: Path) -> None:
    made = longscope(
        "plan", "longctx", *SCRIPTED, *GRID, "--prefill-rate", "1000", "--decode-rate", "10",
        "--price-in", "3", "--price-out", "15", "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    plan = json.loads(made.stdout)
    assert plan["requests"] == 4 and plan["already_done"] == 0
    assert plan["output_tokens_max"] == 4 * 200
    cost = plan["prompt_tokens"] * 3 / 1e6 + plan["output_tokens_max"] * 15 / 1e6
    assert plan["cost"] == pytest.approx(cost)
    eta = plan["prompt_tokens"] / 1000 + plan["output_tokens_max"] / 10
    assert plan["eta_s"] == pytest.approx(eta)
    ran = _run(tmp_path / "run", "--price-in", "3", "--price-out", "15")
    assert ran.returncode == 0, ran.stderr
    forecast = next(line for line in ran.stderr.splitlines() if line.startswith("plan: "))
    assert f"{plan['prompt_tokens']:,} prompt tokens" in forecast
    import sqlite3

    db = sqlite3.connect(tmp_path / "run" / "longscope.sqlite")
    (sent,) = db.execute("SELECT SUM(prompt_tokens) FROM generations").fetchone()
    assert sent == plan["prompt_tokens"]
    actual = next(line for line in ran.stderr.splitlines() if line.startswith("actual: "))
    assert actual.startswith(f"actual: 4 requests, {sent:,} prompt tokens")
    again = json.loads(longscope("plan", "longctx", *SCRIPTED, *GRID, "-o", str(tmp_path / "run"),
                                 "--json").stdout)  # fmt: skip
    assert (again["requests"], again["already_done"]) == (0, 4)


def test_two_endpoints_share_one_run_and_report_each(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    with (
        HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as a,
        HostileServer("m", fails=fails_never, answer="0.003 arc-seconds") as b,
    ):
        urls.write_text(f"# two servers\n{b.base_url}\n", encoding="utf-8")
        made = longscope(
            "run", "longctx", "--model", "openai/m", "--base-url", a.base_url,
            "--base-urls", str(urls), "-M", "context_length=32768", "-S", "tiers=1",
            "--max-tokens-in-flight", "9000", "-o", str(tmp_path / "run"), "-q",
        )  # fmt: skip
        posts = (a.posts, b.posts)
    assert made.returncode == 0, made.stderr
    assert sum(posts) == 4 and min(posts) >= 1
    lines = made.stderr.splitlines()
    for server, count in zip((a, b), posts, strict=True):
        line = next(x for x in lines if x.startswith(server.base_url + ":"))
        assert line.startswith(f"{server.base_url}: {count} requests (0 failed)")
        # Two 4K prompts never fit under a 9,000-token cap split over two endpoints.
        assert "/4,500 tokens" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--shard", "2/2"), "bad shard '2/2': expected i/N with 0 <= i < N"),
        (("--shard", "one"), "bad shard 'one'"),
        (("--max-tokens-in-flight", "0"), "bad --max-tokens-in-flight 0"),
        (
            ("--max-tokens-in-flight", "9000"),
            "--max-tokens-in-flight applies only to openai/ models",
        ),
        (("--base-urls", "/nonexistent/urls.txt"), "cannot read --base-urls /nonexistent/urls.txt"),
        (("--probe", "--prefill-rate", "10"), "--probe measures the rates"),
        (("--price-in", "-1"), "bad --price-in -1"),
        (("--prefill-rate", "nan"), "bad --prefill-rate nan"),
        (
            ("--base-url", "http://a/v1", "--base-url", "http://b/v1"),
            "several --base-url apply only to openai/",
        ),
    ],
)
def test_bad_scale_options_are_one_line_and_exit_2(tmp_path: Path, args, message) -> None:
    for command in ("run", "plan"):
        made = longscope(command, "longctx", *SCRIPTED, "-S", "tiers=1", *args,
                         "-o", str(tmp_path / "run"))  # fmt: skip
        assert made.returncode == 2, (command, made.stderr)
        lines = made.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (command, lines)
    assert not (tmp_path / "run").exists()


def test_a_job_index_without_a_count_is_refused(tmp_path: Path) -> None:
    made = _run(tmp_path / "run", env={"JOB_COMPLETION_INDEX": "3"})
    assert made.returncode == 2
    assert "JOB_COMPLETION_INDEX is set but the shard count is not" in made.stderr
