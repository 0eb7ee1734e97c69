"""docs/cli.md is what the CLI prints: regenerate it with `python docs/make_cli_reference.py`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_cli_reference_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", ROOT / "docs" / "make_cli_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert written == module.reference(), (
        "docs/cli.md differs from `longscope --help`: run `python docs/make_cli_reference.py`"
    )
