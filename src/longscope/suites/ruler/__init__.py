"""RULER as a longscope suite: `from_params` builds it from stored or command-line parameters."""

from __future__ import annotations

from typing import Any

SUITES = {"ruler": "longscope.suites.ruler.suite:RulerSuite"}


def from_params(params: dict[str, Any]) -> Any:
    """Return the RULER suite for `params` (see `RulerSuite.from_params`)."""
    from longscope.suites.ruler.suite import RulerSuite

    return RulerSuite.from_params(params)


def published_rows() -> Any:
    """Return RULER's published rows (see `longscope.suites.ruler.published.PublishedRow`)."""
    from longscope.suites.ruler.published import published_rows as rows

    return rows()
