"""One prepared run (run/prepared.py): `plan` and `run` make only what they send, and the first
request of a whole grid leaves before the grid is made."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from longscope import api
from longscope.models.scripted import ScriptedBackend
from longscope.run.prepared import PreparedRun, RunOptions
from longscope.suites import create_suite
from longscope.suites.base import SampleSource

FIXTURES = Path(__file__).parents[1] / "suites" / "ruler" / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
QWEN = ["tokenizer=qwen2.5", "prompt_mode=completion"]


def _counting(suite):  # type: ignore[no-untyped-def]
    """Return `suite` counting what it makes: samples through its lazy hook, and whole builds."""
    made = {"samples": 0, "builds": 0}
    inner_iter, inner_build = suite.iter_cell, suite.build

    def iter_cell(ctx, task, length, count=None):  # type: ignore[no-untyped-def]
        for sample in inner_iter(ctx, task, length, count):
            made["samples"] += 1
            yield sample

    def build(ctx):  # type: ignore[no-untyped-def]
        made["builds"] += 1
        return inner_build(ctx)

    suite.iter_cell, suite.build = iter_cell, build
    return suite, made


def test_plan_with_a_limit_makes_only_what_it_sends(qwen_tokenizer) -> None:
    """`plan --limit 2` of RULER's default tasks at 4K+16K: 2 per task x length, nothing more;
    the 7 tasks without their data files are named with the reason, and so is the limit."""
    suite, made = _counting(create_suite("ruler", {"lengths": "4k,16k"}))
    plan = api.plan(api.RunSpec.of(suite, "scripted/x", model_options=QWEN, limit=2))
    skipped = {t.task: t.reason for t in plan.tasks if t.reason}
    running = [t for t in plan.tasks if not t.reason]
    assert len(skipped) == 7 and all("not given" in r for r in skipped.values())
    assert len(running) == 6 and all(t.requests == 4 for t in running)  # 2 lengths x 2
    assert plan.requests == made["samples"] == 6 * 2 * 2 and made["builds"] == 0
    assert [c.requests for c in plan.cells] == [12, 12]
    table = plan.table()
    assert "--limit 2: per task x length" in table
    lines = {line.split()[0]: line for line in table.splitlines() if line.strip()}
    assert all("skipped: needs" in lines[task] for task in skipped)
    # the tokens counted are the prompts' own: each within its length less the output budget
    assert all(0 < t.prompt_tokens <= 2 * (4096 + 16384) for t in running)


def test_a_suite_without_cells_is_built_once_and_limited_in_all(qwen_tokenizer) -> None:
    """The adapter: a suite without the lazy hook is its `build` list, made once, cut in all."""
    suite = create_suite("longctx", {"tiers": [1]})
    backend = ScriptedBackend("x", tokenizer=qwen_tokenizer, prompt_mode="completion")
    import asyncio

    prepared = asyncio.run(PreparedRun.create(suite, backend, RunOptions(limit=3)))
    assert not prepared.limit_per_cell and isinstance(prepared.source, SampleSource)
    assert [p.count for p in prepared.cells] == [3]
    ids = [s.id for _, s in prepared.samples()]
    assert ids == [s.id for s in prepared.source._built[:3]]
    assert len(ids) == 3


def test_first_request_of_the_whole_grid_leaves_before_the_grid_is_made(tmp_path) -> None:
    """`run` of RULER's default grid (13 tasks x 4K-128K x 500 = 39,000 samples): the first
    request leaves within seconds, with a handful of samples made; the samples stored are those."""
    suite, made = _counting(create_suite("ruler", DATA))
    seen: dict[str, float] = {}

    class Stop(Exception):
        pass

    class FirstOnly(ScriptedBackend):
        async def generate(self, request):  # type: ignore[no-untyped-def]
            seen.setdefault("first_s", time.perf_counter() - started)
            seen.setdefault("made", made["samples"])
            raise Stop

    backend = FirstOnly("x", tokenizer="qwen2.5", prompt_mode="completion", max_concurrency=4)
    started = time.perf_counter()
    with pytest.raises(Stop):
        api.evaluate(api.RunSpec.of(suite, backend, output=tmp_path / "run"))
    assert made["builds"] == 0
    # made ahead: at most what the backend may hold and the queue before it (4 + 4), and the one
    # being made; a loaded 2-core machine makes a 4K sample in well under a second
    assert seen["made"] <= 9, seen
    assert seen["first_s"] < 10.0, seen
    from longscope.run.store import RunStore

    with RunStore.open_readonly(tmp_path / "run") as store:
        (run,) = store.runs()
        assert 1 <= len(store.samples(run["run_id"])) <= made["samples"]


def test_shards_of_a_grid_make_only_their_own_cells(qwen_tokenizer) -> None:
    """`--shard i/3` of RULER at 4K+8K: each shard makes only the cells it sends, the shards
    cover the grid once, and each records every sample id of the run without making them."""
    from longscope.run.launch import sharded

    sent: list[str] = []
    for index in range(3):
        suite, made = _counting(create_suite("ruler", {"lengths": "4k,8k", "samples": "2"}))
        shard = sharded(suite, f"{index}/3")
        backend = ScriptedBackend("x", tokenizer=qwen_tokenizer, prompt_mode="completion")
        import asyncio

        prepared = asyncio.run(PreparedRun.create(shard, backend, RunOptions()))
        ids = [s.id for _, s in prepared.samples()]
        assert made["samples"] == len(ids) and made["builds"] == 0
        assert sorted(shard.record()["ids"]) == sorted(
            f"{t}-{n}-{i:03d}"
            for t in ("niah_single_1", "niah_multikey_2", "niah_multikey_3", "vt", "cwe", "fwe")
            for n in (4096, 8192)
            for i in range(2)
        )
        assert all(shard.assignment[i] == index for i in ids)
        sent += ids
    assert len(sent) == len(set(sent)) == 6 * 2 * 2


def test_a_chat_templates_counted_tokens_name_the_run_and_completion_runs_keep_theirs() -> None:
    from dataclasses import replace

    from longscope.models.base import ModelInfo
    from longscope.run.prepared import run_identity

    suite = create_suite("ruler", {"tasks": "qa_1", **DATA})
    config = suite.default_config
    chat = ModelInfo("m", 8192, "n_ctx", "chat", "t")
    ids = {n: run_identity(suite, replace(chat, chat_overhead=n), config) for n in (None, 20, 30)}
    # Chat prompts are sized around the template: another count is another run, not a resume.
    assert len(set(ids.values())) == 3
    completion = replace(chat, prompt_mode="completion")
    same = {run_identity(suite, replace(completion, chat_overhead=n), config) for n in (None, 0, 7)}
    assert len(same) == 1
