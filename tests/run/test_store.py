import sqlite3

import pytest

from longscope.run.store import RunStore, StoreError
from longscope.types import Generation, Sample, Score


def _sample(i: int, context: str = "shared context") -> Sample:
    return Sample(f"s{i}", "needle", "en", context, "q?", ("a",), 4096, {"task_id": "LCB-001"})


def test_generations_are_final_once_ok_and_retryable_otherwise(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_samples("r1", [_sample(1), _sample(2)])
        store.put_generation("r1", "s1", 0, Generation("first", "ok"))
        store.put_generation("r1", "s1", 0, Generation("second", "ok"))  # must not overwrite
        store.put_generation("r1", "s2", 0, Generation("", "error", error="HTTP 500"))
        assert store.done_keys("r1") == {("s1", 0)}
        store.put_generation("r1", "s2", 0, Generation("retried", "ok"))
        gens = {sid: g for sid, _, g in store.generations("r1")}
        assert gens["s1"].text == "first" and gens["s2"].text == "retried"
        assert store.count_generations("r1") == 2
        assert store.done_keys("r1") == {("s1", 0), ("s2", 0)}


def test_contexts_are_stored_once(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_samples("r1", [_sample(i) for i in range(5)])
        assert store.context("r1", "s3") == "shared context"
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    assert db.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 1
    assert (
        "shared context" not in db.execute("SELECT group_concat(data) FROM samples").fetchone()[0]
    )


def test_scores_are_replaced_not_appended(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("r1", "longctx", {"params": {}})
        store.put_scores("r1", [("s1", 0, Score(5, 5, {"rule": "x"}))])
        store.put_scores("r1", [("s1", 0, Score(4, 5, {"rule": "y"}))])
        assert store.scores("r1") == {("s1", 0): Score(4, 5)}


def test_latest_run_and_prefix_lookup(tmp_path) -> None:
    with RunStore(tmp_path) as store:
        store.put_run("aaaa1111", "longctx", {"params": {}})
        store.put_run("bbbb2222", "longctx", {"params": {}})
        assert store.run()["run_id"] == "bbbb2222"
        assert store.run("aaaa")["run_id"] == "aaaa1111"
        with pytest.raises(StoreError, match="no run 'cccc'"):
            store.run("cccc")


def test_missing_or_foreign_store_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(StoreError, match="no longscope run in"):
        RunStore(tmp_path / "nothing", create=False)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "longscope.sqlite").write_text("not a database at all" * 100)
    with pytest.raises(StoreError, match="is not a longscope store"):
        RunStore(tmp_path / "bad", create=False)
