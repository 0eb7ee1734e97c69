"""The registered NoLiMa suite on hand-made data: options, lazy build, prompts, skip, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites import suite_from_options, suite_names, suite_options
from longscope.suites.base import BuildContext
from longscope.suites.nolima.data import FILES, REVISION, check_first_digests, sources
from longscope.suites.nolima.prompts import DEFAULT_SYSTEM_PROMPT, LENGTHS, depth_grid
from longscope.suites.nolima.published import STATED_BASE, STATED_EFFECTIVE, published_rows
from longscope.suites.nolima.suite import NoLiMaSuite
from longscope.summary import Summary
from longscope.types import Generation, GenerationConfig, Score, ScoredRow

from .rows import WordTokenizer, experiment, fixture_dataset, prose, write_dataset
from .test_prompts import by_hand


def make(folder: Path, *pairs: str, lengths: str | None = None) -> NoLiMaSuite:
    suite = suite_from_options("nolima", [f"data={folder}", *pairs], {"lengths": lengths})
    assert isinstance(suite, NoLiMaSuite)
    return suite


WORDS = WordTokenizer()
"""One vocabulary for every build: a suite keeps a book's tokens per tokenizer name."""


def ctx(mode: str = "chat", context_length: int | None = None) -> BuildContext:
    return BuildContext(WORDS, mode, GenerationConfig(), context_length)  # type: ignore[arg-type]


def test_nolima_is_registered_with_the_authors_defaults(tmp_path: Path) -> None:
    assert "nolima" in suite_names()
    options = {p.name: p for p in suite_options("nolima")}
    assert options["lengths"].default == ("250", "500", "1K", "2K", "4K", "8K", "16K", "32K")
    assert options["depths"].default == depth_grid() and len(depth_grid()) == 26
    assert options["metric"].default == "contains" and options["metric"].scoring
    assert set(options["needle_set"].choices) >= {"main", "hard"}
    suite = make(fixture_dataset(tmp_path))
    assert suite.lengths == LENGTHS == (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)


@pytest.mark.parametrize(
    ("given", "tokens"),
    [("1k,2k", (1000, 2000)), ("250,32K", (250, 32000)), ("64k", (64000,)), ("1500", (1500,))],
)
def test_lengths_count_in_thousands_as_nolima_does(tmp_path: Path, given: str, tokens) -> None:
    assert make(tmp_path, lengths=given).lengths == tokens


@pytest.mark.parametrize("bad", ["1x", "0", "1k,1000", "-2k"])
def test_a_bad_length_is_one_line(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UsageError, match="NoLiMa length"):
        make(tmp_path, lengths=bad)


def test_no_data_says_how_to_get_it() -> None:
    with pytest.raises(UsageError, match=r"-S data=DIR .* -S data=hub"):
        suite_from_options("nolima", [])


def test_limit_builds_only_what_it_sends(tmp_path: Path) -> None:
    suite = make(fixture_dataset(tmp_path, books=2, lines=200), lengths="250,500")
    context = ctx()
    cells = suite.cells(context)
    # One cell per question type and length: 2 books x 2 tests x 26 depths each, none built.
    assert [(c.task, c.length, c.count) for c in cells] == [
        ("onehop", 250, 104),
        ("twohop", 250, 104),
        ("onehop", 500, 104),
        ("twohop", 500, 104),
    ]
    assert suite._tokens == {}
    first = list(suite.iter_cell(context, "onehop", 250, 3))
    # The authors' order: book 1, test T01, depths 0, 4, 8 percent; book 2 is never tokenized.
    assert [s.id for s in first] == [
        "0137_T01_onehop/book1/250/d0",
        "0137_T01_onehop/book1/250/d4",
        "0137_T01_onehop/book1/250/d8",
    ]
    assert list(suite._tokens) == [("words", 0)]
    every = list(suite.iter_cell(context, "onehop", 250))
    assert len(every) == 104 and len({s.id for s in every}) == 104


