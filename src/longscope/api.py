"""The library's front door, a thin facade: one call per command (`evaluate`, `plan`, `score`,
`report`, `compare`, `profile`, `judge`, `calibrate`, `longscore`, `export`, `catalogue`, ...).
The CLI parses options, calls these and prints; a bad value is a `UsageError` naming the option,
raised before anything is sent or stored. `run` and `plan` take one checked `RunSpec`
(run/spec.py), assembled into a suite and a backend in `run.assemble`; every command returns a
small typed result (`longscope.results`, or `RunResult`, `Plan`, `MergeReport`, `ScoreResult`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.params import parse_lengths
from longscope.results import (
    Calibration,
    Catalogue,
    Downloaded,
    Judged,
    Leaderboard,
    LongScoreRun,
    LongScores,
    Profile,
    Report,
    ReportedRun,
)
from longscope.run.adaptive import adaptive_of, evaluate_adaptive, forecast_plan, read_adaptive
from longscope.run.assemble import assemble, build_backend, judge_backend, judge_of, judged_run
from longscope.run.merge import MergeReport
from longscope.run.plan import Plan
from longscope.run.runner import RunResult
from longscope.run.scoring import ScoreResult, read_run, score_run
from longscope.run.spec import RunSpec, Scale, at_least, between
from longscope.run.stored import attach_differences, published_rows, stored_suite, with_published
from longscope.suites import scoring_overrides
from longscope.text.safe_text import visible

Notify = Callable[[str], None]


def evaluate(spec: RunSpec, *, notify: Notify | None = None) -> RunResult:
    """Run `spec`; return the stored, scored (and, when the suite asks, judged) run.

    `evaluate(RunSpec.of("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"],
    output="runs/x"))`; `RunSpec.of(..., router="profile.json")` (or `router_length=4096`) runs
    the model behind the context-budget router; its scale spreads the run over several endpoints
    or one shard of a job array (see `Scale`). A suite scored by an LLM judge is judged by the
    spec's judge model (default: the evaluated model). `notify` receives one-line messages (the
    forecast, the actual figures, warnings, judge counts).
    """
    from longscope.run.launch import launch

    say = notify or (lambda _: None)
    suite, backend, transport = assemble(spec)
    judged = judged_run(spec, suite)  # a judge with nowhere to go: refused before anything is sent
    # A judged suite is scored once, after its judge pass, not also before it.
    launched = launch(spec, suite, backend, transport=transport, say=say, score=not judged)
    result = launched.run
    assert result is not None
    if judged:
        if spec.judge.model is None:
            say("warning: no --judge-model given: the evaluated model judges its own answers")
        made = judge(result.run_dir, *judge_of(spec), notify=say)
        result = replace(result, scores=made.scored)
    return result


def adaptive(
    spec: RunSpec, rule: Any, *, plan_only: bool = False, notify: Notify | None = None
) -> Any:
    """Run `spec` adaptively (`run.adaptive.AdaptiveSpec` -> `AdaptiveResult`), or with
    `plan_only` return `plan(spec)` with what such a run is expected to send (`AdaptivePlan`)."""
    if plan_only:
        return forecast_plan(plan(spec), spec.suite, rule)
    return evaluate_adaptive(spec, rule, notify or (lambda _: None))


def plan(spec: RunSpec) -> Plan:
    """Return what `evaluate(spec)` would send, sending nothing but the probe's two short
    requests when `spec.scale.probe` asks for measured rates.

    Prompt tokens are counted exactly in the model's tokenizer; requests already stored in the
    spec's output are counted as done. The router and the judge play no part in a plan.
    """
    from longscope.run.launch import launch

    spec = replace(spec, routing=replace(spec.routing, profile=None, length=None), quiet=True)
    suite, backend, transport = assemble(spec)
    return launch(spec, suite, backend, transport=transport, plan_only=True).plan


def merge(
    out: str | Path, run_dirs: Sequence[str | Path], run_id: str | None = None
) -> MergeReport:
    """Merge shard stores of one run into `out` (idempotent); return what the merge did."""
    from longscope.run.merge import merge_runs

    return merge_runs(out, run_dirs, run_id)


def routes(result: RunResult) -> str:
    """Return what the router did in a run, in one line per decision kind."""
    from longscope.router import describe_routes
    from longscope.run.store import RunStore

    with RunStore.open_readonly(result.run_dir) as store:
        return describe_routes(store.routes(result.run_id))


# --- stored runs ---------------------------------------------------------------------------------


def score(
    target: str | Path,
    run_id: str | None = None,
    *,
    options: Sequence[str] = (),
    predictions: str | Path | None = None,
    output: str | Path | None = None,
) -> ScoreResult:
    """Re-score a stored run without a model, or store and score predictions made elsewhere.

    `target` is a run directory (`options`: `-S` pairs that change scores only, e.g. the
    embedder), or a suite name with `predictions` (`options` then give the suite's parameters,
    e.g. `data=FILE`; the run is stored in `output`).
    """
    if Path(target).is_dir() and predictions is None:
        overrides = scoring_overrides(stored_suite(target, run_id), options)
        return score_run(target, run_id, overrides)
    if predictions is None:
        raise UsageError(
            f"{visible(target)!r} is not a run directory; to score predictions made elsewhere "
            "give a suite name and --predictions FILE"
        )
    from longscope.run.predictions import score_predictions

    return score_predictions(str(target), predictions, options, output)


def report(
    run_dirs: Sequence[str | Path], run_id: str | None = None, *, options: Sequence[str] = ()
) -> Report:
    """Return stored runs scored in memory, read-only (archived, read-only runs can be reported).

    `options`: `-S` pairs that change scores only (e.g. LongBench Pro's `difficulty_labels`).
    """
    out = []
    for run_dir in run_dirs:
        overrides = scoring_overrides(stored_suite(run_dir, run_id), options)
        scored = read_run(run_dir, run_id, overrides)
        out.append(ReportedRun(Path(run_dir), scored, *adaptive_of(run_dir, scored.run_id)))
    return Report(tuple(out))


def write_reports(
    results: Report | list[tuple[Path, ScoreResult]],
    *,
    html: str | Path | None = None,
    markdown: str | Path | None = None,
) -> list[Path]:
    """Write the HTML and/or Markdown report of `results` (each file replaced whole)."""
    from longscope.files import write_atomic
    from longscope.report.html import render_html, render_markdown

    pairs = results.pairs() if isinstance(results, Report) else results
    told = [run.adaptive_text() for run in results.runs] if isinstance(results, Report) else []
    asked = ((html, render_html), (markdown, render_markdown))
    chosen = [(Path(file), render) for file, render in asked if file is not None]
    for path, render in chosen:
        write_atomic(path, render(pairs, told))
    return [path for path, _ in chosen]


def compare(
    run_dirs: Sequence[str | Path],
    *,
    thresholds: Sequence[float] = (),
    published: Sequence[str] = (),
    html: str | Path | None = None,
) -> Leaderboard:
    """Leaderboard rows across runs (and published rows beside them).

    `html`: also write the runs side by side as one self-contained page there.

    `thresholds`: effective length at each (default RULER's 85.6; `effective@N` columns).
    `published`: files (CSV or JSON with a source line) or names of data sets shipped with a
    suite (`longbench-pro`), whose rows are set beside the runs, marked `published`.
    """
    from longscope.analysis.effective import RULER_THRESHOLD
    from longscope.analysis.profile import leaderboard

    for threshold in thresholds:
        between(threshold, "--threshold", 0.0, 100.0)
    results = [read_run(run_dir) for run_dir in run_dirs]
    chosen = tuple(thresholds) or (RULER_THRESHOLD,)
    rows = leaderboard([r.summary for r in results], chosen)
    attach_differences(rows, [Path(d) for d in run_dirs], results)
    if published:
        rows = with_published(rows, [r.summary for r in results], published, chosen)
    if html is not None:
        from longscope.files import write_atomic
        from longscope.report.html import render_compare_html

        pairs = [(Path(d), r) for d, r in zip(run_dirs, results, strict=True)]
        write_atomic(Path(html), render_compare_html(rows, pairs))
    return Leaderboard(tuple(rows))


def profile(
    run_dirs: Sequence[str | Path],
    output: str | Path | None = None,
    *,
    threshold: float = 85.6,
    relative: float = 0.9,
) -> Profile:
    """Return (and write to `output`) a model profile: claimed vs effective context."""
    from longscope.analysis.profile import model_profile

    between(threshold, "--threshold", 0.0, 100.0)
    between(relative, "--relative", 0.0, 1.0)
    try:
        runs, decisions = [read_run(d) for d in run_dirs], [read_adaptive(d) for d in run_dirs]
        made = model_profile(runs, threshold, relative, adaptive=decisions)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if output is not None:
        from longscope.files import write_json

        write_json(Path(output), made)
    return Profile.of(made, Path(output) if output is not None else None)


def judge(
    run_dir: str | Path,
    judge_model: str,
    judge_base_url: str | None = None,
    judge_options: Sequence[str] | dict[str, Any] | None = None,
    *,
    notify: Notify | None = None,
) -> Judged:
    """Judge a stored run's answers that its suite asks a judge about (resumable); re-score it."""
    from longscope.run.judge import judge as judge_pass

    backend = judge_backend(judge_model, judge_base_url, judge_options)
    counts = judge_pass(run_dir, backend)
    made = Judged(counts["judged"], counts["failed"], counts["cached"], score_run(run_dir))
    if notify is not None:
        notify(made.describe(judge_model))
    return made


def calibrate(
    tiers: dict[str, Sequence[str | Path]], output: str | Path | None = None
) -> Calibration:
    """Model-calibrated labels from runs grouped by tier (`high`, `mid`, `low`), by their suite."""
    from longscope.suites import suite_factory

    try:
        results = {tier: [read_run(d) for d in dirs] for tier, dirs in tiers.items()}
        suites = sorted({r.suite for runs in results.values() for r in runs})
        if len(suites) != 1:
            raise ValueError(
                "calibration needs runs of one suite that calibrates its difficulty; got "
                + (", ".join(suites) or "no runs")
            )
        labels = suite_factory(suites[0]).calibrate(results)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if output is not None:
        from longscope.files import write_json

        write_json(Path(output), labels)
    return Calibration(labels["labels"], labels, Path(output) if output is not None else None)


def longscore(
    run_dirs: Sequence[str | Path], base: str = "2k,4k,6k", floor: float = 5.0
) -> LongScores:
    """Return each run's summary with the base lengths and floor its LongScore table uses."""
    from longscope.analysis.curves import at_base_lengths

    base_lengths = tuple(parse_lengths(base, "--base"))
    at_least(floor, "--floor", 0.0)
    return LongScores(
        tuple(
            LongScoreRun(
                Path(d),
                at_base_lengths(read_run(d).summary, base_lengths, floor),
                base_lengths,
                floor,
            )
            for d in run_dirs
        )
    )


def download_data(
    suite: str, folder: str | Path | None = None, *, mirror: str | None = None
) -> Downloaded:
    """Download `suite`'s inputs (see `longscope.download`); return one line per file."""
    from longscope.download import download_lines

    return Downloaded(tuple(download_lines(suite, folder, mirror=mirror)))


def catalogue(name: str | None = None) -> Catalogue:
    """Return what plugs in (suites, named models, providers), or the options of `name`."""
    return Catalogue.of(name)


def export(
    run_dirs: Sequence[str | Path],
    fmt: str,
    out: str | Path | None = None,
    *,
    run_id: str | None = None,
    model_id: str | None = None,
    provisional: bool = False,
) -> list[Any]:
    """Write stored runs in export format `fmt` (`longscope.export.FORMATS`); one `Exported` each."""
    from longscope.export import export as write

    return write(run_dirs, fmt, out, run_id=run_id, model_id=model_id, provisional=provisional)


__all__ = [
    "RunSpec",
    "Scale",
    "build_backend",
    "calibrate",
    "catalogue",
    "compare",
    "download_data",
    "evaluate",
    "export",
    "judge",
    "longscore",
    "merge",
    "plan",
    "profile",
    "published_rows",
    "report",
    "routes",
    "score",
    "write_reports",
]
