"""The run store at its boundaries, fast and without a model: real SQLite files written through
`RunStore` as a run writes them, read back as resume, merge, score and report read them.

Each test asserts what a user relies on: the stored rows (read back and as SQLite holds them),
which (sample, repeat) a resume sends again, the one-line refusals, and the lock that keeps two
writers out of one run directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sqlite3
import sys
from pathlib import Path

import pytest

from longscope.run.store import LOCK_NAME, STORE_NAME, RunLock, RunStore, StoreError
from longscope.types import (
    RETRYABLE,
    BudgetUse,
    Generation,
    Judgement,
    Sample,
    Score,
    sanitized_note,
    stable_hash,
)

from ..factories import sample

SURROGATE = "\udc80"


def _sample(sid: str, context: str = "the context", length: int = 4096) -> Sample:
    return sample(
        sid, task="needle", context=context, question=f"question {sid}?", gold=("gold",),
        length=length, meta={"k": sid},
    )  # fmt: skip


def _raw(run_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(run_dir / STORE_NAME)


def _lock_is_free(run_dir: Path) -> bool:
    """Return whether another writer (another open file, as another process has) could lock."""
    fd = os.open(run_dir / LOCK_NAME, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # also drops the flock taken here
    return True


# runs and meta -------------------------------------------------------------------------------


def test_runs_headers_and_meta_read_back_as_stored(tmp_path: Path) -> None:
    header = {"suite": {"b": 2, "a": 1}, "model": "m"}
    with RunStore(tmp_path) as store:
        with pytest.raises(StoreError) as caught:
            store.run()
        assert str(caught.value) == f"{tmp_path / STORE_NAME} holds no run yet"
        store.put_run("first111", "longctx", header)
        store.put_run("first111", "other", {"replaced": True})  # a resumed run keeps its header
        store.put_run("second22", "ruler", {"n": 2})
        store.put_run("third333", "hundred", {"n": 3})
        runs = store.runs()
        assert [(r["run_id"], r["suite"], r["header"]) for r in runs] == [
            ("first111", "longctx", header),
            ("second22", "ruler", {"n": 2}),
            ("third333", "hundred", {"n": 3}),
        ]
        assert all(isinstance(r["created"], float) for r in runs)
        assert runs[0]["created"] <= runs[1]["created"] <= runs[2]["created"]
        assert store.run()["run_id"] == "third333"  # the latest, not the first or the second
        assert store.run(None)["run_id"] == "third333"
        assert store.run("seco")["run_id"] == "second22"
        with pytest.raises(StoreError) as caught:
            store.run("fourth")
        assert str(caught.value) == f"no run 'fourth' in {tmp_path / STORE_NAME}"

        assert store.get_meta("absent") is None
        store.put_meta("shard:x", {"z": [1, 2], "a": None})
        store.put_meta("plain", "text")
        store.put_meta("plain", 7)  # replaced, not duplicated
        assert store.get_meta("shard:x") == {"z": [1, 2], "a": None}
        assert store.get_meta("plain") == 7
    db = _raw(tmp_path)
    # stored as sorted JSON: the same header is the same bytes whatever order it was built in
    assert db.execute("SELECT header FROM runs WHERE run_id='first111'").fetchone() == (
        '{"model": "m", "suite": {"a": 1, "b": 2}}',
    )
    assert db.execute("SELECT value FROM meta WHERE key='shard:x'").fetchone() == (
        '{"a": null, "z": [1, 2]}',
    )
    assert db.execute("SELECT COUNT(*) FROM meta WHERE key='plain'").fetchone() == (1,)


# samples and contexts ------------------------------------------------------------------------


def test_samples_keep_the_build_order_and_share_contexts(tmp_path: Path) -> None:
    samples = [_sample("c", "doc one"), _sample("a", "doc two"), _sample("b", "doc one")]
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {})
        store.put_samples("r1", samples)  # default positions: 0, 1, 2 in turn
        assert list(store.samples("r1")) == ["c", "a", "b"]
        assert store.samples("r1")["a"] == samples[1].public()
        hashes = store.context_hashes("r1")
        assert hashes == {
            "c": stable_hash("doc one", 32),
            "a": stable_hash("doc two", 32),
            "b": stable_hash("doc one", 32),
        }
        assert store.context("r1", "b") == "doc one" and store.context("r1", "a") == "doc two"
        assert store.context("r1", "missing") == ""
        assert store.context("r2", "a") == ""
        # a shard stores its samples at their places in the whole run's order
        store.put_samples("r2", samples, positions=[7, 2, 5])
        assert list(store.samples("r2")) == ["a", "b", "c"]
        assert store.samples("r3") == {} and store.context_hashes("r3") == {}
        # stored again (a resumed run): replaced, one row each
        store.put_samples("r1", [_sample("a", "doc two")], positions=[9])
        assert list(store.samples("r1")) == ["c", "b", "a"]
    db = _raw(tmp_path)
    assert db.execute("SELECT COUNT(*) FROM contexts").fetchone() == (2,)
    assert db.execute("SELECT COUNT(*) FROM samples WHERE run_id='r1'").fetchone() == (3,)
    assert db.execute(
        "SELECT position FROM samples WHERE run_id='r2' ORDER BY sample_id"
    ).fetchall() == [(2,), (5,), (7,)]  # a, b, c


def test_a_context_utf8_cannot_encode_is_stored_cleaned(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_samples("r1", [_sample("s", f"before{SURROGATE}after")])
        assert store.context("r1", "s") == "before\ufffdafter"


# generations: what resume sends again --------------------------------------------------------


def test_generations_read_back_field_by_field_in_sample_and_repeat_order(tmp_path: Path) -> None:
    rows = [
        ("s2", 1, Generation("two-one", "ok", "why", 120, 7, 1.25, "")),
        ("s1", 2, Generation("", "length", "long", 99, 50, 0.5, "")),
        ("s1", 0, Generation("one", "ok", "", 100, 3, 0.75, "")),
        ("s2", 0, Generation("", "error", "", 0, 0, 2.0, "HTTP 500")),
    ]
    with RunStore(tmp_path) as store:
        store.put_generations("r1", rows)
        store.put_generation("r2", "s1", 0, Generation("other run", "ok"))
        got = store.generations("r1")
        assert [(sid, rep) for sid, rep, _ in got] == [("s1", 0), ("s1", 2), ("s2", 0), ("s2", 1)]
        by_key = {(sid, rep): gen for sid, rep, gen in got}
        for sid, rep, gen in rows:
            stored = by_key[(sid, rep)]
            assert (
                stored.text,
                stored.status,
                stored.reasoning,
                stored.prompt_tokens,
                stored.completion_tokens,
                stored.latency_s,
                stored.error,
            ) == (
                gen.text,
                gen.status,
                gen.reasoning,
                gen.prompt_tokens,
                gen.completion_tokens,
                gen.latency_s,
                gen.error,
            )
        assert store.count_generations("r1") == 4 and store.count_generations("r2") == 1
        assert store.count_generations("r3") == 0
        assert [g.text for _, _, g in store.generations("r2")] == ["other run"]


@pytest.mark.parametrize(
    ("status", "final"),
    [
        ("ok", True),
        ("length", True),
        ("context_overflow", True),
        ("skipped", False),  # a later run on a larger model may fit it
        ("error", False),
        ("timeout", False),
    ],
)
def test_a_final_row_is_never_overwritten_and_a_retryable_one_always_is(
    tmp_path: Path, status: str, final: bool
) -> None:
    assert (status in RETRYABLE) is not final
    with RunStore(tmp_path) as store:
        store.put_generation("r1", "s1", 0, Generation("first", status, error="first reason"))
        store.put_generation("r1", "s1", 1, Generation("", "error", error="other repeat"))
        assert store.done_keys("r1") == ({("s1", 0)} if final else set())
        assert store.done_keys("r2") == set()
        store.put_generation(
            "r1", "s1", 0, Generation("second", "timeout", error="later", latency_s=3.0)
        )
        (sid, rep, gen), _ = store.generations("r1")
        assert (sid, rep) == ("s1", 0)
        if final:
            assert (gen.text, gen.status, gen.error) == ("first", status, "first reason")
        else:
            assert (gen.text, gen.status, gen.error, gen.latency_s) == (
                "second",
                "timeout",
                "later",
                3.0,
            )
        # an answer replaces a retryable row in full
        store.put_generations("r1", [("s1", 1, Generation("answer", "ok", "r", 11, 2, 0.5))])
        again = {(s, r): g for s, r, g in store.generations("r1")}[("s1", 1)]
        assert (again.text, again.status, again.reasoning, again.error) == ("answer", "ok", "r", "")
        assert (again.prompt_tokens, again.completion_tokens, again.latency_s) == (11, 2, 0.5)
        assert store.done_keys("r1") == ({("s1", 0), ("s1", 1)} if final else {("s1", 1)})


def test_text_utf8_cannot_encode_is_replaced_and_flagged_in_the_error(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_generations(
            "r1",
            [
                ("a", 0, Generation(f"x{SURROGATE}y{SURROGATE}", "ok", f"r{SURROGATE}")),
                ("b", 0, Generation(f"t{SURROGATE}", "length", error="cut at max_tokens")),
                ("c", 0, Generation("clean", "ok", f"{SURROGATE}")),
                ("d", 0, Generation("clean", "ok", error=f"server said {SURROGATE}")),
                ("e", 0, Generation(f"z{SURROGATE}", "ok", error=sanitized_note(1))),
            ],
        )
        gens = {sid: g for sid, _, g in store.generations("r1")}
    assert (gens["a"].text, gens["a"].reasoning) == ("x\ufffdy\ufffd", "r\ufffd")
    assert gens["a"].error == sanitized_note(3)  # text and reasoning counted together
    assert gens["b"].error == f"{sanitized_note(1)}; cut at max_tokens"
    assert gens["c"].text == "clean" and gens["c"].error == sanitized_note(1)
    # an error message alone is cleaned but not flagged: the answer itself was fine
    assert gens["d"].error == "server said \ufffd"
    # flagged once, even when the answer comes back already flagged (a merge copies rows)
    assert gens["e"].error == sanitized_note(1)


def test_a_row_sqlite_refuses_becomes_an_error_and_the_batch_is_kept(tmp_path: Path) -> None:
    big = 1 << 70  # no SQLite INTEGER holds it
    with RunStore(tmp_path) as store:
        store.put_generations(
            "r1",
            [
                ("a", 0, Generation("kept", "ok", "why", 10, 2, 0.5, route={"mode": "pass"})),
                ("b", 0, Generation("too big", "ok", "because", big, 2, 0.25)),
                ("c", 1, Generation("also kept", "length", "", 12, 3, 0.75, "")),
                ("e", 0, Generation("routed", "ok", route={"mode": "map-reduce", "calls": 3})),
            ],
        )
        gens = {(sid, rep): g for sid, rep, g in store.generations("r1")}
        assert store.routes("r1") == {
            ("a", 0): {"mode": "pass"},
            ("e", 0): {"mode": "map-reduce", "calls": 3},
        }
        assert store.done_keys("r1") == {("a", 0), ("c", 1), ("e", 0)}  # b is sent again
    assert (gens[("a", 0)].text, gens[("a", 0)].prompt_tokens) == ("kept", 10)
    assert (gens[("c", 1)].text, gens[("c", 1)].status, gens[("c", 1)].latency_s) == (
        "also kept",
        "length",
        0.75,
    )
    bad = gens[("b", 0)]
    assert (bad.status, bad.text, bad.reasoning) == ("error", "", "")
    assert (bad.prompt_tokens, bad.completion_tokens, bad.latency_s) == (0, 0, 0.0)
    assert bad.error == (
        "unstorable answer (OverflowError: Python int too large to convert to SQLite INTEGER)"
    )
    # the error row keeps its time like any row (what a reader of the file sorts by)
    times = _raw(tmp_path).execute("SELECT sample_id, typeof(created) FROM generations").fetchall()
    assert sorted(times) == [("a", "real"), ("b", "real"), ("c", "real"), ("e", "real")]


class _Unbindable:
    """A value SQLite cannot bind (a count a backend left as a library's own integer type)."""


_Unbindable.__name__ = _Unbindable.__qualname__ = "Unbindable" + "X" * 200


def test_a_value_sqlite_cannot_bind_or_a_missing_count_costs_only_its_row(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_generations(
            "r1",
            [
                ("a", 0, Generation("kept", "ok", "", 10, 2, 0.5)),
                ("d", 0, Generation("unbindable", "ok", "", _Unbindable(), 1, 0.1)),
                ("n", 0, Generation("no count", "ok", "", None, 1, 0.1)),  # type: ignore[arg-type]
            ],
        )
        gens = {sid: g for sid, _, g in store.generations("r1")}
        assert store.done_keys("r1") == {("a", 0)}
    assert gens["a"].text == "kept"
    long = gens["d"]
    assert long.status == "error" and "\n" not in long.error and long.error.endswith(")")
    name, _, message = long.error.removeprefix("unstorable answer (").partition(": ")
    assert name == "ProgrammingError"
    message = message.removesuffix(")")
    assert len(message) == 160 and message.startswith("Error binding parameter 7: type 'Unbind")
    assert gens["n"].status == "error" and gens["n"].error == (
        "unstorable answer (IntegrityError: NOT NULL constraint failed: generations.prompt_tokens)"
    )


def test_what_a_thinking_budget_did_is_kept_beside_its_answer(tmp_path: Path) -> None:
    forced = BudgetUse(
        thinking_budget=512, thinking_tokens=512, forced=True, answer_tokens=40, answer_cut=False
    )
    cut = BudgetUse(256, 100, False, 200, True)
    with RunStore(tmp_path) as store:
        store.put_generations(
            "r1",
            [
                ("a", 0, Generation("x", "ok", budget=forced)),
                ("b", 1, Generation("y", "length", budget=cut)),
                ("c", 0, Generation("no budget", "ok")),
            ],
        )
        # a batch with a row SQLite refuses keeps the budgets of the others
        store.put_generations(
            "r1",
            [
                ("d", 0, Generation("z", "ok", budget=cut)),
                ("e", 0, Generation("big", "ok", prompt_tokens=1 << 70, budget=forced)),
            ],
        )
        store.put_generation("r2", "a", 0, Generation("other", "ok", budget=cut))
        assert store.budgets("r1") == {
            ("a", 0): forced,
            ("b", 1): cut,
            ("d", 0): cut,
            ("e", 0): forced,
        }
        gens = {(sid, rep): g for sid, rep, g in store.generations("r1")}
    assert (gens[("a", 0)].budget, gens[("b", 1)].budget, gens[("c", 0)].budget) == (
        forced,
        cut,
        None,
    )
    assert gens[("d", 0)].budget == cut
    assert gens[("e", 0)].status == "error"  # the answer was unstorable; its budget note is kept
    rows = (
        _raw(tmp_path)
        .execute(
            "SELECT run_id, sample_id, repeat, thinking_budget, thinking_tokens, forced, answer_tokens, "
            "answer_cut FROM budgets ORDER BY run_id, sample_id"
        )
        .fetchall()
    )
    assert rows[:2] == [("r1", "a", 0, 512, 512, 1, 40, 0), ("r1", "b", 1, 256, 100, 0, 200, 1)]
    assert len(rows) == 5 and rows[-1][0] == "r2"
    # a store written before budgets were kept, read as it is
    db = _raw(tmp_path)
    db.execute("DROP TABLE budgets")
    db.commit()
    db.close()
    with RunStore.open_readonly(tmp_path) as reader:
        assert reader.budgets("r1") == {}
        assert [g.budget for _, _, g in reader.generations("r1")] == [None] * 5


def test_routes_and_score_evidence_keep_text_and_clean_what_utf8_cannot_encode(
    tmp_path: Path,
) -> None:
    with RunStore(tmp_path) as store:
        store.put_generation(
            "r1", "s1", 0, Generation("a", "ok", route={"note": f"é{SURROGATE}", "n": 2})
        )
        store.put_scores("r1", [("s1", 0, Score(1.0, 2.0, {"seen": f"ü{SURROGATE}", "x": [1]}))])
        assert store.routes("r1") == {("s1", 0): {"note": "é\ufffd", "n": 2}}
        assert store.routes("r2") == {}
        (score,) = store.scores("r1").values()
        assert (score.value, score.max, score.evidence) == (1.0, 2.0, {"seen": "ü\ufffd", "x": [1]})
    db = _raw(tmp_path)
    # readable text in the file (what another tool or `sqlite3` shows), not \u escapes
    assert db.execute("SELECT plan FROM routes").fetchone() == ('{"note": "é\ufffd", "n": 2}',)
    assert db.execute("SELECT evidence FROM scores").fetchone() == (
        '{"seen": "ü\ufffd", "x": [1]}',
    )


def test_scores_of_one_run_are_replaced_and_another_runs_are_kept(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_scores("r1", [("s1", 0, Score(1, 1, {"rule": "a"})), ("s2", 1, Score(0, 1))])
        store.put_scores("r2", [("s1", 0, Score(0.5, 1, {"rule": "b"}))])
        store.put_scores("r1", [("s1", 0, Score(0.25, 1, {"rule": "c"}))])
        r1, r2 = store.scores("r1"), store.scores("r2")
    assert list(r1) == [("s1", 0)] and r1[("s1", 0)].evidence == {"rule": "c"}
    assert r1[("s1", 0)].value == 0.25
    assert list(r2) == [("s1", 0)] and r2[("s1", 0)].evidence == {"rule": "b"}


def test_judgements_per_judge_and_the_latest_judge_wins(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_judgement("r1", "s1", 0, "judge/a", 1.0, "yes", 1, "")
        store.put_judgement("r1", "s2", 0, "judge/a", None, "", 3, "timeout")
        store.put_judgement("r1", "s1", 0, "judge/b", 0.0, f"no{SURROGATE}", 2, "")
        store.put_judgement("r2", "s9", 0, "judge/a", 1.0, "", 1, "")
        assert store.judged_keys("r1", "judge/a") == {("s1", 0), ("s2", 0)}
        assert store.judged_keys("r1", "judge/b") == {("s1", 0)}
        assert store.judged_keys("r1", "judge/c") == set()
        assert store.judgements("r1") == {
            ("s1", 0): Judgement(0.0, "judge/b", ""),
            ("s2", 0): Judgement(None, "judge/a", "timeout"),
        }
        store.put_judgement("r1", "s1", 0, "judge/a", 0.5, "again", 4, "")  # judge/a rules last
        assert store.judgements("r1")[("s1", 0)] == Judgement(0.5, "judge/a", "")
        assert store.judgement_records("r1")[-1] == ("s1", 0, "judge/a", 0.5, "again", 4, "")
        assert ("s1", 0, "judge/b", 0.0, "no\ufffd", 2, "") in store.judgement_records("r1")
        assert store.judgement_records("r2") == [("s9", 0, "judge/a", 1.0, "", 1, "")]


# text another tool wrote ---------------------------------------------------------------------


def test_bytes_that_are_not_utf8_read_as_replacement_characters(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {})
        store.put_generation("r1", "s1", 0, Generation("placeholder", "ok"))
    db = _raw(tmp_path)
    with db:
        db.execute("UPDATE generations SET text = CAST(X'61FF62' AS TEXT)")
    db.close()
    with RunStore(tmp_path) as store:
        assert store.generations("r1")[0][2].text == "a\ufffdb"
    with RunStore.open_readonly(tmp_path) as store:
        assert store.generations("r1")[0][2].text == "a\ufffdb"


# opening, refusing, creating -----------------------------------------------------------------


def test_a_missing_store_is_refused_without_creating_anything(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    for open_it in (
        lambda: RunStore(missing, create=False),
        lambda: RunStore.open_readonly(missing),
    ):
        with pytest.raises(StoreError) as caught:
            open_it()
        assert str(caught.value) == f"no longscope run in {missing}: expected {STORE_NAME} there"
        assert not missing.exists()
    # a directory without a store, opened to write with create=False: refused, nothing written
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="no longscope run in"):
        RunStore(tmp_path / "empty", create=False)
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_new_store_in_nested_directories_is_wal_and_reopens_with_its_rows(tmp_path: Path) -> None:
    run_dir = tmp_path / "a" / "b" / "run"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / f"{STORE_NAME}.new-1").write_text("not here")
    run_dir.mkdir(parents=True)
    (run_dir / f"{STORE_NAME}.new-99999").write_bytes(b"left by a killed writer")
    with RunStore(run_dir) as store:
        store.put_generation("r1", "s1", 0, Generation("kept", "ok"))
        assert store.readonly is False
    assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_NAME, STORE_NAME]
    assert (tmp_path / "a" / f"{STORE_NAME}.new-1").exists()  # only the run directory's own
    db = _raw(run_dir)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("1",)
    db.close()
    with RunStore(run_dir) as store:  # reopened, not rebuilt
        assert [g.text for _, _, g in store.generations("r1")] == ["kept"]
    with RunStore(tmp_path / "x" / "y") as store:  # parents created
        assert store.count_generations("r1") == 0
    assert (tmp_path / "x" / "y" / STORE_NAME).is_file()


def test_an_empty_store_file_becomes_a_store(tmp_path: Path) -> None:
    (tmp_path / STORE_NAME).write_bytes(b"")
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {})
        assert store.run()["run_id"] == "r1"
    db = _raw(tmp_path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_another_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {})
    db = _raw(tmp_path)
    with db:
        db.execute("UPDATE meta SET value='2' WHERE key='schema'")
    db.close()
    expected = f"{tmp_path / STORE_NAME} has store schema 2, this longscope reads 1"
    for open_it in (lambda: RunStore(tmp_path), lambda: RunStore.open_readonly(tmp_path)):
        with pytest.raises(StoreError) as caught:
            open_it()
        assert str(caught.value) == expected
    assert _lock_is_free(tmp_path)  # the refused writer let go of the lock


def test_a_foreign_sqlite_file_is_not_read_as_a_store(tmp_path: Path) -> None:
    db = _raw(tmp_path)
    with db:
        db.execute("CREATE TABLE other (x)")
        db.execute("INSERT INTO other VALUES (1)")
    db.close()
    with pytest.raises(StoreError) as caught:
        RunStore.open_readonly(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / STORE_NAME} is not a longscope store (no schema record)"
    )
    not_sqlite = tmp_path / "junk"
    not_sqlite.mkdir()
    (not_sqlite / STORE_NAME).write_bytes(b"plain text, " * 400)
    for open_it in (
        lambda: RunStore(not_sqlite, create=False),
        lambda: RunStore.open_readonly(not_sqlite),
    ):
        with pytest.raises(StoreError) as caught:
            open_it()
        assert str(caught.value) == (
            f"{not_sqlite / STORE_NAME} is not a longscope store (file is not a database)"
        )
    assert (not_sqlite / STORE_NAME).read_bytes() == b"plain text, " * 400


