"""api's commands on stored runs: compare, profile, longscore, report, write_reports, judge,
calibrate, download_data, published_rows. What each returns, writes and refuses (one line).

Runs are made by the real runner into real SQLite stores (the scripted backend answering by rule,
in process) or imported from the LongBench Pro fixture's predictions; downloads come from a real
HTTP server on 127.0.0.1. No model: fast for mutmut.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from longscope import api
from longscope.errors import UsageError
from longscope.report.html import render_html, render_markdown
from longscope.run.spec import RunSpec

from .api_helper import FIXTURES, JUDGED, NEEDLE, VERDICT, longctx_spec
from .lbp_helper import write_predictions
from .test_download import _Files
from .test_download import server as _file_server  # noqa: F401 (the fixture `server`)

LBP_DATA = FIXTURES / "longbench_pro_mini.json"


def _longctx(output: Path, name: str, **options: object) -> api.RunResult:
    return api.evaluate(
        longctx_spec(
            output, model=f"scripted/{name}", model_options={"tokenizer": "qwen2.5", **options}
        )
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three longctx runs: every answer right (100), one of two cut at `length` (50), none
    answered (no score)."""
    root = tmp_path_factory.mktemp("runs")
    _longctx(root / "right", "right", pattern=NEEDLE)
    _longctx(root / "half", "half", pattern=NEEDLE, fail_every=2, fail_status="length")
    _longctx(root / "none", "none", fail_every=1)
    return {name: root / name for name in ("right", "half", "none")}


# --- compare ------------------------------------------------------------------------------------


def test_compare_gives_each_run_after_the_first_its_difference_from_the_first(
    runs: dict[str, Path],
) -> None:
    half, none, right = runs["half"], runs["none"], runs["right"]
    # Given in another order than ranked: each difference lands on its own run's row.
    rows = api.compare([half, none, right]).rows
    assert [(r["model"], r["state"]) for r in rows] == [
        ("scripted/right", "complete"),
        ("scripted/half", "complete"),
        ("scripted/none", "no score"),
    ]
    assert "vs_reference" not in rows[1]
    to_right, to_none = rows[0]["vs_reference"], rows[2]["vs_reference"]
    assert (to_right["reference"], to_right["run"]) == (str(half), str(right))
    assert to_right["overall"]["difference"] == 50.0
    assert to_right["by_length"]["2048"]["difference"] == 100.0
    assert (to_none["reference"], to_none["run"]) == (str(half), str(none))
    # One run alone has nothing to differ from.
    assert "vs_reference" not in api.compare([right]).rows[0]


def test_compare_the_same_run_twice_gives_both_rows_the_difference(runs: dict[str, Path]) -> None:
    half, right = runs["half"], runs["right"]
    rows = api.compare([half, right, right]).rows
    assert [r["model"] for r in rows] == ["scripted/right", "scripted/right", "scripted/half"]
    assert [r["vs_reference"]["overall"]["difference"] for r in rows[:2]] == [50.0, 50.0]
    assert "vs_reference" not in rows[2]


def test_two_runs_are_compared_by_the_suites_clusters(tmp_path: Path) -> None:
    # 100-LongBench asks each source question at every length: one cluster per question.
    options = [
        "tasks=single_doc_qa",
        "lengths=1024,2048",
        "samples=2",
        f"source=single_doc_qa={FIXTURES / 'longbench_v1_qa.jsonl'}",
    ]
    for name in ("a", "b"):
        api.evaluate(
            RunSpec.of(
                "hundred",
                f"scripted/{name}",
                suite_options=options,
                model_options={"answer": "Paris.", "tokenizer": "qwen2.5"},
                output=tmp_path / name,
            )
        )
    first, second = api.compare([tmp_path / "a", tmp_path / "b"]).rows
    assert "vs_reference" not in first
    made = second["vs_reference"]
    assert made["note"] == (
        f"paired by sample id on 7 samples (7 in {tmp_path / 'a'}, 7 in {tmp_path / 'b'}), "
        "3 clusters"
    )
    assert (made["overall"]["n"], made["overall"]["clusters"]) == (7, 3)


