"""What a user relies on from the runner (run/runner.py), fast and without a model.

The stored rows (answers, skips, timeouts, positions), the run's header (model, settings, how
requests were sent), what is sent again on resume, how many requests are in flight, what a
failing backend or a failing build does to the run, the progress line, the run's default
directory and the runner's deadline.

The backend is the product's scripted backend (models/scripted.py), answering with the key each
prompt hides; the suite is the plug-in echo suite (tests/plugin/echo_suite.py), and a variant of
it built by cells (made lazily, as RULER is) where the made-ahead thread matters.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from longscope.models.base import Backend
from longscope.models.retry import RetryPolicy, with_retries
from longscope.models.scripted import Failure, ScriptedBackend, every, from_pattern
from longscope.router.backend import RoutedBackend
from longscope.run import runner
from longscope.run.prepared import PreparedRun
from longscope.run.runner import RunOptions, group_limit, run_async, run_prepared
from longscope.run.shards import Shard, ShardedSuite
from longscope.run.store import RunStore
from longscope.suites.base import BuildCell, BuildContext
from longscope.types import Generation, GenerationConfig, Request, Sample
from tests.plugin.echo_suite import EchoSuite

from ..factories import request

PATTERN = r"The key is (\w+)\."
SLOW_S = 5.0
"""How long a backend that "never answers" takes: far past every deadline here, short enough that
a runner which fails to cut it off fails the test in seconds."""
HUNG_S = 30.0


def key_of(sample_id: str) -> str:
    """Return the key echo sample `sample_id` (`echo-<length>-<i>`) hides."""
    _, length, index = sample_id.split("-")
    return f"K{length}x{index}"


class QuickEcho(EchoSuite):
    """The echo suite with a task limit of 0.2 s (a hung request is cut off fast)."""

    def timeout_s(self, sample: object) -> float:
        return 0.2


class CellEcho(EchoSuite):
    """The echo suite built by cells (one per length, made one sample at a time when pulled), as
    RULER is: samples are made in the runner's worker thread, ahead of what is sent."""

    build_s = 0.0
    """Seconds making one sample takes."""
    broken = ""
    """The id of a sample whose making fails (a damaged data row)."""
    one_document = False
    """The samples of a length read one document (sent as one unit)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.made: list[str] = []

    def cells(self, ctx: BuildContext) -> list[BuildCell]:
        return [
            BuildCell("echo", length, self.samples, id_format=f"echo-{length}-{{index}}")
            for length in self.lengths
        ]

    def iter_cell(self, ctx: BuildContext, task: str, length: int, count: int) -> Iterator[Sample]:
        everything = [s for s in self.build(ctx) if s.length == length]
        for sample in everything[:count]:
            if sample.id == self.broken:
                raise ValueError(f"row {sample.id} of the data is damaged")
            time.sleep(self.build_s)
            self.made.append(sample.id)
            yield replace(sample, context=everything[0].context) if self.one_document else sample


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a suite class as `echo` for this test only (scoring reads it by name)."""
    from longscope import suites
    from longscope.suites import register_suite

    monkeypatch.setattr(suites.REGISTRY, "_registered", dict(suites.REGISTRY._registered))
    monkeypatch.setattr(suites.REGISTRY, "_loaded", dict(suites.REGISTRY._loaded))

    def use(factory: type[EchoSuite] = EchoSuite) -> type[EchoSuite]:
        register_suite("echo", factory)
        return factory

    use()
    return use


def _echo(lengths: tuple[int, ...] = (256, 512), samples: int = 2, factory: Any = EchoSuite) -> Any:
    return factory.from_params({"lengths": list(lengths), "samples": samples})


def _keys(**kwargs: Any) -> ScriptedBackend:
    return ScriptedBackend("keys", answer=from_pattern(PATTERN), **kwargs)


def _run(suite: Any, backend: Backend, run_dir: Path | None, **options: Any) -> runner.RunResult:
    options.setdefault("quiet", True)
    # A runner that hangs fails the test instead of hanging the suite.
    ran = asyncio.wait_for(run_async(suite, backend, RunOptions(run_dir, **options)), HUNG_S)
    return asyncio.run(ran)


