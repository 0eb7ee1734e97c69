"""The header stored with every run: what made it (suite, parameters, model, longscope, git)."""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path
from typing import Any

from longscope import __version__


@functools.cache
def git_revision() -> str:
    """Return the short git revision of the longscope checkout, or `unknown`."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def run_header(suite: Any, model: str, **fields: Any) -> dict[str, Any]:
    """Return a run's header: suite, its version and params, the model, `fields`, provenance.

    Runs made here add `model_info` and `config`; imported predictions add where they came from.
    """
    return {
        "suite": suite.name,
        "suite_version": suite.version,
        "params": suite.params(),
        "model": model,
        **fields,
        "longscope": __version__,
        "git": git_revision(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
