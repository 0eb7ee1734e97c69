"""longscope: measure how far a language model really reads."""

from __future__ import annotations

__version__ = "0.1.0"

from longscope.types import Generation, Request, Sample, Score, Status

__all__ = ["Generation", "Request", "Sample", "Score", "Status", "__version__"]
