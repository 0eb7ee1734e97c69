"""Write docs/cli.md from the CLI's own `--help` (tests/test_cli_reference.py checks it is current).

.venv/bin/python docs/make_cli_reference.py
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent / "cli.md"
HEAD = """# CLI reference

Generated from `longscope COMMAND --help` by `docs/make_cli_reference.py`; a test fails when this
page differs from what the CLI prints, so it cannot go stale. Exit codes: 0 done, 2 bad input (one
line on stderr), 3 a run with failed or unanswered requests, 130 interrupted. `longscope` alone
prints the help below, as `--help` does (exit 0).
"""


def _invoke(args: list[str]) -> str:
    """Return what `longscope ARGS` prints at 100 columns without colour (in process: fast)."""
    from typer.testing import CliRunner

    from longscope.cli import app

    env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    done = CliRunner().invoke(app, args, prog_name="longscope", env=env, terminal_width=100)
    if done.exit_code != 0:
        raise SystemExit(f"longscope {' '.join(args)}: exit {done.exit_code}: {done.output[-500:]}")
    return "\n".join(line.rstrip() for line in done.output.strip().splitlines())


def commands() -> list[str]:
    """Return every command of the CLI, in the order `longscope --help` lists them."""
    import typer

    from longscope.cli import app

    return list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def suites() -> list[str]:
    """Return every suite `longscope list` shows."""
    from longscope.suites import suite_names

    return suite_names()


def providers() -> list[str]:
    """Return every model provider `longscope list` shows."""
    from longscope.models.registry import provider_names

    return sorted(provider_names())


def help_text(*args: str) -> str:
    """Return `longscope ARGS --help`."""
    return _invoke([*args, "--help"])


def list_text(*args: str) -> str:
    """Return `longscope list ARGS`."""
    return _invoke(["list", *args])


def reference() -> str:
    """Return the whole page."""
    parts = [HEAD, "```\n" + help_text() + "\n```\n"]
    for command in commands():
        parts.append(f"## `longscope {command}`\n\n```\n{help_text(command)}\n```\n")
    parts.append("## Suites and their `-S` options (`longscope list SUITE`)\n")
    parts.append("```\n" + list_text() + "\n```\n")
    for suite in suites():
        parts.append(f"### `{suite}`\n\n```\n{list_text(suite)}\n```\n")
    parts.append("## Providers and their `-M` options (`longscope list PROVIDER`)\n")
    for provider in providers():
        parts.append(f"### `{provider}`\n\n```\n{list_text(provider)}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    OUT.write_text(reference(), encoding="utf-8")
    print(f"wrote {OUT}")