def test_a_file_that_is_not_sqlite_beside_a_wal_is_refused_read_only(tmp_path: Path) -> None:
    # a WAL beside it: the reader cannot take the file as closed cleanly and asks SQLite
    (tmp_path / STORE_NAME).write_bytes(b"plain text, " * 400)
    (tmp_path / f"{STORE_NAME}-wal").write_bytes(b"")
    with pytest.raises(StoreError) as caught:
        RunStore.open_readonly(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path / STORE_NAME} is not a longscope store (file is not a database)"
    )
    assert (tmp_path / STORE_NAME).read_bytes() == b"plain text, " * 400


def test_foreign_sqlite_files_a_writer_cannot_adopt_are_refused_untouched(tmp_path: Path) -> None:
    cases = {
        # a `meta` table of another shape: named as such, not taken for a permission problem
        "shape": (
            "CREATE TABLE meta (key, value, extra)",
            "{path} is not a longscope store (its table meta has columns key, value, extra, not "
            "key, value); it was not changed: choose another run directory",
        ),
        # other columns: not taken for a damaged file either
        "columns": (
            "CREATE TABLE meta (name TEXT, data TEXT); INSERT INTO meta VALUES ('schema', '1')",
            "{path} is not a longscope store (its table meta has columns name, data, not "
            "key, value); it was not changed: choose another run directory",
        ),
        "one column": (
            "CREATE TABLE meta (key)",
            "{path} is not a longscope store (its table meta has columns key, not key, value); "
            "it was not changed: choose another run directory",
        ),
        # no `meta`, but a table of the store's with other columns: refused before any write
        "generations": (
            "CREATE TABLE generations (x INTEGER, note TEXT)",
            "{path} is not a longscope store (its table generations has columns x, note, not "
            "run_id, sample_id, repeat, status, text, reasoning, prompt_tokens, completion_tokens, "
            "latency_s, error, created); it was not changed: choose another run directory",
        ),
        # a file that refuses new keys
        "trigger": (
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); "
            "CREATE TRIGGER no_keys BEFORE INSERT ON meta "
            "BEGIN SELECT RAISE(ABORT, 'this file takes no new keys'); END;",
            "{path} is not a longscope store (this file takes no new keys)",
        ),
    }
    for name, (script, message) in cases.items():
        run_dir = tmp_path / name
        run_dir.mkdir()
        db = _raw(run_dir)
        db.executescript(script)
        db.close()
        before = (run_dir / STORE_NAME).read_bytes()
        with pytest.raises(StoreError) as caught:
            RunStore(run_dir)
        assert str(caught.value) == message.format(path=run_dir / STORE_NAME)
        assert _lock_is_free(run_dir)
        if name not in ("trigger", "generations"):  # a reader gets the same line; file unchanged
            with pytest.raises(StoreError) as caught:
                RunStore.open_readonly(run_dir)
            assert str(caught.value) == message.format(path=run_dir / STORE_NAME)
            assert (run_dir / STORE_NAME).read_bytes() == before
        tables = _raw(run_dir).execute("SELECT name FROM sqlite_master WHERE type='table'")
        # nothing of the store's was left in it
        assert [t for (t,) in tables] == ["generations" if name == "generations" else "meta"]
        if name == "generations":  # refused before the writer's first statement: not a byte moved
            assert (run_dir / STORE_NAME).read_bytes() == before
    # the store's name taken by a directory
    (tmp_path / "dir" / STORE_NAME).mkdir(parents=True)
    with pytest.raises(StoreError) as caught:
        RunStore(tmp_path / "dir")
    assert str(caught.value) == (
        f"cannot create {tmp_path / 'dir' / STORE_NAME} (unable to open database file): "
        "check the directory"
    )


