"""longscope: measure how far a language model really reads.

from longscope import evaluate, score
result = evaluate("longctx", "llamacpp/gemma3-270m", suite_params={"tiers": [1]})
print(result.result.summary["total"])
"""

from __future__ import annotations

__version__ = "0.1.0"

from longscope.types import Generation, Request, Sample, Score, Status


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # The heavy parts (llama.cpp, openai) load only when asked for.
    if name in ("evaluate", "score"):
        from longscope import api

        return getattr(api, name)
    if name in ("create_suite", "create_backend"):
        from longscope.models.registry import create_backend
        from longscope.suites import create_suite

        return {"create_suite": create_suite, "create_backend": create_backend}[name]
    raise AttributeError(name)


__all__ = [
    "Generation",
    "Request",
    "Sample",
    "Score",
    "Status",
    "__version__",
    "create_backend",
    "create_suite",
    "evaluate",
    "score",
]
