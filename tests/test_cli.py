"""The CLI: usage errors are one line and exit 2; score and report work on a stored run, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

from .cli_helper import longscope

_longscope = longscope


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "nosuch", "--model", "llamacpp/gemma3-270m"], "unknown suite 'nosuch'"),
        (["run", "longctx", "--model", "gemma3-270m"], "bad model spec 'gemma3-270m'"),
        (["run", "longctx", "--model", "vllm/x"], "bad model spec 'vllm/x'"),
        (["run", "longctx", "--model", "llamacpp/nosuch"], "unknown local model 'nosuch'"),
        (
            ["run", "longctx", "--model", "openai/m", "-M", "context_length"],
            "malformed model option",
        ),
        (
            ["run", "longctx", "--model", "openai/m", "-M", "colour=red"],
            "unknown openai option(s) colour",
        ),
        (["run", "longctx", "--model", "openai/m", "-S", "tiers=9"], "unknown LongCtx tier(s) [9]"),
        (
            ["run", "longctx", "--model", "openai/m", "-S", "colour=red"],
            "unknown longctx option 'colour': longctx takes tiers, lengths, depths, types, "
            "language, seed (see `longscope list longctx`)",
        ),
        (["run", "longctx", "--model", "openai/m", "-S", "tiers"], "malformed suite option"),
        (["run", "longctx", "--model", "openai/m", "--lengths", "4q"], "bad length '4q'"),
        (
            ["run", "longctx", "--model", "openai/m", "--base-url", "http://127.0.0.1:9/v1"],
            "cannot reach server at http://127.0.0.1:9/v1",
        ),
        (["report", "/nonexistent/run"], "no longscope run in /nonexistent/run"),
        (
            # An endpoint is named (no default host): the refusal is the profile's.
            [
                "run",
                "longctx",
                "--model",
                "openai/m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--router",
                "/nonexistent/p.json",
            ],
            "cannot read profile /nonexistent/p.json",
        ),
        (
            [
                "run",
                "longctx",
                "--model",
                "openai/m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--router-length",
                "2k",
                "--router-strategy",
                "x",
            ],
            "unknown router strategy 'x': use map-reduce, truncate",
        ),
        (
            ["run", "hundred", "--model", "openai/m", "-S", "tasks=passage_retrieval"],
            "passage_retrieval needs a summary per document",
        ),
        (
            ["run", "hundred", "--model", "openai/m", "-S", "tasks=single_doc_qa"],
            "need a real source: pass -S source=TASK=FILE.jsonl",
        ),
        (
            ["run", "hundred", "--model", "openai/m", "-S", "source=qa"],
            "bad -S source=qa: expected source=KEY=VALUE",
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = _longscope(*args)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_hub_source_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _longscope(
        "run",
        "hundred",
        "--model",
        "llamacpp/gemma3-270m",
        "-S",
        "tasks=single_doc_qa",
        "-S",
        "source=single_doc_qa=hub:THUDM/LongBench:qasper",
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "cannot load THUDM/LongBench (qasper) from the Hub" in lines[0]
    assert "pass -S source=TASK=FILE.jsonl" in lines[0]


def test_unknown_option_is_a_usage_error() -> None:
    result = _longscope("run", "longctx", "--model", "openai/m", "--colour", "red")
    assert result.returncode == 2 and "No such option" in result.stderr


def test_list_names_suites_and_models() -> None:
    result = _longscope("list")
    assert result.returncode == 0
    assert "longctx" in result.stdout and "gemma3-270m" in result.stdout


def _stored_run(run_dir: Path) -> None:
    """A run as `longscope run` leaves it, written through the store (no model involved)."""
    suite = create_suite("longctx", {"tiers": [1]})
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    answers = {
        "LCB-001": ("0.003 arc-seconds", "ok"),
        "LCB-002": ("3, July 14, 2019", "ok"),
        "LCB-003": ("", "timeout"),
        "LCB-004": ("No, it is not overdue.", "ok"),
    }
    with RunStore(run_dir) as store:
        store.put_run("abc123", "longctx", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("abc123", samples)
        for sample in samples:
            text, status = answers[sample.id]
            store.put_generation("abc123", sample.id, 0, Generation(text, status))


def test_score_and_report_a_stored_run_without_a_model(tmp_path: Path) -> None:
    _stored_run(tmp_path)
    scored = _longscope("score", str(tmp_path))
    assert scored.returncode == 0, scored.stderr
    assert "LCB-001" in scored.stdout
    report = _longscope("report", str(tmp_path), "--json")
    summary = json.loads(report.stdout)
    points = {sid: row["points"] for sid, row in summary["per_sample"].items()}
    assert points == {
        "LCB-001": 5,
        "LCB-002": pytest.approx(10 / 3, abs=1e-3),
        "LCB-003": 0,
        "LCB-004": -5,
    }
    # raw keeps the -5; the total floors at 0 only as a whole: (5 + 3.333 + 0 - 5) / 20
    assert summary["raw_points"] == pytest.approx(3.333, abs=1e-3)
    assert summary["total"] == pytest.approx(16.67, abs=0.01)
    assert summary["level"] == "Severe Context Loss"
    assert summary["statuses"] == {"ok": 3, "timeout": 1}
    assert json.loads((tmp_path / "summary.json").read_text())["total"] == summary["total"]


FIXTURES = Path(__file__).parent / "fixtures"


def test_score_predictions_made_elsewhere(tmp_path: Path) -> None:
    result = _longscope(
        "score",
        "longbench-pro",
        "-S",
        f"data={FIXTURES / 'longbench_pro_mini.json'}",
        "--predictions",
        str(FIXTURES / "longbench_pro_mini_predictions.jsonl"),
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "LongBench Pro" in result.stdout and "BoN" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["modes"]["nonthinking"]["total_questions_num"] == 17


def test_malformed_longbench_pro_data_is_one_line(tmp_path: Path) -> None:
    rows = json.loads((FIXTURES / "longbench_pro_mini.json").read_text(encoding="utf-8"))
    del rows[4]["difficulty"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rows), encoding="utf-8")
    result = _longscope(
        "run",
        "longbench-pro",
        "-S",
        f"data={bad}",
        "--model",
        "openai/m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {bad}: row 5: field 'difficulty': missing"


def test_compare_and_profile_on_stored_runs(tmp_path: Path) -> None:
    _stored_run(tmp_path / "a")
    board = _longscope("compare", str(tmp_path / "a"), "--json")
    assert board.returncode == 0, board.stderr
    rows = json.loads(board.stdout)
    assert rows[0]["suite"] == "longctx" and rows[0]["effective"] == "<4096"
    assert rows[0]["lengths"] == {"4096": 16.7}
    profile = tmp_path / "profile.json"
    made = _longscope("profile", str(tmp_path / "a"), "-o", str(profile))
    assert made.returncode == 0, made.stderr
    data = json.loads(profile.read_text())
    assert data["model"] == "openai/m" and data["measured"][0]["effective_label"] == "<4096"