def test_closing_twice_is_harmless(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {})
        store.close()  # closed early; the with block closes it again
    assert _lock_is_free(tmp_path)
    reader = RunStore.open_readonly(tmp_path)
    reader.close()
    reader.close()


def test_a_damaged_store_names_its_first_problem_and_their_count(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_samples("r1", [_sample(f"s{i}", f"context {i} " * 400) for i in range(30)])
    path = tmp_path / STORE_NAME
    db = sqlite3.connect(path)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name='samples'").fetchone()
    db.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page)
        handle.write(b"\xff" * 8)
    try:
        problems = [r[0] for r in sqlite3.connect(path).execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    assert problems != ["ok"]
    for open_it in (lambda: RunStore(tmp_path), lambda: RunStore.open_readonly(tmp_path)):
        with pytest.raises(StoreError) as caught:
            open_it()
        assert str(caught.value) == (
            f"{path} is damaged ({' '.join(problems[0].split())}; {len(problems)} problem(s)); "
            "it was not changed: restore it from a copy or start a new run directory"
        )


def test_a_reader_beside_a_writer_sees_committed_rows_and_changes_nothing(tmp_path: Path) -> None:
    with RunStore(tmp_path) as writer:
        writer.put_run("r1", "longctx", {"n": 1})
        writer.put_generation("r1", "s1", 0, Generation("committed", "ok"))
        assert (tmp_path / f"{STORE_NAME}-wal").exists()  # the writer is open: a WAL is there
        with RunStore.open_readonly(tmp_path) as reader:
            assert reader.readonly is True
            assert [g.text for _, _, g in reader.generations("r1")] == ["committed"]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader.put_meta("x", 1)
        assert not _lock_is_free(tmp_path)  # the reader took nor released the writer's lock
    # closed cleanly: the WAL is folded in; a reader now leaves the directory exactly as it was
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert f"{STORE_NAME}-wal" not in before
    with RunStore.open_readonly(tmp_path) as reader:
        assert reader.run()["header"] == {"n": 1}
        assert reader.count_generations("r1") == 1
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


# the lock -------------------------------------------------------------------------------------


def test_the_lock_file_names_this_writer(tmp_path: Path) -> None:
    lock = tmp_path / LOCK_NAME
    lock.write_text(json.dumps({"pid": 1, "command": "x" * 500}))  # a longer, older record
    old_mask = os.umask(0o022)
    try:
        (tmp_path / "fresh").mkdir()
        with RunStore(tmp_path), RunStore(tmp_path / "fresh"):
            record = json.loads(lock.read_bytes())
            assert (tmp_path / "fresh" / LOCK_NAME).stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old_mask)
    assert set(record) == {"pid", "host", "started", "command"}
    assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
    assert record["command"] == " ".join(sys.argv[:3])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", record["started"])
    assert json.loads(lock.read_bytes()) == record  # kept after release: it names the last writer


