"""api.evaluate / plan / judge / merge: what a run spec asks is what is sent, stored and said.

The suite's prompts go to the scripted backend (in process, answering by rule) or, where the judge's
host is what is tested, to the fault server on 127.0.0.1 answering deterministically; the stores
are real SQLite written by the runner. No model: fast for mutmut.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from longscope import api
from longscope.errors import UsageError
from longscope.models.endpoints import MultiEndpointBackend
from longscope.models.scripted import ScriptedBackend, from_pattern
from longscope.router.backend import RoutedBackend
from longscope.run.assemble import build_suite
from longscope.run.spec import Judging, RunSpec
from longscope.suites import create_suite

from .api_helper import ANSWERS, FIXTURES, GRID, JUDGED, NEEDLE, VERDICT, longctx_spec
from .models.fault_server import FaultServer, completion_body


def _rows(run_dir: Path, table: str = "generations") -> list[tuple]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    try:
        if table == "generations":
            return db.execute(
                "SELECT sample_id, status, text FROM generations ORDER BY sample_id"
            ).fetchall()
        return db.execute("SELECT judge, value FROM judgements ORDER BY sample_id").fetchall()
    finally:
        db.close()


# --- evaluate: the suite, the model and the options it is given ---------------------------------


def test_a_backend_built_by_the_caller_runs_as_given(tmp_path: Path) -> None:
    backend = ScriptedBackend("mine", answer=from_pattern(NEEDLE), context_length=4096)
    said: list[str] = []
    made = api.evaluate(longctx_spec(tmp_path, model=backend), notify=said.append)
    assert made.sent == 2 and made.scores is not None and made.scores.summary.overall == 100.0
    assert [status for _, status, _ in _rows(tmp_path)] == ["ok", "ok"]
    assert len(backend.requests) == 2 and backend.closed
    assert said[0].startswith("plan: 2 requests (0 skipped, 0 done), ")
    assert said[-1].startswith("actual: 2 requests, ")


def test_a_suite_built_by_the_caller_is_the_one_run(tmp_path: Path) -> None:
    suite = create_suite(
        "longctx", {"lengths": [1024], "depths": [0.25, 0.75], "types": ["needle"]}
    )
    made = api.evaluate(RunSpec.of(suite, "scripted/x", model_options=ANSWERS, output=tmp_path))
    stored = [sample_id for sample_id, _, _ in _rows(tmp_path)]
    assert sorted(stored) == ["needle-1024-d025", "needle-1024-d075"]
    assert made.scores is not None and made.scores.header["params"]["depths"] == [0.25, 0.75]


def test_typed_suite_params_and_the_seed_reach_the_suite(tmp_path: Path) -> None:
    params = {"lengths": [1024], "depths": [0.1, 0.5, 0.9], "types": ["needle"]}
    made = api.evaluate(
        RunSpec.of(
            "longctx",
            "scripted/x",
            model_options=ANSWERS,
            suite_params=params,
            output=tmp_path / "p",
        )
    )
    assert made.sent == 3 and made.scores is not None
    assert made.scores.header["params"]["depths"] == [0.1, 0.5, 0.9]
    seeded = api.evaluate(longctx_spec(tmp_path / "s", lengths="1k", seed=7))
    assert seeded.scores is not None and seeded.scores.header["params"]["seed"] == 7
    plain = api.evaluate(longctx_spec(tmp_path / "d", lengths="1k"))
    assert plain.scores is not None and plain.scores.header["params"]["seed"] == 0
    # The seed makes the haystack: the same sample id, another prompt.
    assert _rows(tmp_path / "s")[0][0] == _rows(tmp_path / "d")[0][0]
    assert _prompts(tmp_path / "s") != _prompts(tmp_path / "d")


def _prompts(run_dir: Path) -> list[str]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    try:
        return [r[0] for r in db.execute("SELECT text FROM contexts ORDER BY hash").fetchall()]
    finally:
        db.close()


def test_a_scoring_only_option_is_refused_as_a_pair_or_a_typed_param(tmp_path: Path) -> None:
    data = str(FIXTURES / "longbench_pro_mini.json")
    message = (
        "-S difficulty_labels changes scores only, and `run` scores without it: after the run, "
        "`longscope score RUN_DIR -S difficulty_labels=...` stores scores with it "
        "(`longscope report RUN_DIR -S difficulty_labels=...` shows them)"
    )
    for given in (
        {"options": [f"data={data}", "difficulty_labels=labels.json"]},
        {"params": {"data": data, "difficulty_labels": "labels.json"}},
    ):
        with pytest.raises(UsageError) as caught:
            build_suite("longbench-pro", **given)
        assert str(caught.value) == message
    spec = RunSpec.of(
        "longbench-pro",
        "scripted/x",
        suite_params={"data": data, "difficulty_labels": "labels.json"},
        output=tmp_path / "run",
    )
    with pytest.raises(UsageError) as caught:
        api.evaluate(spec)
    assert str(caught.value) == message and not (tmp_path / "run").exists()


def test_a_shard_runs_only_its_part(tmp_path: Path) -> None:
    whole = api.plan(longctx_spec(tmp_path / "whole", lengths="1k,2k,4k"))
    first = api.evaluate(longctx_spec(tmp_path / "one", lengths="1k,2k,4k", shard="0/2"))
    second = api.evaluate(longctx_spec(tmp_path / "two", lengths="1k,2k,4k", shard="1/2"))
    ones = {sid for sid, _, _ in _rows(tmp_path / "one")}
    twos = {sid for sid, _, _ in _rows(tmp_path / "two")}
    assert ones and twos and not ones & twos
    assert first.sent + second.sent == len(ones | twos) == whole.requests


def test_max_tokens_the_models_context_cannot_hold_are_refused_before_anything_is_stored(
    tmp_path: Path,
) -> None:
    options = {**ANSWERS, "context_length": 4096}
    with pytest.raises(UsageError) as caught:
        api.evaluate(longctx_spec(tmp_path / "run", model_options=options, max_tokens=4096))
    assert str(caught.value) == (
        "--max-tokens 4096 does not fit scripted/x: it holds 4096 tokens (user) for prompt and "
        "answer together; use a smaller --max-tokens"
    )
    assert not (tmp_path / "run" / "longscope.sqlite").exists()
    made = api.evaluate(longctx_spec(tmp_path / "ok", model_options=options, max_tokens=40))
    assert made.scores is not None and made.scores.header["config"]["max_tokens"] == 40


def test_the_routing_options_put_the_router_in_front(tmp_path: Path) -> None:
    _, backend, transport = api.assemble(
        longctx_spec(
            tmp_path,
            router_length="1536",
            router_strategy="truncate",
            router_basis="relative",
            max_tokens=100,
        )
    )
    # the router is the outermost layer (the --max-tokens check is the prepared run's)
    routed = backend
    assert isinstance(routed, RoutedBackend) and routed.inner is transport
    assert (routed.length, routed.strategy, routed.basis) == (1536, "truncate", "relative")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"model": "scripted/x", "effective_context": 3072}))
    _, by_profile, _ = api.assemble(longctx_spec(tmp_path, router=profile))
    assert isinstance(by_profile, RoutedBackend) and by_profile.length == 3072


def test_the_scale_options_reach_the_backend_that_sends(tmp_path: Path) -> None:
    a, b = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    _, backend, transport = api.assemble(
        RunSpec.of(
            "longctx",
            "openai/m",
            model_options={"context_length": 8192},
            suite_options=list(GRID),
            lengths="1k",
            base_url=[a, b],
            concurrency=3,
            request_timeout=7.0,
            max_tokens_in_flight=900,
            prefill_rate=100.0,
            decode_rate=20.0,
            max_tokens=64,
            output=tmp_path,
        )
    )
    assert isinstance(transport, MultiEndpointBackend) and backend is transport
    assert [e.base_url for e in transport.endpoints] == [a, b]
    assert {(e.max_concurrency, e.request_timeout_s) for e in transport.endpoints} == {(3, 7.0)}
    assert {e.stated_context_length for e in transport.endpoints} == {8192}
    assert transport.token_cap == 900
    assert (transport.deadlines.prefill_tps, transport.deadlines.decode_tps) == (100.0, 20.0)


# --- evaluate with a judge ----------------------------------------------------------------------


def test_a_judged_suite_on_a_callers_backend_needs_a_judge_model(tmp_path: Path) -> None:
    backend = ScriptedBackend("mine", answer=VERDICT)
    with pytest.raises(UsageError) as caught:
        api.evaluate(
            RunSpec.of("hundred", backend, suite_options=list(JUDGED), output=tmp_path / "r")
        )
    assert str(caught.value) == "this suite is scored by an LLM judge: give judge_model"
    assert backend.requests == [] and not (tmp_path / "r").exists()


def test_the_evaluated_model_judges_its_own_answers_with_its_options(tmp_path: Path) -> None:
    said: list[str] = []
    spec = RunSpec.of(
        "hundred",
        "scripted/self",
        suite_options=list(JUDGED),
        model_options={"answer": VERDICT, "tokenizer": "qwen2.5"},
        output=tmp_path,
    )
    made = api.evaluate(spec, notify=said.append)
    answered = made.sent
    assert answered == 4 and made.scores is not None
    # The answers a judge is asked about (the two with a context), judged by the evaluated model
    # with its own options (the scripted verdict).
    assert _rows(tmp_path, "judgements") == [("scripted/self", 1.0)] * 2
    assert "warning: no --judge-model given: the evaluated model judges its own answers" in said
    assert (
        "judge scripted/self: 2 judged, 0 failed (recorded, not scored as 0), 0 already judged"
    ) in said
    assert said[0].startswith("plan: 4 requests")
    # The result is the run scored with the verdicts, as re-scoring reads it.
    again = api.score(tmp_path)
    assert made.scores.summary.overall == again.summary.overall == 100.0
    assert made.scores.completeness == again.summary.completeness


def test_a_judge_model_is_built_without_the_evaluated_models_options(tmp_path: Path) -> None:
    spec = RunSpec.of(
        "hundred",
        "scripted/self",
        suite_options=list(JUDGED),
        model_options={"answer": VERDICT, "tokenizer": "qwen2.5"},
        judge_model="scripted/judge",
        output=tmp_path,
    )
    said: list[str] = []
    made = api.evaluate(spec, notify=said.append)
    # The judge has no -M answer: its empty replies are failed verdicts, recorded, not scored 0.
    assert not any(line.startswith("warning: no --judge-model") for line in said)
    assert any(line.startswith("judge scripted/judge: 0 judged, 2 failed") for line in said)
    assert made.scores is not None


def test_a_judged_run_is_scored_only_after_its_judge_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    spec = RunSpec.of(
        "hundred",
        "scripted/self",
        suite_options=list(JUDGED),
        model_options={"answer": VERDICT, "tokenizer": "qwen2.5"},
        judge_model="openai/j",
        output=tmp_path,
    )
    # The judge has no host: refused before any answer is asked for (issue 39).
    with pytest.raises(UsageError, match=r"^judge openai/j has no endpoint: "):
        api.evaluate(spec)
    assert not (tmp_path / "longscope.sqlite").exists()
    # A judge named but not reachable: its pass fails after the answers are stored, before any
    # score is.
    spec = replace(spec, judge=Judging("openai/j", "http://127.0.0.1:9/v1"))
    with pytest.raises(UsageError, match=r"^cannot reach server at http://127\.0\.0\.1:9/v1"):
        api.evaluate(spec)
    assert [status for _, status, _ in _rows(tmp_path)] == ["ok"] * 4
    assert not (tmp_path / "summary.json").exists()
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    scores = db.execute("SELECT COUNT(*) FROM scores").fetchone()
    db.close()
    assert scores == (0,)
    made = api.judge(tmp_path, "scripted/j", judge_options={"answer": VERDICT})
    assert made.judged == 2 and (tmp_path / "summary.json").exists()


def test_without_a_judge_url_the_judge_goes_to_the_evaluated_models_server(
    tmp_path: Path,
) -> None:
    with FaultServer(faults=("500",), rate=0.0) as model:
        # Four answers (reporting no fewer prompt tokens than sent), then the verdicts: the judge
        # pass comes after every answer is stored.
        model.script.extend([("ok", completion_body("Paris.", prompt_tokens=4000))] * 4)
        model.script.extend([("ok", completion_body(VERDICT))] * 10)
        made = api.evaluate(
            RunSpec.of(
                "hundred",
                "openai/m",
                suite_options=list(JUDGED),
                base_url=model.url,
                output=tmp_path,
            )
        )
        asked = [r["body"]["model"] for r in model.requests]
    judged = _rows(tmp_path, "judgements")
    assert made.sent == 4 and judged == [("openai:m", 1.0)] * 2
    assert asked == ["m"] * 6  # four answers, then two verdicts, all from the one named host


# --- plan -------------------------------------------------------------------------------------------


def test_a_plan_sends_nothing_and_ignores_the_router(tmp_path: Path) -> None:
    said: list[str] = []
    spec = longctx_spec(tmp_path, router_length="1k", router_strategy="truncate")
    planned = api.plan(spec)
    assert planned.requests == 2 and not (tmp_path / "longscope.sqlite").exists()
    # The router plays no part: the plan is the run without it (a routed run is a run of its
    # own), the 2K prompt counted whole, as evaluate without the router sends it.
    made = api.evaluate(longctx_spec(tmp_path / "run"), notify=said.append)
    assert said[0] == planned.forecast()
    assert (made.sent, made.run_id) == (planned.requests, planned.run_id)
    # A router profile is not even read.
    unread = api.plan(longctx_spec(tmp_path, router=tmp_path / "missing.json"))
    assert unread.run_id == planned.run_id and not (tmp_path / "missing.json").exists()


def test_merge_takes_the_run_named_from_a_directory_of_two(tmp_path: Path) -> None:
    first = api.evaluate(longctx_spec(tmp_path / "runs", max_tokens=40))
    second = api.evaluate(longctx_spec(tmp_path / "runs", max_tokens=30))
    for made in (first, second):
        out = tmp_path / made.run_id
        report = api.merge(out, [tmp_path / "runs"], made.run_id)
        assert report.scores is not None and report.scores.run_id == made.run_id
        db = sqlite3.connect(out / "longscope.sqlite")
        stored = db.execute("SELECT DISTINCT run_id FROM generations").fetchall()
        db.close()
        assert stored == [(made.run_id,)]


def test_merge_joins_the_shards_of_one_run(tmp_path: Path) -> None:
    api.evaluate(longctx_spec(tmp_path / "one", shard="0/2"))
    api.evaluate(longctx_spec(tmp_path / "two", shard="1/2"))
    report = api.merge(tmp_path / "all", [tmp_path / "one", tmp_path / "two"])
    assert report.scores is not None and report.scores.completeness["complete"]
    assert len(_rows(tmp_path / "all")) == 2
