"""What users rely on from the run machinery: resume per repeat, runs kept apart in one directory,
merges that keep the answered row, endpoints sized by the smallest, judges kept apart.

The model is the openai backend against the fault server, which answers each prompt
deterministically (`answer_for`), so stored answers can be compared exactly.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from longscope import api
from longscope.models.openai_api import OpenAIBackend
from longscope.run.judge import judge
from longscope.run.merge import merge_runs
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite

from ..models.fault_server import FaultServer, answer_for, completion_body, prompt_of

GRID = {"lengths": [1024], "depths": [0.25, 0.75], "types": ["needle"]}
FIXTURES = Path(__file__).parents[1] / "fixtures"


def _server() -> FaultServer:
    # A fault kind at rate 0: every answer is `answer_for(prompt)`, the same in every run.
    return FaultServer(faults=("500",), rate=0.0)


def _backend(server: FaultServer, **kwargs) -> OpenAIBackend:
    return OpenAIBackend("m", base_url=server.url, context_length=8192, **kwargs)


def _rows(run_dir: Path) -> list[tuple[str, str, int, str, str]]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    rows = db.execute(
        "SELECT run_id, sample_id, repeat, status, text FROM generations "
        "ORDER BY run_id, sample_id, repeat"
    ).fetchall()
    db.close()
    return rows


def test_more_repeats_on_resume_sends_exactly_the_missing_repeats(tmp_path: Path) -> None:
    with _server() as server:
        first = run(
            create_suite("longctx", GRID), _backend(server), RunOptions(tmp_path, quiet=True)
        )
        more = run(
            create_suite("longctx", GRID),
            _backend(server),
            RunOptions(tmp_path, repeats=3, quiet=True),
        )
        again = run(
            create_suite("longctx", GRID),
            _backend(server),
            RunOptions(tmp_path, repeats=3, quiet=True),
        )
    assert (first.sent, more.sent, again.sent) == (2, 4, 0)
    assert more.run_id == first.run_id
    rows = _rows(tmp_path)
    samples = sorted({sid for _, sid, *_ in rows})
    assert len(samples) == 2
    assert [(sid, rep) for _, sid, rep, _, _ in rows] == [
        (sid, rep) for sid in samples for rep in range(3)
    ]
    assert {status for *_, status, _ in rows} == {"ok"}
    assert more.scores.completeness["requested"] == 6 and more.scores.completeness["complete"]


def test_a_second_run_in_the_same_directory_sends_and_keeps_its_own_answers(
    tmp_path: Path,
) -> None:
    with _server() as server:
        first = run(
            create_suite("longctx", GRID),
            _backend(server),
            RunOptions(tmp_path, max_tokens=40, quiet=True),
        )
        second = run(
            create_suite("longctx", GRID),
            _backend(server),
            RunOptions(tmp_path, max_tokens=30, quiet=True),
        )
        bodies = [r["body"] for r in server.requests]
    assert first.run_id != second.run_id
    assert (first.sent, second.sent) == (2, 2)
    assert [b["max_tokens"] for b in bodies] == [40, 40, 30, 30]
    rows = _rows(tmp_path)
    assert sorted(r[0] for r in rows) == sorted([first.run_id] * 2 + [second.run_id] * 2)
    assert second.scores.completeness["scored"] == 2


def test_merge_keeps_the_answered_row_over_an_error_row_of_the_same_request(
    tmp_path: Path,
) -> None:
    failed, answered, merged = tmp_path / "failed", tmp_path / "answered", tmp_path / "merged"
    with _server() as server:
        server.script.extend([("status", (400, "bad parameter", {}))] * 2)
        first = run(create_suite("longctx", GRID), _backend(server), RunOptions(failed, quiet=True))
        second = run(
            create_suite("longctx", GRID), _backend(server), RunOptions(answered, quiet=True)
        )
    assert first.run_id == second.run_id
    assert {r[3] for r in _rows(failed)} == {"error"}
    answers = {r[1]: r[4] for r in _rows(answered)}
    # The store with the error rows comes first: its rows must not hide the answers.
    report = merge_runs(merged, [failed, answered])
    rows = _rows(merged)
    assert [(r[1], r[3], r[4]) for r in rows] == [
        (sid, "ok", answers[sid]) for sid in sorted(answers)
    ]
    assert report.scores is not None and report.scores.completeness["complete"]
    assert report.scores.completeness["scored"] == 2


def test_endpoints_of_unequal_context_lengths_size_the_run_by_the_smallest(
    tmp_path: Path,
) -> None:
    suite = create_suite("longctx", {"lengths": [4096, 8192], "depths": [0.5], "types": ["needle"]})
    with FaultServer(4096, faults=("500",)) as small, FaultServer(16384, faults=("500",)) as big:
        backend = api.build_backend("openai/m", base_url=[small.url, big.url])
        result = run(suite, backend, RunOptions(tmp_path, quiet=True))
        prompts = [prompt_of(r["body"]) for r in small.requests + big.requests]
    statuses = sorted((r[1].split("-")[1], r[3]) for r in _rows(tmp_path))
    # The 4K sample fits the smaller endpoint exactly; the 8K one would overflow it: skipped,
    # never sent to either.
    assert statuses == [("4096", "ok"), ("8192", "skipped")]
    assert len(prompts) == 1 and result.sent == 1
    assert result.scores.completeness["skipped"] == 1


def _verdicts(count: int) -> list[tuple[str, dict]]:
    return [("ok", completion_body('Fine. {"fluency": 2, "correctness": 3}'))] * count


def test_the_judge_goes_to_judge_base_url_not_to_the_evaluated_models_server(
    tmp_path: Path,
) -> None:
    params = [
        "tasks=single_doc_qa",
        "lengths=1024",
        "samples=2",
        "metric=judge",
        f"source=single_doc_qa={FIXTURES / 'longbench_v1_qa.jsonl'}",
    ]
    with _server() as model, FaultServer() as judge_server:
        judge_server.script.extend(_verdicts(10))
        spec = api.RunSpec.of(
            "hundred",
            "openai/m",
            suite_options=params,
            base_url=model.url,
            judge_model="openai/j",
            judge_base_url=judge_server.url,
            output=tmp_path,
        )
        result = api.evaluate(spec)
        to_model = [r["body"]["model"] for r in model.requests]
        to_judge = [r["body"]["model"] for r in judge_server.requests]
    answered = result.sent
    assert answered >= 2 and to_model == ["m"] * answered
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    verdicts = db.execute("SELECT judge, value FROM judgements").fetchall()
    db.close()
    # Every verdict came from the judge's own server, none from the evaluated model's.
    assert len(verdicts) >= 1 and verdicts == [("openai:j", 1.0)] * len(verdicts)
    assert to_judge == ["j"] * len(verdicts)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary.get("judge_failures", {}) == {}


def test_a_second_judge_is_asked_about_every_answer_the_first_judged(tmp_path: Path) -> None:
    params = [
        "tasks=single_doc_qa",
        "lengths=1024",
        "samples=2",
        "metric=judge",
        f"source=single_doc_qa={FIXTURES / 'longbench_v1_qa.jsonl'}",
    ]
    with _server() as model, FaultServer() as judges:
        judges.script.extend(_verdicts(10))
        spec = api.RunSpec.of(
            "hundred",
            "openai/m",
            suite_options=params,
            base_url=model.url,
            judge_model="openai/first",
            judge_base_url=judges.url,
            output=tmp_path,
        )
        api.evaluate(spec)
        first = len(judges.requests)
        counts = judge(tmp_path, OpenAIBackend("second", base_url=judges.url))
        asked = [r["body"]["model"] for r in judges.requests[first:]]
    assert first >= 1
    assert counts == {"judged": first, "failed": 0, "cached": 0}
    assert asked == ["second"] * first
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    judges_seen = db.execute("SELECT judge, COUNT(*) FROM judgements GROUP BY judge").fetchall()
    db.close()
    assert sorted(judges_seen) == [("openai:first", first), ("openai:second", first)]


def test_answers_are_the_servers(tmp_path: Path) -> None:
    """The fault server's answers are what is stored (the comparison above relies on it)."""
    with _server() as server:
        run(create_suite("longctx", GRID), _backend(server), RunOptions(tmp_path, quiet=True))
        prompts = [prompt_of(r["body"]) for r in server.requests]
    assert sorted(r[4] for r in _rows(tmp_path)) == sorted(answer_for(p) for p in prompts)
