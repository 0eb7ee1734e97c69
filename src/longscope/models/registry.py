"""Backend (provider) registry: `provider/name` plus typed `-M key=value` options to a backend.

Providers are found in three places, later ones winning on a name clash, as suites are:
1. the built-in table below (`llamacpp`, `openai`, `hf`, `scripted`);
2. the `longscope.backends` entry-point group, so a backend in another package plugs in:
   `[project.entry-points."longscope.backends"] myengine = "mypackage.backend:MyBackend"`;
3. `register_backend(name, factory)` at run time (tests, notebooks).

A factory is a class deriving from `models.base.Backend` with `from_options(name, options)`, and
optionally `OPTIONS` (its `-M` parameters as `Param`s: typed and checked here, in one place, before
the factory sees them, and listed by `longscope list PROVIDER`), `DESCRIPTION`, and
`ENDPOINT = True` when it talks to a server and takes the transport options (`--base-url`, `--concurrency`, `--request-timeout`) as
keyword arguments of `from_options`.
"""

from __future__ import annotations

import functools
from typing import Any

from longscope.catalogue import KNOWN_MODELS, KnownModel, resolve_model_path
from longscope.errors import UsageError
from longscope.models.base import Backend
from longscope.plugins import load_target
from longscope.suites.params import Kind, Param

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_MODELS",
    "PROVIDERS",
    "KnownModel",
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
_registered: dict[str, Any] = {}
_loaded: dict[str, Any] = {}


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
    """Register a backend factory (a class with `from_options`, or `"module:attr"`)."""
    _registered[name] = factory
    _loaded.pop(name, None)


def _tables() -> dict[str, Any]:
    return {**_BUILTIN, **_entry_points(), **_registered}


@functools.cache
def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def provider_names() -> list[str]:
    """Return every known provider's name, sorted."""
    return sorted(_tables())


def provider_factory(provider: str) -> Any:
    """Return the factory of `provider` (a class with `from_options`)."""
    if provider in _loaded:
        return _loaded[provider]
    tables = _tables()
    target = tables.get(provider)
    if target is None:
        raise UsageError(
            f"unknown provider {provider!r}: available are {', '.join(sorted(tables))}"
        )
    loaded = load_target(target)
    if not (isinstance(loaded, type) and issubclass(loaded, Backend)):
        raise UsageError(
            f"backend {provider!r} ({target}) is not a class deriving from "
            "longscope.models.base.Backend: derive it, so that every capability has its default"
        )
    if not callable(getattr(loaded, "from_options", None)):
        raise UsageError(f"backend {provider!r} ({target}) has no from_options(name, options)")
    _loaded[provider] = loaded
    return loaded


def provider_options(provider: str) -> tuple[Param, ...]:
    """Return the `-M` parameters `provider` declares (empty when it declares none)."""
    return tuple(getattr(provider_factory(provider), "OPTIONS", ()) or ())


def provider_description(provider: str) -> str:
    """Return a provider's one-line description."""
    factory = provider_factory(provider)
    text = getattr(factory, "DESCRIPTION", None)
    if isinstance(text, str) and text:
        return text
    doc = (getattr(factory, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


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
        from longscope.text.safe_text import visible

        raise UsageError(
            f"unknown {provider} option(s) {', '.join(visible(k) for k in unknown)}: {provider} "
            f"takes {', '.join(by_name)} (see `longscope list {provider}`)"
        )
    # Values come as text (command line) or typed (library, `parse_model_options`); both are
    # read as text by the parameter, so `True` for a count is refused as `-M n=true` would be.
    return {
        key: by_name[key].parse(value if isinstance(value, str) else str(value))
        for key, value in options.items()
    }


def split_model_spec(spec: str) -> tuple[str, str]:
    """Split `provider/name` (the name may itself contain slashes, as in `openai/org/model`)."""
    provider, sep, name = spec.partition("/")
    if not sep or not name or provider not in _tables():
        raise UsageError(
            f"bad model spec {spec!r}: expected PROVIDER/NAME with PROVIDER one of "
            f"{', '.join(provider_names())} (e.g. llamacpp/gemma3-270m, openai/my-model)"
        )
    return provider, name


def create_backend(spec: str, options: dict[str, Any] | None = None, **transport: Any) -> Backend:
    """Return a backend for `provider/name` with backend options (`-M`) and transport kwargs
    (passed to providers that declare `ENDPOINT`, ignored by the others)."""
    provider, name = split_model_spec(spec)
    factory = provider_factory(provider)
    typed = typed_options(provider, dict(options or {}))
    if getattr(factory, "ENDPOINT", False):
        return factory.from_options(name, typed, **transport)  # type: ignore[no-any-return]
    return factory.from_options(name, typed)  # type: ignore[no-any-return]
