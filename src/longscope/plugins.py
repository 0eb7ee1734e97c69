"""What the suite and backend registries share: turning a registered target into the object."""

from __future__ import annotations

import importlib
from typing import Any


def load_target(target: Any) -> Any:
    """Return the object `target` names: a `module:attr.path` string, an entry point (loaded), or
    the object itself (registered directly)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        loaded: Any = importlib.import_module(module)
        for part in filter(None, attr.split(".")):
            loaded = getattr(loaded, part)
        return loaded
    if hasattr(target, "load") and hasattr(target, "group"):  # an entry point
        return target.load()
    return target
