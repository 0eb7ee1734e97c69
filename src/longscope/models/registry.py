"""Backend (provider) registry: `provider/name` plus typed `-M key=value` options to a backend.

`BACKENDS` (a `plugins.Registry`) finds providers in three places, later ones winning on a name
clash, as suites are:
1. the built-in table below (`llamacpp`, `openai`, `hf`, `scripted`);
2. the `longscope.backends` entry-point group, so a backend in another package plugs in:
   `[project.entry-points."longscope.backends"] myengine = "mypackage.backend:MyBackend"`;
3. `register_backend(name, factory)` at run time (tests, notebooks).

A backend is a class deriving from `models.base.Backend`; it declares its `-M` options once, as
`Param`s with their defaults (`OPTIONS`, made with `option`): the registry types and checks them
in one place, applies the defaults and hands the complete values to `from_options` (by default
the constructor). What it can do beyond that is declared on the class (`ENDPOINT`, `SPREADS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longscope.catalogue import KNOWN_MODELS, KnownModel, resolve_model_path
from longscope.errors import UsageError
from longscope.models.base import Backend, EndpointFlow
from longscope.params import Kind, Param
from longscope.plugins import Registry
from longscope.text.safe_text import visible

__all__ = [
    "BACKENDS",
    "ENTRY_POINT_GROUP",
    "KNOWN_MODELS",
    "PROVIDERS",
    "KnownModel",
    "complete_options",
    "create_backend",
    "option",
    "parse_model_options",
    "provider_description",
    "provider_factory",
    "provider_names",
    "provider_options",
    "register_backend",
    "resolve_model_path",
    "split_model_spec",
    "spread_backend",
    "typed_options",
]

ENTRY_POINT_GROUP = "longscope.backends"
_BUILTIN = {
    "llamacpp": "longscope.models.llamacpp:LlamaCppBackend",
    "openai": "longscope.models.openai_api:OpenAIBackend",
    "hf": "longscope.models.hf:HFBackend",
    "scripted": "longscope.models.scripted:ScriptedBackend",
}
PROVIDERS = tuple(_BUILTIN)
"""The built-in providers (`provider_names()` adds those plugged in)."""
BACKENDS: Registry[type[Backend]] = Registry(
    "provider",
    ENTRY_POINT_GROUP,
    lambda: _BUILTIN,
    base=Backend,
    base_path="longscope.models.base.Backend",
    flag="-M",
)


def option(
    name: str,
    kind: Kind,
    default: Any = None,
    help: str = "",
    *,
    choices: tuple[str, ...] = (),
    low: float | None = None,
    high: float | None = None,
) -> Param:
    """Return a backend's `-M` parameter (a `Param` whose messages name `-M name`)."""
    return Param(
        name, kind, default, help, choices=choices, low=low, high=high, given_as=f"-M {name}"
    )


def register_backend(name: str, factory: Any) -> None:
    """Register a backend (a `Backend` class, or `"module:attr"`)."""
    BACKENDS.register(name, factory)


def provider_names() -> list[str]:
    """Return every known provider's name, sorted."""
    return BACKENDS.names()


def provider_factory(provider: str) -> type[Backend]:
    """Return the class of `provider`."""
    return BACKENDS.get(provider)


def provider_options(provider: str) -> tuple[Param, ...]:
    """Return the `-M` parameters `provider` declares (empty when it declares none)."""
    return BACKENDS.options(provider)


def provider_description(provider: str) -> str:
    """Return a provider's one-line description."""
    return BACKENDS.description(provider)


def parse_model_options(pairs: list[str]) -> dict[str, Any]:
    """Parse `-M key=value` pairs; values become int, float or bool where they look like one
    (`typed_options` then checks them against what the provider declares)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"malformed model option {pair!r}: expected -M key=value")
        options[key.strip()] = _coerce(raw.strip())
    return options


def _coerce(raw: str) -> Any:
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def typed_options(provider: str, options: dict[str, Any]) -> dict[str, Any]:
    """Return `options` typed by what `provider` declares: an unknown key or a value of the wrong
    type is a `UsageError` of one line naming it. Keys given only; defaults stay the backend's.

    A provider that declares no `OPTIONS` gets its options unchecked.
    """
    declared = provider_options(provider)
    if not declared:
        return dict(options)
    by_name = {p.name: p for p in declared}
    unknown = sorted(set(options) - set(by_name))
    if unknown:
        raise UsageError(
            f"unknown {provider} option(s) {', '.join(visible(k) for k in unknown)}: {provider} "
            f"takes {', '.join(by_name)} (see `longscope list {provider}`)"
        )
    # Values come as text (command line) or typed (library, `parse_model_options`); both are
    # read as text by the parameter, so `True` for a count is refused as `-M n=true` would be.
    # None is "unset" (a complete set of options holds it for every option without a default).
    return {
        key: by_name[key].parse(value if isinstance(value, str | None) else str(value))
        for key, value in options.items()
    }


def split_model_spec(spec: str) -> tuple[str, str]:
    """Split `provider/name` (the name may itself contain slashes, as in `openai/org/model`)."""
    provider, sep, name = spec.partition("/")
    if not sep or not name or provider not in BACKENDS:
        raise UsageError(
            f"bad model spec {spec!r}: expected PROVIDER/NAME with PROVIDER one of "
            f"{', '.join(provider_names())} (e.g. llamacpp/gemma3-270m, openai/my-model)"
        )
    return provider, name


def complete_options(provider: str, options: dict[str, Any]) -> dict[str, Any]:
    """Return every `-M` option `provider` declares: `options` checked and typed, each default
    where none is given (a provider that declares none gets `options` unchecked)."""
    typed = typed_options(provider, options)
    return BACKENDS.complete(provider, typed) if provider_options(provider) else typed


def create_backend(spec: str, options: dict[str, Any] | None = None, **transport: Any) -> Backend:
    """Return a backend for `provider/name` from its `-M` options, complete and typed, and the
    transport keywords (passed to providers that declare `ENDPOINT`, ignored by the others)."""
    provider, name = split_model_spec(spec)
    factory = provider_factory(provider)
    complete = complete_options(provider, dict(options or {}))
    if factory.ENDPOINT:
        return factory.from_options(name, complete, **transport)
    return factory.from_options(name, complete)


def spread_backend(
    spec: str, options: dict[str, Any], urls: Sequence[str], flow: EndpointFlow
) -> Backend:
    """Return `provider/name` spread over `urls` with flow control, where the provider declares
    it can (`Backend.SPREADS`); else one line naming what applies only to those that can."""
    provider, name = split_model_spec(spec)
    factory = provider_factory(provider)
    if not factory.SPREADS:
        what = "several --base-url apply" if len(urls) > 1 else "--max-tokens-in-flight applies"
        able = ", ".join(f"{p}/" for p in provider_names() if provider_factory(p).SPREADS)
        raise UsageError(
            f"{what} only to {able} models served by OpenAI-compatible endpoints, "
            f"not {visible(provider)}/"
        )
    return factory.over_endpoints(name, complete_options(provider, options), urls, flow)