def test_a_sample_is_the_authors_prompt(tmp_path: Path) -> None:
    suite = make(fixture_dataset(tmp_path, lines=200), "depths=0.5", lengths="500")
    (sample,) = list(suite.iter_cell(ctx(), "twohop", 500, 1))
    drawn = sample.meta["character"]
    assert drawn in experiment()["character_set"] and sample.gold == (drawn,)
    # The needle with {1} and {CHAR} filled sits in the haystack; the question keeps its last
    # placeholder filled (upstream's replace on the original question).
    needle = f"Long ago, {drawn} painted a mural beside the Glass Harbour."
    assert f" {needle}\n" in sample.context
    assert sample.question == "Which painter worked in the Eastern March?"
    prompt, messages = suite.template.render(sample, "chat")
    assert prompt == ""
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content == DEFAULT_SYSTEM_PROMPT == "You are a helpful assistant"
    assert messages[1].content == by_hand(sample.context, sample.question)
    completion, none = suite.template.render(sample, "completion")
    assert none == () and completion == by_hand(sample.context, sample.question)
    parts = suite.template.parts(sample, "chat")
    assert parts.head + parts.context + parts.tail == messages[1].content
    # 500 book tokens, one (the newline the needle follows) dropped: see prompts.place_needle.
    haystack = sample.context.replace(f" {needle}\n", "", 1)
    assert abs(len(WORDS.encode(haystack)) - 499) <= 1


def test_the_needle_sets_own_system_prompt_is_sent_when_asked(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        [experiment(system_prompt="Be terse.")],
        {"rand_book_1.txt": prose(200)},
    )
    suite = make(tmp_path, "system=needle_set", "depths=0", lengths="250")
    (sample,) = list(suite.iter_cell(ctx(), "onehop", 250, 1))
    _, messages = suite.template.render(sample, "chat")
    assert messages[0].content == "Be terse."


def test_a_prompt_that_cannot_fit_is_given_the_tokens_it_needs(tmp_path: Path) -> None:
    suite = make(fixture_dataset(tmp_path, lines=300), "depths=0.5", lengths="250,1k")
    fits = next(suite.iter_cell(ctx(context_length=1000), "onehop", 250, 1))
    assert fits.length == 250
    too_long = next(suite.iter_cell(ctx(context_length=1000), "onehop", 1000, 1))
    # The runner skips a sample longer than the model: its length is what it needs.
    assert too_long.length == too_long.meta["needed_tokens"] > 1000
    assert too_long.meta["context_length"] == 1000
    assert too_long.max_tokens == 192  # the authors' max_tokens
    # The bar itself: prompt (system message counted), the markers reserved, the output budget.
    needed = too_long.meta["needed_tokens"]
    words = len(WORDS.encode(DEFAULT_SYSTEM_PROMPT))
    user = len(WORDS.encode(by_hand(too_long.context, too_long.question)))
    assert too_long.prompt_tokens == user + words
    assert needed == user + words + 32 + 8 + 192  # chat margin (template unknown) + system
    exact = next(suite.iter_cell(ctx(context_length=needed), "onehop", 1000, 1))
    assert exact.length == 1000
    over = next(suite.iter_cell(ctx(context_length=needed - 1), "onehop", 1000, 1))
    assert over.length == needed


def test_a_book_too_short_for_a_length_is_one_line(tmp_path: Path) -> None:
    suite = make(fixture_dataset(tmp_path, lines=20), "depths=0.5", lengths="2k")
    with pytest.raises(UsageError, match=r"rand_book_1\.txt.*too short.*shorter -S lengths"):
        next(suite.iter_cell(ctx(), "onehop", 2000, 1))


