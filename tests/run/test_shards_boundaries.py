"""Shards at their boundaries, fast and without a model: which shard a job array names (and the
one-line refusals), which samples or cells each shard runs, the record merge finds gaps with, and
a sharded suite that is the whole suite in everything but its build.
"""

from __future__ import annotations

from typing import Any

import pytest

from longscope.errors import UsageError
from longscope.run.shards import (
    MAX_SHARDS,
    Shard,
    ShardedSuite,
    parse_shard,
    partition,
    partition_cells,
    prefill_cost,
    resolve_shard,
    sample_tokens,
    shard_from_env,
    shard_loads,
)
from longscope.suites.base import BuildCell, PromptTemplate, Suite
from longscope.types import Generation, GenerationConfig, JudgeTask, Sample, Score


def _sample(sid: str, tokens: int, context: str | None = None, counted: int = 0) -> Sample:
    return Sample(
        sid,
        "t",
        "en",
        context if context is not None else f"document {sid}",
        "q",
        ("a",),
        tokens,
        {},
        prompt_tokens=counted,
    )


def test_shard_text_and_its_refusals() -> None:
    assert parse_shard("2/5") == Shard(2, 5) and str(parse_shard("2/5")) == "2/5"
    assert parse_shard("0/1").source == ""
    assert parse_shard(f"{MAX_SHARDS - 1}/{MAX_SHARDS}") == Shard(MAX_SHARDS - 1, MAX_SHARDS)
    assert Shard(1, 2, source="X") == Shard(1, 2)  # where it came from is not part of it
    for bad in ("5/5", "-1/5", "0/0", "3", "x/5", "/5", "1/"):
        with pytest.raises(UsageError) as caught:
            parse_shard(bad)
        assert str(caught.value) == f"bad shard {bad!r}: expected i/N with 0 <= i < N, e.g. 0/4"
    with pytest.raises(UsageError) as caught:
        parse_shard(f"0/{MAX_SHARDS + 1}")
    assert str(caught.value) == "bad shard '0/10001': at most 10,000 shards"


def test_shard_from_a_job_array_and_its_refusals() -> None:
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}
    shard = shard_from_env(slurm)
    assert shard == Shard(3, 4) and shard is not None and shard.source == "SLURM_ARRAY_TASK_ID"
    assert shard_from_env({**slurm, "SLURM_ARRAY_TASK_MIN": "2"}) == Shard(1, 4)
    assert shard_from_env(slurm, count=6) == Shard(3, 6)  # an explicit count wins
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "3"}) is None  # not an array without its count
    assert shard_from_env({"JOB_COMPLETION_INDEX": "0", "LONGSCOPE_SHARDS": "1"}) == Shard(0, 1)
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "1"}) == Shard(
        0, 1
    )
    k8s = shard_from_env({"JOB_COMPLETION_INDEX": "0", "LONGSCOPE_SHARDS": "2"})
    assert k8s == Shard(0, 2) and k8s is not None and k8s.source == "JOB_COMPLETION_INDEX"
    assert shard_from_env({"JOB_COMPLETION_INDEX": "1", "LONGSCOPE_SHARDS": "2"}, count=3) == (
        Shard(1, 3)
    )
    refusals = [
        (
            {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"},
            "bad shard variables in the environment (invalid literal for int() with base 10: "
            "'x'): pass --shard i/N",
        ),
        (
            {"JOB_COMPLETION_INDEX": "1", "LONGSCOPE_SHARDS": "two"},
            "bad shard variables in the environment (invalid literal for int() with base 10: "
            "'two'): pass --shard i/N",
        ),
    ]
    for env, message in refusals:
        with pytest.raises(UsageError) as caught:
            shard_from_env(env)
        assert str(caught.value) == message
    assert shard_from_env({"JOB_COMPLETION_INDEX": "0"}, count=MAX_SHARDS) == Shard(0, MAX_SHARDS)


def test_the_option_else_the_job_array_else_no_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"JOB_COMPLETION_INDEX": "1", "LONGSCOPE_SHARDS": "3"}
    assert resolve_shard("0/2", env) == Shard(0, 2)
    assert resolve_shard("", env) == Shard(1, 3)
    assert resolve_shard(None, {}) is None
    for name in ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "2")
    monkeypatch.setenv("LONGSCOPE_SHARDS", "5")
    assert resolve_shard(None) == Shard(2, 5)  # the process environment by default
    assert shard_from_env() == Shard(2, 5)


