"""Named models and backend construction from `provider/name` plus `-M key=value` options."""

from __future__ import annotations

from typing import Any

from longscope.catalogue import KNOWN_MODELS, KnownModel, resolve_model_path
from longscope.errors import UsageError
from longscope.models.base import Backend

__all__ = [
    "KNOWN_MODELS",
    "PROVIDERS",
    "KnownModel",
    "create_backend",
    "parse_model_options",
    "resolve_model_path",
    "split_model_spec",
]


PROVIDERS = ("llamacpp", "openai", "hf", "scripted")


def parse_model_options(pairs: list[str]) -> dict[str, Any]:
    """Parse `-M key=value` pairs; values become int, float or bool where they look like one."""
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


def split_model_spec(spec: str) -> tuple[str, str]:
    """Split `provider/name` (the name may itself contain slashes, as in `openai/org/model`)."""
    provider, sep, name = spec.partition("/")
    if not sep or not name or provider not in PROVIDERS:
        raise UsageError(
            f"bad model spec {spec!r}: expected PROVIDER/NAME with PROVIDER one of "
            f"{', '.join(PROVIDERS)} (e.g. llamacpp/gemma3-270m, openai/my-model)"
        )
    return provider, name


def create_backend(spec: str, options: dict[str, Any] | None = None, **kwargs: Any) -> Backend:
    """Return a backend for `provider/name` with backend options (`-M`) and transport kwargs."""
    provider, name = split_model_spec(spec)
    options = dict(options or {})
    if provider == "llamacpp":
        from longscope.models.llamacpp import LlamaCppBackend

        return LlamaCppBackend.from_options(name, options)
    if provider == "hf":
        from longscope.models.hf import HFBackend

        return HFBackend.from_options(name, options)
    if provider == "scripted":
        from longscope.models.scripted import ScriptedBackend

        return ScriptedBackend.from_options(name, options)
    from longscope.models.openai_api import OpenAIBackend

    return OpenAIBackend.from_options(name, options, **kwargs)