def test_the_score_is_the_chosen_authors_metric(tmp_path: Path) -> None:
    sample = {"gold": ["Orla"], "meta": {}}
    contains = make(tmp_path)
    exact = make(tmp_path, "metric=EM")
    assert contains.score(sample, Generation("It was Orla.", "ok")).value == 1.0
    assert contains.score(sample, Generation("orla", "ok")).value == 0.0  # case-sensitive
    assert exact.score(sample, Generation("It was Orla.", "ok")).value == 0.0
    assert exact.score(sample, Generation("  Orla \n", "ok")).value == 1.0


def _row(length: int, right: bool, status: str = "ok", depth: str = "0") -> ScoredRow:
    sample = {
        "id": f"t/{length}/{depth}/{right}/{status}",
        "task": "onehop",
        "length": length,
        "gold": ["Orla"],
        "meta": {
            "depth": depth,
            "book": f"rand_book_{int(depth) % 5 + 1}.txt",
            "test_name": "t",
            "data": f"amodaresi/NoLiMa@{REVISION}",
        },
    }
    score = Score(1.0 if right else 0.0, 1.0) if status == "ok" else None
    return ScoredRow(sample, 0, Generation("x", status), score)  # type: ignore[arg-type]


def _rows(scores: dict[int, tuple[int, int]]) -> list[ScoredRow]:
    """Rows with `right` of `total` correct at each length."""
    return [
        _row(length, i < right, depth=str(i))
        for length, (right, total) in scores.items()
        for i in range(total)
    ]


def test_the_summary_reports_nolimas_base_and_effective_length() -> None:
    # Scores: 250 80%, 500 100%, 1K 90%, 2K 90%, 4K 80%, 8K 40%. Base: the best short one,
    # 100; bar 85: 1K and 2K pass, 4K fails, so the effective length is 2K.
    rows = _rows(
        {250: (4, 5), 500: (5, 5), 1000: (9, 10), 2000: (9, 10), 4000: (4, 5), 8000: (2, 5)}
    )
    rows += [_row(16000, True, status="skipped")]  # could not fit: left out of the means
    summary = NoLiMaSuite.summarize(_suite_stub(), rows)
    native = summary.native["nolima"]
    assert native["base_score"] == 100.0 and native["threshold"] == 85.0
    assert native["effective_length"] == "2K" and native["effective_tokens"] == 2000
    assert summary.by_length == {
        250: 80.0,
        500: 100.0,
        1000: 90.0,
        2000: 90.0,
        4000: 80.0,
        8000: 40.0,
    }
    assert summary.view.stated == {STATED_EFFECTIVE: "2K", STATED_BASE: "100.0"}
    assert native["skipped"] == 1 and native["sent"] == 40
    marks = {row[0]: row[3] for row in summary.view.tables[0].rows}
    assert marks["2K"] == "at or above 85% of base" and marks["8K"] == "below 50% of base"
    assert marks["4K"] == ""  # 80: under the bar, above half of the base
    assert summary.native["comparable_with_published"] == "yes"


def test_a_threshold_exactly_met_passes_and_1k_failing_is_below_1k() -> None:
    # Base 100 (500); 1K at exactly 85 passes, so 1K is effective; then 1K at 80 fails: <1K.
    at_bar = _rows({500: (20, 20), 1000: (17, 20), 2000: (16, 20)})
    assert NoLiMaSuite.summarize(_suite_stub(), at_bar).native["nolima"]["effective_length"] == "1K"
    under = _rows({500: (20, 20), 1000: (16, 20), 2000: (20, 20)})
    assert NoLiMaSuite.summarize(_suite_stub(), under).native["nolima"]["effective_length"] == "<1K"


def test_lengths_beyond_the_paper_and_a_partial_base_are_said() -> None:
    summary = NoLiMaSuite.summarize(_suite_stub(), _rows({1000: (4, 4), 64000: (1, 4)}))
    notes = " ".join(summary.notes)
    assert "64K: beyond the paper's lengths" in notes
    assert "base score read from 1K only" in notes
    assert summary.native["comparable_with_published"] == "no"
    assert summary.native["nolima"]["effective_length"] == "1K"
    assert summary.native["nolima"]["licence"].startswith("Adobe Research License")


