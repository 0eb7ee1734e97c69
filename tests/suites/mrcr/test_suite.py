"""The MRCR suite through the contract: data, revision, build (fit, skip, bins), score, summary.

Built with the embedded model's real tokenizer (Gemma 3's GGUF vocabulary), as a run builds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import create_suite, suite_from_options
from longscope.suites.base import BuildContext, SampleSource
from longscope.suites.mrcr.data import REVISION
from longscope.suites.mrcr.suite import MESSAGE_MARGIN
from longscope.types import Generation, GenerationConfig, ScoredRow

from .rows import mrcr_row, write_jsonl

OVERHEAD = 11
"""Tokens a chat template adds around one message, as a local backend reports them."""


def _ctx(tokenizer, context_length: int | None = 8192, **kw) -> BuildContext:
    return BuildContext(
        tokenizer,
        kw.pop("mode", "chat"),
        GenerationConfig(max_tokens=2048),
        context_length=context_length,
        chat_overhead=kw.pop("overhead", OVERHEAD),
        **kw,
    )


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "mrcr_rows.jsonl",
        [
            mrcr_row(2, target=2, words=10),
            mrcr_row(4, target=3, prefix="Zq9", words=10, needle=("riddle", "owls")),
            mrcr_row(2, target=1, prefix="Kk1", words=110, turns=14),  # about 12.5K tokens
        ],
    )


def test_samples_carry_the_chat_bins_and_the_counted_prompt(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    suite.prepare()
    samples = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None))}
    assert set(samples) == {"2n-0000", "4n-0000", "2n-0001"}
    first = samples["2n-0000"]
    row = mrcr_row(2, target=2, words=10)
    chat = json.loads(row["prompt"])
    # The context is the conversation itself, sent as its messages (never flattened).
    _, messages = suite.template.render(first, "chat")
    assert [(m.role, m.content) for m in messages] == [(m["role"], m["content"]) for m in chat]
    contents = sum(len(gemma_tokenizer.encode(m["content"])) for m in chat)
    answer = len(gemma_tokenizer.encode(row["answer"]))
    assert first.prompt_tokens == contents + OVERHEAD
    assert first.meta["bin_tokens"] == contents + answer
    assert first.meta["bin"] == 8192 and first.meta["bin_label"] == "8k"
    assert first.max_tokens == 4 * answer + 256  # far above the gold (ANSWER_FACTOR, ANSWER_SLACK)
    assert first.gold == (row["answer"],) and first.meta["prefix"] == "aYooSG8CQg"
    assert first.task == "2-needle" and samples["4n-0000"].task == "4-needle"
    assert samples["2n-0001"].meta["bin"] == 16384
    # Without a known context every sample stands at its bin.
    assert {s.length for s in samples.values()} == {8192, 16384}


def test_a_row_too_long_is_skipped_at_its_need_never_truncated(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    samples = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, 8192))}
    long = samples["2n-0001"]
    messages = long.meta["messages"]
    need = long.prompt_tokens + MESSAGE_MARGIN * (messages - 1) + long.max_tokens
    assert long.length == need > 8192  # the runner skips it, saying it needs this many tokens
    assert len(json.loads(long.context)) == messages  # the whole conversation, not cut
    fits = samples["2n-0000"]
    assert fits.length == 8192  # shown under its bin
    # A 4K model: the row still fits, is sent, and stands at the context instead of its bin.
    small = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, 4096))}
    assert small["2n-0000"].length == 4096


def test_the_answer_budget_shrinks_to_the_room_left_but_never_below_the_gold(
    data: Path, gemma_tokenizer
) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    loose = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None))}["2n-0000"]
    margin = MESSAGE_MARGIN * (loose.meta["messages"] - 1)
    answer = loose.meta["answer_tokens"]
    tight_context = loose.prompt_tokens + margin + answer + 5
    tight = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, tight_context))}["2n-0000"]
    assert tight.max_tokens == answer + 5 and tight.length == tight_context
    too_tight = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, tight_context - 6))}
    assert too_tight["2n-0000"].length > tight_context - 6  # skipped: the gold cannot fit
    # The user's --max-tokens wins, and is never cut.
    told = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None, max_tokens_override=7))}
    assert told["2n-0000"].max_tokens == 7


def test_a_server_template_is_covered_by_a_margin_never_counted_as_sent(
    data: Path, gemma_tokenizer
) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    known = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None))}["2n-0000"]
    unknown = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None, overhead=None))}["2n-0000"]
    assert unknown.prompt_tokens == known.prompt_tokens - OVERHEAD
    assert unknown.meta["needed_tokens"] > known.meta["needed_tokens"] - OVERHEAD


def test_lengths_choose_bins_and_needles_choose_rows(data: Path, gemma_tokenizer) -> None:
    only_8k = suite_from_options("mrcr", [f"data={data}"], {"lengths": "4k"})
    assert {s.id for s in only_8k.build(_ctx(gemma_tokenizer))} == {"2n-0000", "4n-0000"}
    assert only_8k.params()["lengths"] == [8192]
    four = suite_from_options("mrcr", [f"data={data}", "needles=4"])
    assert [s.id for s in four.build(_ctx(gemma_tokenizer))] == ["4n-0000"]
    none = suite_from_options("mrcr", [f"data={data}", "needles=4"], {"lengths": "1000k"})
    with pytest.raises(UsageError, match="no MRCR row of the data falls in the bins 1M"):
        none.build(_ctx(gemma_tokenizer))


def test_cells_are_needle_counts_by_bins_built_only_as_pulled(data: Path, gemma_tokenizer) -> None:
    more = write_jsonl(
        data.with_name("more.jsonl"),
        [*(json.loads(line) for line in data.read_text().splitlines()), mrcr_row(2, target=1)],
    )
    suite = create_suite("mrcr", {"data": str(more)})
    source = SampleSource(suite, _ctx(gemma_tokenizer))
    assert source.lazy
    # One cell per needle count and bin: `--limit N` means N rows of each, as MRCR reports.
    assert [(c.task, c.length, c.count) for c in source.cells] == [
        ("2-needle", 8192, 2),
        ("2-needle", 16384, 1),
        ("4-needle", 8192, 1),
    ]
    first = list(source.samples(source.cells[0], 1))
    assert [s.id for s in first] == ["2n-0000"]
    assert [s.id for s in source.samples(source.cells[0], 5)] == ["2n-0000", "2n-0002"]


def test_completion_mode_is_refused_in_one_line(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    with pytest.raises(UsageError, match="chat mode only") as caught:
        suite.build(_ctx(gemma_tokenizer, mode="completion"))
    assert "\n" not in str(caught.value)


def test_the_run_records_which_data_it_scored(data: Path) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    assert suite.params()["revision"] == REVISION
    assert suite.version.startswith("mrcr-2/file:mrcr_rows.jsonl:")
    other = write_jsonl(data.with_name("other.jsonl"), [mrcr_row(2, target=1)])
    assert create_suite("mrcr", {"data": str(other)}).version != suite.version


def test_files_named_like_openais_that_are_not_the_pinned_revision_are_refused(
    tmp_path: Path,
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "2needle_0.parquet"
    rows = [mrcr_row(2), mrcr_row(2, target=1)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(UsageError) as caught:
        create_suite("mrcr", {"data": str(path)}).prepare()
    message = str(caught.value)
    assert "is not the pinned revision f4c69fae7cf8" in message
    assert "-S allow_unpinned=true" in message and "\n" not in message
    allowed = create_suite("mrcr", {"data": str(path), "allow_unpinned": True})
    assert allowed.version.startswith("mrcr-2/file:2needle_0.parquet:")
    assert [sid for sid, _ in allowed.dataset.rows] == ["2n-0000", "2n-0001"]


def test_a_folder_reads_every_data_file_in_order(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "b.jsonl", [mrcr_row(2, target=1)])
    write_jsonl(tmp_path / "a.jsonl", [mrcr_row(2, target=2)])
    suite = create_suite("mrcr", {"data": str(tmp_path)})
    rows = suite.dataset.rows
    assert [r.answer[-40:] for _, r in rows] == [
        mrcr_row(2, target=2)["answer"][-40:],
        mrcr_row(2, target=1)["answer"][-40:],
    ]
    assert suite.version.startswith("mrcr-2/file:2 files:")


def _row(sample, status: str, text: str, suite) -> ScoredRow:
    generation = Generation(text=text, status=status)  # type: ignore[arg-type]
    public = sample.public()
    score = suite.score(public, generation) if status in ("ok", "length") else None
    return ScoredRow(public, 0, generation, score)


def test_scores_and_the_summary_per_needle_count(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    samples = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, 8192))}
    two, four, long = samples["2n-0000"], samples["4n-0000"], samples["2n-0001"]
    rows = [
        _row(two, "ok", two.gold[0], suite),  # exact: 1.0
        _row(four, "ok", four.gold[0].removeprefix("Zq9"), suite),  # no prefix: 0
        _row(long, "skipped", "", suite),  # too long: left out of the means
    ]
    assert rows[0].score.value == 1.0 and rows[0].score.evidence["prefixed"] is True
    assert rows[1].score.value == 0.0 and rows[1].score.evidence["prefixed"] is False
    summary = suite.summarize(rows)
    views = {v.name: v for v in summary.views}
    assert set(views) == {"2-needle", "4-needle"}
    assert views["2-needle"].overall == 100.0 and views["2-needle"].by_length == {8192: 100.0}
    assert views["4-needle"].overall == 0.0
    assert "1 skipped" in views["2-needle"].headline.note
    native = summary.native["mrcr"]["needles"]
    assert native["2"] == {
        "mean": 100.0,
        "rows": 1,
        "skipped": 1,
        "prefix_kept": 1,
        "cut": 0,
        "bins": {"8k": {"mean": 100.0, "rows": 1}},
    }
    assert any(note.startswith("data: file:mrcr_rows.jsonl:") for note in summary.notes)
    # A request that failed counts 0; one the server refused for length is left out.
    failed = suite.summarize([*rows[:1], _row(two, "timeout", "", suite)])
    assert {v.name: v.overall for v in failed.views} == {"2-needle": 50.0}
    refused = suite.summarize([*rows[:1], _row(two, "context_overflow", "", suite)])
    assert {v.name: v.overall for v in refused.views} == {"2-needle": 100.0}


def test_data_is_required_in_one_line() -> None:
    with pytest.raises(UsageError, match="mrcr needs -S data=FILE"):
        suite_from_options("mrcr", [])


def test_a_chat_with_its_own_system_message_never_counts_a_default_one(
    tmp_path: Path, gemma_tokenizer
) -> None:
    row = mrcr_row(2, target=2, words=10)
    chat = [{"role": "system", "content": "You write what is asked."}, *json.loads(row["prompt"])]
    path = write_jsonl(tmp_path / "sys.jsonl", [row, {**row, "prompt": json.dumps(chat)}])
    samples = create_suite("mrcr", {"data": str(path)}).build(_ctx(gemma_tokenizer, None))
    plain, system = sorted(samples, key=lambda s: s.id)
    contents = sum(len(gemma_tokenizer.encode(m["content"])) for m in chat)
    # The template's tokens around a lone message may include a default system prompt the
    # template drops here: they are reserved, never reported as sent.
    assert (
        plain.prompt_tokens == contents - len(gemma_tokenizer.encode(chat[0]["content"])) + OVERHEAD
    )
    assert system.prompt_tokens == contents
    assert system.meta["needed_tokens"] >= contents + OVERHEAD + MESSAGE_MARGIN * (len(chat) - 1)


def test_the_by_bin_means_carry_their_standard_error(tmp_path: Path, gemma_tokenizer) -> None:
    """A bin's mean in the table gets the clustered SE of its requests: 100 and 0 -> SE 50."""
    from longscope.analysis.uncertainty import with_uncertainty

    path = write_jsonl(
        tmp_path / "two.jsonl",
        [mrcr_row(2, target=2, words=10), mrcr_row(2, target=1, prefix="Kk1", words=10)],
    )
    suite = create_suite("mrcr", {"data": str(path)})
    first, second = sorted(suite.build(_ctx(gemma_tokenizer, 8192)), key=lambda s: s.id)
    rows = [_row(first, "ok", first.gold[0], suite), _row(second, "timeout", "", suite)]
    summary = with_uncertainty(suite.summarize(rows), rows)
    [view] = summary.views
    [table] = view.tables
    assert table.rows[0][3] == "50.0"
    # Two samples, one cluster each: sqrt(((100-50)^2 + (0-50)^2) / (2 * 1)) / sqrt(2) = 50.
    assert table.errors[0][3] == pytest.approx(50.0)