def _rows(run_dir: Path, run_id: str) -> list[tuple[str, int, str, str, str]]:
    with RunStore(run_dir, create=False) as store:
        rows = store.generations(run_id)
    return [(s, r, g.status, g.text, g.error) for s, r, g in rows]


def _generations(run_dir: Path, run_id: str) -> dict[tuple[str, int], Generation]:
    with RunStore(run_dir, create=False) as store:
        return {(s, r): g for s, r, g in store.generations(run_id)}


def _header(run_dir: Path, run_id: str) -> dict[str, Any]:
    with RunStore(run_dir, create=False) as store:
        return store.run(run_id)["header"]


def _positions(run_dir: Path, run_id: str) -> dict[str, int]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    try:
        rows = db.execute(
            "SELECT sample_id, position FROM samples WHERE run_id=?", (run_id,)
        ).fetchall()
    finally:
        db.close()
    return dict(rows)


# -- what a run stores ---------------------------------------------------------------------------


def test_a_run_stores_every_answer_its_samples_positions_and_its_header(
    tmp_path: Path, register: Any
) -> None:
    backend = _keys(context_length=4096, max_concurrency=5)
    result = _run(_echo(), backend, tmp_path, concurrency=3)
    ids = ["echo-256-0", "echo-256-1", "echo-512-0", "echo-512-1"]
    assert (result.sent, result.skipped, result.run_dir) == (4, 0, tmp_path)
    assert _rows(tmp_path, result.run_id) == [(sid, 0, "ok", key_of(sid), "") for sid in ids]
    # The build order, as reports and exports read it.
    assert _positions(tmp_path, result.run_id) == {sid: i for i, sid in enumerate(ids)}
    with RunStore(tmp_path, create=False) as store:
        assert list(store.samples(result.run_id)) == ids
    header = _header(tmp_path, result.run_id)
    assert header["model"] == "scripted/keys"
    tokenizer = backend.tokenizer()
    assert header["model_info"] == {
        "model_id": "scripted/keys",
        "context_length": 4096,
        "context_source": "user",
        "prompt_mode": "chat",
        "chat_overhead": None,
        "tokenizer": tokenizer.name,
        "tokenizer_exact": tokenizer.exact,
        "details": {"scripted": True},
    }
    config = header["config"]
    assert set(config) == {f.name for f in fields(GenerationConfig)}
    assert (config["max_tokens"], config["seed"]) == (16, 0)
    assert header["scheduling"] == {"requests_in_flight": 3, "grouped_by_prefix": False}
    # The summary says how long making samples took and when the first request left.
    timing = result.timing
    assert set(timing) == {"build_s", "first_request_s"}
    assert 0 <= timing["first_request_s"] < 30 and 0 <= timing["build_s"] < 30
    assert result.scores.run_id == result.run_id and result.scores.completeness["scored"] == 4


def test_the_timing_figures_are_rounded_to_the_millisecond() -> None:
    timing = runner._Timing(build_s=1.23456, first_request_s=0.98765)
    assert timing.rounded() == {"build_s": 1.235, "first_request_s": 0.988}
    assert runner._Timing(build_s=2.0004).rounded() == {"build_s": 2.0}


@pytest.mark.parametrize(
    ("serial", "concurrency", "grouped", "in_flight", "by_prefix", "groups"),
    [
        (False, None, False, 5, False, []),  # the backend's own concurrency
        (False, 2, True, 2, True, [2, 2, 2, 2]),  # a document's repeats together
        (True, 3, True, 1, False, [1] * 8),  # --serial: groups of one, in order
    ],
)
def test_the_header_records_how_requests_were_sent(
    tmp_path: Path,
    register: Any,
    serial: bool,
    concurrency: int | None,
    grouped: bool,
    in_flight: int,
    by_prefix: bool,
    groups: list[int],
) -> None:
    backend = _keys(max_concurrency=5, grouped=grouped)
    result = _run(_echo(), backend, tmp_path, repeats=2, serial=serial, concurrency=concurrency)
    assert _header(tmp_path, result.run_id)["scheduling"] == {
        "requests_in_flight": in_flight,
        "grouped_by_prefix": by_prefix,
    }
    assert backend.groups == groups
    rows = _rows(tmp_path, result.run_id)
    assert [(s, r, st, t) for s, r, st, t, _ in rows] == [
        (sid, rep, "ok", key_of(sid))
        for sid in ("echo-256-0", "echo-256-1", "echo-512-0", "echo-512-1")
        for rep in (0, 1)
    ]