def test_prompt_length_and_its_cost() -> None:
    assert sample_tokens(_sample("a", 4096)) == 4096  # not counted: the target length
    assert sample_tokens(_sample("a", 4096, counted=3000)) == 3000
    assert sample_tokens(_sample("a", 0)) == 1
    assert prefill_cost(1000) == 1000 + 1000 * 1000 / 32768
    assert prefill_cost(1000, quadratic_at=1000) == 2000


def test_partition_longest_first_to_the_least_loaded_ties_to_the_lowest_index() -> None:
    # costs with quadratic_at=1 (tokens + tokens^2): 10 -> 110, 6 -> 42, 5 -> 30, 4 -> 20
    samples = [
        _sample("d", 4),
        _sample("a", 10),
        _sample("c", 5),
        _sample("b", 6),
        _sample("e", 4),
        _sample("f", 4, context="document c"),  # reads c's document: goes with c
    ]
    assignment = partition(samples, 3, quadratic_at=1)
    # a(110) -> 0; b(42) -> 1; c+f(50) comes before b: -> 1, then b -> 2; d(20), e(20): to the
    # least loaded: 2 (42) gets d, then e goes to 2 (62) or 1 (50): 1
    assert assignment == {"a": 0, "c": 1, "f": 1, "b": 2, "d": 2, "e": 1}
    assert shard_loads(samples, assignment, 3) == [
        prefill_cost(10),
        prefill_cost(5) + 2 * prefill_cost(4),
        prefill_cost(6) + prefill_cost(4),
    ]
    # equal costs: the lower sample id first, and to the lower shard
    same = [_sample(s, 8) for s in ("z", "y", "x")]
    assert partition(same, 2) == {"x": 0, "y": 1, "z": 0}
    assert partition(same, 5) == {"x": 0, "y": 1, "z": 2}


def test_the_quadratic_term_decides_between_one_long_and_several_short_samples() -> None:
    cross = [_sample("long", 3000), _sample("m1", 1900), _sample("m2", 1900), _sample("t", 10)]
    # linear (a huge quadratic_at): long 3000 against the two short 3800: t joins long
    linear = partition(cross, 2, quadratic_at=10**12)
    assert linear["t"] == linear["long"] != linear["m1"] == linear["m2"]
    # quadratic at 1000: long 3000 + 9000 against 2 x (1900 + 3610) = 11020: t joins the short
    quadratic = partition(cross, 2, quadratic_at=1000)
    assert quadratic["t"] == quadratic["m1"] == quadratic["m2"] != quadratic["long"]


def test_cells_partition_whole_and_skip_what_cannot_be_built() -> None:
    cells = [
        BuildCell("a", 4096, 10),
        BuildCell("b", 8192, 10, skipped="no data"),
        BuildCell("c", 8192, 10),
        BuildCell("d", 1024, 30),
        BuildCell("e", 0, 1),
    ]
    # costs with quadratic_at=1024: a 10 x (4096 + 16384) = 204800, c 10 x (8192 + 65536) =
    # 737280, d 30 x 2048 = 61440, e 1 x (1 + 1/1024)
    assert partition_cells(cells, 2, quadratic_at=1024) == {2: 0, 0: 1, 3: 1, 4: 1}
    # with the default (32768), d (30 x 1056) outweighs... a (10 x 4608): c, a, d, e
    assert partition_cells(cells, 3) == {2: 0, 0: 1, 3: 2, 4: 2}
    assert partition_cells([BuildCell("x", 100, 1), BuildCell("y", 100, 1)], 2) == {0: 0, 1: 1}
    # a cell of one token costs less than one of two: the longer goes first
    assert partition_cells([BuildCell("x", 1, 1), BuildCell("y", 2, 1)], 2) == {1: 0, 0: 1}
    # the quadratic term decides where a small cell goes: at 1024, one 32K cell outweighs two
    # cells of 40 x 1K (1,081,344 against 2 x 81,920); at 32768 it does not (65,536 against
    # 2 x 42,240)
    crossing = [
        BuildCell("long", 32768, 1),
        BuildCell("b", 1024, 40),
        BuildCell("c", 1024, 40),
        BuildCell("small", 10, 1),
    ]
    assert partition_cells(crossing, 2, quadratic_at=1024)[3] == 1
    assert partition_cells(crossing, 2)[3] == 0