def test_stated_numbers_survive_summary_json_and_reach_compare() -> None:
    from longscope.analysis.profile import leaderboard

    summary = NoLiMaSuite.summarize(_suite_stub(), _rows({500: (4, 4), 1000: (4, 4), 2000: (1, 4)}))
    again = Summary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert (
        again.view.stated == summary.view.stated == {STATED_EFFECTIVE: "1K", STATED_BASE: "100.0"}
    )
    (row,) = leaderboard([again])
    assert row[STATED_EFFECTIVE] == "1K" and row[STATED_BASE] == "100.0"


def test_published_rows_keep_the_readmes_effective_length_beside_runs() -> None:
    table = NoLiMaSuite.published()
    assert table.suite == "nolima" and "adobe-research/NoLiMa" in table.source
    assert len(table.rows) == len(published_rows())
    gpt = next(r for r in table.rows if r.model.startswith("GPT-4o") and "mini" not in r.model)
    assert gpt.lengths[1000] == 98.1 and gpt.lengths[32000] == 69.7
    assert gpt.stated == {STATED_EFFECTIVE: "8K", STATED_BASE: "99.3"}
    assert gpt.context == 128 * 1024
    assert gpt.overall == round((98.1 + 98.0 + 95.7 + 89.2 + 81.6 + 69.7) / 6, 2)
    shown = table.leaderboard_rows(measured=[1000, 2000])
    assert all(STATED_EFFECTIVE in row for row in shown)
    # Beside a 1K-2K run: an AUC over the run's lengths from the README's own 1K and 2K.
    (gpt_shown,) = [r for r in shown if r["model"] == "GPT-4o"]
    assert gpt_shown["AUC"] == round((98.1 + 98.0) / 2, 2) and gpt_shown["AUC_range"] == "1000-2000"


def test_the_licence_is_printed_on_first_use_only_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    suite = make(fixture_dataset(tmp_path / "data"))
    suite.prepare()
    first = capsys.readouterr().err
    assert "ADOBE RESEARCH LICENSE" in first and "noncommercial research purposes only" in first
    make(fixture_dataset(tmp_path / "data")).prepare()
    assert capsys.readouterr().err == ""


def test_a_folder_not_the_pinned_files_is_recorded_by_its_digests(tmp_path: Path) -> None:
    suite = make(fixture_dataset(tmp_path))
    assert suite.dataset.source.startswith("local:sha256:")
    assert suite.version == f"nolima-1/{suite.dataset.source}"
    (sample,) = list(suite.iter_cell(ctx(), "onehop", 250, 1))
    row = ScoredRow(sample.public(), 0, Generation("x", "ok"), Score(0.0, 1.0))
    said = " ".join(NoLiMaSuite.summarize(_suite_stub(), [row]).native["differences"])
    assert f"data {suite.dataset.source} is not amodaresi/NoLiMa@378115b1f136" in said
    assert "1 haystack book(s)" in said


def test_summarize_needs_no_data_folder(tmp_path: Path) -> None:
    """`score` and `report` rebuild the suite from stored params: the folder may be gone."""
    suite = NoLiMaSuite.from_params({"data": str(tmp_path / "gone"), "lengths": [1000]})
    summary = suite.summarize(_rows({1000: (1, 2)}))
    assert summary.by_length == {1000: 50.0}


def test_sources_are_the_datasets_files_at_the_pinned_revision() -> None:
    made = sources()
    assert [f.name for f in made.files] == [f.path for f in FILES]
    assert all(f"/resolve/{REVISION}/" in f.url for f in made.files)
    pinned = {f.name: f.sha256 for f in made.files}
    assert pinned["haystack/rand_shuffle/rand_book_1.txt"] == next(
        f.sha256 for f in FILES if f.path.endswith("rand_book_1.txt")
    )


