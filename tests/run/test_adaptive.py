"""`run --adaptive` (run/adaptive.py) on RULER against a backend whose accuracy falls with length.

The backend is the scripted one (models.scripted, a fault-injection double): it reads each needle
out of the prompt and answers right with a probability that falls with the sample's length, drawn
from the sample id, so the full grid's answer is known here without running it.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from longscope import api
from longscope.analysis.effective import effective_length
from longscope.errors import UsageError
from longscope.models.scripted import Failure, ScriptedBackend
from longscope.run.adaptive import (
    ADAPTIVE_NAME,
    AdaptiveSpec,
    describe_record,
    forecast_plan,
    read_adaptive,
    reference_curves,
    replay,
    run_adaptive,
)
from longscope.run.adaptive_time import describe_time, duration
from longscope.run.plan import Plan, PlanCell, PlanTask, eta_seconds, rate
from longscope.run.prepared import RunOptions
from longscope.run.store import STORE_NAME
from longscope.suites import create_suite
from longscope.types import Request, stable_hash
from tests.cli_helper import longscope

ACCURACY = {512: 1.0, 1024: 0.97, 2048: 0.5, 4096: 0.1}
SAMPLES = 24
PARAMS = {"tasks": "niah_single_1", "lengths": "512,1k,2k,4k", "samples": SAMPLES}


def _draw(sample_id: str) -> float:
    return int(stable_hash(sample_id, 8), 16) / 16**8


def _answer(request: Request) -> str:
    """The needle when the draw falls under the length's accuracy, else a wrong number."""
    text = request.text
    key = re.search(r"special magic number for (\S+?) mentioned", text)
    found = re.findall(rf"special magic numbers? for {re.escape(key.group(1))} is: (\d+)", text)
    length = int(request.sample_id.split("-")[1])
    return found[-1] if found and _draw(request.sample_id) < ACCURACY[length] else "0"


def _full_grid() -> str:
    """The full grid's effective length: every sample's outcome is known from its id."""
    scores = {
        n: 100.0 * sum(_draw(f"niah_single_1-{n}-{i:03d}") < p for i in range(SAMPLES)) / SAMPLES
        for n, p in ACCURACY.items()
    }
    return effective_length(scores).label


def _run(out: Path, backend: ScriptedBackend, spec: AdaptiveSpec | None = None):
    suite = create_suite("ruler", dict(PARAMS))
    return run_adaptive(suite, backend, RunOptions(output=out, quiet=True), spec or AdaptiveSpec())


def test_adaptive_ruler_run_decides_the_full_grids_length_for_less(tmp_path: Path) -> None:
    backend = ScriptedBackend("falls", answer=_answer, context_length=8192, latency_s=0.01)
    made = _run(tmp_path / "run", backend)
    decision = made.decision
    assert _full_grid() == "1024"  # the scripted curve crosses 85.6 between 1K and 2K
    assert made.stopped == "decided" and decision.decided
    assert decision.effective == "1024" and (decision.low, decision.high) == ("1024", "1024")
    statuses = {v.length: v.status for v in decision.verdicts}
    assert statuses == {512: "pass", 1024: "pass", 2048: "fail", 4096: "unmeasured"}
    # Every verdict has its interval; the failing one lies wholly under the bar.
    fail = next(v for v in decision.verdicts if v.length == 2048)
    assert fail.bounds.high < 85.6 and fail.bounds.low >= 0
    # Well under the full grid: nothing at 4K, and at most half the requests and tokens.
    sent = {int(r.sample_id.split("-")[1]) for r in backend.requests}
    assert 4096 not in sent
    assert made.sent_requests == len(backend.requests) <= made.grid_requests / 2
    assert made.sent_tokens <= 0.4 * made.grid_tokens
    # The record `profile` reads, and the ordinary summary of what was measured.
    record = read_adaptive(made.run_dir)
    assert record == json.loads((made.run_dir / ADAPTIVE_NAME).read_text())
    assert record["effective"] == "1024" and record["interval"] == ["1024", "1024"]
    assert (made.run_dir / "summary.json").is_file()
    assert "decided at 95% confidence" in made.describe()
    assert "4096 not measured, so their curve metrics are not the decision" in made.describe()
    # `profile` reads the decision, not the partial curve's bootstrap.
    measured = api.profile([made.run_dir]).data["measured"][0]
    assert measured["effective_length"] == 1024 and measured["effective_label"] == "1024"
    assert measured["adaptive"]["decided"] and measured["adaptive"]["interval"] == ["1024", "1024"]
    name = "effective length (adaptive, score >= 85.6, 0.95)"
    assert measured["intervals"][name] == {
        "estimate": "1024", "median": "1024", "low": "1024", "high": "1024"
    }  # fmt: skip
    assert not [k for k in measured["intervals"] if k.startswith("effective length (>=")]
    _check_time(made, record)