def test_samples_past_the_context_are_stored_as_skipped_with_the_reason(
    tmp_path: Path, register: Any
) -> None:
    backend = _keys(context_length=400)
    result = _run(_echo(), backend, tmp_path, repeats=2)
    assert (result.sent, result.skipped) == (4, 4)
    reason = "insufficient_context: needs 512 tokens (prompt and answer), backend holds 400 (user)"
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in _rows(tmp_path, result.run_id)] == [
        ("echo-256-0", 0, "ok", "K256x0", ""),
        ("echo-256-0", 1, "ok", "K256x0", ""),
        ("echo-256-1", 0, "ok", "K256x1", ""),
        ("echo-256-1", 1, "ok", "K256x1", ""),
        ("echo-512-0", 0, "skipped", "", reason),
        ("echo-512-0", 1, "skipped", "", reason),
        ("echo-512-1", 0, "skipped", "", reason),
        ("echo-512-1", 1, "skipped", "", reason),
    ]
    assert {r.sample_id for r in backend.requests} == {"echo-256-0", "echo-256-1"}
    assert result.scores.completeness["skipped"] == 4


def test_a_length_refusal_stored_as_error_is_final_on_resume(tmp_path: Path, register: Any) -> None:
    """A refusal stored as `error` (its wording unknown when it was stored, the run not scored)
    becomes `context_overflow` when the run resumes, and is never sent again."""
    refusal = "HTTP 400: prompt is too long: 900 tokens > 800 maximum"
    refusing = _keys(fault=lambda _r, _n: Failure("error", refusal))

    async def unscored() -> runner.RunResult:
        prepared = await PreparedRun.create(
            _echo((256,)), refusing, RunOptions(tmp_path, quiet=True)
        )
        return await run_prepared(prepared, score=False)

    first = asyncio.run(unscored())
    assert first.scores is None and first.sent == 2
    assert {r[2] for r in _rows(tmp_path, first.run_id)} == {"error"}
    again = _keys()
    second = _run(_echo((256,)), again, tmp_path)
    assert second.run_id == first.run_id and second.sent == 0 and again.requests == []
    assert {(r[2], r[4]) for r in _rows(tmp_path, first.run_id)} == {("context_overflow", refusal)}


def test_a_resumed_run_is_scored_as_itself_not_as_the_latest_run(
    tmp_path: Path, register: Any
) -> None:
    first = _run(_echo((256,)), _keys(), tmp_path)
    other = _run(_echo((256,)), _keys(), tmp_path, max_tokens=8)
    again = _run(_echo((256,)), _keys(), tmp_path)
    assert other.run_id != first.run_id and again.run_id == first.run_id and again.sent == 0
    assert again.scores.run_id == first.run_id
    assert again.scores.header["config"]["max_tokens"] == 16


# -- in flight, groups, commits --------------------------------------------------------------------


def _in_flight_recorder() -> tuple[ScriptedBackend, list[int]]:
    """Return a slow backend and the list of requests in flight it saw at each answer."""
    seen: list[int] = []
    answered = [0]
    backend: ScriptedBackend

    def answer(request: Request) -> str:
        seen.append(len(backend.requests) - answered[0])
        answered[0] += 1
        return from_pattern(PATTERN)(request)

    backend = ScriptedBackend("slow", answer=answer, latency_s=0.1, max_concurrency=8)
    return backend, seen


@pytest.mark.parametrize(("concurrency", "most"), [(1, 1), (3, 3)])
def test_concurrency_bounds_the_requests_in_flight(
    tmp_path: Path, register: Any, concurrency: int, most: int
) -> None:
    backend, seen = _in_flight_recorder()
    result = _run(_echo(samples=3), backend, tmp_path, concurrency=concurrency)
    assert result.sent == 6 and max(seen) == most
    assert _header(tmp_path, result.run_id)["scheduling"]["requests_in_flight"] == concurrency


