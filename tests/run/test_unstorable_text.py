"""One odd character must not stop a benchmark (issue 21, defect 1).

A lone UTF-16 surrogate (`"\\ud800"` in a server's JSON, valid JSON that Python servers emit for a
broken byte-fallback token) used to crash the batch commit with UnicodeEncodeError: every answer of
the batch lost, and no re-run ever got past it. The answers come from the fault server on the
OpenAI protocol; the store, the scorer and the resume are the real ones.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from longscope.models.openai_api import OpenAIBackend
from longscope.run.runner import RunOptions, run
from longscope.run.scoring import read_run
from longscope.run.store import RunStore
from longscope.suites import create_suite
from longscope.types import Generation
from tests.models.fault_server import FaultServer, completion_body

DEPTHS = [0.1, 0.3, 0.5, 0.7, 0.9]
SURROGATE_ANSWER = "The special magic number is 12345 \ud800 and \udfff."


def _suite():
    return create_suite("longctx", {"lengths": [1024], "depths": DEPTHS, "types": ["needle"]})


def test_lone_surrogates_are_stored_flagged_and_scored_and_the_run_finishes(
    tmp_path: Path,
) -> None:
    with FaultServer() as server:
        for _ in DEPTHS:
            server.script.append(("ok", completion_body(SURROGATE_ANSWER, prompt_tokens=100_000)))
        backend = OpenAIBackend("m", base_url=server.url, context_length=8192, concurrency=4)
        result = run(_suite(), backend, RunOptions(output=tmp_path, quiet=True))
        assert result.sent == len(DEPTHS)
        # A second invocation has nothing left to send: every answer was stored the first time.
        again = OpenAIBackend("m", base_url=server.url, context_length=8192)
        assert run(_suite(), again, RunOptions(output=tmp_path, quiet=True)).sent == 0
        assert len(server.requests) == len(DEPTHS)
    with RunStore.open_readonly(tmp_path) as store:
        rows = store.generations(result.run_id)
    assert len(rows) == len(DEPTHS)
    for _, _, generation in rows:
        assert generation.status == "ok"
        assert generation.text == "The special magic number is 12345 \ufffd and \ufffd."
        assert generation.error.startswith("sanitized: 2 code point(s)")
    scored = read_run(tmp_path)
    assert scored.completeness["scored"] == len(DEPTHS)
    assert scored.completeness["complete"]
    for row in scored.rows:
        assert row.score is not None
        assert row.score.evidence["sanitized"].startswith("sanitized: 2")


def test_a_row_sqlite_refuses_is_stored_as_error_and_the_batch_is_kept(tmp_path: Path) -> None:
    good = Generation(text="fine", status="ok", prompt_tokens=5)
    surrogate = Generation(text="half \udcff", status="ok", reasoning="\ud83d", prompt_tokens=5)
    # A server's usage count SQLite cannot hold (a 64-bit overflow): the row cannot be stored.
    huge = Generation(text="big", status="ok", prompt_tokens=10**30)
    with RunStore(tmp_path) as store:
        store.put_generations("r", [("a", 0, good), ("b", 0, surrogate), ("c", 0, huge)])
        rows = {sid: gen for sid, _, gen in store.generations("r")}
        assert store.done_keys("r") == {("a", 0), ("b", 0)}  # the error is sent again on resume
    assert rows["a"] == good
    assert (rows["b"].text, rows["b"].reasoning) == ("half \ufffd", "\ufffd")
    assert rows["b"].error.startswith("sanitized: 2")
    assert rows["c"].status == "error"
    assert rows["c"].error.startswith("unstorable answer (OverflowError")


def test_text_that_is_not_utf8_in_a_store_reads_as_replacement_characters(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        store.put_generations("r", [("a", 0, Generation(text="x", status="ok"))])
    # Another tool wrote bytes that are not UTF-8 into a TEXT column.
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    db.execute("UPDATE generations SET text = CAST(X'61FF62' AS TEXT)")
    db.commit()
    db.close()
    with RunStore.open_readonly(tmp_path) as store:
        assert store.generations("r")[0][2].text == "a\ufffdb"
