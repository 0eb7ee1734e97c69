"""Errors every layer may raise: the bottom of the import graph (imports nothing of longscope)."""

from __future__ import annotations

from typing import Any


class UsageError(ValueError):
    """A mistake the user can fix (bad option, unknown name, unreachable server): exit code 2."""


def describe_error(error: Any) -> str:
    """Return the first problem of a pydantic ValidationError as `field 'x': what was expected`."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "row"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        return f"field {where!r}: missing"
    return f"field {where!r}: {message}"


__all__ = ["UsageError", "describe_error"]