def test_finished_answers_are_committed_while_later_ones_are_still_in_flight(
    tmp_path: Path, register: Any
) -> None:
    """A quiet time (a slow model) does not keep answers uncommitted: when the third answer
    comes, the first two are in the store already, for a kill -9 to spare."""
    stored: list[int] = []

    def answer(request: Request) -> str:
        db = sqlite3.connect(tmp_path / "longscope.sqlite")
        try:
            stored.append(db.execute("SELECT COUNT(*) FROM generations").fetchone()[0])
        finally:
            db.close()
        return from_pattern(PATTERN)(request)

    backend = ScriptedBackend("slow", answer=answer, latency_s=0.3)
    result = _run(_echo(), backend, tmp_path, concurrency=2)
    assert result.sent == 4 and len(stored) == 4
    assert stored[2] >= 2, stored


def test_a_burst_of_answers_is_committed_in_batches_of_at_most_256_rows(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 repeats answered without a pause (groups of 8, no latency): 256 rows in one commit,
    the rest at the end (no commit falls due by time within this test)."""
    batches: list[int] = []
    put = RunStore.put_generations

    def recording(self: RunStore, run_id: str, rows: Any) -> None:
        batches.append(len(rows))
        put(self, run_id, rows)

    monkeypatch.setattr(RunStore, "put_generations", recording)
    monkeypatch.setattr(runner, "_COMMIT_EVERY_S", 3600.0)  # never due by time in this test
    backend = _keys(grouped=True)
    result = _run(_echo((256,), samples=1), backend, tmp_path, repeats=300)
    assert backend.groups == [8] * 37 + [4]
    assert batches == [256, 44]
    assert len(_rows(tmp_path, result.run_id)) == 300


# -- failures -------------------------------------------------------------------------------------


def _broken(request: Request) -> str:
    raise RuntimeError(f"the rule broke on {request.sample_id}")


def test_a_backend_that_raises_ends_the_run_with_its_first_exception(
    tmp_path: Path, register: Any
) -> None:
    backend = ScriptedBackend("broken", answer=_broken)
    with pytest.raises(RuntimeError, match=r"^the rule broke on echo-256-0$"):
        _run(_echo(), backend, tmp_path, concurrency=1)
    # Nothing more is sent once a request has raised (the one already handed over aside).
    assert [r.sample_id for r in backend.requests] == ["echo-256-0", "echo-256-1"]


def test_two_requests_that_raise_end_the_run_with_the_first(tmp_path: Path, register: Any) -> None:
    backend = ScriptedBackend("broken", answer=_broken)
    with pytest.raises(RuntimeError, match=r"^the rule broke on echo-256-0$"):
        _run(_echo((256,)), backend, tmp_path, concurrency=2)
    assert len(backend.requests) == 2


def test_two_requests_that_raise_after_the_last_sample_end_the_run_with_the_first(
    tmp_path: Path, register: Any
) -> None:
    """Both requests of the last unit fail while the runner waits for the next sample (made in
    the worker thread), so nothing more is started: the run still raises the first failure."""
    register(CellEcho)
    suite = _echo((256,), samples=2, factory=CellEcho)
    suite.one_document = True
    backend = ScriptedBackend("broken", answer=_broken)
    with pytest.raises(RuntimeError, match=r"^the rule broke on echo-256-0$"):
        _run(suite, backend, tmp_path, concurrency=2)
    assert [r.sample_id for r in backend.requests] == ["echo-256-0", "echo-256-1"]


def test_the_progress_line_counts_answers_and_retries(
    tmp_path: Path,
    register: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    # Every second request fails once and is asked again: 3 retries for 4 answers, in order.
    inner = _keys(fault=every(2), retry_policy=RetryPolicy(max_retries=2, backoff_base_s=0.0))
    result = _run(_echo(), with_retries(inner), tmp_path, serial=True, quiet=False)
    assert {r[2] for r in _rows(tmp_path, result.run_id)} == {"ok"}
    err = capsys.readouterr().err
    assert "4/4" in err and "retries 3  skipped 0  failed 0" in err, err
    # --quiet: nothing on the terminal.
    _run(_echo(), _keys(), tmp_path / "quiet", quiet=True)
    assert capsys.readouterr().err == ""


# -- the runner's deadline -------------------------------------------------------------------------


def test_a_request_without_an_answer_is_stored_as_timeout(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task limit is 0.2 s, the grace 0.4 s: cut off after 0.6 s, stored as `timeout`."""
    register(QuickEcho)
    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.4)
    backend = _keys(latency_s=SLOW_S)
    result = _run(_echo((256,), samples=1, factory=QuickEcho), backend, tmp_path)
    stored = _generations(tmp_path, result.run_id)
    generation = stored[("echo-256-0", 0)]
    assert (generation.status, generation.text) == ("timeout", "")
    assert generation.error == "no answer within 1s (task limit 0s)"
    assert 0.6 <= generation.latency_s < SLOW_S


