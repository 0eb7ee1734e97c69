"""The BABILong suite through the contract: options, lazy cells, prompts, sizing, score, summary,
comparability and the published rows, on folders of rows built here (`rows.py`).

Sized with a real tokenizer (Qwen 2.5's, offline); expectations are computed here from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import pytest

from longscope.analysis.effective import effective_length
from longscope.analysis.uncertainty import with_uncertainty
from longscope.errors import UsageError
from longscope.suites import create_suite, suite_from_options, suite_names, suite_options
from longscope.suites.babilong.data import hub_sources
from longscope.suites.babilong.prompts import MAX_NEW_TOKENS, PROMPTS, PromptConfig, build_prompt
from longscope.suites.babilong.published import published
from longscope.suites.babilong.scoring import PANDAS_NA_STRINGS
from longscope.suites.babilong.suite import BabilongSuite
from longscope.suites.babilong.summary import SATISFACTORY, babilong_summary, group_of
from longscope.suites.base import BuildContext, SampleSource
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig, Message, Score, ScoredRow

from .rows import row, write_folder


@pytest.fixture(scope="module")
def tokenizer() -> QwenTokenizer:
    return QwenTokenizer()


def _ctx(tokenizer, mode: str = "completion", context: int | None = 32768) -> BuildContext:
    return BuildContext(tokenizer, mode, GenerationConfig(max_tokens=20), context_length=context)


def _suite(folder: Path, *pairs: str, lengths: str | None = None) -> BabilongSuite:
    made = suite_from_options("babilong", [f"data={folder}", *pairs], {"lengths": lengths})
    assert isinstance(made, BabilongSuite)
    return made


def test_registered_with_its_options_and_defaults() -> None:
    assert "babilong" in suite_names()
    options = {p.name: p for p in suite_options("babilong")}
    assert options["tasks"].default == ("qa1", "qa2", "qa3", "qa4", "qa5")
    assert options["lengths"].default == (
        "0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k"
    )  # fmt: skip
    assert options["examples"].default is True
    assert options["samples"].default is None
    assert BabilongSuite.default_config.max_tokens == MAX_NEW_TOKENS == 20
    assert BabilongSuite.default_config.temperature == 0.0


def test_the_datasets_length_names_are_its_lengths(tmp_path: Path, tokenizer) -> None:
    write_folder(tmp_path, {("qa1", "0k"): 1, ("qa1", "1k"): 1})
    suite = _suite(tmp_path, "tasks=qa1", lengths="0k,1k")
    assert suite.lengths == ("0k", "1k")
    assert [(c.task, c.length) for c in suite.cells(_ctx(tokenizer))] == [
        ("qa1", 0),
        ("qa1", 1000),  # GPT-2 tokens, decimal, as the dataset counts them
    ]
    with pytest.raises(UsageError, match=r"unknown '4096'; use 0k, 1k, 2k"):
        _suite(tmp_path, lengths="1k,4096")
    with pytest.raises(UsageError, match="unknown 'qa21'"):
        _suite(tmp_path, "tasks=qa1,qa21")


def test_without_data_says_how_to_give_it() -> None:
    with pytest.raises(UsageError, match=r"-S data=DIR .* or -S data=hub"):
        suite_from_options("babilong", [])


def test_a_folder_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "nope")
    with pytest.raises(UsageError, match="is not a folder"):
        suite.prepare()


def test_cells_are_lazy_and_skip_what_the_data_lacks(tmp_path: Path, tokenizer) -> None:
    write_folder(tmp_path, {("qa1", "0k"): 3, ("qa1", "1k"): 2})
    broken = tmp_path / "data" / "qa1" / "0k.json"
    rows = json.loads(broken.read_text())
    del rows[2]["target"]  # the third row is bad: a run that reads two never sees it
    broken.write_text(json.dumps(rows))
    suite = _suite(tmp_path, "tasks=qa1,qa2", lengths="0k,1k")
    source = SampleSource(suite, _ctx(tokenizer))
    assert source.lazy
    by_cell = {(c.task, c.length): c for c in source.cells}
    assert by_cell[("qa1", 0)].count == 3 and by_cell[("qa1", 1000)].count == 2
    assert "no qa2 at 0k" in by_cell[("qa2", 0)].skipped
    assert by_cell[("qa2", 0)].count == 0
    cell = by_cell[("qa1", 0)]
    made = source.samples(cell, 2)  # --limit 2
    first = next(made)
    assert first.id == "qa1-0k-0000" == cell.sample_id(0)
    assert [s.id for s in made] == ["qa1-0k-0001"]
    with pytest.raises(UsageError, match=r"0k\.json: row 3: field 'target'"):
        list(source.samples(cell, 3))


def test_samples_bounds_every_cell(tmp_path: Path, tokenizer) -> None:
    write_folder(tmp_path, {("qa1", "0k"): 3})
    suite = _suite(tmp_path, "tasks=qa1", "samples=2", lengths="0k")
    [cell] = suite.cells(_ctx(tokenizer))
    assert cell.count == 2
    assert len(list(suite.iter_cell(_ctx(tokenizer), "qa1", 0))) == 2


def test_a_length_reads_the_set_the_authors_read(tmp_path: Path, tokenizer) -> None:
    pytest.importorskip("pyarrow")
    write_folder(tmp_path, {("qa1", "1k"): 2}, layout="json")
    write_folder(tmp_path, {("qa1", "1k"): 3}, layout="parquet")
    suite = _suite(tmp_path, "tasks=qa1", lengths="1k")
    [cell] = suite.cells(_ctx(tokenizer))
    assert cell.count == 3  # the 1000-row set's file (Parquet) at 1k, not the 100-row set's
    [sample, *_] = suite.iter_cell(_ctx(tokenizer), "qa1", 1000, 1)
    assert sample.meta["set"] == 1000


def test_prompts_are_the_authors_in_both_modes(tmp_path: Path, tokenizer) -> None:
    write_folder(tmp_path, {("qa2", "1k"): 1})
    suite = _suite(tmp_path, "tasks=qa2", "system_prompt=You are careful.", lengths="1k")
    [sample] = suite.iter_cell(_ctx(tokenizer), "qa2", 1000, 1)
    given = row("qa2", "1k", 0)
    expected = build_prompt(
        "qa2", given["input"], given["question"], PromptConfig(chat_template=False)
    ).text
    assert expected.startswith(PROMPTS["qa2"].instruction)
    assert expected.endswith("</context>\n\nQuestion: " + given["question"])
    prompt, messages = suite.template.render(sample, "completion")
    assert (prompt, messages) == (expected, ())  # no system prompt without a chat template
    prompt, messages = suite.template.render(sample, "chat")
    assert prompt == ""
    assert messages == (Message("system", "You are careful."), Message("user", expected))
    parts = suite.template.parts(sample, "chat")
    assert parts.head + parts.context + parts.tail == expected
    assert parts.context == given["input"].strip()
    # The authors' script counts nothing but sends the text with BOS: counted as such.
    assert sample.prompt_tokens == len(tokenizer.encode(expected)) + 1
    bare = _suite(tmp_path, "tasks=qa2", "examples=false", lengths="1k")
    [plain] = bare.iter_cell(_ctx(tokenizer), "qa2", 1000, 1)
    text, _ = bare.template.render(plain, "completion")
    assert PROMPTS["qa2"].examples not in text and PROMPTS["qa2"].post_prompt in text
    assert plain.meta["prompt"].startswith("instruction_yes_examples_no_post_prompt_yes")


def test_a_row_too_long_for_the_model_is_sized_to_be_skipped(tmp_path: Path, tokenizer) -> None:
    write_folder(tmp_path, {("qa1", "1k"): 1})
    suite = _suite(tmp_path, "tasks=qa1", lengths="1k")
    [fits] = suite.iter_cell(_ctx(tokenizer, context=32768), "qa1", 1000, 1)
    need = fits.prompt_tokens + MAX_NEW_TOKENS
    assert fits.length == 1000 and fits.meta["needed_tokens"] == need
    [cut] = suite.iter_cell(_ctx(tokenizer, context=need - 1), "qa1", 1000, 1)
    assert cut.length == need  # the runner skips it, saying it needs this many tokens
    [exact] = suite.iter_cell(_ctx(tokenizer, context=need), "qa1", 1000, 1)
    assert exact.length == min(1000, need)


@pytest.mark.parametrize(
    ("task", "target", "output", "question", "right"),
    [
        ("qa1", "bathroom", " The most recent location of Mary is Bathroom. ", "Where is Mary?", 1),
        ("qa1", "bathroom", "bathroom. Then the kitchen", "Where is Mary?", 1),  # cut at "."
        ("qa1", "bathroom", "bathroom or kitchen", "Where is Mary?", 0),
        ("qa1", "bathroom", "", "Where is Mary?", 0),
        ("qa5", "apple", "Bill gave the apple", "What did Bill give to Fred?", 1),
        ("qa7", "none", "none", "How many objects is Mary carrying?", 0),  # `one` is in `none`
        ("qa8", "apple,milk", "milk and apple", "What is Mary carrying?", 1),
        ("qa19", "n,w", "n, w", "How do you go from the garden to the office?", 0),
    ],
)
def test_score_is_the_authors_check(task, target, output, question, right) -> None:
    sample = {"task": task, "gold": [target], "question": question}
    score = BabilongSuite.score(None, sample, Generation(output, "ok"))  # type: ignore[arg-type]
    assert score == Score(float(right), 1.0)
    assert score.evidence["read"] == output.strip().lower().split(".")[0]


def _row(task: str, length: int, index: int, value: float, status: str = "ok") -> ScoredRow:
    sample = {
        "id": f"{task}-{length}-{index}",
        "task": task,
        "length": length,
        "question": "q",
        "gold": ["x"],
        "meta": {"dataset_length": length, "prompt": "p", "group": group_of(task)},
    }
    score = Score(value, 1.0) if status in ("ok", "length") else None
    return ScoredRow(sample, 0, Generation("x", status), score)  # type: ignore[arg-type]


def test_the_headline_is_the_mean_of_qa1_qa5_per_length() -> None:
    values = {  # task -> length -> per-row values
        "qa1": {0: [1, 1], 1000: [1, 0]},
        "qa2": {0: [1, 0], 1000: [0, 0]},
        "qa3": {0: [0, 0], 1000: [1, 1]},
        "qa4": {0: [1, 1], 1000: [1, 0]},
        "qa5": {0: [1, 1], 1000: [1, 1]},
        "qa6": {0: [0, 0], 1000: [0, 0]},  # run, shown, outside the headline
    }
    rows = [
        _row(t, n, i, v)
        for t, by in values.items()
        for n, vs in by.items()
        for i, v in enumerate(vs)
    ]
    rows.append(_row("qa1", 1000, 9, 0.0, status="skipped"))  # left out of the means
    rows.append(_row("qa2", 1000, 9, 0.0, status="timeout"))  # counts 0
    summary = babilong_summary(rows)
    task_means = {t: {n: 100 * mean(vs) for n, vs in by.items()} for t, by in values.items()}
    task_means["qa2"][1000] = 100 * mean([0, 0, 0])
    expected = {
        n: round(mean(task_means[t][n] for t in ("qa1", "qa2", "qa3", "qa4", "qa5")), 2)
        for n in (0, 1000)
    }
    assert summary.by_length == expected
    assert summary.overall == round(mean(expected.values()), 2)
    assert summary.headline.label == "mean of qa1-qa5"
    assert [v.name for v in summary.views] == ["qa1-qa5", "qa6-qa20"]
    assert "qa6" not in summary.view.curves
    assert summary.views[1].curves["qa6"] == {0: 0.0, 1000: 0.0}
    assert summary.views[1].headline.label == "mean of qa6"
    assert summary.native["babilong"]["avg"] == {"0k": expected[0], "1k": expected[1000]}
    facts = dict(summary.view.facts)
    assert SATISFACTORY == 85.0
    assert facts["effective length at 85 (the paper's 'satisfactory')"] == (
        effective_length(expected, 85.0).label
    )
    assert facts["rows sent / skipped (too long) / failed"] == "25 / 1 / 1"
    [table] = summary.view.tables
    assert [r[0] for r in table.rows] == ["qa1", "qa2", "qa3", "qa4", "qa5", "mean qa1-qa5"]
    assert table.rows[-1] == ("mean qa1-qa5", f"{expected[0]:.2f}", f"{expected[1000]:.2f}")
    assert summary.native["comparable_with_published"] == "no"
    assert summary.native["babilong"]["licence"].startswith("BABILong (RMT-team): Apache-2.0")


def test_effective_length_at_the_papers_bar() -> None:
    # 85 passes at the bar itself, 84.99 does not: the threshold is the paper's 85, not RULER's 85.6.
    rows = [_row(t, 0, i, 1.0) for t in ("qa1",) for i in range(20)]
    rows += [_row("qa1", 1000, i, 1.0 if i < 17 else 0.0) for i in range(20)]  # 85%
    rows += [_row("qa1", 2000, i, 1.0 if i < 16 else 0.0) for i in range(20)]  # 80%
    facts = dict(babilong_summary(rows).view.facts)
    assert facts["effective length at 85 (the paper's 'satisfactory')"] == "1000"


def test_comparability_follows_tasks_data_and_counts() -> None:
    full = [_row(t, 0, i, 1.0) for t in ("qa1", "qa2", "qa3", "qa4", "qa5") for i in range(1000)]
    assert babilong_summary(full).native["comparable_with_published"] == "yes"
    few = [_row(t, 0, i, 1.0) for t in ("qa1", "qa2", "qa3", "qa4", "qa5") for i in range(3)]
    assert babilong_summary(few).native["comparable_with_published"] == "subset of 3"
    local = babilong_summary(few, ["data from DIR, not checked"]).native
    assert local["comparable_with_published"] == "no"
    assert local["differences"] == ["data from DIR, not checked"]


def test_differences_name_tasks_prompt_and_data(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "tasks=qa1", "examples=false")
    said = suite.differences()
    assert any("qa2, qa3, qa4, qa5 not run" in d for d in said)
    assert any("without the examples" in d for d in said)
    assert any(f"data from {tmp_path}" in d for d in said)


def test_stored_params_build_the_same_suite(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "tasks=qa3,qa1", "samples=4", "post_prompt=false", lengths="2k,0k")
    again = create_suite("babilong", suite.params())
    assert again.params() == suite.params()
    assert suite.params()["tasks"] == ["qa1", "qa3"] and suite.params()["lengths"] == ["0k", "2k"]


def test_published_rows_for_compare() -> None:
    table = BabilongSuite.published()
    by_model = {r.model: r for r in table.rows}
    shipped = {r.model: r for r in published()}
    assert (
        set(by_model)
        == set(shipped)
        == {
            "google/gemini-3-flash-preview",
            "microsoft/Phi-3-mini-128k-instruct",
        }
    )
    gemini = by_model["google/gemini-3-flash-preview"]
    assert gemini.lengths == shipped["google/gemini-3-flash-preview"].scores
    assert gemini.lengths[0] == 96.54 and gemini.lengths[1000] == 95.42
    [shown] = [
        r for r in table.leaderboard_rows(measured=[1000, 2000]) if r["model"].startswith("google")
    ]
    assert shown["AUC"] == pytest.approx((95.42 + 93.69) / 2, abs=0.01)
    assert shown["overall"] == pytest.approx((95.42 + 93.69) / 2, abs=0.01)


def test_hub_fetches_only_the_runs_files() -> None:
    made = hub_sources([("qa1", "1k"), ("qa7", "4k"), ("qa12", "0k"), ("qa2", "64k")])
    by_repo = {h.repo_id: h for h in made.hub}
    thousand = by_repo["RMT-team/babilong-1k-samples"]
    hundred = by_repo["RMT-team/babilong"]
    assert thousand.revision == "c50a37d2a9a07076336701c290118cd980f5c5b3"
    assert hundred.revision == "ee0d588794c7ac098062ee0d247c733d62e94fe2"
    assert set(thousand.patterns) == {"1k/qa1-*.parquet", "0k/qa12-*.parquet"}
    # qa7 past 0k is only in the 100-row set; 64k is read from it, as the authors read it.
    assert "data/qa7/4k.json" in hundred.patterns and "data/qa2/64k.json" in hundred.patterns
    assert not any("qa1-" in p or "/1k" in p for p in hundred.patterns)
    whole = {h.repo_id: h for h in BabilongSuite.sources().hub}
    assert "0k/qa20-*.parquet" in whole["RMT-team/babilong-1k-samples"].patterns
    assert not any("256k" in p or "10M" in p for h in whole.values() for p in h.patterns)


def test_hub_offline_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, when first imported (maybe by an earlier test).
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    suite = suite_from_options("babilong", ["data=hub", "tasks=qa1"], {"lengths": "0k"})
    with pytest.raises(UsageError, match=r"cannot download RMT-team/babilong-1k-samples"):
        suite.prepare()


def test_the_headline_keeps_its_error_bars_beside_other_tasks() -> None:
    # The statistics find each view's requests by its `where` (`meta.group`): with qa6 and qa7 run
    # beside qa1-qa5, the headline's mean per length still gets its standard error.
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0]
    tasks = ("qa1", "qa2", "qa3", "qa4", "qa5", "qa6", "qa7")
    rows = [
        _row(t, n, i, values[(i + k) % len(values)])
        for k, t in enumerate(tasks)
        for n in (0, 1000)
        for i in range(10)
    ]
    made = with_uncertainty(babilong_summary(rows), rows)
    head, other = made.views
    assert set(head.length_errors) == {0, 1000} and set(other.length_errors) == {0, 1000}
    assert all(e.se is not None and e.se > 0 for e in head.length_errors.values())
    assert head.metrics is not None and head.metrics.auc_se is not None
    assert made.uncertainty.get("unmatched") == 0


def test_a_system_prompt_is_counted_and_the_templates_default_reserved(
    tmp_path: Path, tokenizer
) -> None:
    # A chat template that adds its own default system prompt to a lone user message drops it for
    # ours: its tokens (the known overhead) are reserved, never counted as sent (counted <= sent).
    write_folder(tmp_path, {("qa1", "0k"): 1})
    suite = _suite(tmp_path, "tasks=qa1", "system_prompt=You are careful.", lengths="0k")
    ctx = BuildContext(tokenizer, "chat", GenerationConfig(max_tokens=20), 32768, chat_overhead=30)
    [sample] = suite.iter_cell(ctx, "qa1", 0, 1)
    _, messages = suite.template.render(sample, "chat")
    words = sum(len(tokenizer.encode(m.content)) for m in messages)
    assert sample.prompt_tokens == words
    assert sample.meta["needed_tokens"] == words + 30 + 8 + MAX_NEW_TOKENS
    plain = _suite(tmp_path, "tasks=qa1", lengths="0k")
    [alone] = plain.iter_cell(ctx, "qa1", 0, 1)
    assert alone.prompt_tokens == len(tokenizer.encode(messages[1].content)) + 30


def test_the_caches_layout_one_subfolder_per_set(tmp_path: Path, tokenizer) -> None:
    # As `longscope data babilong` and -S data=hub lay it out: each set in its own subfolder.
    pytest.importorskip("pyarrow")
    write_folder(tmp_path / "babilong-1k-samples", {("qa1", "1k"): 3}, layout="parquet")
    write_folder(tmp_path / "babilong", {("qa1", "1k"): 2, ("qa1", "64k"): 2, ("qa6", "1k"): 2})
    suite = _suite(tmp_path, "tasks=qa1,qa6", lengths="1k,64k")
    cells = {(c.task, c.length): c for c in suite.cells(_ctx(tokenizer))}
    assert cells[("qa1", 1000)].count == 3  # the 1000-row set at 1k
    assert cells[("qa1", 64000)].count == 2  # the 100-row set from 64k
    assert cells[("qa6", 1000)].count == 2  # qa6 past 0k: only the 100-row set has it
    assert "no qa6 at 64k" in cells[("qa6", 64000)].skipped
    sets = {
        (t, n): next(suite.iter_cell(_ctx(tokenizer), t, n, 1)).meta["set"]
        for (t, n), c in cells.items()
        if not c.skipped
    }
    assert sets == {("qa1", 1000): 1000, ("qa1", 64000): 100, ("qa6", 1000): 100}


# The authors' outputs reach `compare_answers` through a CSV: run_model_on_babilong.py writes the
# stripped output with `to_csv`, collect_results.py reads it with `pd.read_csv` (pandas 2.2.2 in
# their requirements.txt) and `fillna('')`. A field that is exactly a pandas default NA string is
# read as missing. The oracle below is written from pandas' documented default `na_values`.
PANDAS_DEFAULT_NA = (
    *("#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN"),
    *("<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"),
)


@pytest.mark.parametrize(
    ("output", "right"),
    [
        ("None", 0),  # read back as missing: '' holds no label (`no` is in `none` otherwise)
        (" None\n", 0),  # stripped before it is written
        ("none", 1),  # lower case is not an NA string: `no` is its only label
        ("None.", 1),  # nor is `None.`
        ("No", 1),
        ("NA", 0),
    ],
)
def test_score_reads_the_output_as_the_authors_csv_gives_it_back(output: str, right: int) -> None:
    sample = {"task": "qa6", "gold": ["no"], "question": "Is Mary in the office?"}
    score = BabilongSuite.score(None, sample, Generation(output, "ok"))  # type: ignore[arg-type]
    assert score.value == float(right)
    assert (score.evidence["read"] == "") == (output.strip() in PANDAS_DEFAULT_NA)


def test_the_na_strings_are_pandas_defaults() -> None:
    assert {*PANDAS_DEFAULT_NA, ""} == PANDAS_NA_STRINGS