class _Toy(Suite):
    """A suite in the shape every suite has, with values no default has."""

    name = "toy"
    version = "v7"
    template = PromptTemplate("{context} {question}", "Answer:")
    default_config = GenerationConfig(max_tokens=17)
    default_repeats = 3
    JUDGED = True
    needs_judge = True

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples
        self.prepared = 0
        self.contexts: list[Any] = []

    def params(self) -> dict[str, Any]:
        return {"p": 1}

    def build(self, ctx: Any) -> list[Sample]:
        self.contexts.append(ctx)
        return list(self.samples)

    def prepare(self) -> None:
        self.prepared += 1

    def timeout_s(self, sample: Sample) -> float:
        return 42.0 + sample.length

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        return Score(float(len(generation.text)), float(len(sample["id"])))

    def summarize(self, rows: Any) -> Any:
        return ("summary", len(rows))

    @staticmethod
    def _cluster(sample: dict[str, Any]) -> str:
        return sample["id"][0]

    cluster_key = _cluster

    def judge_task(self, sample: dict[str, Any], generation: Generation) -> JudgeTask | None:
        return JudgeTask("kind", f"is {generation.text!r} right for {sample['id']}?")

    def parse_verdict(self, kind: str, text: str) -> float | None:
        return 0.25 if kind == "kind" and text == "yes" else None


def test_a_sharded_suite_is_the_suite_in_everything_but_its_build() -> None:
    lengths = {"a": 4096, "b": 1000, "c": 1000, "d": 2000, "e": 500}
    samples = [_sample(sid, n) for sid, n in lengths.items()]
    toy = _Toy(samples)
    shards = [ShardedSuite(toy, Shard(i, 2)) for i in range(2)]
    assert [s.describe() for s in shards] == [f"shard {i}/2: 0 of 0 samples" for i in (0, 1)]
    assert shards[0].record() == {"index": 0, "count": 2, "ids": [], "assignment": []}
    ctx = object()  # what the runner's build context would be: handed on as it is
    built = [s.build(ctx) for s in shards]  # type: ignore[arg-type]
    assert toy.contexts == [ctx, ctx]
    mine = [[x.id for x in b] for b in built]
    # a (the longest) alone on 0; the rest on 1 in build order
    assert mine == [["a"], ["b", "c", "d", "e"]]
    assert shards[0].describe() == "shard 0/2: 1 of 5 samples"
    assert shards[1].describe() == "shard 1/2: 4 of 5 samples"
    assert shards[1].record() == {
        "index": 1,
        "count": 2,
        "ids": ["a", "b", "c", "d", "e"],
        "assignment": [0, 1, 1, 1, 1],
    }
    shard = shards[1]
    assert shard.shard == Shard(1, 2)
    assert (shard.name, shard.version, shard.default_repeats) == ("toy", "v7", 3)
    assert shard.template is toy.template and shard.default_config is toy.default_config
    assert shard.params() == {"p": 1}
    shard.prepare()
    assert toy.prepared == 1
    assert shard.timeout_s(samples[0]) == 42.0 + 4096
    stored = samples[0].public()
    assert shard.score(stored, Generation("abc", "ok")) == Score(3.0, 1.0)
    assert shard.summarize([1, 2]) == ("summary", 2)
    assert shard.cluster_key is not None and shard.cluster_key({"id": "xyz"}) == "x"
    assert shard.JUDGED is True and shard.needs_judge is True
    assert shard.judge_task(stored, Generation("abc", "ok")) == toy.judge_task(
        stored, Generation("abc", "ok")
    )
    assert shard.judge_task(stored, Generation("abc", "ok")) == JudgeTask(
        "kind", "is 'abc' right for a?"
    )
    assert shard.parse_verdict("kind", "yes") == 0.25 and shard.parse_verdict("kind", "") is None
    assert shard.parse_verdict("other", "yes") is None
    assert shard.cells(None) is None  # a suite without the lazy build is built whole