@pytest.mark.parametrize(
    ("record", "named"),
    [
        (
            b'{"pid": 4242, "host": "node7", "started": "2026-11-27T09:00:00+0000", '
            b'"command": "longscope run x"}',
            "pid 4242 on node7, since 2026-11-27T09:00:00+0000, `longscope run x`",
        ),
        (b'{"pid": 17}', "pid 17 on ?, since ?, `?`"),
        (b'{"host": "node7"}', "holder not yet recorded"),
        (b"", "holder not yet recorded"),
        (b'{"pid": 1', "holder not yet recorded"),
        (b"[1, 2]", "holder not yet recorded"),
        (b"5", "holder not yet recorded"),
    ],
)
def test_a_second_writer_is_refused_naming_the_holder(
    tmp_path: Path, record: bytes, named: str
) -> None:
    with RunStore(tmp_path) as store:
        store.put_generation("r1", "s1", 0, Generation("kept", "ok"))
    fd = os.open(tmp_path / LOCK_NAME, os.O_RDWR)  # another writer's open file and lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        with pytest.raises(StoreError) as caught:
            RunStore(tmp_path, create=False)
        assert str(caught.value) == (
            f"{tmp_path.resolve()} is in use by another longscope writer ({named}): "
            "wait for it to finish or stop it, then run again"
        )
        assert not RunLock._held  # nothing half-taken
        with RunStore.open_readonly(tmp_path) as reader:  # readers are never blocked
            assert reader.count_generations("r1") == 1
    finally:
        os.close(fd)
    with RunStore(tmp_path, create=False) as store:  # free again
        assert store.count_generations("r1") == 1


def test_the_lock_is_held_until_the_outermost_holder_lets_go(tmp_path: Path) -> None:
    with RunLock(tmp_path):  # the runner holds it for the whole run
        for _ in range(2):
            with RunStore(tmp_path) as store:  # the stores it opens take it again
                store.put_run("r1", "longctx", {})
                with RunStore(tmp_path, create=False):
                    pass
                assert not _lock_is_free(tmp_path)
            assert not _lock_is_free(tmp_path)
            assert RunLock._held[(tmp_path / LOCK_NAME).resolve()][1] == 1
    assert _lock_is_free(tmp_path) and not RunLock._held
    with RunStore(tmp_path) as store:
        assert not _lock_is_free(tmp_path)
    assert _lock_is_free(tmp_path)


def test_a_directory_that_cannot_hold_the_lock_is_refused_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the run directory should be")
    with pytest.raises(StoreError) as caught:
        RunStore(blocker / "run")
    message = str(caught.value)
    assert message.startswith(f"cannot write in {(blocker / 'run').resolve()} (")
    assert message.endswith(
        "): choose a writable output directory (a read-only run can be reported, not extended)"
    )
    assert "\n" not in message and not RunLock._held
