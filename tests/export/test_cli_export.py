"""`longscope export` as a user runs it: exit codes, one-line refusals, a missing library, the
run left untouched, and nothing imported that the format does not use."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.export import record

pytestmark = pytest.mark.model


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", "export", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _tree(run_dir: Path) -> dict[str, tuple[str, int]]:
    """Return each file of a run directory with its digest and modification time."""
    return {
        str(p.relative_to(run_dir)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


def test_every_format_from_the_command_line_leaves_the_run_untouched(
    real_run: Path, tmp_path: Path
) -> None:
    before = _tree(real_run)
    for fmt in ("inspect", "eee", "hf", "mlflow"):
        done = _cli(str(real_run), "--format", fmt, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("run ") and "(complete) -> " in done.stdout
        assert done.stderr == "" or "provisional" not in done.stderr
    assert _tree(real_run) == before
    # The default output folders, one per format.
    assert list((tmp_path / "exports" / "inspect").glob("*.eval"))
    assert list((tmp_path / "exports" / "eee" / "data").rglob("*.json"))
    assert list((tmp_path / "exports" / "hf").rglob(".eval_results/*.yaml"))
    assert (tmp_path / "exports" / "mlflow" / "mlflow.db").is_file()


def test_a_provisional_run_exits_0_and_says_so_on_stderr(
    provisional_run: Path, tmp_path: Path
) -> None:
    done = _cli(str(provisional_run), "--format", "inspect", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(provisional) -> out/" in done.stdout
    assert "exported as provisional: incomplete: 1 of 2 requests were not answered" in done.stderr
    # The Hub shows values as final: hf refuses it in one line unless asked.
    done = _cli(str(provisional_run), "--format", "hf", "-o", "hf", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "is provisional (incomplete: 1 of 2 requests were not answered" in done.stderr
    assert "pass --provisional" in done.stderr and not (tmp_path / "hf").exists()
    done = _cli(str(provisional_run), "--format", "hf", "-o", "hf", "--provisional", cwd=tmp_path)
    assert done.returncode == 0 and "(provisional) -> hf/" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "csv"], "unknown --format 'csv': use inspect, eee, hf, mlflow"),
        (["/nonexistent/run", "--format", "hf"], "no longscope run in /nonexistent/run"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    real_run: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    if args[0] == "--format":
        args = [str(real_run), *args]
    done = _cli(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert not (tmp_path / "exports").exists()


@pytest.mark.parametrize(
    ("fmt", "module", "install"),
    [
        ("inspect", "inspect_ai", "pip install 'longscope[inspect]'"),
        ("mlflow", "mlflow", "pip install 'longscope[mlflow]'"),
        ("eee", "every_eval_ever", "every-eval-ever"),
    ],
)
def test_a_missing_library_is_one_line_with_its_install_command(
    real_run: Path, tmp_path: Path, fmt: str, module: str, install: str
) -> None:
    # A package of that name that cannot be imported stands first on the path: as if not installed.
    shadow = tmp_path / "shadow" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    done = _cli(
        str(real_run), "--format", fmt, cwd=tmp_path, env={"PYTHONPATH": str(shadow.parent)}
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and install in done.stderr, done.stderr
    assert f"--format {fmt} needs" in done.stderr
    assert not (tmp_path / "exports").exists()  # refused before anything is written


def test_nothing_is_imported_that_the_format_does_not_use(real_run: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from longscope.cli import main\n"
        "from longscope.export import export\n"
        f"export([{str(real_run)!r}], 'hf', {str(tmp_path)!r})\n"
        "heavy = [m for m in ('inspect_ai', 'mlflow', 'every_eval_ever') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_run_from_before_the_determinism_record_says_what_it_lacks(real_run: Path) -> None:
    (run,) = record.load_runs([real_run])
    old = {k: v for k, v in run.header.items() if k != "scheduling"}
    old["model_info"] = {**run.header["model_info"], "details": {}}
    rules = record.ExportRun(
        run.run_dir, _with_header(run.scores, old), run.created, {}
    ).determinism()
    assert rules["engine"] == rules["batching"] == rules["requests_in_flight"] == "not recorded"
    assert rules["seed"] == 0 and rules["temperature"] == 0.0  # the config was always stored


def _with_header(result, header):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(result, header=header)
