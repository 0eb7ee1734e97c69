"""What one `run` or `plan` asks for, as one typed value: `RunSpec`.

The command line builds a `RunSpec` once and hands it to `api.evaluate` / `api.plan`, which hand it
to `run.launch`. Every value is checked when the spec is made (here, and only here): a bad value is
a `UsageError` of one line naming the option, raised before anything is built, sent or stored.

    from longscope import RunSpec, evaluate
    evaluate(RunSpec.of("longctx", "llamacpp/gemma3-270m", suite_params={"tiers": [1]}))
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.params import MAX_LENGTH_TOKENS, parse_lengths
from longscope.run.prepared import MAX_REQUESTS, RunOptions
from longscope.suites.base import Suite
from longscope.text.safe_text import visible

# Upper bounds of the count options, checked before any work: past them a value is a typo, and
# the work lists they size (requests, partitions, clients) would exhaust memory first.
MAX_REPEATS = 1_000
MAX_CONCURRENCY = 4_096
MAX_TOKENS_IN_FLIGHT = 1 << 40


# --- checks at the edge --------------------------------------------------------------------------


MAX_PRICE = 1e6
"""Dollars per million tokens: no model costs more; a larger price is a typo."""


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
    """Refuse a number outside [low, high] (one line naming the option)."""
    if value is None:
        return
    if not math.isfinite(value) or not low <= value <= high:
        raise UsageError(f"bad {flag} {value!r}: expected a number from {low:g} to {high:g}")


def model_spec(spec: str, flag: str = "--model") -> str:
    """Refuse model specs with control or invisible format characters; others are plain text."""
    if any(unicodedata.category(c)[0] == "C" for c in spec):
        raise UsageError(f"bad {flag} {visible(spec)!r}: contains control or invisible characters")
    return spec


def model_options(options: Sequence[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """Return `-M key=value` options; numbers must be finite (each is typed and checked against
    what its backend declares when the backend is built: `models.registry.typed_options`)."""
    from longscope.models.registry import parse_model_options

    parsed = (
        dict(options) if isinstance(options, Mapping) else parse_model_options(list(options or []))
    )
    for key, value in parsed.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"bad -M {visible(key)}={value}: expected a finite number")
    return parsed


def run_directory(path: str | Path | None) -> Path | None:
    """Return `path` as a run directory, refusing one that exists and is not a directory."""
    if path is None:
        return None
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--output {visible(path)} exists and is not a directory")
    return path


# --- the parts of a run --------------------------------------------------------------------------


@dataclass(frozen=True)
class Overrides:
    """What the run asks of the suite and the model beyond their defaults (each changes outputs,
    except `limit`): lengths, a sample limit, repeats, the seed, the output budget, temperature."""

    lengths: str | None = None
    limit: int | None = None
    """Samples to build and send: per cell (task x length) for a suite built by cells, else in all."""
    repeats: int | None = None
    """Generations per sample (None: the suite's default)."""
    seed: int = 0
    max_tokens: int | None = None
    temperature: float | None = None
    thinking_budget: int | None = None
    """Tokens a reasoning model may think before its thinking is closed for it (None: the
    suite's, else one budget for thinking and answer)."""

    def __post_init__(self) -> None:
        at_least(self.max_tokens, "--max-tokens", 1, whole=True)
        at_most(self.max_tokens, "--max-tokens", MAX_LENGTH_TOKENS)
        at_least(self.thinking_budget, "--thinking-budget", 1, whole=True)
        at_most(self.thinking_budget, "--thinking-budget", MAX_LENGTH_TOKENS)
        at_least(self.limit, "--limit", 1, whole=True)
        at_most(self.limit, "--limit", MAX_REQUESTS)
        at_least(self.repeats, "--repeats", 1, whole=True)
        at_most(self.repeats, "--repeats", MAX_REPEATS)
        at_least(self.seed, "--seed", 0, whole=True)
        between(self.temperature, "--temperature", 0.0, 2.0)


@dataclass(frozen=True)
class Scale:
    """How a run reaches its model and beyond one server: endpoints, flow control, a shard, rates.

    `base_url` may name several endpoints (`--base-url` repeated); `base_urls_file` lists more.
    `concurrency` is requests in flight; `request_timeout` the client timeout of one request, s.
    `max_tokens_in_flight` caps prompt tokens in flight over all endpoints (default: derived from
    their context lengths); `prefill_rate`/`decode_rate` (tokens/s per endpoint) stretch each
    request's deadline with its length and give the plan its ETA, which `probe` measures instead.
    `shard` is `i/N` (default: from a Slurm or Kubernetes job array's environment). `price_in`/
    `price_out` (per million tokens) give the plan and the run a cost.
    """

    base_url: str | Sequence[str] | None = None
    base_urls_file: str | Path | None = None
    concurrency: int | None = None
    request_timeout: float | None = None
    max_tokens_in_flight: int | None = None
    prefill_rate: float | None = None
    decode_rate: float | None = None
    shard: str | None = None
    probe: bool = False
    price_in: float | None = None
    price_out: float | None = None

    def __post_init__(self) -> None:
        if self.base_url is not None and not isinstance(self.base_url, str):
            object.__setattr__(self, "base_url", tuple(self.base_url))
        at_least(self.concurrency, "--concurrency", 1, whole=True)
        at_most(self.concurrency, "--concurrency", MAX_CONCURRENCY)
        at_least(self.request_timeout, "--request-timeout", 0.001)
        at_least(self.max_tokens_in_flight, "--max-tokens-in-flight", 1, whole=True)
        at_most(self.max_tokens_in_flight, "--max-tokens-in-flight", MAX_TOKENS_IN_FLIGHT)
        at_least(self.prefill_rate, "--prefill-rate", 0.001)
        at_least(self.decode_rate, "--decode-rate", 0.001)
        # A price past $1M per million tokens is a typo, and would make the cost infinite.
        between(self.price_in, "--price-in", 0.0, MAX_PRICE)
        between(self.price_out, "--price-out", 0.0, MAX_PRICE)
        if self.probe and (self.prefill_rate is not None or self.decode_rate is not None):
            raise UsageError(
                "--probe measures the rates that --prefill-rate/--decode-rate state: give one or "
                "the other"
            )


@dataclass(frozen=True)
class Routing:
    """The context-budget router in front of the model: a profile from `longscope profile` or a
    token `length` (e.g. "4k"), the strategy and the basis of the profile's effective length."""

    profile: str | Path | None = None
    strategy: str = "map-reduce"
    basis: str = "absolute"
    length: str | int | None = None
    """A token budget instead of the profile's ("4k" is read as 4096)."""

    def __post_init__(self) -> None:
        if isinstance(self.length, str):
            object.__setattr__(self, "length", parse_lengths(self.length, "--router-length")[0])

    @property
    def active(self) -> bool:
        """Whether the run goes through the router."""
        return self.profile is not None or self.length is not None


@dataclass(frozen=True)
class Judging:
    """The LLM judge of a suite scored by one (`model`: default the evaluated model; `base_url`:
    its endpoint, default the evaluated model's own)."""

    model: str | None = None
    base_url: str | None = None

    def __post_init__(self) -> None:
        if self.model is not None:
            model_spec(self.model, "--judge-model")
        if self.base_url is not None:
            # Checked with the rest of the spec: a bad judge URL is refused before the run sends
            # anything, not after its generations are paid for.
            from longscope.urls import endpoint_url

            endpoint_url(self.base_url, "--judge-base-url")


@dataclass(frozen=True)
class RunSpec:
    """One run or plan, checked: the suite and its parameters, the model and its `-M` options,
    the generation overrides, the scale, the routing, the judge, and where the run is stored.

    `suite` is a suite name (with `-S` pairs in `suite_options` or typed `suite_params`) or a built
    suite; `model` is `provider/name` (with `-M` options) or a built backend. `RunSpec.of` makes
    one from keywords.
    """

    suite: str | Suite
    model: str | Backend
    suite_options: tuple[str, ...] = ()
    suite_params: Mapping[str, Any] | None = None
    model_options: Mapping[str, Any] = field(default_factory=dict)
    generation: Overrides = field(default_factory=Overrides)
    scale: Scale = field(default_factory=Scale)
    routing: Routing = field(default_factory=Routing)
    judge: Judging = field(default_factory=Judging)
    output: Path | None = None
    quiet: bool = True
    serial: bool = False
    """Run requests one by one in order (for stepping through with a debugger)."""

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            model_spec(self.model)
        # Read-only views: a spec is shared by the plan, the run and the judge pass.
        object.__setattr__(self, "suite_options", tuple(self.suite_options))
        if self.suite_params is not None:
            object.__setattr__(self, "suite_params", MappingProxyType(dict(self.suite_params)))
        object.__setattr__(
            self, "model_options", MappingProxyType(model_options(self.model_options))
        )
        object.__setattr__(self, "output", run_directory(self.output))

    @classmethod
    def of(
        cls,
        suite: str | Suite,
        model: str | Backend,
        *,
        suite_options: Sequence[str] | None = (),
        suite_params: Mapping[str, Any] | None = None,
        model_options: Sequence[str] | Mapping[str, Any] | None = None,
        lengths: str | None = None,
        limit: int | None = None,
        repeats: int | None = None,
        seed: int = 0,
        max_tokens: int | None = None,
        thinking_budget: int | None = None,
        temperature: float | None = None,
        base_url: str | Sequence[str] | None = None,
        base_urls_file: str | Path | None = None,
        concurrency: int | None = None,
        request_timeout: float | None = None,
        max_tokens_in_flight: int | None = None,
        prefill_rate: float | None = None,
        decode_rate: float | None = None,
        shard: str | None = None,
        probe: bool = False,
        price_in: float | None = None,
        price_out: float | None = None,
        router: str | Path | None = None,
        router_strategy: str = "map-reduce",
        router_basis: str = "absolute",
        router_length: str | int | None = None,
        judge_model: str | None = None,
        judge_base_url: str | None = None,
        output: str | Path | None = None,
        quiet: bool = True,
        serial: bool = False,
    ) -> RunSpec:
        """Return the spec of these keywords (the command line's options, by their names)."""
        scale = Scale(
            base_url, base_urls_file, concurrency, request_timeout, max_tokens_in_flight,
            prefill_rate, decode_rate, shard, probe, price_in, price_out,
        )  # fmt: skip
        return cls(
            suite,
            model,
            suite_options=tuple(suite_options or ()),
            suite_params=suite_params,
            model_options=model_options or {},
            generation=Overrides(
                lengths, limit, repeats, seed, max_tokens, temperature, thinking_budget
            ),
            scale=scale,
            routing=Routing(router, router_strategy, router_basis, router_length),
            judge=Judging(judge_model, judge_base_url),
            output=Path(output) if output is not None else None,
            quiet=quiet,
            serial=serial,
        )

    def run_options(self, default_repeats: int) -> RunOptions:
        """Return the runner's options (`default_repeats`: the suite's, when none is asked)."""
        gen = self.generation
        return RunOptions(
            output=self.output,
            limit=gen.limit,
            repeats=gen.repeats or default_repeats,
            seed=gen.seed,
            max_tokens=gen.max_tokens,
            thinking_budget=gen.thinking_budget,
            temperature=gen.temperature,
            concurrency=self.scale.concurrency,
            quiet=self.quiet,
            serial=self.serial,
        )