def _check_time(made, record: dict) -> None:
    """The run's time is its requests' in flight, read from the store; the full grid's is its
    tokens at the rates that, applied to what was sent, give that time back (this run's rates),
    or, where its latencies do not tell prefill from decode time, between the two ends."""
    import sqlite3

    with sqlite3.connect(made.run_dir / STORE_NAME) as db:
        rows = db.execute(
            "SELECT prompt_tokens, completion_tokens, latency_s, sample_id FROM generations "
            "WHERE run_id=?",
            (made.run_id,),
        ).fetchall()
    assert len(rows) == made.sent_requests
    timing, pace = made.timing, made.timing.pace
    # Up to eight requests in flight at a time: at least the longest, at most all in a row.
    assert 0.01 <= max(r[2] for r in rows) <= timing.wall_s <= sum(r[2] for r in rows)
    assert record["wall_s"] == round(timing.wall_s, 3)
    sent_prompt, sent_output = sum(r[0] for r in rows), sum(r[1] for r in rows)
    assert sent_output == timing.sent_output_tokens > 0
    assert pace.prompt_tps == pytest.approx(sent_prompt / timing.wall_s, rel=1e-12)
    assert pace.output_tps == pytest.approx(sent_output / timing.wall_s, rel=1e-12)
    assert record["pace"] == {
        "prompt_tps": round(pace.prompt_tps, 3), "output_tps": round(pace.output_tps, 3)
    }  # fmt: skip
    # The full grid's outputs: each length's requests at the mean output sent there (4096, never
    # sent, at the mean of all).
    by_length: dict[int, list[int]] = {}
    for _, output, _, sample_id in rows:
        by_length.setdefault(int(sample_id.split("-")[1]), []).append(output)
    mean = {n: sum(v) / len(v) for n, v in by_length.items()}
    grid_output = round(sum(SAMPLES * mean.get(n, sent_output / len(rows)) for n in ACCURACY))
    assert 4096 not in mean and timing.grid_output_tokens == grid_output
    tokens = (
        f"an estimate for its {made.grid_tokens:,} prompt and about {grid_output:,} output tokens"
    )
    line = next(x for x in made.describe().splitlines() if x.startswith("time: "))
    head = f"time: requests in flight for {duration(record['wall_s'])}; the full grid: about "
    # Each scripted answer takes 0.01 s whatever its tokens: whether a fit tells prefill from
    # decode time in them is up to the timer's noise, so both outcomes are checked exactly.
    if timing.rates is not None:
        assert timing.rates.source == "measured" and record["rates"]["source"] == "measured"
        back = eta_seconds(sent_prompt, sent_output, timing.rates)
        assert back == pytest.approx(timing.wall_s, rel=1e-9)
        assert timing.grid_eta_s == pytest.approx(
            eta_seconds(made.grid_tokens, grid_output, timing.rates), rel=1e-12
        )
        assert line == (
            f"{head}{duration(record['grid_eta_s'])} at this run's measured rates (prefill "
            f"{rate(record['rates']['prefill_tps'])} tok/s, decode "
            f"{rate(record['rates']['decode_tps'])} tok/s), {tokens}"
        )
    else:
        assert timing.grid_eta_s is None and record["rates"] is None
        ends = sorted((made.grid_tokens / pace.prompt_tps, grid_output / pace.output_tps))
        assert timing.grid_eta_range_s == pytest.approx(ends, rel=1e-12)
        low, high = (duration(x) for x in record["grid_eta_range_s"])
        assert line == (
            f"{head}{low if low == high else f'{low} to {high}'} at this run's measured rates, "
            "which do not tell prefill from decode time (all of it at "
            f"{rate(record['pace']['output_tps'])} output tok/s, or at "
            f"{rate(record['pace']['prompt_tps'])} prompt tok/s), {tokens}"
        )


