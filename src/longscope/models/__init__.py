"""Backends: llama.cpp (GGUF), any OpenAI-compatible server, transformers on a GPU, behind one
protocol; providers by name through the registry (`register_backend`, the `longscope.backends`
entry-point group)."""

from longscope.errors import UsageError
from longscope.models.base import Backend, ModelInfo
from longscope.models.registry import (
    KNOWN_MODELS,
    create_backend,
    parse_model_options,
    register_backend,
)

__all__ = [
    "KNOWN_MODELS",
    "Backend",
    "ModelInfo",
    "UsageError",
    "create_backend",
    "parse_model_options",
    "register_backend",
]
