"""Errors every layer may raise: the bottom of the import graph (imports nothing of longscope)."""

from __future__ import annotations


class UsageError(ValueError):
    """A mistake the user can fix (bad option, unknown name, unreachable server): exit code 2."""


__all__ = ["UsageError"]
