"""Rows from the Hugging Face Hub through `datasets`, with one-line errors when it cannot answer.

Only used when a user names a Hub dataset; nothing in the default paths needs the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longscope.errors import UsageError


@dataclass(frozen=True)
class HubRows:
    rows: list[dict[str, Any]]
    identity: str
    """`hub:NAME[:CONFIG]@REVISION:FINGERPRINT`, part of a run's identity."""


def load_hub_rows(
    name: str,
    config: str | None = None,
    split: str = "test",
    revision: str | None = None,
    instead: str = "download the data and pass the file",
) -> HubRows:
    """Load one split of a Hub dataset (or a local dataset folder) as plain dicts."""
    label = f"{name} ({config})" if config else name
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise UsageError(
            f"loading {label} from the Hub needs datasets: pip install 'longscope[hub]'; or {instead}"
        ) from exc
    try:
        data = load_dataset(name, config, split=split, revision=revision)
    except Exception as exc:  # the Hub client raises many unrelated types when offline
        raise UsageError(
            f"cannot load {label} from the Hub ({type(exc).__name__}); {instead}"
        ) from exc
    fingerprint = getattr(data, "_fingerprint", "unknown")
    where = f"{name}:{config}" if config else name
    rows = [dict(row) for row in data]
    return HubRows(rows, f"hub:{where}@{revision or 'main'}:{fingerprint}")
