"""fill=ruler: the samples RULER's prepare.py writes, built lazily per task x length cell.

`fixtures/prepare_digests.json` holds, per task and model template, the sha256 of each sample
RULER's own `prepare.py` wrote (NVIDIA/RULER@c3f5e3b, Qwen2.5 vocabulary, seed 42, 4K): input,
answer prefix, outputs and length (see benchmarks/bench_ruler.py --identity for the full check).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.base import BuildContext
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.summary import comparability, summarize_ruler
from longscope.suites.ruler.tasks import ALL_TASKS, TASKS
from longscope.types import Generation, GenerationConfig, Score, ScoredRow

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DIGESTS = json.loads((FIXTURES / "prepare_digests.json").read_text())


def digest(sample) -> str:
    """The same digest as the fixture's: RULER's four fields of one written sample."""
    meta = sample.meta
    fields = [
        meta["head"] + sample.context + sample.question,
        meta["answer_prefix"],
        list(sample.gold),
        meta["ruler_length"],
    ]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


def _ctx(tokenizer, mode="completion"):
    return BuildContext(tokenizer, mode, GenerationConfig())


@pytest.mark.parametrize("key", sorted(DIGESTS))
def test_samples_equal_what_rulers_prepare_wrote(qwen_tokenizer, key) -> None:
    template, task = key.split("/")
    expected = DIGESTS[key]
    suite = make_suite(
        RulerSuite, tasks=[task], lengths=[4096], samples=len(expected), model_template=template
    )
    samples = list(suite.iter_cell(_ctx(qwen_tokenizer), task, 4096))
    assert [digest(s) for s in samples] == expected


def test_iter_cell_is_lazy_and_matches_build(qwen_tokenizer) -> None:
    suite = make_suite(RulerSuite, tasks=["vt", "niah_single_1"], lengths=[4096], samples=3)
    ctx = _ctx(qwen_tokenizer)
    built = suite.build(ctx)
    # build is sample-major over the cells; a cell's first two are the same from iter_cell.
    cell = suite.iter_cell(ctx, "vt", 4096, count=500)
    first_two = list(itertools.islice(cell, 2))
    assert [s.id for s in first_two] == ["vt-4096-000", "vt-4096-001"]
    assert [s.context for s in first_two] == [s.context for s in built if s.task == "vt"][:2]
    assert len(list(suite.iter_cell(ctx, "niah_single_1", 4096))) == 3  # count: `samples`


def test_ruler_lengths_are_rulers_count(qwen_tokenizer) -> None:
    tasks = ["niah_single_1", "niah_multikey_3", "vt", "cwe", "fwe"]
    suite = make_suite(RulerSuite, tasks=tasks, lengths=[4096], samples=2)
    for sample in suite.build(_ctx(qwen_tokenizer)):
        ttg = TASKS[sample.task].template.tokens_to_generate
        prompt, _ = suite.template.render(sample, "completion")
        text = len(qwen_tokenizer.encode(prompt))
        # RULER counts the prompt with its answer prefix, plus the output budget, within L.
        assert sample.meta["ruler_length"] == text + ttg <= 4096
        assert sample.prompt_tokens == sample.meta["achieved_length"] == text + 1  # BOS
        assert sample.meta["fill"] == "ruler" and sample.max_tokens == ttg


def test_missing_data_task_is_one_line(qwen_tokenizer) -> None:
    suite = make_suite(RulerSuite, tasks=["qa_1"], lengths=[4096], samples=1)
    with pytest.raises(UsageError, match="qa_1 cannot run: needs squad=FILE"):
        next(suite.iter_cell(_ctx(qwen_tokenizer), "qa_1", 4096))


def _rows(samples, status="ok"):
    rows = []
    for s in samples:
        row = {"id": s.id, "task": s.task, "meta": s.meta, "gold": list(s.gold)}
        rows.append(ScoredRow(row, 0, Generation(s.gold[0], status), Score(1.0, 1.0, {})))
    return rows


def _fake_samples(n, mode="completion", fill="ruler", template="base", tasks=ALL_TASKS):
    from longscope.types import Sample

    out = []
    for task in tasks:
        for i in range(n):
            meta = {
                "target_length": 4096,
                "achieved_length": 4000,
                "answer_prefix": " Answer:",
                "prompt_mode": mode,
                "fill": fill,
                "model_template": template,
            }
            out.append(Sample(f"{task}-4096-{i:03d}", task, "English", "", "", ("x",), meta=meta))
    return out


def test_comparable_only_from_what_was_scored() -> None:
    full = _rows(_fake_samples(500))
    assert comparability(full, []) == ("yes", [])
    verdict, notes = comparability(_rows(_fake_samples(10)), [])
    assert verdict == "subset of 10" and "10 of RULER's 500" in notes[0]
    # A chat-mode run of 5 tasks: not comparable, and it says why.
    chat = _rows(_fake_samples(10, mode="chat", tasks=ALL_TASKS[:5]))
    verdict, notes = comparability(chat, [])
    assert verdict == "no"
    assert any("tasks not scored" in n and "qa_2" in n for n in notes)
    assert any("chat mode" in n for n in notes)
    tight = _rows(_fake_samples(500, fill="exact"))
    assert any("fill=exact" in n for n in comparability(tight, [])[1])
    failed = _rows(_fake_samples(500))
    failed[0] = ScoredRow(failed[0].sample, 0, Generation("", "timeout"), None)
    assert comparability(failed, [])[1] == ["1 requests failed or unanswered (they score 0)"]
    lwm = _rows(_fake_samples(500, template="lwm-chat"))
    assert any("model template lwm-chat" in n for n in comparability(lwm, [])[1])


def test_summary_says_comparable_or_why_not() -> None:
    native = summarize_ruler(_rows(_fake_samples(3)), {}, [])
    assert native["comparable_with_published"] == "subset of 3"
    native = summarize_ruler(
        _rows(_fake_samples(3, mode="chat")), {}, ["random_seed 7 (RULER: 42)"]
    )
    assert native["comparable_with_published"] == "no"
    assert "random_seed 7 (RULER: 42)" in native["differences"]


def test_published_tbd_rows_stay_as_published(tmp_path, monkeypatch) -> None:
    from longscope import api

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ruler").mkdir()  # a folder named like the suite is not a table file
    rows = {r["model"]: r for r in api.published_rows("ruler").leaderboard_rows()}
    qwen3 = next(r for name, r in rows.items() if name.startswith("Qwen3-14B*"))  # 85.1 at 128K
    assert qwen3["wAvg_inc"] == "TBD" and qwen3["wAvg_dec"] == "TBD"
    assert qwen3["effective"] == ">128K"
    jamba = next(r for name, r in rows.items() if name.startswith("Jamba-1.5-large"))
    assert (jamba["wAvg_inc"], jamba["wAvg_dec"]) == (95.7, 96.3)


def test_a_prefixs_sentences_come_from_the_long_cut() -> None:
    """The essay is cut once past the largest size tried; a smaller prefix's sentences are the
    ones the prefix alone would give (RULER cuts each prefix anew)."""
    import re

    from longscope.suites.ruler.data import EssayHaystack, _regex_spans, load_essays

    text = load_essays(FIXTURES / "essays.json").text
    words = re.sub(r"\s+", " ", text).split(" ")
    haystack = EssayHaystack(words, "test", splitter=_regex_spans)
    for n in (len(words) * 3 + 7, 5, 37, 200, len(words), len(words) + 1, 40):
        prefix = " ".join(haystack.prefix(n)).strip()
        assert haystack.sentences(n) == [prefix[a:b] for a, b in _regex_spans(prefix)], n
