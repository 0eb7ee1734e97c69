"""The GraphWalks suite through the contract: options, build (bins, sets, budgets, skip), score
(both prompt modes), summary (a view per problem type) and the published rows.

Built with the embedded model's real tokenizer (Gemma 3's GGUF vocabulary), as a run builds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.api import published_rows
from longscope.errors import UsageError
from longscope.suites import create_suite, suite_from_options
from longscope.suites.base import BuildContext
from longscope.suites.graphwalks.suite import (
    ANSWER_PREFIX,
    CHAT_MIN_OUTPUT,
    CHAT_REASONING,
    COMPLETION_SLACK,
)
from longscope.summary import percent
from longscope.types import Generation, GenerationConfig, ScoredRow

from .rows import graphwalks_row, write_jsonl

OVERHEAD = 11


def _ctx(tokenizer, context_length: int | None = 8192, mode: str = "chat", **kw) -> BuildContext:
    return BuildContext(
        tokenizer,
        mode,
        GenerationConfig(max_tokens=64),
        context_length=context_length,
        chat_overhead=OVERHEAD,
        **kw,
    )


@pytest.fixture
def rows() -> list[dict]:
    return [
        graphwalks_row("parents", seed=1),
        graphwalks_row("bfs", seed=2),
        graphwalks_row("parents", seed=3, nodes=400, edges=1300),  # about 20K tokens
    ]


@pytest.fixture
def data(tmp_path: Path, rows: list[dict]) -> Path:
    return write_jsonl(tmp_path / "gw.jsonl", rows)


def test_options_have_their_defaults_and_data_is_required(data: Path) -> None:
    suite = suite_from_options("graphwalks", [f"data={data}"])
    assert suite.params() == {
        "data": str(data),
        "problem_types": [],
        "lengths": [],
        "files": "all",
        "allow_unpinned": False,
    }
    with pytest.raises(UsageError, match="graphwalks needs -S data=FILE"):
        suite_from_options("graphwalks", [])
    with pytest.raises(UsageError, match="problem_types"):
        suite_from_options("graphwalks", [f"data={data}", "problem_types=dfs"])


def test_samples_are_binned_by_prompt_tokens_per_problem_type(
    data: Path, rows: list[dict], gemma_tokenizer
) -> None:
    suite = create_suite("graphwalks", {"data": str(data)})
    ctx = _ctx(gemma_tokenizer, None)
    cells = {(c.task, c.length): c.count for c in suite.cells(ctx)}
    assert cells == {("bfs", 8192): 1, ("parents", 8192): 1, ("parents", 32768): 1}
    samples = {s.id: s for s in suite.build(ctx)}
    first = samples["parents-0000"]
    prompt = len(gemma_tokenizer.encode(rows[0]["prompt"]))
    answer = len(gemma_tokenizer.encode(f"{ANSWER_PREFIX}{', '.join(rows[0]['answer_nodes'])}]"))
    assert first.prompt_tokens == prompt + OVERHEAD  # one user message in a known template
    assert first.max_tokens == max(CHAT_MIN_OUTPUT, answer + CHAT_REASONING)
    assert first.gold == tuple(rows[0]["answer_nodes"]) and first.context == rows[0]["prompt"]
    assert first.meta["set"] == "<128k" and first.meta["answer_prefix"] == ""
    _, messages = suite.template.render(first, "chat")
    assert [(m.role, m.content) for m in messages] == [("user", rows[0]["prompt"])]
    assert samples["parents-0001"].meta["bin"] == 32768


def test_completion_mode_asks_for_the_answer_line_and_stops_at_its_end(
    data: Path, rows: list[dict], gemma_tokenizer
) -> None:
    suite = create_suite("graphwalks", {"data": str(data), "problem_types": ["bfs"]})
    (sample,) = suite.build(_ctx(gemma_tokenizer, 8192, mode="completion"))
    text, _ = suite.template.render(sample, "completion")
    assert text == rows[1]["prompt"] + "\n" + ANSWER_PREFIX
    assert suite.template.completion_stop == ("\n",)
    answer = len(gemma_tokenizer.encode(f"{ANSWER_PREFIX}{', '.join(rows[1]['answer_nodes'])}]"))
    assert sample.max_tokens == answer + COMPLETION_SLACK
    prompt = len(gemma_tokenizer.encode(rows[1]["prompt"]))
    tail = len(gemma_tokenizer.encode("\n" + ANSWER_PREFIX))
    assert sample.prompt_tokens == prompt + tail + 1  # BOS
    gold = ", ".join(rows[1]["answer_nodes"])
    # The model completes the line: the prefix is put back before the card's parse.
    right = suite.score(sample.public(), Generation(f"{gold}]", "ok"))
    assert right.value == 1.0 and "parse_failed" not in right.evidence
    wrong = suite.score(sample.public(), Generation("nothing", "ok"))
    assert wrong.value == 0.0 and "without a [list]" in wrong.evidence["parse_failed"]


def test_a_row_too_long_is_skipped_at_its_need_never_truncated(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("graphwalks", {"data": str(data)})
    samples = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, 8192))}
    long = samples["parents-0001"]
    need = long.prompt_tokens + long.max_tokens
    assert long.length == need > 8192 and long.meta["needed_tokens"] == need
    short = samples["parents-0000"]
    # A row that fits has its budget cut to the room left, never below its gold's answer line.
    assert short.prompt_tokens + short.max_tokens <= 8192
    assert short.length == 8192


def test_lengths_pick_bins_and_an_empty_choice_says_so(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("graphwalks", {"data": str(data), "lengths": [20000]})
    assert [(c.task, c.length) for c in suite.cells(_ctx(gemma_tokenizer))] == [("parents", 32768)]
    none = create_suite("graphwalks", {"data": str(data), "lengths": [300000]})
    with pytest.raises(UsageError, match=r"no GraphWalks row .* 512k"):
        none.cells(_ctx(gemma_tokenizer))


def test_summary_has_a_view_per_problem_type_with_mean_f1_by_bin_and_set(
    data: Path, gemma_tokenizer
) -> None:
    suite = create_suite("graphwalks", {"data": str(data)})
    samples = suite.build(_ctx(gemma_tokenizer, 8192))
    answers = {
        "parents-0000": "Final Answer: [" + ", ".join(samples[0].gold[:1]) + ", zz]",
        "bfs-0000": "no line",
    }
    rows = []
    for sample in samples:
        if sample.id == "parents-0001":
            gen = Generation("", "skipped")
            rows.append(ScoredRow(sample.public(), 0, gen, None))
            continue
        gen = Generation(answers[sample.id], "ok")
        rows.append(ScoredRow(sample.public(), 0, gen, suite.score(sample.public(), gen)))
    summary = suite.summarize(rows)
    assert [v.name for v in summary.views] == ["bfs", "parents"]
    parents = summary.views[1]
    scored = [r for r in rows if r.sample["task"] == "parents" and r.score is not None]
    expected = percent(r.score.fraction for r in scored)  # the skipped row is left out
    assert parents.overall == expected and parents.headline.label == "mean F1"
    assert parents.by_length == {8192: expected}
    assert parents.breakdown("set").cells["<128k"].score == expected
    assert "1 skipped" in parents.headline.note
    assert summary.views[0].overall == 0.0
    assert summary.native["comparable_with_published"] == "no"
    assert any("1 rows did not fit" in d for d in summary.native["differences"])
    assert any(d.startswith("data file:gw.jsonl") for d in summary.native["differences"])


def test_a_run_of_part_of_a_set_is_a_subset(data: Path, gemma_tokenizer, monkeypatch) -> None:
    from longscope.suites.graphwalks.summary import card_differences

    suite = create_suite("graphwalks", {"data": str(data)})
    first = next(s for s in suite.build(_ctx(gemma_tokenizer, None)) if s.id == "parents-0000")
    assert first.meta["set_rows"] == 2  # both parents rows are <128k
    gen = Generation("Final Answer: []", "ok")
    row = ScoredRow(first.public(), 0, gen, suite.score(first.public(), gen))
    # As if the data were OpenAI's pinned files: the only difference left is the part run.
    monkeypatch.setattr(
        "longscope.suites.graphwalks.summary.card_differences",
        lambda rows, data: [d for d in card_differences(rows, data) if "data " not in d],
    )
    summary = suite.summarize([row])
    assert summary.native["comparable_with_published"] == "subset"
    assert summary.native["differences"] == ["parents <128k: 1 of 2 rows"]


def test_published_rows_are_model_card_sets_with_their_source() -> None:
    table = published_rows("graphwalks")
    assert table.suite == "graphwalks" and "benchlm.ai" in table.source
    assert table.rows and all(r.mode in ("bfs", "parents") for r in table.rows)
    assert all(set(r.cells) == {"set"} and not r.lengths for r in table.rows)
    gpt54 = next(r for r in table.rows if r.model == "openai/gpt-5.4")
    assert gpt54.cells["set"] == {"<128k": 93.1, ">128k": 21.4}
