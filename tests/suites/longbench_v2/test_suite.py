"""The LongBench v2 suite through the contract: options, build (the official prompt, pred.py's cut
recorded as truncation, budgets), score (both prompt modes), result.py's splits, published rows.

Built with the embedded model's real tokenizer (Gemma 3's GGUF vocabulary), as a run builds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.api import published_rows
from longscope.errors import UsageError
from longscope.suites import create_suite, suite_from_options
from longscope.suites.base import BuildContext
from longscope.suites.longbench_v2.official import DIRECT, fill
from longscope.suites.longbench_v2.suite import ANSWER_LINE, COMPLETION_PREFIX
from longscope.types import Generation, GenerationConfig, ScoredRow

from .rows import question, write_json

OVERHEAD = 11


def _ctx(tokenizer, context_length: int | None = None, mode: str = "chat") -> BuildContext:
    return BuildContext(
        tokenizer, mode, GenerationConfig(max_tokens=64), context_length, chat_overhead=OVERHEAD
    )


@pytest.fixture
def rows() -> list[dict]:
    return [
        question(0, answer="B", difficulty="easy", length="short"),
        question(1, answer="A", difficulty="hard", length="medium", words=200),
        question(2, answer="C", difficulty="hard", length="long", domain="Code Repository"),
    ]


@pytest.fixture
def data(tmp_path: Path, rows: list[dict]) -> Path:
    return write_json(tmp_path / "data.json", rows)


def test_options_and_defaults(data: Path) -> None:
    suite = suite_from_options("longbench-v2", [f"data={data}"])
    assert suite.params() == {
        "data": str(data),
        "modes": ["direct"],
        "max_input_tokens": None,
        "compensated": False,
    }
    with pytest.raises(UsageError, match="longbench-v2 needs -S data=FILE"):
        suite_from_options("longbench-v2", [])
    with pytest.raises(UsageError, match="modes"):
        suite_from_options("longbench-v2", [f"data={data}", "modes=fewshot"])


def test_the_prompt_is_the_official_one_uncut_when_it_fits(
    data: Path, rows: list[dict], gemma_tokenizer
) -> None:
    suite = create_suite("longbench-v2", {"data": str(data), "modes": ["direct", "cot"]})
    cells = suite.cells(_ctx(gemma_tokenizer))
    assert [c.task for c in cells] == [
        "direct short", "direct medium", "direct long", "cot short", "cot medium", "cot long"
    ]  # fmt: skip
    samples = {s.id: s for s in suite.build(_ctx(gemma_tokenizer, 32768))}
    first = samples["direct/q0000"]
    row = rows[0]
    expected = fill(DIRECT, row["context"], row["question"], (
        row["choice_A"], row["choice_B"], row["choice_C"], row["choice_D"]))  # fmt: skip
    assert first.context == expected and not first.meta["truncated"]
    assert first.prompt_tokens == len(gemma_tokenizer.encode(expected)) + OVERHEAD
    assert first.max_tokens == 128 and samples["cot/q0000"].max_tokens == 1024
    assert first.gold == ("B",) and first.meta["difficulty"] == "Easy"
    assert first.meta["length_split"] == "Short" and first.length == 8192
    _, messages = suite.template.render(first, "chat")
    assert [(m.role, m.content) for m in messages] == [("user", expected)]


def test_a_long_prompt_is_cut_in_the_middle_as_pred_py_cuts_it(
    data: Path, rows: list[dict], gemma_tokenizer
) -> None:
    suite = create_suite("longbench-v2", {"data": str(data), "max_input_tokens": 301})
    sample = next(s for s in suite.build(_ctx(gemma_tokenizer)) if s.id == "direct/q0001")
    row = rows[1]
    prompt = fill(DIRECT, row["context"], row["question"], (
        row["choice_A"], row["choice_B"], row["choice_C"], row["choice_D"]))  # fmt: skip
    ids = gemma_tokenizer.encode(prompt)
    # input_ids[:max_len//2] + input_ids[-max_len//2:]: 150 first and 151 last for max_len 301.
    assert sample.context == gemma_tokenizer.decode(ids[:150] + ids[-151:])
    assert sample.meta["truncated"] is True and sample.meta["original_tokens"] == len(ids)
    assert sample.prompt_tokens == 301 + OVERHEAD
    assert sample.context.startswith("Please read") and sample.context.endswith('here)".')


def test_the_window_less_the_output_budget_is_the_default_cut(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("longbench-v2", {"data": str(data)})
    sample = next(s for s in suite.build(_ctx(gemma_tokenizer, 1024)) if s.id == "direct/q0001")
    assert sample.meta["truncated"] is True
    # Chat template counted (11) + margin none; the prompt and 128 answer tokens fill the window.
    assert sample.prompt_tokens + sample.max_tokens == 1024 and sample.length <= 1024


def test_completion_mode_gives_the_answer_lines_start_and_puts_it_back(
    data: Path, gemma_tokenizer
) -> None:
    suite = create_suite("longbench-v2", {"data": str(data)})
    sample = suite.build(_ctx(gemma_tokenizer, None, "completion"))[0]
    text, _ = suite.template.render(sample, "completion")
    assert text == sample.context + COMPLETION_PREFIX
    assert sample.meta["put_back"] == ANSWER_LINE
    assert suite.score(sample.public(), Generation("B)", "ok")).value == 1.0
    wrong = suite.score(sample.public(), Generation("C)", "ok"))
    assert wrong.value == 0.0 and wrong.evidence["pred"] == "C"


def test_summary_is_result_pys_line_per_setting(data: Path, gemma_tokenizer) -> None:
    suite = create_suite("longbench-v2", {"data": str(data)})
    answers = {"direct/q0000": "The correct answer is (B)", "direct/q0001": "The correct "
               "answer is (B)", "direct/q0002": "The correct answer is (C)"}  # fmt: skip
    scored = []
    for sample in suite.build(_ctx(gemma_tokenizer)):
        gen = Generation(answers[sample.id], "ok")
        scored.append(ScoredRow(sample.public(), 0, gen, suite.score(sample.public(), gen)))
    summary = suite.summarize(scored)
    (view,) = summary.views
    assert view.name == "w/o CoT" and view.overall == pytest.approx(200 / 3, abs=0.01)
    line = summary.native["longbench_v2"]["w/o CoT"]
    # q0 (easy, short) right; q1 (hard, medium) wrong; q2 (hard, long) right.
    assert {k: line[k] for k in ("Overall", "Easy", "Hard", "Short", "Medium", "Long")} == {
        "Overall": 66.7, "Easy": 100.0, "Hard": 50.0, "Short": 100.0, "Medium": 0.0, "Long": 100.0
    }  # fmt: skip
    assert view.breakdown("difficulty").cells["Hard"].score == 50.0
    assert view.breakdown("length_split").cells["Medium"].score == 0.0
    assert summary.native["comparable_with_published"] == "no"
    assert any(d.startswith("data file:data.json") for d in summary.native["differences"])


def test_published_rows_are_the_leaderboards_with_splits() -> None:
    table = published_rows("longbench-v2")
    assert table.suite == "longbench-v2" and "longbench2.github.io" in table.source
    o1 = next(r for r in table.rows if r.model == "o1-preview")
    assert o1.mode == "w/ CoT" and o1.overall == 57.7
    assert o1.cells["difficulty"] == {"Easy": 66.8, "Hard": 52.1}
    assert o1.cells["length_split"] == {"Short": 62.6, "Medium": 53.5, "Long": 58.1}


def test_every_published_rows_overall_is_its_splits_weighted_mean() -> None:
    # data.json's split sizes (503 questions): Easy 192, Hard 311; Short 180, Medium 215, Long 108.
    # result.py's Overall is the mean over all questions, so each split line must give it back to
    # the table's rounding (two rounded splits: at most 0.05 each, plus the overall's own 0.05).
    table = published_rows("longbench-v2")
    assert len(table.rows) == 10
    for row in table.rows:
        d, n = row.cells["difficulty"], row.cells["length_split"]
        by_difficulty = (192 * d["Easy"] + 311 * d["Hard"]) / 503
        by_length = (180 * n["Short"] + 215 * n["Medium"] + 108 * n["Long"]) / 503
        assert by_difficulty == pytest.approx(row.overall, abs=0.1), row.model
        assert by_length == pytest.approx(row.overall, abs=0.1), row.model
