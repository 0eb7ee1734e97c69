"""The library's front door: one call per command (`evaluate`, `score`, `report`, `compare`,
`profile`, `judge`, `calibrate`, `longscore`). The CLI parses options, calls these and prints.

Every value is checked here, so the library refuses what the command line refuses: a bad value is a
`UsageError` naming the option, raised before anything is sent or stored.

    from longscope import RunSpec, evaluate
    result = evaluate(RunSpec.of("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"]))
    result.result.typed.headline.text()

`run` and `plan` take one checked `RunSpec` (run/spec.py); every command returns a small typed
result (`longscope.results`, or the run's own `RunResult`, `Plan`, `MergeReport`, `ScoreResult`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend, Forwarding, ModelInfo
from longscope.results import (
    Calibration,
    Downloaded,
    Judged,
    Leaderboard,
    LongScoreRun,
    LongScores,
    Profile,
    Report,
    ReportedRun,
)
from longscope.run.merge import MergeReport
from longscope.run.plan import Plan
from longscope.run.runner import RunResult
from longscope.run.scoring import ScoreResult, read_run, score_run
from longscope.run.spec import (
    RunSpec,
    Scale,
    at_least,
    between,
    model_options,
    model_spec,
)
from longscope.suites import (
    create_suite,
    refuse_scoring_options,
    scoring_overrides,
    suite_from_options,
)
from longscope.suites.base import Suite
from longscope.suites.params import parse_lengths
from longscope.text.safe_text import visible

Notify = Callable[[str], None]


class _OutputBudgetCheck(Forwarding):
    """A backend seen through `--max-tokens`: refuses a budget its context cannot hold.

    The context length is known only once the backend answers `info()` (a server's /models, a
    loaded GGUF), before anything is built or stored; every other declared member is forwarded.
    """

    def __init__(self, backend: Backend, max_tokens: int) -> None:
        super().__init__(backend)
        self._max_tokens = max_tokens

    async def info(self) -> ModelInfo:
        info = await self.inner.info()
        if info.context_length is not None and self._max_tokens >= info.context_length:
            raise UsageError(
                f"--max-tokens {self._max_tokens} does not fit {visible(self.inner.name)}: it "
                f"holds {info.context_length} tokens ({info.context_source}) for prompt and "
                "answer together; use a smaller --max-tokens"
            )
        return info


# --- run ----------------------------------------------------------------------------------------


def build_suite(
    name: str,
    options: Sequence[str] = (),
    *,
    params: dict[str, Any] | None = None,
    lengths: str | None = None,
    seed: int | None = None,
) -> Suite:
    """Return suite `name` from `-S key=value` pairs (or typed `params`) and the common options."""
    if params is not None:
        suite = create_suite(name, params)
    else:
        suite = suite_from_options(name, options, {"lengths": lengths, "seed": seed})
    refuse_scoring_options(suite, params if params is not None else options)
    return suite


def build_backend(
    model: str,
    options: Sequence[str] | dict[str, Any] | None = None,
    *,
    base_url: str | Sequence[str] | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    router: str | Path | None = None,
    router_strategy: str = "map-reduce",
    router_basis: str = "absolute",
    router_length: str | int | None = None,
    max_tokens: int | None = None,
    max_tokens_in_flight: int | None = None,
    prefill_rate: float | None = None,
    decode_rate: float | None = None,
) -> Backend:
    """Return the backend for `provider/name`, behind the router and the output-budget check.

    Several `base_url`s (or a token cap, or stated rates) give one openai/ model over several
    endpoints with token-aware flow control (`models/endpoints.py`).
    """
    return _wrapped(
        transport_backend(
            model,
            options,
            base_url=base_url,
            concurrency=concurrency,
            request_timeout=request_timeout,
            max_tokens_in_flight=max_tokens_in_flight,
            prefill_rate=prefill_rate,
            decode_rate=decode_rate,
        ),
        router=router,
        router_strategy=router_strategy,
        router_basis=router_basis,
        router_length=router_length,
        max_tokens=max_tokens,
    )


def transport_backend(
    model: str,
    options: Sequence[str] | dict[str, Any] | None = None,
    *,
    base_url: str | Sequence[str] | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    max_tokens_in_flight: int | None = None,
    prefill_rate: float | None = None,
    decode_rate: float | None = None,
) -> Backend:
    """Return the backend that talks to the model (one endpoint or several), before any wrapper."""
    from longscope.models.registry import create_backend, split_model_spec
    from longscope.models.retry import with_retries
    from longscope.models.urls import base_url_or_env

    # The checks of these options are Scale's (one place for the library and the command line).
    Scale(
        concurrency=concurrency,
        request_timeout=request_timeout,
        max_tokens_in_flight=max_tokens_in_flight,
        prefill_rate=prefill_rate,
        decode_rate=decode_rate,
    )
    spec = model_spec(model)
    parsed = model_options(options)
    urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
    provider, name = split_model_spec(spec)
    flow = max_tokens_in_flight is not None or prefill_rate is not None or decode_rate is not None
    if provider == "openai" and (len(urls) > 1 or flow):
        from longscope.models.endpoints import create_multi_backend

        return create_multi_backend(
            name,
            parsed,
            urls or [base_url_or_env(None)],
            concurrency=concurrency,
            request_timeout_s=request_timeout,
            token_cap=max_tokens_in_flight,
            prefill_tps=prefill_rate,
            decode_tps=decode_rate,
        )
    if len(urls) > 1 or max_tokens_in_flight is not None:
        what = "several --base-url apply" if len(urls) > 1 else "--max-tokens-in-flight applies"
        raise UsageError(
            f"{what} only to openai/ models served by OpenAI-compatible endpoints, "
            f"not {visible(provider)}/"
        )
    backend = create_backend(
        spec,
        parsed,
        base_url=urls[0] if urls else None,
        concurrency=concurrency,
        request_timeout_s=request_timeout,
    )
    # One retry policy around every backend that does not retry inside its transport.
    return with_retries(backend)


def _wrapped(
    backend: Backend,
    *,
    router: str | Path | None = None,
    router_strategy: str = "map-reduce",
    router_basis: str = "absolute",
    router_length: str | int | None = None,
    max_tokens: int | None = None,
) -> Backend:
    if router is not None or router_length is not None:
        from longscope.router import with_router

        length = router_length
        if isinstance(length, str):
            length = parse_lengths(length, "--router-length")[0]
        backend = with_router(
            backend,
            str(router) if router is not None else None,
            strategy=router_strategy,  # type: ignore[arg-type]
            basis=router_basis,  # type: ignore[arg-type]
            length=length,
        )
    if max_tokens is not None:
        backend = _OutputBudgetCheck(backend, max_tokens)  # type: ignore[assignment]
    return backend


def _prepared(spec: RunSpec) -> tuple[Suite, Backend, Backend]:
    """Return `spec`'s suite (or its shard), its backend, and that backend's transport."""
    from longscope.run.launch import sharded

    gen, scale, routing = spec.generation, spec.scale, spec.routing
    if isinstance(spec.suite, str):
        params = dict(spec.suite_params) if spec.suite_params is not None else None
        suite = build_suite(
            spec.suite, spec.suite_options, params=params, lengths=gen.lengths, seed=gen.seed
        )
    else:
        suite = spec.suite
    suite = sharded(suite, scale.shard)
    if isinstance(spec.model, str):
        transport = transport_backend(
            spec.model,
            dict(spec.model_options),
            base_url=endpoint_urls_of(scale),
            concurrency=scale.concurrency,
            request_timeout=scale.request_timeout,
            max_tokens_in_flight=scale.max_tokens_in_flight,
            prefill_rate=scale.prefill_rate,
            decode_rate=scale.decode_rate,
        )
        max_tokens = gen.max_tokens
    else:  # a backend built by the caller: its context is the caller's to size
        transport, max_tokens = spec.model, None
    backend = _wrapped(
        transport,
        router=routing.profile,
        router_strategy=routing.strategy,
        router_basis=routing.basis,
        router_length=routing.length,
        max_tokens=max_tokens,
    )
    return suite, backend, transport


def evaluate(spec: RunSpec, *, notify: Notify | None = None) -> RunResult:
    """Run `spec`; return the stored, scored (and, when the suite asks, judged) run.

    `evaluate(RunSpec.of("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"],
    output="runs/x"))`; `RunSpec.of(..., router="profile.json")` (or `router_length=4096`) runs
    the model behind the context-budget router; its scale spreads the run over several endpoints
    or one shard of a job array (see `Scale`). A suite scored by an LLM judge is judged by the
    spec's judge model (default: the evaluated model). `notify` receives one-line messages (the
    forecast, the actual figures, warnings, judge counts).
    """
    from longscope.run.judge import uses_judge
    from longscope.run.launch import launch

    say = notify or (lambda _: None)
    suite, backend, transport = _prepared(spec)
    judged = uses_judge(suite)
    judge_model = spec.judge.model
    if judged and judge_model is None and not isinstance(spec.model, str):
        raise UsageError("this suite is scored by an LLM judge: give judge_model")
    # The judge goes only to a host the user named: its own URL, else the evaluated model's.
    urls = endpoint_urls_of(spec.scale)
    judge_base_url = spec.judge.base_url
    url = judge_base_url if judge_base_url is not None else (urls[0] if urls else None)
    if judged:  # a judge with nowhere to go is refused before the run sends anything
        _judge_endpoint(model_spec(judge_model or str(spec.model), "--judge-model"), url)
    # A judged suite is scored once, after its judge pass, not also before it.
    launched = launch(spec, suite, backend, transport=transport, say=say, score=not judged)
    result = launched.result
    assert result is not None
    if judged:
        if judge_model is None:
            say("warning: no --judge-model given: the evaluated model judges its own answers")
        opts = dict(spec.model_options) if judge_model is None else {}
        made = judge(result.run_dir, judge_model or str(spec.model), url, opts, notify=say)
        result = replace(result, result=made.scored)
    return result


def endpoint_urls_of(scale: Scale) -> list[str]:
    """Return the endpoints `scale` names (`--base-url` repeated, then `--base-urls FILE`)."""
    from longscope.run.launch import endpoint_urls

    return endpoint_urls(scale.base_url, scale.base_urls_file)


def plan(spec: RunSpec) -> Plan:
    """Return what `evaluate(spec)` would send, sending nothing but the probe's two short
    requests when `spec.scale.probe` asks for measured rates.

    Prompt tokens are counted exactly in the model's tokenizer; requests already stored in the
    spec's output are counted as done. The router and the judge play no part in a plan.
    """
    from longscope.run.launch import launch

    spec = replace(spec, routing=replace(spec.routing, profile=None, length=None), quiet=True)
    suite, backend, transport = _prepared(spec)
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


def _suite_of(run_dir: str | Path, run_id: str | None = None) -> str:
    from longscope.run.store import RunStore

    with RunStore.open_readonly(run_dir) as store:
        return str(store.run(run_id)["suite"])


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
        overrides = scoring_overrides(_suite_of(target, run_id), options)
        return score_run(target, run_id, overrides)
    if predictions is None:
        raise UsageError(
            f"{visible(target)!r} is not a run directory; to score predictions made elsewhere "
            "give a suite name and --predictions FILE"
        )
    from longscope.run.predictions import import_predictions
    from longscope.suites import suite_factory, suite_options
    from longscope.suites.params import parse_options

    name = str(target)
    suite_factory(name)  # an unknown suite: one line naming the known ones
    params = parse_options(name, suite_options(name), options)
    where = (
        Path(output) if output else Path("runs") / f"{name}-predictions-{Path(predictions).stem}"
    )
    return import_predictions(name, predictions, where, params)


def report(
    run_dirs: Sequence[str | Path], run_id: str | None = None, *, options: Sequence[str] = ()
) -> Report:
    """Return stored runs scored in memory, read-only (archived, read-only runs can be reported).

    `options`: `-S` pairs that change scores only (e.g. LongBench Pro's `difficulty_labels`).
    """
    out = []
    for run_dir in run_dirs:
        overrides = scoring_overrides(_suite_of(run_dir, run_id), options)
        out.append(ReportedRun(Path(run_dir), read_run(run_dir, run_id, overrides)))
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

    if isinstance(results, Report):
        results = results.pairs()
    written = []
    if html is not None:
        write_atomic(Path(html), render_html(results))
        written.append(Path(html))
    if markdown is not None:
        write_atomic(Path(markdown), render_markdown(results))
        written.append(Path(markdown))
    return written


def compare(
    run_dirs: Sequence[str | Path],
    *,
    thresholds: Sequence[float] = (),
    published: Sequence[str] = (),
) -> Leaderboard:
    """Leaderboard rows across runs (and published rows beside them).

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
    rows = leaderboard([r.result for r in results], chosen)
    _attach_differences(rows, [Path(d) for d in run_dirs], results)
    if not published:
        return Leaderboard(tuple(rows))
    for spec in published:
        rows += published_rows(spec).leaderboard_rows(chosen)
    # The runs take their places among the published rows; rows without a score stay last.
    rows.sort(key=lambda r: (r["state"] == "no score", -(r.get("overall") or 0.0)))
    return Leaderboard(tuple(rows))


def _attach_differences(
    rows: list[dict[str, Any]], run_dirs: Sequence[Path], results: Sequence[ScoreResult]
) -> None:
    """Give each run's row after the first its difference from the first run (`vs_reference`)."""
    from longscope.analysis.compare import compare_runs

    if len(results) < 2:
        return

    def side(path: Path, result: ScoreResult) -> tuple[Any, ...]:
        return (str(path), result.result, result.rows, result.clusters or {})

    reference = side(run_dirs[0], results[0])
    # Rows are ranked, not in the order given: each run claims the first unclaimed row of its id.
    claimed = {next(i for i, r in enumerate(rows) if r.get("run_id") == results[0].run_id)}
    for path, result in zip(run_dirs[1:], results[1:], strict=True):
        made = compare_runs(reference, side(path, result))  # type: ignore[arg-type]
        for index, row in enumerate(rows):
            if index not in claimed and row.get("run_id") == result.run_id:
                row["vs_reference"] = made.as_dict()
                claimed.add(index)
                break


def published_rows(spec: str | Path) -> Any:
    """Return published rows (`analysis.published.Published`) from a file, or a suite's own
    shipped table by the suite's name (its `PUBLISHED` file or `published()`)."""
    from longscope.analysis.published import Published, read_published

    path = Path(spec)
    # A folder named like a suite (`ruler/` in the working folder) is not a table file.
    if path.suffix.lower() in (".json", ".csv") or path.is_file():
        return read_published(path)
    from longscope.suites import suite_factory

    factory = suite_factory(str(spec))
    if factory.PUBLISHED is not None:
        return read_published(factory.PUBLISHED)
    table = factory.published()
    if not isinstance(table, Published):
        raise UsageError(f"{spec} ships no published rows: give a CSV or JSON file")
    return table


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
        made = model_profile([read_run(d).result for d in run_dirs], threshold, relative)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if output is not None:
        from longscope.files import write_json

        write_json(Path(output), made)
    return Profile.of(made, Path(output) if output is not None else None)


def _judge_endpoint(spec: str, url: str | None) -> None:
    """Refuse a judge served over HTTP with no endpoint named (one line, nothing sent)."""
    if spec.startswith("openai/") and url is None and not os.environ.get("OPENAI_BASE_URL"):
        # Judge prompts (and the API key) must never go to a host the user did not name.
        raise UsageError(
            f"judge {spec} has no endpoint: give --judge-base-url URL (or --base-url for the "
            "evaluated model's own server); longscope sends judge prompts only where you say"
        )


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

    spec = model_spec(judge_model, "--judge-model")
    _judge_endpoint(spec, judge_base_url)
    options = model_options(judge_options or {})
    backend = build_backend(spec, options, base_url=judge_base_url)
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
                at_base_lengths(read_run(d).result, base_lengths, floor),
                base_lengths,
                floor,
            )
            for d in run_dirs
        )
    )


__all__ = [
    "RunSpec",
    "Scale",
    "build_backend",
    "build_suite",
    "calibrate",
    "compare",
    "download_data",
    "evaluate",
    "judge",
    "longscore",
    "merge",
    "model_options",
    "plan",
    "profile",
    "published_rows",
    "report",
    "routes",
    "score",
    "transport_backend",
    "write_reports",
]


def download_data(
    suite: str, folder: str | Path | None = None, *, mirror: str | None = None
) -> Downloaded:
    """Download `suite`'s inputs (see `longscope.download`); return one line per file."""
    from longscope import download

    sources = download.sources_of(suite)
    done = download.fetch(sources, Path(folder) if folder else None, mirror=mirror)
    lines = [
        f"{f.state}: {f.path} (sha256 {f.sha256}{'' if f.pinned else ', not pinned'})" for f in done
    ]
    target = Path(folder) if folder else download.suite_cache(sources.suite)
    lines += [f"by hand: {text} (into {target})" for text in sources.by_hand]
    return Downloaded(tuple(lines))