def test_published_rows_rank_among_the_runs_and_unscored_rows_stay_last(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    table = tmp_path / "table.csv"
    table.write_text("# source: a test table\nmodel,overall\nA,0.5\nB,\nC,80\n")
    rows = api.compare([runs["none"], runs["right"]], published=[str(table)]).rows
    assert [r["model"] for r in rows] == [
        "scripted/right",
        "C",
        "A",
        "B",
        "scripted/none",
    ]
    assert [r["state"] for r in rows] == ["complete", *["published"] * 3, "no score"]


def test_compare_checks_every_threshold(runs: dict[str, Path]) -> None:
    for bad in (-0.5, 100.5):
        with pytest.raises(UsageError) as caught:
            api.compare([runs["right"]], thresholds=[50.0, bad])
        assert str(caught.value) == f"bad --threshold {bad!r}: expected a number from 0 to 100"
    rows = api.compare([runs["right"]], thresholds=[0.5, 100.0]).rows
    assert rows[0]["effective"] == ">2048" and rows[0]["effective@100"] == ">2048"


def test_published_rows_by_file_name_or_suite(tmp_path: Path) -> None:
    for name in ("rows.csv", "rows.CSV", "rows.json"):
        with pytest.raises(UsageError) as caught:
            api.published_rows(tmp_path / name)
        # A missing table file is named as a file, never looked up as a suite.
        assert str(tmp_path / name) in str(caught.value)
        assert "suite" not in str(caught.value)
    ruler = api.published_rows("ruler")
    assert ruler.rows and "RULER" in ruler.source
    with pytest.raises(UsageError) as caught:
        api.published_rows("longctx")
    assert str(caught.value) == "longctx ships no published rows: give a CSV or JSON file"


# --- profile and longscore ------------------------------------------------------------------------


def test_profile_measures_at_the_threshold_and_writes_the_file(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    made = api.profile([runs["right"]])
    assert made.written is None and made.model == "scripted/right"
    (measured,) = made.data["measured"]
    assert (measured["threshold"], measured["relative_threshold"]) == (85.6, 90.0)
    out = tmp_path / "PROFILE.json"
    chosen = api.profile([runs["right"]], out, threshold=0.0, relative=0.5)
    assert chosen.written == out and json.loads(out.read_text()) == chosen.data
    (measured,) = chosen.data["measured"]
    assert (measured["threshold"], measured["relative_threshold"]) == (0.0, 50.0)
    assert api.profile([runs["right"]], threshold=100.0, relative=1.0).data["measured"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"threshold": -0.1}, "bad --threshold -0.1: expected a number from 0 to 100"),
        ({"threshold": 100.1}, "bad --threshold 100.1: expected a number from 0 to 100"),
        ({"relative": -0.1}, "bad --relative -0.1: expected a number from 0 to 1"),
        ({"relative": 1.1}, "bad --relative 1.1: expected a number from 0 to 1"),
    ],
)
def test_profile_refuses_a_threshold_out_of_range(
    runs: dict[str, Path], tmp_path: Path, given: dict, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        api.profile([runs["right"]], tmp_path / "p.json", **given)
    assert str(caught.value) == message
    assert not (tmp_path / "p.json").exists()


def test_profile_of_two_models_is_refused_in_one_line(runs: dict[str, Path]) -> None:
    with pytest.raises(UsageError) as caught:
        api.profile([runs["right"], runs["half"]])
    assert str(caught.value) == "runs are of different models: scripted/half, scripted/right"


def test_longscore_uses_the_base_lengths_and_floor(runs: dict[str, Path]) -> None:
    (run,) = api.longscore([runs["right"]]).runs
    assert (run.run_dir, run.base_lengths, run.floor) == (runs["right"], (2048, 4096, 6144), 5.0)
    (run,) = api.longscore([runs["half"]], base="1k", floor=0.5).runs
    assert (run.base_lengths, run.floor) == ((1024,), 0.5)
    assert run.summary.by_length == {1024: 100.0, 2048: 0.0}
    with pytest.raises(UsageError) as caught:
        api.longscore([runs["right"]], floor=-1.0)
    assert str(caught.value) == "bad --floor -1.0: expected a number of at least 0"
    with pytest.raises(UsageError) as caught:
        api.longscore([runs["right"]], base="lots")
    assert str(caught.value).startswith("bad length 'lots' in --base: ")


# --- report and write_reports ---------------------------------------------------------------------


def test_write_reports_writes_what_the_renderers_make(tmp_path: Path) -> None:
    # One sample: rendering is the slow part.
    run = tmp_path / "run"
    api.evaluate(longctx_spec(run, model="scripted/one", lengths="1k"))
    report = api.report([run])
    pairs = report.pairs()
    assert [p for p, _ in pairs] == [run]
    html, markdown = tmp_path / "r.html", tmp_path / "r.md"
    assert api.write_reports(report, html=html, markdown=markdown) == [html, markdown]
    assert html.read_text() == render_html(pairs)
    written = markdown.read_text()
    assert written == render_markdown(pairs) and "scripted/one" in written
    # From (directory, scores) pairs, one file only; the file is replaced whole.
    markdown.write_text("old")
    assert api.write_reports(pairs, markdown=str(markdown)) == [markdown]
    assert markdown.read_text() == written
    assert api.write_reports(report) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.md", "run"]


def test_report_reads_the_run_asked_for_in_a_directory_of_two(tmp_path: Path) -> None:
    def run(max_tokens: int) -> api.RunResult:
        return api.evaluate(longctx_spec(tmp_path, lengths="1k", max_tokens=max_tokens))

    first, second = run(40), run(30)
    for made in (first, second):
        (reported,) = api.report([tmp_path], made.run_id).runs
        assert reported.run_dir == tmp_path and reported.scored.run_id == made.run_id
    (latest,) = api.report([str(tmp_path)]).runs
    assert latest.scored.run_id == second.run_id and latest.run_dir == tmp_path


# --- LongBench Pro: predictions, scoring options, calibration -------------------------------------


@pytest.fixture(scope="module")
def tiers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Three runs per tier: everyone solves T3.2-en, high and two mid solve T3.2-zh, only high
    solves T3.1-en, nobody T3.1-zh."""
    root = tmp_path_factory.mktemp("tiers")
    everyone = {"mini-T3.2-en"}
    solved = {
        "high": [everyone | {"mini-T3.2-zh", "mini-T3.1-en"}] * 3,
        "mid": [everyone | {"mini-T3.2-zh"}] * 2 + [everyone],
        "low": [everyone] * 3,
    }
    made: dict[str, list[Path]] = {}
    for tier, rights in solved.items():
        for i, right in enumerate(rights):
            out = root / f"{tier}{i}"
            api.score(
                "longbench-pro",
                options=[f"data={LBP_DATA}"],
                predictions=write_predictions(LBP_DATA, root, f"{tier}{i}", right),
                output=out,
            )
            made.setdefault(tier, []).append(out)
    return made


def test_calibrate_labels_by_the_papers_rule_and_writes_them(
    tiers: dict[str, list[Path]], tmp_path: Path
) -> None:
    out = tmp_path / "labels.json"
    made = api.calibrate(tiers, out)
    assert made.labels == {
        "mini-T3.1-en#nonthinking": "Hard",
        "mini-T3.1-zh#nonthinking": "Extreme",
        "mini-T3.2-en#nonthinking": "Easy",
        "mini-T3.2-zh#nonthinking": "Moderate",
    }
    assert made.written == out and json.loads(out.read_text()) == made.data
    assert made.data["labels"] == made.labels and len(made.data["tiers"]["high"]) == 3
    unwritten = api.calibrate(tiers)
    assert unwritten.written is None and unwritten.labels == made.labels
    # The labels change what a report shows: every row Extreme.
    labels = tmp_path / "extreme.json"
    table = {key: "Extreme" for key in made.labels}
    labels.write_text(json.dumps({"labels_version": 1, "labels": table}), encoding="utf-8")
    run = tiers["low"][0]
    (plain,) = api.report([run]).runs
    (relabelled,) = api.report([run], options=[f"difficulty_labels={labels}"]).runs
    assert relabelled.scored.to_dict()["modes"]["nonthinking"]["average_difficulty_metric"] == {
        "Extreme": 0.25
    }
    assert plain.scored.to_dict()["longscope"]["difficulty_source"] != str(labels)
    assert relabelled.scored.to_dict()["longscope"]["difficulty_source"] == str(labels)


def test_calibrate_refusals_are_one_line_and_write_nothing(
    tiers: dict[str, list[Path]], runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "labels.json"
    cases = [
        (
            {"high": [], "mid": [], "low": []},
            "calibration needs runs of one suite that calibrates its difficulty; got no runs",
        ),
        (
            {**tiers, "low": [runs["right"]]},
            "calibration needs runs of one suite that calibrates its difficulty; got "
            "longbench-pro, longctx",
        ),
        (
            {"high": [runs["right"]], "mid": [runs["half"]], "low": [runs["right"]]},
            "calibration needs runs of one suite that calibrates its difficulty; longctx does not",
        ),
        (
            {"high": tiers["high"], "mid": tiers["mid"], "low": []},
            "calibration needs at least one run for each of --high, --mid and --low",
        ),
    ]
    for given, message in cases:
        with pytest.raises(UsageError) as caught:
            api.calibrate(given, out)
        assert str(caught.value) == message
        assert not out.exists()


def test_predictions_are_stored_where_asked_or_under_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    predictions = write_predictions(LBP_DATA, tmp_path, "mine", {"mini-T3.2-en"})
    made = api.score("longbench-pro", options=[f"data={LBP_DATA}"], predictions=predictions)
    where = Path("runs") / "longbench-pro-predictions-mine"
    assert made.run_dir == where and made.suite == "longbench-pro"
    assert made.completeness["requested"] == made.completeness["scored"] == 4
    # T3.2-en right, the three others wrong.
    assert sorted(r.score.fraction for r in made.rows if r.score) == [0.0, 0.0, 0.0, 1.0]
    again = api.score(where)
    assert again.run_id == made.run_id and again.summary.overall == made.summary.overall
    with pytest.raises(UsageError) as caught:
        api.score("longbench-pro", options=["nope=1"], predictions=predictions)
    assert str(caught.value).startswith("unknown longbench-pro option 'nope'")


def test_scoring_options_apply_to_the_run_named_in_a_directory_of_two_suites(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    lbp = api.score(
        "longbench-pro",
        options=[f"data={LBP_DATA}"],
        predictions=write_predictions(LBP_DATA, tmp_path, "p", {"mini-T3.2-en"}),
        output=run_dir,
    )
    latest = api.evaluate(longctx_spec(run_dir, lengths="1k"))  # longctx takes no labels
    labels = tmp_path / "labels.json"
    table = {f"{n}#nonthinking": "Extreme" for n in ("mini-T3.2-en", "mini-T3.2-zh")}
    table |= {f"{n}#nonthinking": "Extreme" for n in ("mini-T3.1-en", "mini-T3.1-zh")}
    labels.write_text(json.dumps({"labels_version": 1, "labels": table}), encoding="utf-8")
    option = [f"difficulty_labels={labels}"]
    scored = api.score(run_dir, lbp.run_id, options=option)
    (reported,) = api.report([run_dir], lbp.run_id, options=option).runs
    for summary in (scored.to_dict(), reported.scored.to_dict()):
        assert summary["modes"]["nonthinking"]["average_difficulty_metric"] == {"Extreme": 0.25}
        assert summary["longscope"]["difficulty_source"] == str(labels)
    assert scored.run_id == reported.scored.run_id == lbp.run_id
    plain = api.score(run_dir, lbp.run_id)
    assert plain.to_dict()["longscope"]["difficulty_source"] == "dataset"
    assert api.score(run_dir).run_id == latest.run_id


# --- judge ----------------------------------------------------------------------------------------


@pytest.fixture
def answered(tmp_path: Path) -> Path:
    """A 100-LongBench run scored by a judge, whose first judge gave no verdict (empty replies)."""
    api.evaluate(
        RunSpec.of(
            "hundred",
            "scripted/model",
            suite_options=list(JUDGED),
            model_options={"answer": "Paris.", "tokenizer": "qwen2.5"},
            judge_model="scripted/mute",
            output=tmp_path,
        )
    )
    return tmp_path


def test_judge_counts_what_it_judged_failed_and_found_judged(answered: Path) -> None:
    said: list[str] = []
    made = api.judge(answered, "scripted/j", None, ["answer=" + VERDICT], notify=said.append)
    assert (made.judged, made.failed, made.cached) == (2, 0, 0)
    assert said == [made.describe("scripted/j")]
    assert said == [
        "judge scripted/j: 2 judged, 0 failed (recorded, not scored as 0), 0 already judged"
    ]
    db = sqlite3.connect(answered / "longscope.sqlite")
    verdicts = db.execute("SELECT value FROM judgements WHERE judge = 'scripted/j'").fetchall()
    db.close()
    assert verdicts == [(1.0,), (1.0,)]
    assert made.scored.run_dir == answered
    again = api.judge(answered, "scripted/j", judge_options={"answer": VERDICT})
    assert (again.judged, again.failed, again.cached) == (0, 0, 2)
    # Without its options the judge replies nothing: failed, recorded, not scored as 0.
    mute = api.judge(answered, "scripted/k")
    assert (mute.judged, mute.failed, mute.cached) == (0, 2, 0)


def test_judge_refusals_name_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError) as caught:
        api.judge(tmp_path, "scripted/j\x1b")
    assert str(caught.value) == (
        "bad --judge-model 'scripted/j\\\\x1b': contains control or invisible characters"
    )
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError) as caught:
        api.judge(tmp_path, "openai/gpt-judge")
    assert str(caught.value) == (
        "judge openai/gpt-judge has no endpoint: give --judge-base-url URL (or --base-url for the "
        "evaluated model's own server); longscope sends judge prompts only where you say"
    )


# --- download_data --------------------------------------------------------------------------------

WORDS = b'["apple", "river", "stone"]\n'


def _punkt_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("punkt_tab/english/sentences.txt", "one. two.\n")
        archive.writestr("punkt_tab/README", "not extracted\n")
    return buffer.getvalue()


@pytest.fixture
def mirror(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A mirror of RULER's downloads on 127.0.0.1 (test_download's file server); every file
    pinned to the served bytes (the real files are not here) but punkt_tab.zip, left unpinned
    to show how a file without a pin is reported."""
    from longscope.suites.ruler import sources

    url = str(request.getfixturevalue("_file_server"))
    _Files.files = {
        "squad.json": b'{"data": []}',
        "hotpotqa.json": b"[]",
        "english_words.json": WORDS,
        "punkt_tab.zip": _punkt_zip(),
    }
    table = tuple(
        replace(f, sha256=None if f.name == "punkt_tab.zip" else _sha(_Files.files[f.name]))
        for f in sources.TABLE
    )
    monkeypatch.setattr(sources, "TABLE", table)
    return url


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def test_download_data_says_each_file_then_what_to_make_by_hand(
    mirror: str, tmp_path: Path
) -> None:
    folder = tmp_path / "data"
    done = api.download_data("ruler", folder, mirror=mirror)
    files = _Files.files
    expected = [
        f"downloaded: {folder / 'squad.json'} (sha256 {_sha(files['squad.json'])})",
        f"downloaded: {folder / 'hotpotqa.json'} (sha256 {_sha(files['hotpotqa.json'])})",
        f"downloaded: {folder / 'english_words.json'} (sha256 {_sha(WORDS)})",
        f"downloaded: {folder / 'punkt_tab.zip'} (sha256 {_sha(files['punkt_tab.zip'])}, "
        "not pinned)",
    ]
    assert list(done.lines[:4]) == expected
    (by_hand,) = done.lines[4:]
    assert by_hand.startswith("by hand: PaulGrahamEssays.json: RULER gathers the Paul Graham ")
    assert by_hand.endswith(f" (into {folder})")
    assert (folder / "english_words.json").read_bytes() == WORDS
    assert (folder / "nltk_data/tokenizers/punkt_tab/english/sentences.txt").exists()
    # Run again: every file is already there and matches.
    again = api.download_data("ruler", str(folder), mirror=mirror)
    assert [line.split(":")[0] for line in again.lines[:4]] == ["cached"] * 4
    assert again.lines[4] == by_hand


def test_download_data_goes_to_the_suites_cache_by_default(
    mirror: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "longscope" / "data" / "ruler"
    done = api.download_data("ruler", mirror=mirror)
    assert done.lines[0].startswith(f"downloaded: {cache / 'squad.json'} (sha256 ")
    assert done.lines[-1].endswith(f" (into {cache})")
    assert (cache / "english_words.json").read_bytes() == WORDS


def test_download_data_refusals_name_what_to_do(mirror: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        api.download_data("longctx", tmp_path)
    # every suite that declares downloads is named (the list grows as suites are added)
    from longscope.suites import suite_factory, suite_names

    with_data = [n for n in suite_names() if suite_factory(n).sources() is not None]
    assert {"longbench-pro", "mrcr", "ruler"} <= set(with_data) and "longctx" not in with_data
    assert str(caught.value) == (
        f"suite 'longctx' has no data to download: suites with data are {', '.join(with_data)}"
    )
    _Files.files["english_words.json"] = b"changed"
    with pytest.raises(UsageError) as caught:
        api.download_data("ruler", tmp_path, mirror=mirror)
    assert str(caught.value).startswith(
        f"checksum mismatch for RULER's english_words.json (cwe) from {mirror}/english_words.json"
    )
    assert not (tmp_path / "english_words.json").exists()
