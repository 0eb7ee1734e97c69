"""GPU tests run where torch and CUDA are; LONGSCOPE_GPU_TESTS_ON_CPU=1 runs them on the CPU."""

from __future__ import annotations

import os

import pytest


def device() -> str:
    """Return the device GPU tests use, skipping the test where there is none."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if torch.cuda.is_available():
        return "cuda"
    if os.environ.get("LONGSCOPE_GPU_TESTS_ON_CPU") == "1":
        return "cpu"
    pytest.skip("no CUDA device")
