"""The library's front door: one call per CLI command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longscope.models.base import Backend
from longscope.models.registry import create_backend
from longscope.run.runner import RunOptions, RunResult, run
from longscope.run.scoring import ScoreResult, score_run
from longscope.suites import create_suite
from longscope.suites.base import Suite


def evaluate(
    suite: str | Suite,
    model: str | Backend,
    *,
    suite_params: dict[str, Any] | None = None,
    model_options: dict[str, Any] | None = None,
    base_url: str | None = None,
    router: str | None = None,
    router_options: dict[str, Any] | None = None,
    **run_options: Any,
) -> RunResult:
    """Run a suite on a model and return the stored, scored result.

    `evaluate("longctx", "llamacpp/gemma3-270m", suite_params={"tiers": [1]}, output=Path("runs/x"))`
    With `router="profile.json"` the model runs behind the context-budget router
    (`router_options`: strategy, basis, length).
    """
    suite_obj = create_suite(suite, suite_params or {}) if isinstance(suite, str) else suite
    backend = (
        create_backend(model, model_options or {}, base_url=base_url)
        if isinstance(model, str)
        else model
    )
    if router is not None or (router_options or {}).get("length"):
        from longscope.router import with_router

        backend = with_router(backend, router, **(router_options or {}))
    if run_options.get("output") is not None:
        run_options["output"] = Path(run_options["output"])
    return run(suite_obj, backend, RunOptions(**run_options))


def score(run_dir: str | Path, run_id: str | None = None) -> ScoreResult:
    """Re-score a stored run without a model."""
    return score_run(run_dir, run_id)