class OneRepeatHangs(ScriptedBackend):
    """Shares prefill, answers each member as it comes, and never answers repeat 1."""

    def __init__(self) -> None:
        super().__init__("hangs", answer=from_pattern(PATTERN))
        self.shares_prefill = True

    async def generate(self, request: Request) -> Generation:
        if request.repeat == 1:
            await asyncio.sleep(SLOW_S)
        return await super().generate(request)

    generate_group = Backend.generate_group  # each member handed over as it answers


def test_a_group_cut_off_keeps_the_members_answered_before_the_deadline(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(QuickEcho)
    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.4)
    backend = OneRepeatHangs()
    result = _run(_echo((256,), samples=1, factory=QuickEcho), backend, tmp_path, repeats=2)
    assert _rows(tmp_path, result.run_id) == [
        ("echo-256-0", 0, "ok", "K256x0", ""),
        # (0.2 s + 0.4 s) for each of the group's 2 members: 1.2 s
        ("echo-256-0", 1, "timeout", "", "no answer within 1s (task limit 0s)"),
    ]


def test_a_cut_off_group_returns_the_answered_members_and_timeouts_for_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The group's generations in order: what was answered before the deadline as answered
    (and handed over as it came), a `timeout` for the rest."""
    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.1)
    handed: list[tuple[int, str]] = []
    requests = [_request(0.2, repeat=0), _request(0.2, repeat=1)]
    generations = asyncio.run(
        runner._group_with_deadline(
            OneRepeatHangs(), requests, lambda i, g: handed.append((i, g.status))
        )
    )
    assert handed == [(0, "ok")]
    assert [(g.status, g.error) for g in generations] == [
        ("ok", ""),
        ("timeout", "no answer within 1s (task limit 0s)"),
    ]


def _request(timeout_s: float | None, prompt_tokens: int = 100, repeat: int = 0) -> Request:
    return request(
        "s", repeat, prompt="x", max_tokens=16, prompt_tokens=prompt_tokens, timeout_s=timeout_s
    )


def test_group_limit_is_the_longest_task_limit_plus_grace_for_each_member_and_call() -> None:
    plain = ScriptedBackend("plain")
    assert group_limit(plain, [_request(10.0), _request(20.0)]) == (20.0 + 30.0) * 2
    assert group_limit(plain, [_request(10.0)]) == 40.0
    # No limit: a request without a task limit, or a backend that bounds its own deadline.
    assert group_limit(plain, [_request(10.0), _request(None)]) is None
    own = ScriptedBackend("own")
    own.bounds_own_deadline = True
    assert group_limit(own, [_request(10.0)]) is None
    # The router answers a long request with several calls (here 3000 tokens in a 1000-token
    # budget: 4 parts, up to 3 combining calls in rounds and 2 more): a limit for each.
    routed = RoutedBackend(ScriptedBackend("inner"), length=1000)
    assert routed.calls_for(_request(10.0, prompt_tokens=3000)) == 9
    assert group_limit(routed, [_request(10.0, prompt_tokens=3000)]) == (10.0 + 30.0) * 9


def test_one_request_under_the_runners_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_TIMEOUT_GRACE_S", 0.1)
    answered = asyncio.run(
        runner._generate_with_deadline(ScriptedBackend("a", answer="fine"), _request(1.0))
    )
    assert (answered.status, answered.text) == ("ok", "fine")
    hung = asyncio.run(
        runner._generate_with_deadline(ScriptedBackend("h", latency_s=SLOW_S), _request(0.2))
    )
    assert (hung.status, hung.error) == ("timeout", "no answer within 0s (task limit 0s)")


# -- where a run goes ------------------------------------------------------------------------------


def test_a_run_without_output_goes_to_runs_named_by_suite_model_and_id(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    backend = ScriptedBackend("Qwen 7B:8X!", answer=from_pattern(PATTERN))
    result = _run(_echo((256,)), backend, None)
    expected = Path("runs") / f"echo-scripted_Qwen_7B_8X-{result.run_id[:8]}"
    assert result.run_dir == expected and len(result.run_id) > 8
    assert [r[2] for r in _rows(tmp_path / expected, result.run_id)] == ["ok", "ok"]


def test_a_shard_goes_to_its_own_directory_and_records_the_whole_runs_ids(
    tmp_path: Path, register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = ShardedSuite(_echo(), Shard(1, 2))
    result = _run(suite, _keys(), None)
    expected = Path("runs") / f"echo-scripted_keys-{result.run_id[:8]}-shard1of2"
    assert result.run_dir == expected
    with RunStore(tmp_path / expected, create=False) as store:
        record = store.get_meta("shard:" + result.run_id)
    assert record == suite.record()
    assert record["ids"] == ["echo-256-0", "echo-256-1", "echo-512-0", "echo-512-1"]
    assert record["count"] == 2 and record["index"] == 1
    mine = [i for i, a in zip(record["ids"], record["assignment"], strict=True) if a == 1]
    assert [r[0] for r in _rows(tmp_path / expected, result.run_id)] == sorted(mine)


# -- samples made ahead in a worker thread (a suite built by cells) --------------------------------


def test_samples_made_in_the_worker_thread_count_as_build_time(
    tmp_path: Path, register: Any
) -> None:
    register(CellEcho)
    suite = _echo(factory=CellEcho)
    suite.build_s = 0.05
    result = _run(suite, _keys(), tmp_path)
    assert result.sent == 4 and suite.made == [
        "echo-256-0",
        "echo-512-0",
        "echo-256-1",
        "echo-512-1",
    ]
    assert [r[2] for r in _rows(tmp_path, result.run_id)] == ["ok"] * 4
    assert 0.2 <= result.timing["build_s"] < 30


def test_samples_are_made_at_most_two_ahead_of_what_is_sent(tmp_path: Path, register: Any) -> None:
    """--serial (one request in flight): when answer k comes, at most samples k + 4 are made (two
    waiting in the queue, one waiting for room, one read to see where its unit ends), not the
    whole grid."""
    register(CellEcho)
    suite = _echo(samples=4, factory=CellEcho)
    made: list[int] = []

    def answer(request: Request) -> str:
        made.append(len(suite.made))
        return from_pattern(PATTERN)(request)

    backend = ScriptedBackend("slow", answer=answer, latency_s=0.15, max_concurrency=8)
    result = _run(suite, backend, tmp_path, serial=True)
    assert result.sent == 8 and len(made) == 8
    assert all(count <= min(8, k + 4) for k, count in enumerate(made, 1)), made
    assert made[-1] == 8


def test_a_sample_that_cannot_be_made_ends_the_run_and_keeps_what_was_answered(
    tmp_path: Path, register: Any
) -> None:
    register(CellEcho)
    suite = _echo(samples=2, factory=CellEcho)
    suite.broken = "echo-512-1"  # the fourth made (cells take turns)
    with pytest.raises(ValueError, match=r"^row echo-512-1 of the data is damaged$"):
        _run(suite, _keys(), tmp_path, serial=True)
    with RunStore(tmp_path, create=False) as store:
        (run,) = store.runs()
        rows = [(s, r, g.status, g.text) for s, r, g in store.generations(run["run_id"])]
    assert rows == [("echo-256-0", 0, "ok", "K256x0"), ("echo-512-0", 0, "ok", "K512x0")]


def test_the_header_json_is_what_the_store_holds(tmp_path: Path, register: Any) -> None:
    """The header as SQLite holds it: the model's name under `model`, read by every report."""
    result = _run(_echo((256,)), _keys(), tmp_path)
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    try:
        (raw,) = db.execute("SELECT header FROM runs").fetchone()
    finally:
        db.close()
    assert json.loads(raw)["model"] == "scripted/keys"
    assert result.scores.header["model"] == "scripted/keys"
