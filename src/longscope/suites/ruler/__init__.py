"""RULER as a longscope suite: `from_params` builds it from stored or command-line parameters."""

from __future__ import annotations

from typing import Any

from longscope.errors import UsageError

DESCRIPTION = "RULER: 13 synthetic tasks (NIAH, tracing, aggregation, QA), 4K-128K, RULER's scoring"


def _list(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    else:
        items = [str(v).strip() for v in value]
    if not items or any(not v for v in items):
        raise UsageError(f"bad ruler {what} {value!r}: use a comma-separated list")
    return items


def _length(text: str) -> int:
    lower = text.lower()
    try:
        value = float(lower[:-1]) * 1024 if lower.endswith("k") else float(lower)
    except ValueError as exc:
        raise UsageError(f"bad ruler length {text!r}: use token counts like 4k or 32768") from exc
    if value % 1 or value < 1:
        raise UsageError(f"bad ruler length {text!r}: use whole token counts like 4k or 32768")
    return int(value)


def from_params(params: dict[str, Any]) -> Any:
    """Return the RULER suite for `params` (lists or comma-separated text; unknown keys ignored)."""
    from longscope.suites.ruler.suite import RulerSuite
    from longscope.suites.ruler.tasks import (
        ALL_TASKS,
        DEFAULT_LENGTHS,
        DEFAULT_SAMPLES,
        DEFAULT_SEED,
    )

    try:
        lengths = params.get("lengths") or DEFAULT_LENGTHS
        return RulerSuite(
            tasks=_list(params.get("tasks") or ALL_TASKS, "tasks"),
            lengths=[_length(str(n)) for n in _list(lengths, "lengths")],
            samples=int(params.get("samples") or DEFAULT_SAMPLES),
            # RULER's own name (prepare.py --random_seed): the run's --seed is the sampling seed.
            seed=int(params["random_seed"])
            if params.get("random_seed") not in (None, "")
            else DEFAULT_SEED,
            essays=params.get("essays") or None,
            squad=params.get("squad") or None,
            hotpotqa=params.get("hotpotqa") or None,
            words=params.get("words") or None,
            model_template=params.get("model_template") or "base",
        )
    except ValueError as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(str(exc)) from exc


def published_rows() -> Any:
    """Return RULER's published rows (see `longscope.suites.ruler.published.PublishedRow`)."""
    from longscope.suites.ruler.published import published_rows as rows

    return rows()
