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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend, Forwarding, ModelInfo
from longscope.run.prepared import MAX_REQUESTS
from longscope.run.runner import RunOptions, RunResult
from longscope.run.scoring import ScoreResult, read_run, score_run
from longscope.suites import (
    create_suite,
    refuse_scoring_options,
    scoring_overrides,
    suite_from_options,
)
from longscope.suites.base import Suite
from longscope.suites.params import MAX_LENGTH_TOKENS, parse_lengths
from longscope.summary import Summary
from longscope.text.safe_text import visible

Notify = Callable[[str], None]

# Upper bounds of the count options, checked before any work: past them a value is a typo, and
# the work lists they size (requests, partitions, clients) would exhaust memory first.
MAX_REPEATS = 1_000
MAX_CONCURRENCY = 4_096
MAX_TOKENS_IN_FLIGHT = 1 << 40


# --- checks at the edge --------------------------------------------------------------------------


def at_least(value: float | None, flag: str, low: float, *, whole: bool = False) -> None:
    """Refuse NaN, infinities and values below `low` (one line naming the option)."""
    if value is None:
        return
    bad = isinstance(value, bool) or not math.isfinite(value) or value < low
    if bad or (whole and value % 1):
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"bad {flag} {value!r}: expected {kind} of at least {low:g}")


def at_most(value: float | None, flag: str, high: float) -> None:
    """Refuse a count above `high` (one line naming the option and its bound)."""
    if value is not None and value > high:
        raise UsageError(f"bad {flag} {value!r}: at most {int(high):,}")


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
    """Return `-M key=value` options; numbers must be finite (each is typed and checked against
    what its backend declares when the backend is built: `models.registry.typed_options`)."""
    from longscope.models.registry import parse_model_options

    parsed = (
        dict(options) if isinstance(options, dict) else parse_model_options(list(options or []))
    )
    for key, value in parsed.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"bad -M {visible(key)}={value}: expected a finite number")
    return parsed


def _run_directory(path: Path | None) -> None:
    """Refuse an output path that exists and is not a directory."""
    if path is not None and path.exists() and not path.is_dir():
        raise UsageError(f"--output {visible(path)} exists and is not a directory")


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

    at_least(max_tokens_in_flight, "--max-tokens-in-flight", 1, whole=True)
    at_most(max_tokens_in_flight, "--max-tokens-in-flight", MAX_TOKENS_IN_FLIGHT)
    at_most(concurrency, "--concurrency", MAX_CONCURRENCY)
    at_least(prefill_rate, "--prefill-rate", 0.001)
    at_least(decode_rate, "--decode-rate", 0.001)
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


@dataclass(frozen=True)
class Scale:
    """How a run reaches beyond one server: endpoints, flow control, a shard, a plan's rates.

    `base_url` may name several endpoints (`--base-url` repeated); `base_urls_file` lists more.
    `max_tokens_in_flight` caps prompt tokens in flight over all endpoints (default: derived from
    their context lengths); `prefill_rate`/`decode_rate` (tokens/s per endpoint) stretch each
    request's deadline with its length and give the plan its ETA, which `probe` measures instead.
    `shard` is `i/N` (default: from a Slurm or Kubernetes job array's environment).
    """

    base_url: str | Sequence[str] | None = None
    base_urls_file: str | Path | None = None
    max_tokens_in_flight: int | None = None
    prefill_rate: float | None = None
    decode_rate: float | None = None
    shard: str | None = None
    probe: bool = False
    price_in: float | None = None
    price_out: float | None = None