def test_an_interrupted_adaptive_run_resumes_to_the_same_decision(tmp_path: Path) -> None:
    clean = _run(tmp_path / "clean", ScriptedBackend("falls", answer=_answer, context_length=8192))

    def dies(_: Request, number: int) -> Failure | None:
        return Failure("error", "HTTP 503: down") if number > 20 else None

    broken = ScriptedBackend("falls", answer=_answer, context_length=8192, fault=dies)
    cut = _run(tmp_path / "cut", broken)
    assert cut.stopped == "stalled" and not cut.decision.decided
    resumed = _run(tmp_path / "cut", ScriptedBackend("falls", answer=_answer, context_length=8192))
    assert resumed.decision == clean.decision
    assert read_adaptive(resumed.run_dir)["lengths"] == read_adaptive(clean.run_dir)["lengths"]


def test_replay_takes_only_the_rounds_each_look_asked_for() -> None:
    # Rounds stored beyond what the looks asked for (a look cut short and re-sent) change nothing.
    spec = AdaptiveSpec()
    rounds = {512: [1.0] * 12, 1024: [1.0] * 12, 2048: [0.0] * 8}
    more = {512: [1.0] * 24, 1024: [1.0] * 20, 2048: [0.0] * 8 + [1.0] * 16}
    pops = dict.fromkeys((512, 1024, 2048, 4096), 24)
    first, held = replay(rounds, list(pops), pops, spec)
    again, held_again = replay(more, list(pops), pops, spec)
    assert first.decided and first == again and held == held_again


