"""longscope: measure how far a language model really reads.

from longscope import RunSpec, evaluate
result = evaluate(RunSpec.of("longctx", "llamacpp/gemma3-270m", suite_options=["tiers=1"]))
print(result.scores.summary.headline.text())

The library API (`longscope.api`): `evaluate`, `plan`, `merge`, `score`, `report`, `compare`,
`profile`, `judge`, `calibrate`, each returning a small typed result; `run` and `plan` take one
`RunSpec` (`RunSpec.of(suite, model, **options)`, the command line's options by name); suites by name through `longscope.suites` (`register_suite`, the
`longscope.suites` entry-point group) and backends by provider through `longscope.models.registry`
(`register_backend`, the `longscope.backends` entry-point group); every result is a typed
`longscope.summary.Summary`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from longscope.types import Generation, Request, Sample, Score, Status

_API = (
    "RunSpec",
    "evaluate",
    "plan",
    "merge",
    "score",
    "report",
    "compare",
    "profile",
    "judge",
    "calibrate",
)


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # The heavy parts (llama.cpp, openai) load only when asked for.
    if name in _API:
        from longscope import api

        return getattr(api, name)
    if name in ("create_suite", "register_suite"):
        from longscope import suites

        return getattr(suites, name)
    if name in ("create_backend", "register_backend"):
        from longscope.models import registry

        return getattr(registry, name)
    if name == "Summary":
        from longscope.summary import Summary

        return Summary
    raise AttributeError(name)


__all__ = [
    "Generation",
    "Request",
    "RunSpec",
    "Sample",
    "Score",
    "Status",
    "Summary",
    "__version__",
    "calibrate",
    "compare",
    "create_backend",
    "create_suite",
    "evaluate",
    "judge",
    "profile",
    "register_backend",
    "register_suite",
    "report",
    "score",
]
