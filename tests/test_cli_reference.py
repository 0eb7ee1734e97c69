"""docs/cli.md is what the CLI prints: regenerate it with `python docs/make_cli_reference.py`."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import typer

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "cli.md"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", ROOT / "docs" / "make_cli_reference.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current() -> None:
    written = PAGE.read_text(encoding="utf-8")
    assert written == _generator().reference(), (
        "docs/cli.md differs from `longscope --help`: run `python docs/make_cli_reference.py`"
    )


def test_every_command_suite_and_provider_has_its_section() -> None:
    """Read from the CLI itself, not from the generator's lists: a command the generator leaves
    out (`longscope data` was) fails here even though the page equals what the generator makes."""
    from longscope.cli import app
    from longscope.models.registry import provider_names
    from longscope.suites import suite_names

    headings = re.findall(r"^#+ `longscope ([a-z-]+)`$", PAGE.read_text("utf-8"), re.M)
    listed = set(re.findall(r"^### `([a-z0-9_-]+)`$", PAGE.read_text("utf-8"), re.M))
    commands = list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert "data" in commands
    assert headings == commands
    assert set(suite_names()) | set(provider_names()) <= listed
