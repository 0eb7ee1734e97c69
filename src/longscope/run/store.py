"""The run store: one SQLite file (WAL) per run directory, the single source of truth.

Every generation is committed the moment it arrives, keyed by (run, sample, repeat), so a run killed
at any point resumes without redoing or duplicating anything. Contexts are stored once by hash.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from longscope.types import RETRYABLE, Generation, Sample, Score, stable_hash

STORE_NAME = "longscope.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    suite TEXT NOT NULL,
    header TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS contexts (hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    data TEXT NOT NULL,
    context_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS generations (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL,
    text TEXT NOT NULL,
    reasoning TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    error TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
CREATE TABLE IF NOT EXISTS judgements (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    judge TEXT NOT NULL,
    value REAL,
    text TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat, judge)
);
CREATE TABLE IF NOT EXISTS routes (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    plan TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    value REAL NOT NULL,
    max REAL NOT NULL,
    evidence TEXT NOT NULL,
    PRIMARY KEY (run_id, sample_id, repeat)
);
"""


class StoreError(ValueError):
    """The store file is missing, foreign or from an incompatible version."""


class RunStore:
    """Read and write one run directory's SQLite store."""

    def __init__(self, run_dir: str | Path, *, create: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_NAME
        if not create and not self.path.is_file():
            raise StoreError(f"no longscope run in {self.run_dir}: expected {STORE_NAME} there")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a longscope store ({exc})") from exc
        if row is None:
            with self._db:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has store schema {row[0]}, this longscope reads {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # runs ---------------------------------------------------------------------------------------
    def put_run(self, run_id: str, suite: str, header: dict[str, Any]) -> None:
        """Record a run's header once; a resumed run keeps its first header."""
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?)",
                (run_id, suite, json.dumps(header, sort_keys=True), time.time()),
            )

    def runs(self) -> list[dict[str, Any]]:
        """Return every run in this store, oldest first, with its header."""
        rows = self._db.execute("SELECT run_id, suite, header, created FROM runs ORDER BY created")
        return [
            {"run_id": r, "suite": s, "header": json.loads(h), "created": c} for r, s, h, c in rows
        ]

    def run(self, run_id: str | None = None) -> dict[str, Any]:
        """Return one run (the latest when `run_id` is None)."""
        runs = self.runs()
        if not runs:
            raise StoreError(f"{self.path} holds no run yet")
        if run_id is None:
            return runs[-1]
        for run in runs:
            if run["run_id"].startswith(run_id):
                return run
        raise StoreError(f"no run {run_id!r} in {self.path}")

    # samples ------------------------------------------------------------------------------------
    def put_samples(self, run_id: str, samples: Iterable[Sample]) -> None:
        with self._db:
            for position, sample in enumerate(samples):
                context_hash = stable_hash(sample.context, 32)
                self._db.execute(
                    "INSERT OR IGNORE INTO contexts VALUES (?, ?)", (context_hash, sample.context)
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?)",
                    (run_id, sample.id, position, json.dumps(sample.public()), context_hash),
                )

    def samples(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Return the stored samples (without contexts) by id, in build order."""
        rows = self._db.execute(
            "SELECT sample_id, data FROM samples WHERE run_id=? ORDER BY position", (run_id,)
        )
        return {sid: json.loads(data) for sid, data in rows}

    def context(self, run_id: str, sample_id: str) -> str:
        row = self._db.execute(
            "SELECT c.text FROM samples s JOIN contexts c ON c.hash = s.context_hash "
            "WHERE s.run_id=? AND s.sample_id=?",
            (run_id, sample_id),
        ).fetchone()
        return row[0] if row else ""

    # generations --------------------------------------------------------------------------------
    def done_keys(self, run_id: str) -> set[tuple[str, int]]:
        """Return (sample, repeat) pairs that hold a final generation (not to be redone)."""
        placeholders = ",".join("?" * len(RETRYABLE))
        rows = self._db.execute(
            f"SELECT sample_id, repeat FROM generations WHERE run_id=? "
            f"AND status NOT IN ({placeholders})",
            (run_id, *sorted(RETRYABLE)),
        )
        return {(sid, rep) for sid, rep in rows}

    def put_generation(self, run_id: str, sample_id: str, repeat: int, gen: Generation) -> None:
        """Store one generation now; a final one is never overwritten, a retryable one may be."""
        values = (
            run_id,
            sample_id,
            repeat,
            gen.status,
            gen.text,
            gen.reasoning,
            gen.prompt_tokens,
            gen.completion_tokens,
            gen.latency_s,
            gen.error,
            time.time(),
        )
        placeholders = ",".join("?" * len(RETRYABLE))
        with self._db:
            self._db.execute(
                "INSERT INTO generations VALUES (?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (run_id, sample_id, repeat) DO UPDATE SET "
                "status=excluded.status, text=excluded.text, reasoning=excluded.reasoning, "
                "prompt_tokens=excluded.prompt_tokens, completion_tokens=excluded.completion_tokens, "
                "latency_s=excluded.latency_s, error=excluded.error, created=excluded.created "
                f"WHERE generations.status IN ({placeholders})",
                (*values, *sorted(RETRYABLE)),
            )
            if gen.route:
                self._db.execute(
                    "INSERT OR REPLACE INTO routes VALUES (?,?,?,?)",
                    (run_id, sample_id, repeat, json.dumps(gen.route, ensure_ascii=False)),
                )

    def routes(self, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
        """Return what a router decided per (sample, repeat), for routed runs."""
        rows = self._db.execute(
            "SELECT sample_id, repeat, plan FROM routes WHERE run_id=?", (run_id,)
        )
        return {(sid, rep): json.loads(plan) for sid, rep, plan in rows}

    def generations(self, run_id: str) -> list[tuple[str, int, Generation]]:
        rows = self._db.execute(
            "SELECT sample_id, repeat, status, text, reasoning, prompt_tokens, completion_tokens, "
            "latency_s, error FROM generations WHERE run_id=? ORDER BY sample_id, repeat",
            (run_id,),
        )
        return [
            (
                sid,
                rep,
                Generation(
                    text=t,
                    status=st,
                    reasoning=r,
                    prompt_tokens=pt,
                    completion_tokens=ct,
                    latency_s=lat,
                    error=err,
                ),
            )
            for sid, rep, st, t, r, pt, ct, lat, err in rows
        ]

    def count_generations(self, run_id: str) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM generations WHERE run_id=?", (run_id,))
        return int(row.fetchone()[0])

    # judgements ---------------------------------------------------------------------------------
    def judged_keys(self, run_id: str, judge: str) -> set[tuple[str, int]]:
        """Return (sample, repeat) pairs this judge has already ruled on (failures included)."""
        rows = self._db.execute(
            "SELECT sample_id, repeat FROM judgements WHERE run_id=? AND judge=?", (run_id, judge)
        )
        return {(sid, rep) for sid, rep in rows}

    def put_judgement(
        self,
        run_id: str,
        sample_id: str,
        repeat: int,
        judge: str,
        value: float | None,
        text: str,
        attempts: int,
        error: str,
    ) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO judgements VALUES (?,?,?,?,?,?,?,?)",
                (run_id, sample_id, repeat, judge, value, text, attempts, error),
            )

    def judgements(self, run_id: str) -> dict[tuple[str, int], tuple[float | None, str, str]]:
        """Return {(sample, repeat): (value or None, judge, error)} (the latest judge wins)."""
        rows = self._db.execute(
            "SELECT sample_id, repeat, value, judge, error FROM judgements WHERE run_id=? "
            "ORDER BY rowid",
            (run_id,),
        )
        return {(sid, rep): (value, judge, error) for sid, rep, value, judge, error in rows}

    # scores -------------------------------------------------------------------------------------
    def put_scores(self, run_id: str, scores: Iterable[tuple[str, int, Score]]) -> None:
        """Replace the run's scores (scores are always recomputable from generations)."""
        with self._db:
            self._db.execute("DELETE FROM scores WHERE run_id=?", (run_id,))
            self._db.executemany(
                "INSERT INTO scores VALUES (?,?,?,?,?,?)",
                [
                    (run_id, sid, rep, s.value, s.max, json.dumps(s.evidence, ensure_ascii=False))
                    for sid, rep, s in scores
                ],
            )

    def scores(self, run_id: str) -> dict[tuple[str, int], Score]:
        rows = self._db.execute(
            "SELECT sample_id, repeat, value, max, evidence FROM scores WHERE run_id=?", (run_id,)
        )
        return {(sid, rep): Score(v, m, json.loads(ev)) for sid, rep, v, m, ev in rows}
