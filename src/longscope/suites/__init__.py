"""Suite registry: names to constructors, and reconstruction of a suite from a stored run."""

from __future__ import annotations

from typing import Any

from longscope.models.base import UsageError
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite

SUITE_DESCRIPTIONS = {
    "longctx": "LongCtx: 20 synthetic tasks (needle, position bias, multi-fact, reasoning), 4K-128K",
    "longbench-pro": "LongBench Pro: 1,500 bilingual samples, 11/25 tasks, 8K-256K (--data FILE or hub)",
    "hundred": "100-LongBench: length-controllable real contexts, 8 tasks, QA filter, LongScore",
}
SCORING_OPTIONS = (
    "embedder",
    "embed_base_url",
    "official_parity",
    "rouge_parity",
    "difficulty_labels",
)
"""Options that change scores but not generations: never part of a run's identity."""


def create_suite(name: str, params: dict[str, Any]) -> Suite:
    """Return the suite called `name` built from its params (as `Suite.params()` returns them)."""
    if name == "longctx":
        from longscope.suites.longctx.suite import GridSpec, LongCtxSuite

        grid = None
        if params.get("preset") == "grid" or params.get("lengths"):
            grid = GridSpec(
                lengths=tuple(params["lengths"]),
                depths=tuple(params.get("depths") or GridSpec.depths),
                types=tuple(params.get("types") or GridSpec.types),
            )
        try:
            return LongCtxSuite(
                tiers=tuple(params.get("tiers") or (1, 2, 3, 4, 5)),
                language=params.get("language", "en"),
                seed=int(params.get("seed", 0)),
                grid=grid,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if name == "longbench-pro":
        from longscope.suites.longbench_pro.suite import LongBenchProSuite

        if not params.get("data"):
            raise UsageError(
                "longbench-pro needs --data FILE (.json/.jsonl/.parquet) or --data hub"
            )
        try:
            return LongBenchProSuite(
                params["data"],
                modes=tuple(params.get("modes") or ("nonthinking",)),
                filters=params.get("filters") or {},
                truncate_with=params.get("truncate_with") or "qwen2.5",
                max_input_tokens=params.get("max_input_tokens"),
                temperature=float(params.get("temperature", 1.0)),
                **{k: params[k] for k in SCORING_OPTIONS if params.get(k) is not None},
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if name == "hundred":
        from longscope.suites.hundred.suite import SYNTHETIC_TASKS, HundredSuite

        try:
            return HundredSuite(
                tasks=tuple(params.get("tasks") or SYNTHETIC_TASKS),
                lengths=tuple(params.get("lengths") or (2048, 4096, 6144, 8192, 16384)),
                samples=int(params.get("samples") or 10),
                seed=int(params.get("seed", 0)),
                pool=params.get("pool") or "pydoc",
                sources=params.get("sources") or {},
                metric=params.get("metric") or "deterministic",
                qa_filter=float(params.get("qa_filter", 0.5)),
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    raise UsageError(
        f"unknown suite {name!r}: available are {', '.join(sorted(SUITE_DESCRIPTIONS))}"
    )


__all__ = [
    "SUITE_DESCRIPTIONS",
    "BuildContext",
    "PromptTemplate",
    "ScoredRow",
    "Suite",
    "create_suite",
]
