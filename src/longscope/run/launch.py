"""One invocation of `run` or `plan`: the forecast, the run, and the figures after it.

`run` and `plan` share everything up to sending: one `PreparedRun` (run/prepared.py) of the same
suite (whole, or one shard of it) on the same backend (one endpoint or several). `plan` counts its
samples; `run` forecasts from its cells and sends its samples as they are made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.run.adaptive_record import drop_stale_record
from longscope.run.plan import (
    PROBE_PROMPT_TOKENS,
    Plan,
    Rates,
    actual_figures,
    make_plan_of,
    outline_plan,
    probe_rates,
)
from longscope.run.prepared import PreparedRun, RunOptions
from longscope.run.runner import RunResult, run_prepared
from longscope.run.shards import ShardedSuite, resolve_shard
from longscope.run.spec import RunSpec
from longscope.suites.base import Suite
from longscope.text.safe_text import visible


def endpoint_urls(base_url: str | Sequence[str] | None, url_file: str | Path | None) -> list[str]:
    """Return the endpoints of `--base-url` (repeatable) and `--base-urls FILE`, in that order."""
    from longscope.models.endpoints import read_url_file

    urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
    if url_file is not None:
        path = Path(url_file)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"cannot read --base-urls {visible(path)}: {exc.__class__.__name__}; give a text "
                "file with one http(s):// URL per line"
            ) from exc
        listed = read_url_file(text)
        if not listed:
            raise UsageError(f"--base-urls {visible(path)} lists no URL: one http(s):// per line")
        urls += listed
    return urls


def stated_rates(prefill: float | None, decode: float | None, probe: bool) -> Rates | None:
    """Return the rates the user stated (both needed for an ETA), or None to probe or go without
    (`Scale` refuses `--probe` beside stated rates)."""
    if prefill is None or decode is None:
        return None
    return Rates(prefill_tps=prefill, decode_tps=decode, source="stated")


def sharded(suite: Suite, shard: str | None) -> Suite:
    """Return `suite`, or its shard of `--shard i/N` (or of the job array's environment)."""
    chosen = resolve_shard(shard)
    return ShardedSuite(suite, chosen) if chosen is not None else suite


@dataclass(frozen=True)
class Launched:
    """What one invocation did: its plan, and the run unless it only planned."""

    plan: Plan
    run: RunResult | None
    wall_s: float
    endpoints: list[dict[str, Any]]
    """Per-endpoint figures of a several-endpoint backend (empty otherwise)."""


async def _launch(
    suite: Suite,
    backend: Backend,
    transport: Backend,
    options: RunOptions,
    *,
    rates: Rates | None,
    probe: bool,
    prices: tuple[float | None, float | None],
    say: Callable[[str], None],
    plan_only: bool,
    score: bool,
) -> Launched:
    shard = suite.shard
    if shard is not None and shard.source:
        # Nothing on the command line says so: a job array's environment picked the shard.
        say(
            f"shard {shard} from {shard.source}: this invocation runs only its part of the "
            "samples; join the parts with `longscope merge`"
        )
    try:
        prepared = await PreparedRun.create(suite, backend, options)
        for line in prepared.info.details.get("warnings", ()):
            say(f"warning: {line}")
        if rates is None and probe:
            rates = await probe_rates(backend, prepared.info, PROBE_PROMPT_TOKENS)
        priced = {"rates": rates, "price_in": prices[0], "price_out": prices[1]}
        # A suite made as it is sent is forecast from its cells: counting its prompts first would
        # make every sample before the first request leaves.
        if plan_only or not prepared.limit_per_cell:
            plan = make_plan_of(prepared, **priced)
        else:
            plan = outline_plan(prepared, **priced)
        if shard is not None:
            plan = replace(plan, shard=suite.describe())
        if plan_only:
            return Launched(plan, None, 0.0, [])
        say(plan.forecast())
        started = time.perf_counter()
        result = await run_prepared(prepared, score=score, plan=plan)
        wall = time.perf_counter() - started
        drop_stale_record(result.run_dir)  # an adaptive record this run has outgrown
    finally:
        await backend.aclose()
    return Launched(plan, result, wall, transport.stats())


def launch(
    spec: RunSpec,
    suite: Suite,
    backend: Backend,
    *,
    transport: Backend | None = None,
    say: Callable[[str], None] = lambda _: None,
    plan_only: bool = False,
    score: bool = True,
) -> Launched:
    """Plan `suite` on `backend` as `spec` asks (its rates, probe and prices); unless `plan_only`,
    print the forecast, run it and record it.

    `suite` and `backend` are `spec`'s, built (`api`): the suite or its shard, the backend behind
    its router and checks. `transport` is the backend before any wrapper: a several-endpoint
    backend's per-endpoint figures are read from it and stored in the run. With `score=False` the
    run is left for the caller to score (a judged suite, once, after its judge pass).
    """
    scale = spec.scale
    price_in, price_out = scale.price_in, scale.price_out
    launched = asyncio.run(
        _launch(
            suite,
            backend,
            transport if transport is not None else backend,
            spec.run_options(suite.default_repeats),
            rates=stated_rates(scale.prefill_rate, scale.decode_rate, scale.probe),
            probe=scale.probe,
            prices=(price_in, price_out),
            say=say,
            plan_only=plan_only,
            score=score,
        )
    )
    result = launched.run
    if result is None:
        return launched
    if launched.endpoints:
        from longscope.models.endpoints import describe_endpoints
        from longscope.run.merge import record_endpoints

        record_endpoints(result.run_dir, result.run_id, launched.endpoints)
        say(describe_endpoints(launched.endpoints))
    say(
        actual_figures(
            result.run_dir, result.run_id, launched.wall_s, price_in, price_out,
            sent_now=result.sent, stored_before=launched.plan.already_done,
        )
    )  # fmt: skip
    return launched
