"""Errors every layer may raise: the bottom of the import graph (imports nothing of longscope)."""

from __future__ import annotations

from typing import Any


class UsageError(ValueError):
    """A mistake the user can fix (bad option, unknown name, unreachable server): exit code 2."""

    exit_code = 2


class DiskFull(UsageError):
    """No space left on the device longscope writes to: one line naming the device and the fix.

    Exit code 2, or 3 (`exit_code`) for a run stopped by it: its answers so far are stored.
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def describe_error(error: Any) -> str:
    """Return the first problem of a pydantic ValidationError as `field 'x': what was expected`."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "row"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        return f"field {where!r}: missing"
    return f"field {where!r}: {message}"


__all__ = ["DiskFull", "UsageError", "describe_error"]
