"""Load a script of benchmarks/ as a module, for tests of its pure parts (how it sums, compares
or summarizes what it measured) without running it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str, needs: tuple[str, ...] = ("torch", "transformers")) -> ModuleType:
    """Return benchmarks/`name`.py as a module, skipping the test where a package it imports at
    its top (`needs`) is missing. Its folder goes on `sys.path`: scripts import one another."""
    for package in needs:
        pytest.importorskip(package)
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
