"""Re-scoring a stored run without the model, exactly: stored scores, reclassified refusals, the
summary, completeness, and a read that writes nothing. Fast: no model, no server."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.run.scoring import (
    SUMMARY_NAME,
    as_summary,
    completeness,
    failure_reason,
    nothing_scored,
    read_run,
    reclassified,
    reclassify_overflows,
    score_run,
)
from longscope.run.store import SHARD_KEY, STORE_NAME, RunStore, StoreError
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.summary import Summary
from longscope.types import Generation, GenerationConfig, Score, ScoredRow

from ..factories import stored_sample
from .test_judge import FIXTURES

REFUSAL = "HTTP 400: the request exceeds the available context size, try increasing it"


def _run(run_dir: Path, qwen_tokenizer) -> list[str]:
    """A judged run: one verdict, one failed verdict on a cleaned answer, one refusal stored as
    an error, one request never answered, an answer of a sample not stored; a later run j2."""
    params = {
        "tasks": ["single_doc_qa"],
        "lengths": [1024],
        "samples": 4,
        "metric": "judge",
        "sources": {"single_doc_qa": str(FIXTURES / "longbench_v1_qa.jsonl")},
    }
    suite = create_suite("hundred", params)
    samples = suite.build(BuildContext(qwen_tokenizer, "chat", GenerationConfig(max_tokens=64)))
    samples = sorted((s for s in samples if "nocontext" not in s.id), key=lambda s: s.id)
    ids = [sample.id for sample in samples]
    assert len(ids) == 4
    info = {"context_length": 4096}
    header = {"params": suite.params(), "model": "openai/modèle", "model_info": info}
    with RunStore(run_dir) as store:
        store.put_run("j1", "hundred", header)
        store.put_samples("j1", samples)
        store.put_generation("j1", "0-not-a-sample", 0, Generation("stray", "ok"))
        store.put_generation("j1", ids[0], 0, Generation("right", "ok"))
        cleaned = Generation("cleaned", "ok", error="sanitized: 1 lone surrogate")
        store.put_generation("j1", ids[1], 0, cleaned)
        store.put_generation("j1", ids[2], 0, Generation("", "error", error=REFUSAL))
        store.put_judgement("j1", ids[0], 0, "openai:j", 0.5, "{}", 1, "")
        store.put_judgement("j1", ids[1], 0, "openai:j", None, "??", 3, "no verdict")
        store.put_meta(SHARD_KEY + "j1", {"index": 1, "count": 2, "ids": [*ids, "x", "y"]})
        store.put_run("j2", "hundred", {"params": suite.params()})  # no model named
        store.put_samples("j2", samples[:1])  # (a header alone is no run: read_run refuses it)
    return ids


def _files(run_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(run_dir.iterdir())}


def test_rescoring_stores_scores_summary_and_reclassified_refusals(
    tmp_path: Path, qwen_tokenizer
) -> None:
    ids = _run(tmp_path, qwen_tokenizer)
    result = score_run(tmp_path, "j1")
    assert (result.run_id, result.suite, result.claimed) == ("j1", "hundred", 4096)
    with sqlite3.connect(tmp_path / STORE_NAME) as db:
        scores = db.execute(
            "SELECT sample_id, repeat, value, max, evidence FROM scores WHERE run_id='j1' "
            "ORDER BY sample_id"
        ).fetchall()
        statuses = dict(
            db.execute("SELECT sample_id, status FROM generations WHERE run_id='j1'").fetchall()
        )
    assert [(s, r, v, m, json.loads(e)) for s, r, v, m, e in scores] == [
        (ids[0], 0, 0.5, 1.0, {"metric": "judge", "judge": "openai:j"}),
        (
            ids[1],
            0,
            0.0,
            1.0,
            {
                "metric": "judge",
                "judge": "openai:j",
                "judge_failed": "no verdict",
                "sanitized": "sanitized: 1 lone surrogate",
            },
        ),
    ]
    assert statuses[ids[2]] == "context_overflow"
    assert [row.sample["id"] for row in result.rows] == ids[:3]
    assert result.rows[2].generation.status == "context_overflow"
    text = (tmp_path / SUMMARY_NAME).read_text(encoding="utf-8")
    assert text == json.dumps(result.to_dict(), indent=2, ensure_ascii=False)
    summary = json.loads(text)
    assert summary == result.to_dict() and result.run_dir == tmp_path
    assert (summary["run_id"], summary["suite"], summary["model"]) == (
        "j1",
        "hundred",
        "openai/modèle",
    )
    record = result.completeness
    assert {k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")} == {
        "requested": 4,
        "scored": 1,
        "skipped": 1,
        "failed": 1,
        "missing": 1,
    }
    assert record["shard"] == {"index": 1, "count": 2, "samples": 4, "of": 6}
    assert record["complete"] is False
    assert result.summary.statuses == {"context_overflow": 1, "ok": 2}
    by_length = {str(row.sample["length"]): {row.generation.status: 1} for row in result.rows}
    assert len(by_length) == 3 and result.summary.statuses_by_length == by_length
    suite = create_suite("hundred", result.header["params"])
    with RunStore.open_readonly(tmp_path) as store:
        samples = store.samples("j1")
    assert result.clusters == {sid: suite.cluster_key(samples[sid]) for sid in ids}
    assert read_run(tmp_path, "j2").to_dict()["model"] == ""


def test_repeats_of_one_source_question_are_one_cluster(tmp_path: Path, qwen_tokenizer) -> None:
    ids = _run(tmp_path, qwen_tokenizer)
    with RunStore(tmp_path, create=False) as store:
        store.put_generation("j1", ids[3], 0, Generation("also right", "ok"))
        store.put_judgement("j1", ids[3], 0, "openai:j", 1.0, "{}", 1, "")
        samples = store.samples("j1")
    suite = create_suite("hundred", read_run(tmp_path, "j1").header["params"])
    assert suite.cluster_key(samples[ids[0]]) == suite.cluster_key(samples[ids[3]])
    uncertainty = score_run(tmp_path, "j1").to_dict()["longscope"]["uncertainty"]
    assert (uncertainty["requests"], uncertainty["clusters"]) == (3, 2)
    assert uncertainty["cluster"] == "the source question (task and row), asked at every length"


def test_reading_a_run_writes_nothing_and_scores_the_named_run(
    tmp_path: Path, qwen_tokenizer
) -> None:
    ids = _run(tmp_path, qwen_tokenizer)
    before = _files(tmp_path)
    first = read_run(tmp_path, "j1")  # never scored: no summary, the refusal stays as stored
    assert _files(tmp_path) == before and SUMMARY_NAME not in before
    with RunStore.open_readonly(tmp_path) as store:
        assert {sid: g.status for sid, _, g in store.generations("j1")}[ids[2]] == "error"
    scored = score_run(tmp_path, "j1")
    assert first.summary == scored.summary
    before = _files(tmp_path)
    read = read_run(tmp_path, "j1")
    assert _files(tmp_path) == before
    assert read.run_id == "j1" and read.summary == scored.summary
    assert read.rows[2].generation.status == "context_overflow"


def test_a_scoring_option_reaches_the_suite(tmp_path: Path, qwen_tokenizer) -> None:
    _run(tmp_path, qwen_tokenizer)
    judged = read_run(tmp_path, "j1")
    plain = read_run(tmp_path, "j1", {"metric": "deterministic", "embedder": None})
    assert judged.rows[0].score.evidence["metric"] == "judge"
    assert plain.rows[0].score.evidence.get("metric") != "judge"


def test_rescoring_where_no_run_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        score_run(tmp_path)
    with pytest.raises(StoreError):
        read_run(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_stored_refusals_are_reclassified_in_the_store(tmp_path: Path, qwen_tokenizer) -> None:
    ids = _run(tmp_path, qwen_tokenizer)
    with RunStore(tmp_path, create=False) as store:
        # a refusal's words on a timeout are not a refusal: only `error` rows are reclassified
        store.put_generation("j1", ids[3], 0, Generation("", "timeout", error=REFUSAL))
        assert reclassify_overflows(store, "j1", []) == 0  # only what it is handed
        assert store.generations("j1")[3][2].status == "error"
        assert reclassify_overflows(store, "j1") == 1
        changed = {sid: g for sid, _, g in store.generations("j1")}
    assert changed[ids[2]] == Generation("", "context_overflow", error=REFUSAL)
    assert changed[ids[0]].status == "ok" and changed[ids[3]].status == "timeout"


@pytest.mark.parametrize(
    ("status", "error", "after"),
    [
        ("error", REFUSAL, "context_overflow"),
        ("ok", REFUSAL, "ok"),
        ("timeout", REFUSAL, "timeout"),
        ("error", "HTTP 400: temperature must be non-negative", "error"),
    ],
)
def test_reclassified(status: str, error: str, after: str) -> None:
    generation = Generation("text", status, error=error)  # type: ignore[arg-type]
    assert reclassified(generation) == Generation("text", after, error=error)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("x" * 32 + ": detail", "x" * 32),
        ("y" * 33 + ": detail", "y" * 31 + "…"),
        ("a: b: c", "a"),
        # cut at a word, never inside one
        ("the answer could not be read from the server at all: x", "the answer could not be read…"),
        # several endpoints: the last error, not the list of endpoints tried
        (
            "failed after 0 attempt(s) on endpoint(s) none: no endpoint left; every endpoint is down",
            "no endpoint left",
        ),
        (
            "failed after 2 attempt(s) on endpoint(s) http://a:1/v1, http://b:2/v1: connection "
            "error: refused",
            "connection error",
        ),
        ("failed after 2 attempt(s) on endpoint(s) http://a:1/v1: HTTP 503: busy", "503"),
    ],
)
def test_a_long_failure_reason_is_cut_at_32_characters(error: str, reason: str) -> None:
    assert failure_reason(Generation("", "error", error=error)) == reason


@pytest.mark.parametrize(
    ("record", "nothing"),
    [({"scored": 0}, True), ({}, True), ({"scored": 3}, False), ({"scored": 1}, False)],
)
def test_nothing_scored(record: dict, nothing: bool) -> None:
    assert nothing_scored(record) is nothing


def test_a_run_is_read_beside_the_process_writing_it(tmp_path: Path, qwen_tokenizer) -> None:
    _run(tmp_path, qwen_tokenizer)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from longscope.run.store import RunStore\n"
            "with RunStore(sys.argv[1], create=False):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(60)\n",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert read_run(tmp_path, "j1").completeness["scored"] == 1
        with pytest.raises(StoreError):
            score_run(tmp_path, "j1")  # a second writer is refused
    finally:
        holder.kill()
        holder.wait()


def test_lengths_are_listed_in_numeric_order_then_the_unknown() -> None:
    samples = {
        sid: {"id": sid, "task": "t", "length": length, "meta": {}}
        for sid, length in (("a", 16384), ("b", 4096), ("c", None), ("d", 900))
    }
    rows = [ScoredRow(sample, 0, Generation("", "timeout"), None) for sample in samples.values()]
    assert list(completeness(samples, rows)["by_length"]) == ["900", "4096", "16384", "None"]


def test_a_summary_is_taken_and_anything_else_refused_even_a_plain_dict() -> None:
    native = {"by_length": {"4096": 50.0}, "overall": 50.0}
    summary = Summary.from_native("old", native)
    assert as_summary("old", summary) is summary
    with pytest.raises(TypeError) as refused:
        as_summary("old", 3)
    assert str(refused.value) == "suite 'old' summarize() returned int, not a Summary"
    # The typed summary is the contract: a suite's plain dict is no longer read as best it can be.
    with pytest.raises(TypeError, match="returned dict, not a Summary"):
        as_summary("old", native)


def _sample(sid: str, length: int) -> dict:
    return stored_sample(sid, length)


def _row(sample: dict, repeat: int, status: str, error: str = "", score=None) -> ScoredRow:
    return ScoredRow(sample, repeat, Generation("", status, error=error), score)  # type: ignore[arg-type]


def test_completeness_counts_every_outcome_and_orders_reasons_by_count() -> None:
    a, b, c, d = (_sample(s, n) for s, n in (("a", 4096), ("b", 4096), ("c", 8192), ("d", 8192)))
    samples = {s["id"]: s for s in (a, b, c, d)}
    rows = [
        _row(a, 0, "ok"),  # answered, but the suite could not grade it
        _row(a, 1, "timeout"),
        _row(b, 0, "timeout"),
        _row(b, 1, "error", "HTTP 503: busy"),
        _row(c, 0, "ok", score=Score(1, 1)),
        # c repeat 1 never answered
        _row(d, 0, "skipped", "insufficient_context"),
        _row(d, 1, "context_overflow"),
    ]
    record = completeness(samples, rows)
    assert {k: record[k] for k in ("requested", "scored", "skipped", "failed", "missing")} == {
        "requested": 8,
        "scored": 1,
        "skipped": 2,
        "failed": 4,
        "missing": 1,
    }
    assert list(record["reasons"].items()) == [
        ("timeout", 2),
        ("503", 1),
        ("not gradable", 1),
        ("not run", 1),
    ]
    assert record["by_length"] == {
        "4096": {"requested": 4, "scored": 0, "skipped": 0, "failed": 4, "missing": 0},
        "8192": {"requested": 4, "scored": 1, "skipped": 2, "failed": 0, "missing": 1},
    }
    assert record["complete"] is False and "shard" not in record


def test_one_failure_and_one_missing_answer_leave_a_run_incomplete() -> None:
    a, b = _sample("a", 4096), _sample("b", 4096)
    rows = [_row(a, 0, "timeout"), _row(a, 1, "ok", score=Score(1, 1))]
    rows.append(_row(b, 0, "ok", score=Score(0, 1)))
    record = completeness({"a": a, "b": b}, rows)
    assert (record["failed"], record["missing"], record["complete"]) == (1, 1, False)
    done = completeness({"a": a}, [_row(a, 0, "ok", score=Score(1, 1))])
    assert (done["requested"], done["complete"]) == (1, True)


def test_a_run_with_no_answer_yet_asks_one_request_a_sample() -> None:
    record = completeness({"a": _sample("a", 4096), "b": _sample("b", 8192)}, [])
    assert (record["requested"], record["missing"], record["complete"]) == (2, 2, False)