def _prepared(
    suite: str | Suite,
    model: str | Backend,
    *,
    suite_options: Sequence[str],
    suite_params: dict[str, Any] | None,
    model_options: Sequence[str] | dict[str, Any] | None,
    scale: Scale,
    concurrency: int | None,
    request_timeout: float | None,
    router: str | Path | None,
    router_options: dict[str, Any] | None,
    lengths: str | None,
    seed: int,
    limit: int | None,
    repeats: int | None,
    max_tokens: int | None,
    temperature: float | None,
    output: str | Path | None,
    quiet: bool,
    serial: bool,
) -> tuple[Suite, Backend, Backend, RunOptions]:
    """Check every value, then return (suite or its shard, backend, its transport, run options)."""
    from longscope.run.launch import endpoint_urls, sharded

    at_least(concurrency, "--concurrency", 1, whole=True)
    at_most(concurrency, "--concurrency", MAX_CONCURRENCY)
    at_least(request_timeout, "--request-timeout", 0.001)
    at_least(max_tokens, "--max-tokens", 1, whole=True)
    at_most(max_tokens, "--max-tokens", MAX_LENGTH_TOKENS)
    at_least(limit, "--limit", 1, whole=True)
    at_most(limit, "--limit", MAX_REQUESTS)
    at_least(repeats, "--repeats", 1, whole=True)
    at_most(repeats, "--repeats", MAX_REPEATS)
    at_least(seed, "--seed", 0, whole=True)
    at_least(scale.price_in, "--price-in", 0.0)
    at_least(scale.price_out, "--price-out", 0.0)
    between(temperature, "--temperature", 0.0, 2.0)
    output = Path(output) if output is not None else None
    _run_directory(output)
    suite_obj = (
        build_suite(suite, suite_options, params=suite_params, lengths=lengths, seed=seed)
        if isinstance(suite, str)
        else suite
    )
    suite_obj = sharded(suite_obj, scale.shard)
    router_options = dict(router_options or {})
    if isinstance(model, str):
        transport = transport_backend(
            model,
            model_options,
            base_url=endpoint_urls(scale.base_url, scale.base_urls_file),
            concurrency=concurrency,
            request_timeout=request_timeout,
            max_tokens_in_flight=scale.max_tokens_in_flight,
            prefill_rate=scale.prefill_rate,
            decode_rate=scale.decode_rate,
        )
        backend = _wrapped(
            transport,
            router=router,
            router_strategy=router_options.get("strategy", "map-reduce"),
            router_basis=router_options.get("basis", "absolute"),
            router_length=router_options.get("length"),
            max_tokens=max_tokens,
        )
    else:
        transport = backend = model
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
    return suite_obj, backend, transport, options