def test_a_cut_answer_never_scores_above_the_whole_answer_it_stands_for(
    data: Path, gemma_tokenizer
) -> None:
    from longscope.suites.mrcr.grading import grade

    suite = create_suite("mrcr", {"data": str(data)})
    two = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None))}["2n-0000"]
    gold, prefix = two.gold[0], two.meta["prefix"]
    # A rambling answer: the gold, then the same poem again and again. Cut after 1.2 golds, the
    # card's grade of the cut text is far above the grade of the whole answer.
    whole = gold + ("\n" + gold.removeprefix(prefix)) * 6
    cut = whole[: int(len(gold) * 1.2)]
    assert grade(cut, gold, prefix).ratio > grade(whole, gold, prefix).ratio + 0.3
    cut_row = _row(two, "length", cut, suite)
    whole_row = _row(two, "ok", whole, suite)
    assert cut_row.score.value == 0.0 <= whole_row.score.value
    evidence = cut_row.score.evidence
    assert evidence["cut"] is True and evidence["ratio"] == round(grade(cut, gold, prefix).ratio, 6)
    rest, answer = cut.removeprefix(prefix), gold.removeprefix(prefix)
    bound = 2 * len(answer) / (len(rest) + len(answer))
    assert evidence["whole_at_most"] == pytest.approx(bound, abs=1e-6)
    assert whole_row.score.value <= bound  # the whole answer is at least as long as the cut one
    # The share cut per bin, beside the mean.
    summary = suite.summarize([cut_row, _row(two, "ok", gold, suite)])
    (view,) = summary.views
    (table,) = view.tables
    assert table.columns[-1] == "cut (scored 0)" and table.rows[0][-1] == "1/2 (50%)"
    assert view.overall == 50.0 and summary.native["mrcr"]["needles"]["2"]["cut"] == 1


def test_the_default_budget_leaves_room_far_above_the_gold(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    for sample in suite.build(_ctx(gemma_tokenizer, None)):
        gold = sample.meta["answer_tokens"]
        # Four golds and more: an answer cut there would score at most 2/5 of the whole anyway.
        assert sample.max_tokens == 4 * gold + 256 >= 4 * gold


def test_the_board_comparability_is_stated(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("mrcr", {"data": str(data)})
    two = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, None))}["2n-0000"]
    summary = suite.summarize([_row(two, "ok", two.gold[0], suite)])
    assert summary.native["comparable_with_published"] == "no"
    differences = summary.native["differences"]
    assert any(d.startswith("data file:mrcr_rows.jsonl:") for d in differences)
    assert any("bins counted in the model tokenizer" in d for d in differences)
