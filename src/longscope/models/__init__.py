"""Backends: llama.cpp (GGUF) and any OpenAI-compatible server, behind one protocol."""

from longscope.models.base import Backend, ModelInfo, UsageError
from longscope.models.registry import KNOWN_MODELS, create_backend, parse_model_options

__all__ = [
    "KNOWN_MODELS",
    "Backend",
    "ModelInfo",
    "UsageError",
    "create_backend",
    "parse_model_options",
]
