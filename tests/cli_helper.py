"""Run the real `longscope` CLI in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys


def longscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
