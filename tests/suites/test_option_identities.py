"""Each built-in suite declares its options once (`Param` defaults on the class) and its
constructor takes complete typed values: moving the defaults there must not change which run an
unchanged `-S` names. The run ids below are those main 427b670 gave (before the move)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from longscope.suites import create_suite, suite_factory, suite_from_options, suite_names
from longscope.types import stable_hash

# (suite, -S pairs, --lengths, --seed, run identity recorded by main 427b670)
RECORDED = [
    ("ruler", [], None, 0, "782899d825820b56"),
    ("ruler", ["tasks=vt,niah_single_1", "lengths=4k,8k", "samples=3"], None, 0, "e42d2dc83f3d82ea"),
    ("ruler", ["random_seed=7", "fill=exact", "model_template=meta-chat"], "4k,16k", 1,
     "3033090dd9325e7f"),
    ("ruler", ["random_seed=0", "essays=e.json"], None, 0, "75080e7755b7ac42"),
    ("longctx", [], None, 0, "ee4f5ee5141d315a"),
    ("longctx", ["tiers=1,2", "language=zh"], None, 3, "0db1ed630d1ce54a"),
    ("longctx", ["lengths=2k,4k", "depths=0.2,50", "types=needle"], None, 0, "b219dc94c9556ffa"),
    ("longctx", [], "2k,1024", 4, "7b1e9ee17b77149c"),
    ("hundred", [], None, 0, "fd92c71e377bf497"),
    ("hundred", ["tasks=kv_retrieval", "samples=2", "lengths=2k"], None, 5, "5a45d3707a2689ae"),
    ("hundred", ["metric=judge", "qa_filter=0.7", "pool=pool.jsonl"], "4k", 0, "e298e4cd24f26993"),
    ("mrcr", ["data=hub"], None, 0, "ff430f763964b075"),
    ("mrcr", ["data=rows.jsonl", "needles=2,4", "lengths=8k,128k", "bins=o200k"], None, 0,
     "28d938f736007a9a"),
    ("mrcr", ["data=hub", "allow_unpinned=true", "revision=abc"], None, 0, "f2ddbace42f3da1b"),
    ("longbench-pro", ["data=hub"], None, 0, "0d213526ec948872"),
    ("longbench-pro", ["data=x.jsonl", "mode=both", "language=en", "lengths=8k,16k",
      "max_length=64k", "task=T1", "difficulty=Easy", "requirement=Full", "truncate_with=model",
      "max_input_tokens=1000"], None, 0, "c259d74604b1cfa1"),
    ("longbench-pro", ["data=hub", "mode=thinking", "official_parity=true", "embedder=openai/x"],
     None, 0, "fb4cb5e876a59e99"),
]  # fmt: skip


@pytest.fixture
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty data cache and a working folder holding the one input file a case names."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.json").write_text('{"text": "An essay."}')
    return tmp_path


@pytest.mark.parametrize(("name", "pairs", "lengths", "seed", "recorded"), RECORDED)
def test_unchanged_options_name_the_same_run(
    no_cache: Path, name: str, pairs: list[str], lengths: str | None, seed: int, recorded: str
) -> None:
    suite = suite_from_options(name, pairs, {"lengths": lengths, "seed": seed})
    identity = {"suite": name, "params": suite.params(), "config": suite.default_config}
    assert stable_hash(identity) == recorded
    # A stored run's params build the same suite again (what `report` and resume read).
    assert create_suite(name, suite.params()).params() == suite.params()


@pytest.mark.parametrize("name", suite_names())
def test_constructors_restate_no_default(name: str) -> None:
    """The defaults live in `OPTIONS` only: each registered suite's constructor takes every value
    it needs."""
    signature = inspect.signature(suite_factory(name).__init__)
    defaulted = [
        p.name
        for p in signature.parameters.values()
        if p.name != "self" and p.default is not inspect.Parameter.empty
    ]
    assert defaulted == []
