"""An adaptive run's record (`adaptive.json`): reading it, and knowing when it no longer describes
its run. Apart from run/adaptive.py so that `run` (run/launch.py) can retire an outgrown record
without importing the adaptive driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.run.store import STORE_NAME, RunStore

ADAPTIVE_NAME = "adaptive.json"


def read_adaptive(run_dir: str | Path) -> dict[str, Any] | None:
    """Return a run directory's adaptive record (`adaptive.json`), or None for an ordinary run or
    one whose run has been extended since (see `adaptive_state`)."""
    return adaptive_state(run_dir)[0]


def adaptive_state(run_dir: str | Path) -> tuple[dict[str, Any] | None, str]:
    """Return a run directory's adaptive record and "", or None and why it is not one: "" for an
    ordinary run, a line when the record is stale (the run holds samples the adaptive run did not
    send, e.g. a later full run in the same directory: its curve, not the record, is the answer)."""
    path = Path(run_dir) / ADAPTIVE_NAME
    if not path.is_file():
        return None, ""
    data = _load_record(path)
    held = data.get("stored_samples")
    if isinstance(held, int) and (Path(run_dir) / STORE_NAME).is_file():
        with RunStore.open_readonly(run_dir) as store:
            now = len(store.samples(str(data.get("run_id"))))
        if now != held:
            return None, (
                f"{ADAPTIVE_NAME} is stale: the run holds {now:,} samples, the adaptive run had "
                f"{held:,}; its scores are the run's own curve, not the adaptive decision"
            )
    return data, ""


def drop_stale_record(run_dir: str | Path) -> bool:
    """Remove a directory's adaptive record once its run holds samples the adaptive run did not
    send (a later full run in the same directory); return True when one was removed. A record
    still current (a later run that sent nothing new) is kept."""
    path = Path(run_dir) / ADAPTIVE_NAME
    if not path.is_file():
        return False
    try:
        record, note = adaptive_state(run_dir)
    except UsageError:
        return False  # not a record longscope can read: left for the user to look at
    if record is not None or not note:
        return False
    path.unlink()
    return True


def adaptive_of(run_dir: str | Path, run_id: str) -> tuple[dict[str, Any] | None, str]:
    """Return `adaptive_state` for one run of a directory (None and "" when another run of the
    directory made the record)."""
    record, note = adaptive_state(run_dir)
    if record is not None and record.get("run_id") != run_id:
        return None, ""
    return record, note


def _load_record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{path} is not an adaptive record ({exc}): run the same command again"
        ) from exc
    if not isinstance(data, dict) or "interval" not in data:
        raise UsageError(f"{path} is not an adaptive record: run the same command again")
    return data


__all__ = [
    "ADAPTIVE_NAME",
    "adaptive_of",
    "adaptive_state",
    "drop_stale_record",
    "read_adaptive",
]