class _Cells(_Toy):
    """A suite built by cells (as RULER is): each shard makes only its own cells."""

    def __init__(self, cells: list[BuildCell]) -> None:
        super().__init__([])
        self._cells = cells
        self.asked: list[BuildCell] = []

    def cells(self, ctx: Any) -> list[BuildCell]:
        self.contexts.append(ctx)
        return list(self._cells)

    def iter_cell(self, ctx: Any, task: str, length: int, count: int) -> Any:
        self.asked.append((task, length, count))
        return iter(())


def test_a_suite_built_by_cells_is_split_by_whole_cells() -> None:
    cells = [
        BuildCell("a", 8192, 2, id_format="a-{index}"),
        BuildCell("b", 4096, 3, id_format="b-{index}"),
        BuildCell("x", 4096, 5, skipped="no data", id_format="x-{index}"),
        BuildCell("c", 4096, 1),  # ids unknown before building
        BuildCell("d", 1024, 3, id_format="d-{index}"),
    ]
    suite = _Cells(cells)
    first, second = (ShardedSuite(suite, Shard(i, 2)) for i in range(2))
    assigned = partition_cells(cells, 2)
    # a 2 x (8192 + 2048), b 3 x (4096 + 512), c 4096 + 512, d 3 x (1024 + 32): a alone on 0
    assert assigned == {0: 0, 1: 1, 3: 1, 4: 1}
    ctx = object()
    own = first.cells(ctx)  # type: ignore[attr-defined]
    assert suite.contexts == [ctx]
    # its own cells and the skipped one (reported as skipped by every shard), in suite order
    assert [c.task for c in own] == ["a", "x"]
    assert [c.task for c in second.cells(None)] == ["b", "x", "c", "d"]  # type: ignore[attr-defined]
    # every id the whole run will have, interleaved by index as the runner pulls them
    assert first.all_ids == ["a-0", "b-0", "d-0", "a-1", "b-1", "d-1", "b-2", "d-2"]
    assert first.record()["assignment"] == [0, 1, 1, 0, 1, 1, 1, 1]
    assert first.describe() == "shard 0/2: 2 of 8 samples"
    # a cell is made by the suite itself, asked through the shard
    assert list(first.iter_cell(ctx, "a", 8192, 2)) == [] and suite.asked == [("a", 8192, 2)]
    # asked again (plan, then run): the same, not doubled
    first.cells(None)  # type: ignore[attr-defined]
    assert len(first.all_ids) == 8 and len(first.assignment) == 8
    assert ShardedSuite(_Cells([]), Shard(0, 3)).cells(None) == []  # type: ignore[attr-defined]


def test_a_job_arrays_refusal_is_said_once() -> None:
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}
    refusals = [
        (
            {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"},
            "SLURM_ARRAY_TASK_ID gives shard 4 of 4: pass --shard i/N instead",
        ),
        (
            {**slurm, "SLURM_ARRAY_TASK_MIN": "4"},
            "SLURM_ARRAY_TASK_ID gives shard -1 of 4: pass --shard i/N instead",
        ),
        (
            {"JOB_COMPLETION_INDEX": "0", "LONGSCOPE_SHARDS": str(MAX_SHARDS + 1)},
            "JOB_COMPLETION_INDEX gives 10001 shards: at most 10,000; pass --shard i/N instead",
        ),
        (
            {"JOB_COMPLETION_INDEX": "0", "LONGSCOPE_SHARDS": "0"},
            "JOB_COMPLETION_INDEX is set but the shard count is not: pass --shard i/N "
            "or set LONGSCOPE_SHARDS to the job's completions",
        ),
    ]
    for env, message in refusals:
        with pytest.raises(UsageError) as caught:
            shard_from_env(env)
        assert str(caught.value) == message