def test_budget_stops_undecided_with_its_interval(tmp_path: Path) -> None:
    backend = ScriptedBackend("falls", answer=_answer, context_length=8192)
    made = _run(tmp_path / "run", backend, AdaptiveSpec(budget_tokens=8000))
    assert made.stopped == "budget" and not made.decision.decided
    assert made.sent_tokens <= 8000
    # 512 is decided within the budget; the next look at 1K would pass it.
    assert made.decision.low == "512" and made.decision.high == ">4096"
    assert "undecided (the token budget is spent)" in made.describe()
    # Its partial curve (512 alone, passing) would read ">512": the profile keeps it undecided.
    measured = api.profile([made.run_dir]).data["measured"][0]
    assert measured["effective_length"] is None and measured["effective_label"] == "undecided"
    assert measured["adaptive"]["interval"] == ["512", ">4096"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"confidence": 1.5}, "bad --confidence 1.5"),
        ({"confidence": 0.3}, "bad --confidence 0.3"),
        ({"rule": "median"}, "bad --adaptive-rule 'median'"),
        ({"budget_tokens": 0}, "bad --budget-tokens 0"),
    ],
)
def test_bad_adaptive_options_are_refused_in_one_line(given: dict, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        AdaptiveSpec(**given)


def test_cli_refuses_adaptive_options_without_adaptive(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from longscope.cli import app

    args = ["run", "ruler", "--model", "scripted/x", "--output", str(tmp_path / "run")]
    made = CliRunner().invoke(app, [*args, "--budget-tokens", "100"])
    # `longscope` (cli.main) prints a UsageError in one line and exits 2.
    assert isinstance(made.exception, UsageError), made.output
    assert str(made.exception) == (
        "--confidence, --adaptive-rule and --budget-tokens go with --adaptive"
    )
    assert not (tmp_path / "run").exists()


def test_cli_adaptive_run_prints_its_decision(tmp_path: Path) -> None:
    made = longscope(
        "run", "ruler", "--adaptive", "--model", "scripted/reader",
        "-M", r"pattern=magic numbers? for \S+ is: (\d+)", "-M", "context_length=4096",
        "-S", "tasks=niah_single_1", "-S", "samples=12", "--lengths", "512,1k",
        "--output", str(tmp_path / "run"), "--prefill-rate", "2000", "--decode-rate", "40",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "adaptive: effective length >1024 (score >= 85.6), decided at 95% confidence" in (
        made.stdout
    )
    record = read_adaptive(tmp_path / "run")
    assert record["effective"] == ">1024"
    # The full grid's time at the rates stated, as `plan` would give it.
    assert record["rates"] == {"prefill_tps": 2000.0, "decode_tps": 40.0, "source": "stated"}
    eta = record["grid_prompt_tokens"] / 2000 + record["grid_output_tokens"] / 40
    assert record["grid_eta_s"] == pytest.approx(eta, abs=1e-3)
    assert (
        f"the full grid: about {duration(record['grid_eta_s'])} at the stated rates (prefill "
        "2,000 tok/s, decode 40.0 tok/s), an estimate for its "
        f"{record['grid_prompt_tokens']:,} prompt" in made.stdout
    )


def test_plan_forecast_replays_the_suites_published_curves() -> None:
    lengths = [4096, 8192, 16384, 32768, 65536, 131072]
    curves, source = reference_curves("ruler", lengths)
    # Every sweep of RULER's table but EXAONE-4.0-1.2B's, which has no 128K score.
    assert len(curves) == 43 and source.startswith("published")
    assert reference_curves("ruler", [512, 1024]) == ([], reference_curves("ruler", [512])[1])
    cells = tuple(PlanCell(n, 13 * 40, 13 * 40 * n, 13 * 40 * 128, 0) for n in lengths)
    tasks = tuple(PlanTask(f"t{i}", 6 * 40, 0, 0, 0) for i in range(13))
    plan = Plan("run", cells, 0, 1, None, None, None, tasks=tasks)
    made = forecast_plan(plan, "ruler", AdaptiveSpec(), runs=2)
    assert made.forecast.runs == 86 and made.forecast.curves == 43
    assert 0 < made.forecast.mean < 1 and made.forecast.median <= made.forecast.high <= 1
    text = made.table()
    assert "adaptive forecast:" in text and "from 86 simulated runs on 43 published" in text
    assert f"about {round(made.forecast.mean * plan.prompt_tokens):,} prompt tokens" in text


LONGCTX_ACCURACY = {1024: 1.0, 2048: 0.1, 4096: 0.0}
LONGCTX_DEPTHS = 24


def _longctx_answer(request: Request) -> str:
    """LongCtx's needle gold when the sample's draw falls under its length's accuracy."""
    from longscope.suites.longctx.suite import GRID_TASKS
    from longscope.suites.longctx.tasks import TASKS_BY_ID

    length = int(request.sample_id.split("-")[1])
    gold = TASKS_BY_ID[GRID_TASKS["needle"]].answer["en"]
    return gold if _draw(request.sample_id) < LONGCTX_ACCURACY[length] else "0"


def test_adaptive_runs_a_suite_built_whole_by_length(tmp_path: Path) -> None:
    # LongCtx builds its list at once (no cells): the run sees one cell per length, its samples in
    # a fixed order by id hash, and decides as a suite built by cells does.
    depths = ",".join(f"{d / LONGCTX_DEPTHS:.4f}" for d in range(LONGCTX_DEPTHS))
    params = {"lengths": "1k,2k,4k", "depths": depths, "types": "needle"}
    backend = ScriptedBackend("falls", answer=_longctx_answer, context_length=8192)
    suite = create_suite("longctx", params)
    made = run_adaptive(
        suite, backend, RunOptions(output=tmp_path / "run", quiet=True), AdaptiveSpec()
    )
    ids = [
        f"needle-{n}-d{round(100 * d / LONGCTX_DEPTHS):03d}"
        for n in LONGCTX_ACCURACY
        for d in range(LONGCTX_DEPTHS)
    ]
    truth = {
        n: 100.0 * sum(_draw(i) < p for i in ids if f"-{n}-" in i) / LONGCTX_DEPTHS
        for n, p in LONGCTX_ACCURACY.items()
    }
    assert effective_length(truth).label == "1024"
    assert made.stopped == "decided" and made.decision.effective == "1024"
    statuses = {v.length: v.status for v in made.decision.verdicts}
    assert statuses == {1024: "pass", 2048: "fail", 4096: "unmeasured"}
    sent = [r.sample_id for r in backend.requests]
    assert not [s for s in sent if "-4096-" in s]
    assert (
        made.grid_requests == 3 * LONGCTX_DEPTHS
        and made.sent_requests == len(sent) < 2 * LONGCTX_DEPTHS
    )
    # The samples at 2K went in the fixed order (by id hash), not the suite's depth order.
    at_2k = [s for s in sent if "-2048-" in s]
    assert at_2k == sorted(at_2k, key=stable_hash)[: len(at_2k)]
    record = read_adaptive(made.run_dir)
    # Rounds of one sample: the finite-sample (betting) sequence, not the asymptotic.
    assert record["effective"] == "1024" and record["method"] == "betting"


BABILONG_ACCURACY = {"1k": 1.0, "2k": 0.3, "4k": 0.0}
BABILONG_ROWS = 24


def _babilong_answer(request: Request) -> str:
    """qa1's target when the row's draw falls under its length's accuracy, else a wrong room."""
    length = request.sample_id.split("-")[1]
    return "bathroom" if _draw(request.sample_id) < BABILONG_ACCURACY[length] else "garden"


def test_adaptive_runs_babilong_by_its_cells(tmp_path: Path) -> None:
    from longscope.suites import suite_from_options
    from tests.suites.babilong.rows import write_folder

    write_folder(tmp_path / "data", {("qa1", n): BABILONG_ROWS for n in BABILONG_ACCURACY})
    suite = suite_from_options(
        "babilong", [f"data={tmp_path / 'data'}", "tasks=qa1"], {"lengths": "1k,2k,4k"}
    )
    backend = ScriptedBackend("falls", answer=_babilong_answer, context_length=8192)
    made = run_adaptive(
        suite, backend, RunOptions(output=tmp_path / "run", quiet=True), AdaptiveSpec()
    )
    truth = {
        1000 * int(n[0]): 100.0
        * sum(_draw(f"qa1-{n}-{i:04d}") < p for i in range(BABILONG_ROWS))
        / BABILONG_ROWS
        for n, p in BABILONG_ACCURACY.items()
    }
    assert effective_length(truth).label == "1000"
    assert made.stopped == "decided" and made.decision.effective == "1000"
    assert {v.length: v.status for v in made.decision.verdicts} == {
        1000: "pass", 2000: "fail", 4000: "unmeasured"
    }  # fmt: skip
    assert not [r for r in backend.requests if "-4k-" in r.sample_id]
    # The 0k length (no haystack, 0 tokens) is no length to measure: refused in one line.
    zero = suite_from_options(
        "babilong", [f"data={tmp_path / 'data'}", "tasks=qa1"], {"lengths": "0k,1k"}
    )
    write_folder(tmp_path / "data", {("qa1", "0k"): 2})
    with pytest.raises(UsageError, match=r"babilong has a cell at no length \(0 tokens\)"):
        run_adaptive(
            zero, backend, RunOptions(output=tmp_path / "zero", quiet=True), AdaptiveSpec()
        )
    assert not (tmp_path / "zero" / STORE_NAME).exists()


NOLIMA_ACCURACY = {250: 1.0, 500: 1.0, 1000: 0.2}


def _nolima_answer(request: Request) -> str:
    """The painter the needle names when the sample's draw falls under its length's accuracy."""
    length = int(request.sample_id.split("/")[2])
    named = re.search(r"Long ago, (\w+) painted a mural", request.text)
    return named.group(1) if named and _draw(request.sample_id) < NOLIMA_ACCURACY[length] else "?"


def test_adaptive_nolima_builds_no_more_than_it_sends(tmp_path: Path, monkeypatch) -> None:
    # NoLiMa's cells have no id format: the ids a look's rounds need are made as pulled, never the
    # whole grid (a haystack per sample) to learn them.
    from longscope.suites import suite_from_options
    from longscope.suites.nolima.suite import NoLiMaSuite
    from tests.suites.nolima.rows import fixture_dataset

    folder = fixture_dataset(tmp_path, books=1, lines=200)
    suite = suite_from_options("nolima", [f"data={folder}"], {"lengths": "250,500,1000"})
    built: list[str] = []
    make = NoLiMaSuite._sample

    def counted(self, *args, **kwargs):
        made = make(self, *args, **kwargs)
        built.append(made.id)
        return made

    monkeypatch.setattr(NoLiMaSuite, "_sample", counted)
    backend = ScriptedBackend("falls", answer=_nolima_answer, context_length=8192)
    spec = AdaptiveSpec(rule="relative", fraction=0.85)
    made = run_adaptive(suite, backend, RunOptions(output=tmp_path / "run", quiet=True), spec)
    assert made.decision.decided and made.decision.effective == "500"
    sent = {r.sample_id for r in backend.requests}
    grid = made.grid_requests
    assert len(sent) < grid / 2
    # Fewer samples made than the full grid holds (learning every cell's ids made all of them:
    # 464 here). Each look still makes its cells' earlier samples again to skip them (a cell's
    # samples are made in index order), so a sample is made about three times.
    assert len(built) < grid and len(built) <= 4 * len(sent)


def test_report_shows_the_decision_and_a_later_full_run_makes_the_record_stale(
    tmp_path: Path,
) -> None:
    from longscope.run.adaptive import adaptive_state
    from longscope.run.runner import run

    backend = ScriptedBackend("falls", answer=_answer, context_length=8192, latency_s=0.001)
    made = _run(tmp_path / "run", backend)
    reported = api.report([made.run_dir]).runs[0]
    assert reported.adaptive == read_adaptive(made.run_dir)
    text = reported.adaptive_text()
    assert text.startswith("adaptive: effective length 1024 (score >= 85.6), decided at 95%")
    share = 100 * made.sent_tokens / made.grid_tokens
    assert (
        f"cost: {made.sent_requests:,} of the full grid's {made.grid_requests:,} requests" in text
    )
    assert f"({share:.1f}%)" in text
    assert text.splitlines()[-1] == describe_time(reported.adaptive)
    assert text.splitlines()[-1].startswith("time: requests in flight for ")
    # A record written before the time was kept reads as before: no time line.
    timeless = {k: v for k, v in reported.adaptive.items() if k not in ("wall_s", "grid_eta_s")}
    assert describe_record(timeless) == "\n".join(text.splitlines()[:-1])
    # HTML and Markdown reports carry the decision, its text as data (an edited record's names).
    hostile = "<script>alert(1)</script>"
    # Stated rates: whether this run's own latencies tell prefill from decode depends on the load.
    rates = {"prefill_tps": 1000.0, "decode_tps": 10.0, "source": hostile}
    record = {**reported.adaptive, "grid_eta_s": 60.0, "rates": rates}
    (made.run_dir / ADAPTIVE_NAME).write_text(json.dumps(record))
    written = api.write_reports(
        api.report([made.run_dir]), html=tmp_path / "r.html", markdown=tmp_path / "r.md"
    )
    page, notes = (path.read_text() for path in written)
    assert "<h3>Adaptive decision</h3>" in page and hostile not in page
    assert "at rates (&lt;script&gt;alert(1)&lt;/script&gt;)" in page
    assert "effective length 1024 (score &gt;= 85.6), decided at 95% confidence" in page
    assert "### Adaptive decision" in notes and "<script>" not in notes
    assert "- time: requests in flight for " in notes
    assert api.report([made.run_dir]).summaries()["adaptive"]["effective"] == "1024"
    # The full grid in the same directory (the same run): the record no longer describes it.
    suite = create_suite("ruler", dict(PARAMS))
    backend = ScriptedBackend("falls", answer=_answer, context_length=8192)
    run(suite, backend, RunOptions(output=made.run_dir, quiet=True))
    record, note = adaptive_state(made.run_dir)
    assert record is None and read_adaptive(made.run_dir) is None
    assert note == (
        f"adaptive.json is stale: the run holds {4 * SAMPLES} samples, the adaptive run had "
        f"{made.sent_requests}; its scores are the run's own curve, not the adaptive decision"
    )
    again = api.report([made.run_dir]).runs[0]
    assert again.adaptive is None and again.adaptive_text() == note
    assert "adaptive" not in api.report([made.run_dir]).summaries()
    # `profile` reads the full curve's effective length, the full grid's own.
    measured = api.profile([made.run_dir]).data["measured"][0]
    assert "adaptive" not in measured and measured["effective_label"] == _full_grid()


def test_cli_report_prints_an_adaptive_runs_decision(tmp_path: Path) -> None:
    made = _run(tmp_path / "run", ScriptedBackend("falls", answer=_answer, context_length=8192))
    shown = longscope("report", str(made.run_dir))
    assert shown.returncode == 0, shown.stderr
    assert made.describe() in shown.stdout


SERVED_LENGTHS = "512,1k,2k"
SERVED_SAMPLES = 6


@pytest.mark.slow
@pytest.mark.model
def test_adaptive_ruler_against_a_real_server_decides_the_full_grids_length(
    tmp_path: Path,
) -> None:
    """The embedded model behind llama-cpp-python's server, RULER niah_single_1 at short lengths
    where its accuracy falls: the adaptive run decides, then the same command without --adaptive
    completes the grid in the same directory, and the decision is the full grid's."""
    from longscope.analysis.adaptive import Rule, grid_effective
    from longscope.catalogue import resolve_model_path
    from tests.llama_server import start_server, stop, wait_ready

    log = tmp_path / "server.log"
    proc, url = start_server(resolve_model_path("gemma3-270m"), log, n_ctx=4096, alias="gemma")
    out = tmp_path / "run"
    common = [
        "ruler", "--model", "openai/gemma", "--base-url", url, "-M", "prompt_mode=completion",
        "-M", "context_length=4096", "-M", "tokenizer=gemma3-270m", "--concurrency", "1",
        "-S", "tasks=niah_single_1", "-S", f"samples={SERVED_SAMPLES}",
        "--lengths", SERVED_LENGTHS, "-o", str(out),
    ]  # fmt: skip
    try:
        wait_ready(proc, url, log)
        adaptive = longscope(
            "run", *common, "--adaptive", "--adaptive-rule", "relative", timeout=1800
        )
        assert adaptive.returncode == 0, adaptive.stderr[-2000:]
        record = read_adaptive(out)
        assert record is not None and record["decided"]
        assert record["sent_requests"] < record["grid_requests"]
        assert describe_time(record) in adaptive.stdout and record["wall_s"] > 0
        full = longscope("run", *common, timeout=1800)
        assert full.returncode == 0, full.stderr[-2000:]
    finally:
        stop(proc)
    scores = api.report([out]).runs[0].scored.summary.by_length
    assert len(scores) == 3
    truth = grid_effective(scores, Rule("relative", fraction=0.9))
    label = effective_length(scores, 0.9 * scores[min(scores)]).label
    assert record["effective_tokens"] == truth and record["effective"] == label
    assert record["interval"] == [label, label]
    for row in record["lengths"]:
        if row["rounds"]:
            assert row["low"] <= row["estimate"] <= row["high"]
            # A length measured whole is the full grid's own score there.
            if row["rounds"] == row["rounds_full"]:
                assert row["estimate"] == pytest.approx(scores[row["length"]], abs=0.01)
    # The record is stale now: the full run holds every sample.
    assert read_adaptive(out) is None


def test_a_build_is_grouped_by_each_suites_grid_length() -> None:
    # LongBench Pro's samples vary in length around their bucket, 100-LongBench's around their
    # target: each is grouped by the length its curve scores it at; a no-context base sample
    # (100-LongBench, target 0) is in no cell; the order within a length is by id hash.
    from longscope.run.prepared import CellSelection
    from longscope.suites.base import BuildCell
    from longscope.suites.hundred.suite import HundredSuite
    from longscope.suites.longbench_pro.suite import LongBenchProSuite
    from longscope.types import Sample

    def sample(i: int, length: int, **meta: object) -> Sample:
        return Sample(f"s{i}", "t", "en", "c", "q", ("a",), length=length, meta=dict(meta))

    class Built:
        """A whole build as `SampleSource` holds one (the suite's `grid_length` is all it asks)."""

        def __init__(self, suite: type, samples: list[Sample]) -> None:
            self.suite, self.ctx, self.lazy = suite.__new__(suite), None, False
            self.cells = (BuildCell("", 0, len(samples)),)
            self._samples = samples

        def samples(self, cell: BuildCell, count: int):
            return iter(self._samples[:count])

    lbp = [sample(i, 7000 + 9000 * (i % 2), token_length=("8k", "16k")[i % 2]) for i in range(8)]
    made = CellSelection(Built(LongBenchProSuite, lbp))  # type: ignore[arg-type]
    assert [(c.length, c.count) for c in made.cells] == [(8192, 4), (16384, 4)]
    at_8k = [s.id for s in made.samples(made.cells[0], 4)]
    assert at_8k == sorted(["s0", "s2", "s4", "s6"], key=stable_hash)
    assert made.sample_id(made.cells[0], 1) == at_8k[1]
    hundred = [sample(i, 3900 + i, target_length=4096) for i in range(3)]
    hundred.append(sample(9, 0, target_length=0))  # the no-context base sample
    made = CellSelection(Built(HundredSuite, hundred), limit=2)  # type: ignore[arg-type]
    assert [(c.length, c.count) for c in made.cells] == [(4096, 2)]


def test_plan_forecast_of_a_suite_built_whole_simulates_what_its_run_sends() -> None:
    # LongCtx is built whole: its run sends one sample a round by the betting sequence, and the
    # forecast simulates the same; RULER's keeps rounds of its tasks.
    lengths = [1024, 2048, 4096]
    cells = tuple(PlanCell(n, 20, 20 * n, 20 * 128, 0) for n in lengths)
    tasks = (PlanTask("needle", 60, 0, 0, 0),)
    plan = Plan("run", cells, 0, 1, None, None, None, tasks=tasks)
    whole = forecast_plan(plan, "longctx", AdaptiveSpec(), runs=2).forecast
    by_cells = forecast_plan(plan, "ruler", AdaptiveSpec(), runs=2).forecast
    assert whole.method == "betting" and by_cells.method == "asymptotic"


def test_the_same_run_without_adaptive_removes_the_record_it_outgrew(tmp_path: Path) -> None:
    from longscope.run.adaptive import drop_stale_record
    from longscope.run.spec import RunSpec

    made = _run(tmp_path / "run", ScriptedBackend("falls", answer=_answer, context_length=8192))
    options = [f"{k}={v}" for k, v in PARAMS.items()]

    def full(backend: ScriptedBackend) -> None:
        spec = RunSpec.of("ruler", backend, suite_options=options, output=made.run_dir)
        api.evaluate(replace(spec, quiet=True))

    # A record its run still matches is kept (nothing stored since it was written).
    assert not drop_stale_record(made.run_dir) and read_adaptive(made.run_dir) is not None
    full(ScriptedBackend("falls", answer=_answer, context_length=8192))
    assert not (made.run_dir / ADAPTIVE_NAME).exists()
    assert api.report([made.run_dir]).runs[0].adaptive_text() == ""


def test_adaptive_longbench_pro_counts_its_buckets_tokens(tmp_path: Path) -> None:
    # LongBench Pro is built whole and its samples count no prompt tokens of their own: the run
    # groups them by bucket and costs each at its bucket's length (the suite's grid_length).
    data = Path(__file__).parents[1] / "fixtures" / "longbench_pro_mini.json"
    suite = create_suite("longbench-pro", {"data": str(data)})
    backend = ScriptedBackend("silent", answer=lambda _: "", context_length=300_000)
    made = run_adaptive(
        suite, backend, RunOptions(output=tmp_path / "run", quiet=True), AdaptiveSpec()
    )
    assert made.decision.decided and made.decision.effective == "<8192"
    assert {v.length for v in made.decision.verdicts} == {8192 * 2**k for k in range(6)}
    assert made.sent_requests == len(backend.requests) > 0
    assert made.sent_tokens == 8192 * made.sent_requests
    assert 0 < made.sent_tokens < made.grid_tokens