def test_an_unpinned_file_is_checked_against_its_first_download(tmp_path: Path) -> None:
    check_first_digests(tmp_path, {"needlesets/needle_set.json": "a" * 64})
    recorded = json.loads((tmp_path / "first-download-sha256.json").read_text())
    assert recorded == {"needlesets/needle_set.json": "a" * 64}
    check_first_digests(tmp_path, {"needlesets/needle_set.json": "a" * 64})  # unchanged: fine
    with pytest.raises(UsageError, match="changed since its first download"):
        check_first_digests(tmp_path, {"needlesets/needle_set.json": "b" * 64})
    # A pinned file is checked against its pin by the download, never recorded here.
    check_first_digests(tmp_path, {"needlesets/needle_set_hard.json": "c" * 64})
    assert "needlesets/needle_set_hard.json" not in json.loads(
        (tmp_path / "first-download-sha256.json").read_text()
    )


class _Stub:
    """What `summarize` reads of a suite: its differences (none) on hand-made rows."""

    def differences(self) -> list[str]:
        return []


def _suite_stub() -> NoLiMaSuite:
    return _Stub()  # type: ignore[return-value]


@pytest.mark.model
def test_cli_run_and_compare_published_on_the_embedded_model(tmp_path: Path) -> None:
    """`run nolima` on a built folder, then `compare --published nolima`: the run among the
    README's rows, with NoLiMa's effective length and the AUC in both."""
    import os
    import subprocess
    import sys

    one_hop = experiment(questions={"onehop": "Which painter worked in {2}?"})
    data = write_dataset(tmp_path / "data", [one_hop], {"rand_book_1.txt": prose(150)})
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "longscope.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )

    run_dir = tmp_path / "run"
    run = cli(
        "run", "nolima", "--model", "llamacpp/gemma3-270m", "-S", f"data={data}",
        "--lengths", "250,500", "--limit", "1", "--max-tokens", "8", "-o", str(run_dir), "-q",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ADOBE RESEARCH LICENSE" in run.stderr  # first use of NoLiMa's data here
    summary = json.loads((run_dir / "summary.json").read_text())
    native = summary["nolima"]
    assert set(native["by_length"]) == {"250", "500"} and native["sent"] == 2
    assert native["licence"].startswith("Adobe Research License")
    view = summary["longscope"]["views"][0]
    assert view["metrics"]["auc"] is not None
    assert view["stated"][STATED_EFFECTIVE] == native["effective_length"]
    compare = cli("compare", str(run_dir), "--published", "nolima", "--json")
    assert compare.returncode == 0, compare.stderr[-2000:]
    rows = json.loads(compare.stdout)
    published = [r for r in rows if r["suite"] == "published"]
    (mine,) = [r for r in rows if r["suite"] == "nolima"]
    assert len(published) == len(published_rows()) and len(rows) == len(published) + 1
    assert mine[STATED_EFFECTIVE] == native["effective_length"] and mine["AUC"] is not None
    gpt = next(r for r in published if r["model"] == "GPT-4o")
    # The README's own effective length; no AUC over 250-500, where the README has no scores (the
    # AUC over a 1K-2K run's lengths: test_published_rows_keep_the_readmes_effective_length_...).
    # 250 and 500 book tokens: a quarter of the prompt tokens of 1K and 2K, the same commands.
    assert gpt[STATED_EFFECTIVE] == "8K" and gpt["AUC"] is None
    assert "no published score at 250" in gpt["AUC_note"]
    assert mine["comparable"].startswith("no: ")  # built data, one book: said, not hidden


def test_more_books_than_the_data_has_is_refused_on_every_read(tmp_path: Path) -> None:
    """`-S books=N` past the folder's books is one line, and stays refused on a second read of
    the data (the rows were read: a cache must not let the check pass the next time)."""
    suite = make(fixture_dataset(tmp_path, books=2), "books=3")
    for _ in range(2):
        with pytest.raises(UsageError, match=r"-S books=3: the data has 2 haystack books"):
            _ = suite.dataset
