"""What users rely on from `longscope merge`, without a model: real SQLite stores written through
the RunStore API (as a run writes them), merged, and read back.

The merged rows, statuses and completeness, the run id checks, the refusals (one line, exit code
2, nothing written), and every record a shard carries (routes, judgements, endpoint figures, the
build order) kept once. Fast enough for the mutation selection (setup.cfg [mutmut]).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from longscope import cli
from longscope.errors import UsageError
from longscope.run.merge import (
    ENDPOINTS_KEY,
    MergeReport,
    endpoint_history,
    merge_runs,
    record_endpoints,
    record_shard,
)
from longscope.run.shards import Shard, ShardedSuite
from longscope.run.store import SHARD_KEY, RunStore, StoreError
from longscope.suites import create_suite
from longscope.types import Generation, Sample

RUN = "0123456789abcdef0123456789"  # longer than the 12 characters messages show
OTHER = "fedcba9876543210fedcba9876"
HEADER = {"params": {}, "model": "m"}
# The whole run's build order on purpose not alphabetical: merge must keep it, not sort.
ORDER = ["s3", "s1", "s4", "s2"]
ASSIGNMENT = [0, 1, 0, 1]  # shard 0: s3, s4; shard 1: s1, s2


def _sample(sid: str) -> Sample:
    return Sample(
        sid, "needle", "en", f"context of {sid}", f"question {sid}?", ("a", sid), 1024,
        {"task_id": "LCB-001", "depth": 0.5}, prompt_tokens=7,
    )  # fmt: skip


def _ok(text: str, **route) -> Generation:
    return Generation(text, "ok", prompt_tokens=5, completion_tokens=2, route=route)


def _store(
    path: Path,
    ids: list[str],
    gens: list[tuple[str, int, Generation]],
    *,
    run_id: str = RUN,
    shard: int | None = None,
    judgements: tuple[tuple, ...] = (),
    endpoints: list | None = None,
) -> Path:
    with RunStore(path) as store:
        store.put_run(run_id, "longctx", HEADER)
        store.put_samples(run_id, [_sample(s) for s in ids])
        store.put_generations(run_id, gens)
        for record in judgements:
            store.put_judgement(run_id, *record)
        if shard is not None:
            record = {"index": shard, "count": 2, "ids": ORDER, "assignment": ASSIGNMENT}
            store.put_meta(SHARD_KEY + run_id, record)
        if endpoints is not None:
            store.put_meta(ENDPOINTS_KEY + run_id, endpoints)
    return path


def _shard(tmp_path: Path, index: int, name: str | None = None, **kwargs) -> Path:
    ids = [s for s, i in zip(ORDER, ASSIGNMENT, strict=True) if i == index]
    gens = kwargs.pop("gens", [(s, 0, _ok(f"answer {s}")) for s in ids])
    return _store(tmp_path / (name or f"shard{index}"), ids, gens, shard=index, **kwargs)


def _read(path: Path, run_id: str = RUN) -> dict:
    with RunStore.open_readonly(path) as store:
        return {
            "runs": [r["run_id"] for r in store.runs()],
            "samples": store.samples(run_id),
            "contexts": {s: store.context(run_id, s) for s in store.samples(run_id)},
            "rows": [(s, r, g.status, g.text, g.error) for s, r, g in store.generations(run_id)],
            "routes": store.routes(run_id),
            "judgements": store.judgement_records(run_id),
            "merged": store.get_meta("merged:" + run_id),
            "endpoints": store.get_meta(ENDPOINTS_KEY + run_id),
        }


def test_two_shards_merge_into_the_whole_run_in_build_order(tmp_path: Path) -> None:
    judged = (
        ("s3", 0, "judge/a", 0.5, "half right", 2, ""),
        ("s1", 0, "judge/a", None, "", 3, "x"),
    )
    s0 = _shard(
        tmp_path, 0, gens=[("s3", 0, _ok("answer s3", mode="truncate")), ("s4", 0, _ok("answer s4"))],
        judgements=judged[:1], endpoints=[[{"endpoint": "e0", "requests": 2}]],
    )  # fmt: skip
    s1 = _shard(tmp_path, 1, judgements=judged[1:], endpoints=[[{"endpoint": "e1", "requests": 2}]])
    out = tmp_path / "out"
    report = merge_runs(out, [s1, s0])
    assert report == MergeReport(
        run_id=RUN, out=out, inputs=2, samples=4, generations=4, added=4, overlaps=0,
        conflicts=[], missing_shards=[], missing_samples=[], unfinished=0,
        scores=report.scores, unanswered=0,
    )  # fmt: skip
    assert report.complete and report.scores is not None
    assert report.scores.run_id == RUN
    assert report.scores.completeness["scored"] == 4 and report.scores.completeness["complete"]
    merged = _read(out)
    assert merged["runs"] == [RUN]
    assert list(merged["samples"]) == ORDER  # the whole run's build order, not the inputs'
    assert merged["samples"]["s1"] == _sample("s1").public()
    assert merged["contexts"] == {s: f"context of {s}" for s in ORDER}
    assert merged["rows"] == [(s, 0, "ok", f"answer {s}", "") for s in sorted(ORDER)]
    assert merged["routes"] == {("s3", 0): {"mode": "truncate"}}
    assert sorted(merged["judgements"]) == sorted(judged)
    assert merged["merged"] == {"shards": 2, "seen": [0, 1], "ids": ORDER}
    assert merged["endpoints"] == [
        [{"endpoint": "e1", "requests": 2}],
        [{"endpoint": "e0", "requests": 2}],
    ]
    assert endpoint_history(out, RUN) == merged["endpoints"]
    line = report.describe()
    assert line == (
        f"merged 2 store(s) of run {RUN[:12]} into {out}: 4 samples, 4 generations (4 new), "
        "0 overlaps, 0 conflicts"
    )


def test_merging_again_adds_nothing_and_keeps_every_record_once(tmp_path: Path) -> None:
    s0 = _shard(tmp_path, 0, endpoints=[[{"endpoint": "e0", "requests": 2}]])
    s1 = _shard(tmp_path, 1, judgements=(("s1", 0, "judge/a", 1.0, "yes", 1, ""),))
    out = tmp_path / "out"
    merge_runs(out, [s0, s1])
    first = _read(out)
    again = merge_runs(out, [s0, s1])
    assert (again.added, again.generations, again.samples) == (0, 4, 4)
    assert _read(out) == first
    assert first["endpoints"] == [[{"endpoint": "e0", "requests": 2}]]


def test_one_shard_merged_reports_the_other_as_a_gap_then_a_second_merge_fills_it(
    tmp_path: Path,
) -> None:
    e0, e1 = [{"endpoint": "e0", "requests": 2}], [{"endpoint": "e1", "requests": 2}]
    s0, s1 = _shard(tmp_path, 0, endpoints=[e0]), _shard(tmp_path, 1, endpoints=[e1])
    out = tmp_path / "out"
    half = merge_runs(out, [s0])
    assert (half.missing_shards, half.missing_samples) == ([1], ["s1", "s2"])
    assert not half.complete
    assert half.describe().splitlines()[1:] == [
        "gaps: shard(s) 1 not merged",
        "gaps: 2 sample(s) not in any input: s1, s2",
    ]
    assert _read(out)["merged"] == {"shards": 2, "seen": [0], "ids": ORDER}
    # The second shard into the first one's merge: the earlier samples keep their contexts and
    # the build order is the whole run's.
    whole = merge_runs(out, [s1])
    assert (whole.missing_shards, whole.missing_samples, whole.added) == ([], [], 2)
    assert whole.complete and whole.samples == 4 and whole.generations == 4
    merged = _read(out)
    assert list(merged["samples"]) == ORDER
    assert merged["contexts"] == {s: f"context of {s}" for s in ORDER}
    assert merged["samples"]["s3"] == _sample("s3").public()
    assert merged["endpoints"] == [e0, e1]  # the first merge's figures kept beside the second's


def test_a_merge_into_a_copy_of_one_shard_is_the_whole_run_not_that_shard(tmp_path: Path) -> None:
    import shutil

    s0, s1 = _shard(tmp_path, 0), _shard(tmp_path, 1)
    out = tmp_path / "copy-of-shard0"
    shutil.copytree(s0, out)
    whole = merge_runs(out, [s1])
    assert whole.complete and whole.scores is not None
    assert whole.scores.completeness["complete"] and "shard" not in whole.scores.completeness
    with RunStore.open_readonly(out) as store:
        assert store.get_meta(SHARD_KEY + RUN) is None  # no longer one shard's store
    # A copy of shard 0 merged with nothing else new still lacks shard 1: provisional, with gaps.
    again = tmp_path / "copy-again"
    shutil.copytree(s0, again)
    half = merge_runs(again, [s0])
    assert not half.complete and half.missing_samples == ["s1", "s2"]


def test_a_shard_not_merged_is_no_gap_when_another_input_holds_its_samples(tmp_path: Path) -> None:
    whole = _store(tmp_path / "whole", ORDER, [(s, 0, _ok(f"answer {s}")) for s in ORDER])
    report = merge_runs(tmp_path / "out", [_shard(tmp_path, 0), whole])
    assert report.missing_shards == [] and report.missing_samples == []
    assert report.overlaps == 2 and report.conflicts == [] and report.complete


def test_unsharded_inputs_write_no_shard_record_and_keep_inputs_first(tmp_path: Path) -> None:
    out = _store(tmp_path / "out", ["a"], [("a", 0, _ok("answer a"))])  # an earlier merge
    src = _store(tmp_path / "src", ["c", "b"], [("c", 0, _ok("answer c")), ("b", 0, _ok("x"))])
    report = merge_runs(out, [src])
    merged = _read(out)
    assert merged["merged"] is None
    # Without a shard record there is no whole-run order: the inputs' samples first, then the
    # ones only the output held, each group by id.
    assert list(merged["samples"]) == ["b", "c", "a"]
    assert merged["contexts"]["a"] == "context of a"
    assert (report.samples, report.generations, report.added) == (3, 3, 2)
    assert report.missing_shards == [] and report.complete


def test_an_error_row_never_hides_an_answer_in_either_order(tmp_path: Path) -> None:
    failed = _store(
        tmp_path / "failed", ["a"], [("a", 0, Generation("", "error", error="HTTP 500"))]
    )
    answered = _store(tmp_path / "answered", ["a"], [("a", 0, _ok("right"))])
    for name, inputs in (("x", [failed, answered]), ("y", [answered, failed])):
        report = merge_runs(tmp_path / name, inputs)
        assert _read(tmp_path / name)["rows"] == [("a", 0, "ok", "right", "")]
        assert (report.overlaps, report.conflicts, report.unfinished) == (0, [], 0)
        assert report.complete


def test_two_error_rows_stay_unfinished_and_say_how_to_resend(tmp_path: Path) -> None:
    one = _store(tmp_path / "one", ["a"], [("a", 0, Generation("", "error", error="HTTP 500"))])
    two = _store(tmp_path / "two", ["a"], [("a", 0, Generation("", "timeout", error="slow"))])
    report = merge_runs(tmp_path / "out", [one, two])
    # the first input's row is kept, and nothing counted as an overlap or conflict
    assert _read(tmp_path / "out")["rows"] == [("a", 0, "error", "", "HTTP 500")]
    assert (report.unfinished, report.overlaps, report.conflicts) == (1, 0, [])
    assert not report.complete
    assert report.describe().splitlines()[1] == (
        "1 generation(s) not final: run the same command on the merged store to send them again"
    )


def test_same_answers_overlap_and_different_ones_conflict_first_input_kept(tmp_path: Path) -> None:
    gens = [("a", 0, _ok("A")), ("b", 0, _ok("B")), ("c", 0, Generation("C", "length"))]
    first = _store(tmp_path / "first", ["a", "b", "c"], gens)
    other = [("a", 0, _ok("A")), ("b", 0, _ok("not B")), ("c", 0, Generation("C", "ok"))]
    second = _store(tmp_path / "second", ["a", "b", "c"], other)
    report = merge_runs(tmp_path / "out", [first, second])
    assert report.overlaps == 1
    assert report.conflicts == ["b#0", "c#0"]
    assert [r[:4] for r in _read(tmp_path / "out")["rows"]] == [
        ("a", 0, "ok", "A"), ("b", 0, "ok", "B"), ("c", 0, "length", "C"),
    ]  # fmt: skip
    assert report.describe().splitlines()[1] == "conflicting answers (first input kept): b#0, c#0"


def test_requests_never_answered_are_counted_per_repeat(tmp_path: Path) -> None:
    # Two samples asked twice; one answer of one repeat never came (a shard killed mid-run).
    gens = [("a", 0, _ok("x")), ("a", 1, _ok("y")), ("b", 0, _ok("z"))]
    report = merge_runs(tmp_path / "out", [_store(tmp_path / "in", ["a", "b"], gens)])
    assert (report.unanswered, report.unfinished, report.generations) == (1, 0, 3)
    assert not report.complete
    assert report.describe().splitlines()[1] == (
        "gaps: 1 request(s) never answered (a shard stopped before its end): run the same command "
        "on the merged store (-o) to send them"
    )


def test_a_store_without_any_answer_counts_each_sample_once(tmp_path: Path) -> None:
    report = merge_runs(tmp_path / "out", [_store(tmp_path / "in", ["a", "b"], [])])
    assert (report.unanswered, report.generations, report.samples) == (2, 0, 2)
    assert not report.complete


def test_without_scoring_no_result_and_completeness_from_the_rows(tmp_path: Path) -> None:
    report = merge_runs(tmp_path / "out", [_shard(tmp_path, 0), _shard(tmp_path, 1)], score=False)
    assert report.scores is None and report.complete
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_directory_with_two_runs_merges_the_one_named(tmp_path: Path) -> None:
    both = _store(tmp_path / "both", ["a"], [("a", 0, _ok("mine"))])
    _store(both, ["a"], [("a", 0, _ok("other run"))], run_id=OTHER)
    single = _store(tmp_path / "single", ["b"], [("b", 0, _ok("b"))])
    report = merge_runs(tmp_path / "out", [single, both], RUN[:8])
    assert report.run_id == RUN
    merged = _read(tmp_path / "out")
    assert merged["runs"] == [RUN]
    assert [r[3] for r in merged["rows"]] == ["mine", "b"]
    assert merge_runs(tmp_path / "out2", [both, single], RUN).run_id == RUN


def _refused(out: Path, inputs: list[Path], run_id: str | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        merge_runs(out, inputs, run_id)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_refusals_name_the_directory_and_what_to_do(tmp_path: Path) -> None:
    mine = _store(tmp_path / "mine", ["a"], [("a", 0, _ok("a"))])
    theirs = _store(tmp_path / "theirs", ["a"], [("a", 0, _ok("a"))], run_id=OTHER)
    both = _store(tmp_path / "both", ["a"], [], run_id=OTHER)
    _store(both, ["a"], [], run_id=RUN)
    empty = tmp_path / "empty"
    with RunStore(empty):
        pass
    out = tmp_path / "out"
    assert _refused(out, []) == "nothing to merge: name at least one run directory"
    assert _refused(mine, [mine]) == (
        f"{mine} is both the output and an input: merge into a new directory"
    )
    tail = "only stores of one run (same suite, parameters, model and settings) merge"
    assert (
        _refused(out, [mine, theirs]) == f"{theirs} holds run {OTHER[:12]}, not {RUN[:12]}: {tail}"
    )
    assert (
        _refused(out, [theirs], RUN) == f"{theirs} holds run {OTHER[:12]}, not {RUN[:12]}: {tail}"
    )
    assert (
        _refused(out, [both], "0000")
        == f"{both} holds no run 0000: check the directory or --run-id"
    )
    long = "9" * 20
    assert _refused(out, [both], long) == (
        f"{both} holds no run {long[:12]}: check the directory or --run-id"
    )
    assert _refused(out, [both]) == f"{both} holds 2 runs: name the one to merge with --run-id"
    assert _refused(out, [empty]) == f"{empty} holds no run yet: nothing to merge"
    missing = _refused(out, [tmp_path / "nowhere"])
    assert str(tmp_path / "nowhere") in missing and "longscope.sqlite" in missing
    assert not out.exists()  # nothing written by a refusal
    # An output holding another run is refused, and keeps what it held.
    before = _read(theirs, OTHER)
    assert _refused(theirs, [mine]) == (
        f"{theirs} already holds run {OTHER[:12]}, not {RUN[:12]}: merge into an empty directory "
        "or into a merge of the same run"
    )
    assert _read(theirs, OTHER) == before


def test_the_cli_refuses_with_one_line_and_exit_code_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _store(tmp_path / "mine", ["a"], [("a", 0, _ok("a"))])
    theirs = _store(tmp_path / "theirs", ["a"], [], run_id=OTHER)
    monkeypatch.setattr(
        sys, "argv", ["longscope", "merge", str(tmp_path / "o"), str(mine), str(theirs)]
    )
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "only stores of one run" in err and OTHER[:12] in err
    assert not (tmp_path / "o").exists()
    # A merge with a gap is provisional: exit 3, the gap named.
    monkeypatch.setattr(
        sys, "argv", ["longscope", "merge", str(tmp_path / "o"), str(_shard(tmp_path, 0))]
    )
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 3
    assert "gaps: shard(s) 1 not merged" in capsys.readouterr().out


def test_describe_shows_ten_of_each_and_counts_the_rest() -> None:
    def report(missing: int, conflicts: int = 0, shards: tuple[int, ...] = ()) -> MergeReport:
        return MergeReport(
            run_id=RUN, out=Path("o"), inputs=3, samples=5, generations=6, added=1, overlaps=2,
            conflicts=[f"c{i}#0" for i in range(conflicts)], missing_shards=list(shards),
            missing_samples=[f"m{i}" for i in range(missing)], unfinished=2, unanswered=4,
        )  # fmt: skip

    ten = [f"m{i}" for i in range(10)]
    lines = report(11, conflicts=11, shards=(1, 3)).describe().split("\n")
    assert lines == [
        f"merged 3 store(s) of run {RUN[:12]} into o: 5 samples, 6 generations (1 new), "
        "2 overlaps, 11 conflicts",
        "conflicting answers (first input kept): " + ", ".join(f"c{i}#0" for i in range(10)),
        "gaps: shard(s) 1, 3 not merged",
        "gaps: 11 sample(s) not in any input: " + ", ".join(ten) + " and 1 more",
        "2 generation(s) not final: run the same command on the merged store to send them again",
        "gaps: 4 request(s) never answered (a shard stopped before its end): run the same command "
        "on the merged store (-o) to send them",
    ]
    assert report(10).describe().split("\n")[1] == (
        "gaps: 10 sample(s) not in any input: " + ", ".join(ten)
    )
    assert report(12).describe().split("\n")[1].endswith(", m9 and 2 more")


def test_record_shard_and_endpoints_write_into_the_run_and_never_create_one(tmp_path: Path) -> None:
    run = _store(tmp_path / "run", ["a"], [])
    suite = ShardedSuite(create_suite("longctx", {"lengths": [1024]}), Shard(1, 2))
    suite.all_ids, suite.assignment = ["b", "a"], {"b": 0, "a": 1}
    record_shard(run, RUN, suite)
    with RunStore.open_readonly(run) as store:
        assert store.get_meta(SHARD_KEY + RUN) == {
            "index": 1, "count": 2, "ids": ["b", "a"], "assignment": [0, 1],
        }  # fmt: skip
    first, second = [{"endpoint": "e0", "requests": 3}], [{"endpoint": "e1", "requests": 1}]
    record_endpoints(run, RUN, first)
    record_endpoints(run, RUN, [])  # an invocation without endpoint figures adds nothing
    record_endpoints(run, RUN, second)
    assert endpoint_history(run, RUN) == [first, second]
    with RunStore.open_readonly(run) as store:
        assert store.get_meta(ENDPOINTS_KEY + RUN) == [first, second]
    assert endpoint_history(run, OTHER) == []
    nowhere = tmp_path / "nowhere"
    for call in (
        lambda: record_shard(nowhere, RUN, suite),
        lambda: record_endpoints(nowhere, RUN, first),
        lambda: endpoint_history(nowhere, RUN),
    ):
        with pytest.raises(StoreError):
            call()
        assert not nowhere.exists()


def test_samples_outside_the_shard_record_and_shards_owning_nothing(tmp_path: Path) -> None:
    # A lazily built suite stores its skipped cells (too long for the model) in every shard, and
    # leaves them out of the record's ids; a run split in more shards than it has samples leaves
    # a shard owning nothing. Neither is a gap, and the build order keeps the recorded ids first.
    record = {"count": 3, "ids": ["s3", "s1"], "assignment": [0, 1]}
    skipped = ("s0", 0, Generation("", "skipped", error="insufficient_context: needs 9000"))
    inputs = []
    for index, sid in enumerate(["s3", "s1"]):
        path = _store(tmp_path / sid, [sid, "s0"], [(sid, 0, _ok(sid)), skipped])
        with RunStore(path) as store:
            store.put_meta(SHARD_KEY + RUN, {**record, "index": index})
        inputs.append(path)
    report = merge_runs(tmp_path / "out", inputs)
    assert (report.missing_shards, report.missing_samples) == ([], [])
    # The skipped request is final as the summary counts it: nothing to send again.
    assert (report.unfinished, report.samples) == (0, 3) and report.complete
    assert list(_read(tmp_path / "out")["samples"]) == ["s3", "s1", "s0"]
    assert report.scores is not None and report.scores.completeness["skipped"] == 1
