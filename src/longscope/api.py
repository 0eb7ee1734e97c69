"""The library's front door: one call per command (`evaluate`, `score`, `report`, `compare`,
`profile`, `judge`, `calibrate`, `longscore`). The CLI parses options, calls these and prints.

Every value is checked here, so the library refuses what the command line refuses: a bad value is a
`UsageError` naming the option, raised before anything is sent or stored.

    from longscope import evaluate
    result = evaluate("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"])
    result.result.typed.headline.text()
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.report.safe_text import visible
from longscope.run.runner import RunOptions, RunResult, run
from longscope.run.scoring import ScoreResult, read_run, score_run
from longscope.suites import (
    create_suite,
    scoring_overrides,
    suite_from_options,
)
from longscope.suites.base import Suite
from longscope.suites.params import parse_lengths
from longscope.summary import Summary

Notify = Callable[[str], None]

# -M options that count something: a whole number, never a boolean ("true" would read as 1).
_WHOLE_OPTIONS = {
    "context_length": 1,
    "n_ctx": 1,
    "n_batch": 1,
    "n_ubatch": 1,
    "n_threads": 1,
    "n_threads_batch": 1,
    "prefill_chunk": 1,
    "max_batch": 1,
    "n_gpu_layers": -1,
}


# --- checks at the edge --------------------------------------------------------------------------


def at_least(value: float | None, flag: str, low: float, *, whole: bool = False) -> None:
    """Refuse NaN, infinities and values below `low` (one line naming the option)."""
    if value is None:
        return
    bad = isinstance(value, bool) or not math.isfinite(value) or value < low
    if bad or (whole and value % 1):
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"bad {flag} {value!r}: expected {kind} of at least {low:g}")


def between(value: float | None, flag: str, low: float, high: float) -> None:
    if value is None:
        return
    if not math.isfinite(value) or not low <= value <= high:
        raise UsageError(f"bad {flag} {value!r}: expected a number from {low:g} to {high:g}")


def model_spec(spec: str, flag: str = "--model") -> str:
    """Refuse model specs with control or invisible format characters; others are plain text."""
    if any(unicodedata.category(c)[0] == "C" for c in spec):
        raise UsageError(f"bad {flag} {visible(spec)!r}: contains control or invisible characters")
    return spec


def model_options(options: Sequence[str] | dict[str, Any] | None) -> dict[str, Any]:
    """Return `-M key=value` options; numbers must be finite, counts whole and positive."""
    from longscope.models.registry import parse_model_options

    parsed = (
        dict(options) if isinstance(options, dict) else parse_model_options(list(options or []))
    )
    for key, value in parsed.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"bad -M {visible(key)}={value}: expected a finite number")
        low = _WHOLE_OPTIONS.get(key)
        if low is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < low
        ):
            raise UsageError(
                f"bad -M {visible(key)}={visible(value)}: expected a whole number of at least {low}"
            )
    return parsed


def _run_directory(path: Path | None) -> None:
    """Refuse an output path that exists and is not a directory."""
    if path is not None and path.exists() and not path.is_dir():
        raise UsageError(f"--output {visible(path)} exists and is not a directory")


class _OutputBudgetCheck:
    """A backend seen through `--max-tokens`: refuses a budget its context cannot hold.

    The context length is known only once the backend answers `info()` (a server's /models, a
    loaded GGUF), before anything is built or stored; everything else is passed through.
    """

    def __init__(self, backend: Any, max_tokens: int) -> None:
        self._backend = backend
        self._max_tokens = max_tokens

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def info(self) -> Any:
        info = await self._backend.info()
        if info.context_length is not None and self._max_tokens >= info.context_length:
            raise UsageError(
                f"--max-tokens {self._max_tokens} does not fit {visible(self._backend.name)}: it "
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
        return create_suite(name, params)
    return suite_from_options(name, options, {"lengths": lengths, "seed": seed})


def build_backend(
    model: str,
    options: Sequence[str] | dict[str, Any] | None = None,
    *,
    base_url: str | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    router: str | Path | None = None,
    router_strategy: str = "map-reduce",
    router_basis: str = "absolute",
    router_length: str | int | None = None,
    max_tokens: int | None = None,
) -> Backend:
    """Return the backend for `provider/name`, behind the router and the output-budget check."""
    from longscope.models.registry import create_backend
    from longscope.models.retry import RetryPolicy, with_retries

    backend = create_backend(
        model_spec(model),
        model_options(options),
        base_url=base_url,
        concurrency=concurrency,
        request_timeout_s=request_timeout,
    )
    # One retry policy around every backend that does not retry inside its transport.
    backend = with_retries(backend, getattr(backend, "retry_policy", None) or RetryPolicy())
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


def evaluate(
    suite: str | Suite,
    model: str | Backend,
    *,
    suite_options: Sequence[str] = (),
    suite_params: dict[str, Any] | None = None,
    model_options: Sequence[str] | dict[str, Any] | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    router: str | Path | None = None,
    router_options: dict[str, Any] | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    lengths: str | None = None,
    seed: int = 0,
    limit: int | None = None,
    repeats: int | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    output: str | Path | None = None,
    quiet: bool = True,
    serial: bool = False,
    notify: Notify | None = None,
) -> RunResult:
    """Run a suite on a model; return the stored, scored (and, when the suite asks, judged) run.

    `evaluate("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"], output="runs/x")`;
    `suite_params` gives the suite's typed parameters instead. With `router="profile.json"` (or
    `router_options={"length": 4096}`) the model runs behind the context-budget router.
    A suite scored by an LLM judge is judged by `judge_model` (default: the evaluated model).
    `notify` receives one-line messages (warnings, judge counts).
    """
    say = notify or (lambda _: None)
    at_least(concurrency, "--concurrency", 1, whole=True)
    at_least(request_timeout, "--request-timeout", 0.001)
    at_least(max_tokens, "--max-tokens", 1, whole=True)
    at_least(limit, "--limit", 1, whole=True)
    at_least(repeats, "--repeats", 1, whole=True)
    at_least(seed, "--seed", 0, whole=True)
    between(temperature, "--temperature", 0.0, 2.0)
    if judge_model is not None:
        model_spec(judge_model, "--judge-model")
    output = Path(output) if output is not None else None
    _run_directory(output)
    suite_obj = (
        build_suite(suite, suite_options, params=suite_params, lengths=lengths, seed=seed)
        if isinstance(suite, str)
        else suite
    )
    router_options = dict(router_options or {})
    if isinstance(model, str):
        backend = build_backend(
            model,
            model_options,
            base_url=base_url,
            concurrency=concurrency,
            request_timeout=request_timeout,
            router=router,
            router_strategy=router_options.get("strategy", "map-reduce"),
            router_basis=router_options.get("basis", "absolute"),
            router_length=router_options.get("length"),
            max_tokens=max_tokens,
        )
    else:
        backend = model
        if router is not None or router_options.get("length"):
            from longscope.router import with_router

            backend = with_router(backend, router, **router_options)
    options = RunOptions(
        output=output,
        limit=limit,
        repeats=repeats or suite_obj.default_repeats,
        seed=seed,
        max_tokens=max_tokens,
        temperature=temperature,
        concurrency=concurrency,
        quiet=quiet,
        serial=serial,
    )
    result = run(suite_obj, backend, options)
    from longscope.run.judge import uses_judge

    if uses_judge(suite_obj):
        if judge_model is None and not isinstance(model, str):
            raise UsageError("this suite is scored by an LLM judge: give judge_model")
        if judge_model is None:
            say("warning: no --judge-model given: the evaluated model judges its own answers")
        # The judge goes only to a host the user named: its own URL, else the evaluated model's.
        url = judge_base_url if judge_base_url is not None else base_url
        opts = model_options if judge_model is None else {}
        _, rescored = judge(result.run_dir, judge_model or str(model), url, opts, notify=say)
        result = replace(result, result=rescored)
    return result


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
) -> list[tuple[Path, ScoreResult]]:
    """Return stored runs scored in memory, read-only (archived, read-only runs can be reported).

    `options`: `-S` pairs that change scores only (e.g. LongBench Pro's `difficulty_labels`).
    """
    out = []
    for run_dir in run_dirs:
        overrides = scoring_overrides(_suite_of(run_dir, run_id), options)
        out.append((Path(run_dir), read_run(run_dir, run_id, overrides)))
    return out


def write_reports(
    results: list[tuple[Path, ScoreResult]],
    *,
    html: str | Path | None = None,
    markdown: str | Path | None = None,
) -> list[Path]:
    """Write the HTML and/or Markdown report of `results` (each file replaced whole)."""
    from longscope.files import write_atomic
    from longscope.report.html import render_html, render_markdown

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
) -> list[dict[str, Any]]:
    """Leaderboard rows across runs (and published rows beside them).

    `thresholds`: effective length at each (default RULER's 85.6; `effective@N` columns).
    `published`: files (CSV or JSON with a source line) or names of data sets shipped with a
    suite (`longbench-pro`), whose rows are set beside the runs, marked `published`.
    """
    from longscope.analysis.effective import RULER_THRESHOLD
    from longscope.analysis.profile import leaderboard

    for threshold in thresholds:
        between(threshold, "--threshold", 0.0, 100.0)
    summaries = [read_run(run_dir).result for run_dir in run_dirs]
    chosen = tuple(thresholds) or (RULER_THRESHOLD,)
    rows = leaderboard(summaries, chosen)
    if not published:
        return rows
    for spec in published:
        rows += published_rows(spec).leaderboard_rows(chosen)
    # The runs take their places among the published rows; rows without a score stay last.
    return sorted(rows, key=lambda r: (r["state"] == "no score", -(r.get("overall") or 0.0)))


def published_rows(spec: str | Path) -> Any:
    """Return published rows (`analysis.published.Published`) from a file, or a suite's own
    shipped table by the suite's name (its `PUBLISHED` file or `published()`)."""
    from longscope.analysis.published import Published, read_published

    path = Path(spec)
    if path.suffix.lower() in (".json", ".csv") or path.exists():
        return read_published(path)
    from longscope.suites import suite_factory

    factory = suite_factory(str(spec))
    shipped = getattr(factory, "PUBLISHED", None)
    if shipped is not None:
        return read_published(shipped)
    made = getattr(factory, "published", None)
    table = made() if callable(made) else None
    if not isinstance(table, Published):
        raise UsageError(f"{spec} ships no published rows: give a CSV or JSON file")
    return table


def profile(
    run_dirs: Sequence[str | Path],
    output: str | Path | None = None,
    *,
    threshold: float = 85.6,
    relative: float = 0.9,
) -> dict[str, Any]:
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
    return made


def judge(
    run_dir: str | Path,
    judge_model: str,
    judge_base_url: str | None = None,
    judge_options: Sequence[str] | dict[str, Any] | None = None,
    *,
    notify: Notify | None = None,
) -> tuple[dict[str, int], ScoreResult]:
    """Judge a stored run's answers that its suite asks a judge about (resumable); re-score it."""
    from longscope.run.judge import judge as judge_pass

    spec = model_spec(judge_model, "--judge-model")
    if (
        spec.startswith("openai/")
        and judge_base_url is None
        and not os.environ.get("OPENAI_BASE_URL")
    ):
        # Judge prompts (and the API key) must never go to a host the user did not name.
        raise UsageError(
            f"judge {spec} has no endpoint: give --judge-base-url URL (or --base-url for the "
            "evaluated model's own server); longscope sends judge prompts only where you say"
        )
    options = model_options(judge_options or {})
    backend = build_backend(spec, options, base_url=judge_base_url)
    counts = judge_pass(run_dir, backend)
    if notify is not None:
        notify(
            f"judge {judge_model}: {counts['judged']} judged, {counts['failed']} failed "
            f"(recorded, not scored as 0), {counts['cached']} already judged"
        )
    return counts, score_run(run_dir)


def calibrate(
    tiers: dict[str, Sequence[str | Path]], output: str | Path | None = None
) -> dict[str, Any]:
    """Model-calibrated labels from runs grouped by tier (`high`, `mid`, `low`), by their suite."""
    from longscope.suites import suite_factory

    try:
        results = {tier: [read_run(d) for d in dirs] for tier, dirs in tiers.items()}
        suites = sorted({r.suite for runs in results.values() for r in runs})
        make = getattr(suite_factory(suites[0]), "calibrate", None) if len(suites) == 1 else None
        if make is None:
            raise ValueError(
                "calibration needs runs of one suite that calibrates its difficulty; got "
                + (", ".join(suites) or "no runs")
            )
        labels = make(results)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if output is not None:
        from longscope.files import write_json

        write_json(Path(output), labels)
    return labels


def longscore(
    run_dirs: Sequence[str | Path], base: str = "2k,4k,6k", floor: float = 5.0
) -> list[tuple[Path, Summary, tuple[int, ...], float]]:
    """Return each run's summary with the base lengths and floor its LongScore table uses."""
    base_lengths = parse_lengths(base, "--base")
    at_least(floor, "--floor", 0.0)
    return [(Path(d), read_run(d).result, base_lengths, floor) for d in run_dirs]


__all__ = [
    "build_backend",
    "build_suite",
    "calibrate",
    "compare",
    "evaluate",
    "judge",
    "longscore",
    "model_options",
    "profile",
    "published_rows",
    "report",
    "routes",
    "score",
    "write_reports",
]
