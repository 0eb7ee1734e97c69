"""Rows from the Hugging Face Hub through `datasets`, with one-line errors when it cannot answer.

Only used when a user names a Hub dataset; nothing in the default paths needs the network. Before
asking `datasets` (whose client retries an unreachable host for half a minute, a line per try) the
Hub's address is probed once (`PROBE_TIMEOUT_S`); when it cannot be reached the dataset is read from
the local cache only (Hugging Face's offline mode), and a dataset not cached is one line, at once.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
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
    unreachable = None if Path(name).exists() else hub_unreachable()
    try:
        with _offline_mode(unreachable is not None):
            from datasets import load_dataset

            data = load_dataset(name, config, split=split, revision=revision)
    except ImportError as exc:
        raise UsageError(
            f"loading {label} from the Hub needs datasets: pip install 'longscope[hub]'; or {instead}"
        ) from exc
    except Exception as exc:  # the Hub client raises many unrelated types when offline
        if unreachable is not None:
            raise UsageError(
                f"cannot reach the Hub at {hub_endpoint()} ({unreachable}) and {label} is not in "
                f"the local cache; {instead}"
            ) from exc
        raise UsageError(
            f"cannot load {label} from the Hub ({type(exc).__name__}); {instead}"
        ) from exc
    fingerprint = getattr(data, "_fingerprint", "unknown")
    where = f"{name}:{config}" if config else name
    rows = [dict(row) for row in data]
    return HubRows(rows, f"hub:{where}@{revision or 'main'}:{fingerprint}")


PROBE_TIMEOUT_S = 5.0
"""How long the probe of the Hub's address may take (one connection, no retries)."""


def hub_endpoint() -> str:
    """Return the Hub's address: `$HF_ENDPOINT` (as huggingface_hub reads it), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_unreachable(timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Return why the Hub's address cannot be reached (one try), or None when it answers at all
    (any HTTP status) or Hugging Face's offline mode is already on."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return None
    import httpx

    try:
        httpx.head(hub_endpoint(), timeout=timeout_s, follow_redirects=False)
    except httpx.HTTPError as exc:
        return _reason(exc)
    return None


def _reason(exc: BaseException) -> str:
    inner = exc.__context__ or exc.__cause__
    text = str(inner or exc) or type(exc).__name__
    return " ".join(text.split())[:120]


_OFFLINE_FLAGS = (
    ("huggingface_hub.constants", "HF_HUB_OFFLINE"),
    ("datasets.config", "HF_HUB_OFFLINE"),
    ("datasets.config", "HF_DATASETS_OFFLINE"),
)


@contextlib.contextmanager
def _offline_mode(on: bool) -> Iterator[None]:
    """Within the block, Hugging Face's offline mode (the cache only, no retries) when `on`; the
    environment and the flags modules read from it at import are restored after."""
    if not on:
        yield
        return
    import datasets  # noqa: F401  (first, so that it reads the user's environment at import)

    saved_env = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    flipped = []
    for module, attr in _OFFLINE_FLAGS:
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, attr):
            flipped.append((loaded, attr, getattr(loaded, attr)))
            setattr(loaded, attr, True)
    try:
        yield
    finally:
        for loaded, attr, value in flipped:
            setattr(loaded, attr, value)
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env