def evaluate(
    suite: str | Suite,
    model: str | Backend,
    *,
    suite_options: Sequence[str] = (),
    suite_params: dict[str, Any] | None = None,
    model_options: Sequence[str] | dict[str, Any] | None = None,
    base_url: str | Sequence[str] | None = None,
    scale: Scale | None = None,
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
    `scale` spreads the run over several endpoints or one shard of a job array (see `Scale`).
    A suite scored by an LLM judge is judged by `judge_model` (default: the evaluated model).
    `notify` receives one-line messages (the forecast, the actual figures, warnings, judge counts).
    """
    say = notify or (lambda _: None)
    if judge_model is not None:
        model_spec(judge_model, "--judge-model")
    scale = (
        replace(scale or Scale(), base_url=base_url) if base_url is not None else scale or Scale()
    )
    suite_obj, backend, transport, options = _prepared(
        suite, model, suite_options=suite_options, suite_params=suite_params,
        model_options=model_options, scale=scale, concurrency=concurrency,
        request_timeout=request_timeout, router=router, router_options=router_options,
        lengths=lengths, seed=seed, limit=limit, repeats=repeats, max_tokens=max_tokens,
        temperature=temperature, output=output, quiet=quiet, serial=serial,
    )  # fmt: skip
    from longscope.run.judge import uses_judge

    judged = uses_judge(suite_obj)
    if judged and judge_model is None and not isinstance(model, str):
        raise UsageError("this suite is scored by an LLM judge: give judge_model")
    # A judged suite is scored once, after its judge pass, not also before it.
    launched = _launched(scale, suite_obj, backend, transport, options, say=say, score=not judged)
    result = launched.result
    assert result is not None
    if judged:
        if judge_model is None:
            say("warning: no --judge-model given: the evaluated model judges its own answers")
        # The judge goes only to a host the user named: its own URL, else the evaluated model's.
        urls = endpoint_urls_of(scale)
        url = judge_base_url if judge_base_url is not None else (urls[0] if urls else None)
        opts = model_options if judge_model is None else {}
        _, rescored = judge(result.run_dir, judge_model or str(model), url, opts, notify=say)
        result = replace(result, result=rescored)
    return result


def endpoint_urls_of(scale: Scale) -> list[str]:
    """Return the endpoints `scale` names (`--base-url` repeated, then `--base-urls FILE`)."""
    from longscope.run.launch import endpoint_urls

    return endpoint_urls(scale.base_url, scale.base_urls_file)


def plan(
    suite: str | Suite,
    model: str | Backend,
    *,
    suite_options: Sequence[str] = (),
    suite_params: dict[str, Any] | None = None,
    model_options: Sequence[str] | dict[str, Any] | None = None,
    scale: Scale | None = None,
    concurrency: int | None = None,
    request_timeout: float | None = None,
    lengths: str | None = None,
    seed: int = 0,
    limit: int | None = None,
    repeats: int | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    output: str | Path | None = None,
) -> Any:
    """Return what `evaluate` with the same arguments would send (`run.plan.Plan`), sending
    nothing but the probe's two short requests when `scale.probe` asks for measured rates.

    Prompt tokens are counted exactly in the model's tokenizer; requests already stored in
    `output` are counted as done.
    """
    scale = scale or Scale()
    suite_obj, backend, transport, options = _prepared(
        suite, model, suite_options=suite_options, suite_params=suite_params,
        model_options=model_options, scale=scale, concurrency=concurrency,
        request_timeout=request_timeout, router=None, router_options=None, lengths=lengths,
        seed=seed, limit=limit, repeats=repeats, max_tokens=max_tokens, temperature=temperature,
        output=output, quiet=True, serial=False,
    )  # fmt: skip
    return _launched(scale, suite_obj, backend, transport, options, plan_only=True).plan


def _launched(
    scale: Scale,
    suite: Suite,
    backend: Backend,
    transport: Backend,
    options: RunOptions,
    *,
    say: Notify = lambda _: None,
    plan_only: bool = False,
    score: bool = True,
) -> Any:
    """Plan (and unless `plan_only`, run) with `scale`'s rates and prices (`run.launch.launch`)."""
    from longscope.run.launch import launch, stated_rates

    return launch(
        suite,
        backend,
        options,
        transport=transport,
        rates=stated_rates(scale.prefill_rate, scale.decode_rate, scale.probe),
        probe=scale.probe,
        price_in=scale.price_in,
        price_out=scale.price_out,
        say=say,
        plan_only=plan_only,
        score=score,
    )


def merge(out: str | Path, run_dirs: Sequence[str | Path], run_id: str | None = None) -> Any:
    """Merge shard stores of one run into `out` (idempotent); return `run.merge.MergeReport`."""
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
    results = [read_run(run_dir) for run_dir in run_dirs]
    chosen = tuple(thresholds) or (RULER_THRESHOLD,)
    rows = leaderboard([r.result for r in results], chosen)
    _attach_differences(rows, [Path(d) for d in run_dirs], results)
    if not published:
        return rows
    for spec in published:
        rows += published_rows(spec).leaderboard_rows(chosen)
    # The runs take their places among the published rows; rows without a score stay last.
    return sorted(rows, key=lambda r: (r["state"] == "no score", -(r.get("overall") or 0.0)))


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
    return labels


def longscore(
    run_dirs: Sequence[str | Path], base: str = "2k,4k,6k", floor: float = 5.0
) -> list[tuple[Path, Summary, tuple[int, ...], float]]:
    """Return each run's summary with the base lengths and floor its LongScore table uses."""
    base_lengths = parse_lengths(base, "--base")
    at_least(floor, "--floor", 0.0)
    return [(Path(d), read_run(d).result, base_lengths, floor) for d in run_dirs]


__all__ = [
    "Scale",
    "build_backend",
    "build_suite",
    "calibrate",
    "compare",
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
) -> list[str]:
    """Download `suite`'s inputs (see `longscope.download`); return one line per file."""
    from longscope import download

    sources = download.sources_of(suite)
    done = download.fetch(sources, Path(folder) if folder else None, mirror=mirror)
    lines = [
        f"{f.state}: {f.path} (sha256 {f.sha256}{'' if f.pinned else ', not pinned'})" for f in done
    ]
    target = Path(folder) if folder else download.suite_cache(sources.suite)
    lines += [f"by hand: {text} (into {target})" for text in sources.by_hand]
    return lines
