"""The run assembled from its spec's typed parts: the suite (whole, or one shard of it) from its
name and `-S` options, and the backend from `provider/name` and `-M` options: one endpoint or
several (where the backend's class declares it can spread: `Backend.SPREADS`), behind one retry
policy, and the context-budget router (the `--max-tokens` check is the prepared run's, once the model
has answered: `run.prepared.check_output_budget`). `api.evaluate` and `api.plan`
assemble once and hand the parts to `run.launch`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from longscope.errors import UsageError
from longscope.models.base import Backend, EndpointFlow
from longscope.run.launch import endpoint_urls, sharded
from longscope.run.spec import Routing, RunSpec, Scale, model_options, model_spec
from longscope.suites import create_suite, refuse_scoring_options, suite_from_options
from longscope.suites.base import Suite


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


def assemble_suite(spec: RunSpec) -> Suite:
    """Return `spec`'s suite (or its shard of `--shard i/N`): built by name, or the one given."""
    suite = spec.suite
    if isinstance(suite, str):
        gen = spec.generation
        params = dict(spec.suite_params) if spec.suite_params is not None else None
        suite = build_suite(
            suite, spec.suite_options, params=params, lengths=gen.lengths, seed=gen.seed
        )
    return sharded(suite, spec.scale.shard)


def transport_of(model: str, options: Mapping[str, Any] | Sequence[str], scale: Scale) -> Backend:
    """Return the backend that talks to `model` (one endpoint, or several where its class can
    spread: `Backend.SPREADS`) over `scale`, behind one retry policy; no other wrapper."""
    from longscope.models.registry import (
        create_backend,
        provider_factory,
        split_model_spec,
        spread_backend,
    )
    from longscope.models.retry import with_retries

    spec = model_spec(model)
    parsed = model_options(options)
    urls = endpoint_urls_of(scale)
    flow = EndpointFlow(
        scale.concurrency,
        scale.request_timeout,
        scale.max_tokens_in_flight,
        scale.prefill_rate,
        scale.decode_rate,
    )
    rated = scale.prefill_rate is not None or scale.decode_rate is not None
    if len(urls) > 1 or scale.max_tokens_in_flight is not None:
        return spread_backend(spec, parsed, urls, flow)
    if rated and provider_factory(split_model_spec(spec)[0]).SPREADS:
        return spread_backend(spec, parsed, urls, flow)  # stated rates stretch its deadlines
    backend = create_backend(
        spec,
        parsed,
        base_url=urls[0] if urls else None,
        concurrency=scale.concurrency,
        request_timeout_s=scale.request_timeout,
    )
    # One retry policy around every backend that does not retry inside its transport.
    return with_retries(backend)


def routed(backend: Backend, routing: Routing) -> Backend:
    """Return `backend` behind the context-budget router when `routing` asks for one."""
    if not routing.active:
        return backend
    from longscope.router import with_router

    return with_router(
        backend,
        str(routing.profile) if routing.profile is not None else None,
        strategy=routing.strategy,  # type: ignore[arg-type]
        basis=routing.basis,  # type: ignore[arg-type]
        length=routing.length,  # type: ignore[arg-type]
    )


class Assembled(NamedTuple):
    """A run's parts, built: the suite (or its shard), the backend as the run sees it (behind the
    router) and its transport (the backend before any wrapper)."""

    suite: Suite
    backend: Backend
    transport: Backend


def assemble(spec: RunSpec) -> Assembled:
    """Return `spec`'s suite (or its shard), its backend, and that backend's transport."""
    suite = assemble_suite(spec)
    model = spec.model
    transport = (
        model if not isinstance(model, str) else transport_of(model, spec.model_options, spec.scale)
    )
    return Assembled(suite, routed(transport, spec.routing), transport)


# -- the same, from keywords (the library's callers) ----------------------------------------------


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
    scale = Scale(
        base_url=base_url,
        concurrency=concurrency,
        request_timeout=request_timeout,
        max_tokens_in_flight=max_tokens_in_flight,
        prefill_rate=prefill_rate,
        decode_rate=decode_rate,
    )
    return transport_of(model, options or {}, scale)


def build_backend(
    model: str,
    options: Sequence[str] | dict[str, Any] | None = None,
    *,
    router: str | Path | None = None,
    router_strategy: str = "map-reduce",
    router_basis: str = "absolute",
    router_length: str | int | None = None,
    **scale: Any,
) -> Backend:
    """Return the backend for `provider/name` behind the router (`scale`: `transport_backend`'s
    keywords). The `--max-tokens` check is the prepared run's (`run.prepared`)."""
    routing = Routing(router, router_strategy, router_basis, router_length)
    return routed(transport_backend(model, options, **scale), routing)


def endpoint_urls_of(scale: Scale) -> list[str]:
    """Return the endpoints `scale` names (`--base-url` repeated, then `--base-urls FILE`)."""
    return endpoint_urls(scale.base_url, scale.base_urls_file)


def judge_of(spec: RunSpec) -> tuple[str, str | None, dict[str, Any]]:
    """Return the judge of `spec`'s run: its model, URL and `-M` options. The judge goes only to
    a host the user named: its own URL, else the evaluated model's."""
    urls = endpoint_urls_of(spec.scale)
    url = spec.judge.base_url if spec.judge.base_url is not None else (urls[0] if urls else None)
    options = dict(spec.model_options) if spec.judge.model is None else {}
    return spec.judge.model or str(spec.model), url, options


def judge_backend(
    judge_model: str,
    base_url: str | None = None,
    options: Sequence[str] | dict[str, Any] | None = None,
) -> Backend:
    """Return the judge's backend; one that talks to a server needs an endpoint the user named."""
    spec = judge_endpoint(judge_model, base_url)
    return build_backend(spec, model_options(options or {}), base_url=base_url)


def judged_run(spec: RunSpec, suite: Suite) -> bool:
    """Return whether `spec`'s run is scored by an LLM judge; refuse (one line, before the run
    sends anything) a judge with nowhere to go or none to name (a backend object as the model)."""
    from longscope.run.judge import uses_judge

    if not uses_judge(suite):
        return False
    if spec.judge.model is None and not isinstance(spec.model, str):
        raise UsageError("this suite is scored by an LLM judge: give judge_model")
    judge_endpoint(*judge_of(spec)[:2])
    return True


def judge_endpoint(judge_model: str, base_url: str | None) -> str:
    """Return the judge's model spec; refuse (one line) a judge that talks to a server when no
    endpoint is named: checked before a judged run sends anything, and again by `judge`."""
    from longscope.models.registry import provider_factory, split_model_spec

    spec = model_spec(judge_model, "--judge-model")
    provider, _ = split_model_spec(spec)
    if (
        provider_factory(provider).ENDPOINT
        and base_url is None
        and not os.environ.get("OPENAI_BASE_URL")
    ):
        # Judge prompts (and the API key) must never go to a host the user did not name.
        raise UsageError(
            f"judge {spec} has no endpoint: give --judge-base-url URL (or --base-url for the "
            "evaluated model's own server); longscope sends judge prompts only where you say"
        )
    return spec


__all__ = [
    "Assembled",
    "assemble",
    "assemble_suite",
    "build_backend",
    "build_suite",
    "endpoint_urls_of",
    "judge_backend",
    "judge_endpoint",
    "judge_of",
    "judged_run",
    "routed",
    "transport_backend",
    "transport_of",
]
