"""Every script in benchmarks/ runs at its `--smoke` size and passes its own checks.

The scripts assert their invariants themselves (the lengths of what they build, every answer
complete, ratios computed from what they measured), so a script that drifts from the code fails here
under its own name instead of at the next `make bench`. CUDA scripts are skipped, with the reason,
where torch or a CUDA device is missing; `make test-gpu`'s machine runs them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BENCHMARKS = ROOT / "benchmarks"
_spec = importlib.util.spec_from_file_location("run_all", BENCHMARKS / "run_all.py")
assert _spec and _spec.loader
run_all = importlib.util.module_from_spec(_spec)
sys.modules["run_all"] = run_all
_spec.loader.exec_module(run_all)
SMOKE_TIMEOUT_S = 600
# Scripts whose smoke size another test already runs, asserting more than this file would (the
# figures the script prints): running them here too was the same minute of work twice.
SMOKED_ELSEWHERE = {
    "bench_kill_loss.py": ROOT / "tests" / "run" / "test_kill_groups.py",
    "bench_coverage.py": ROOT / "tests" / "analysis" / "test_bench_coverage.py",
    "bench_uncertainty_cost.py": ROOT / "tests" / "analysis" / "test_bench_coverage.py",
    # Its smoke is the two-device run through the CLI that test checks in its store.
    "bench_devices.py": ROOT / "tests" / "models" / "test_hf_devices.py",
    # It installs from PyPI (a minute): make test-slow runs it, then uses the venv it made.
    "bench_install.py": ROOT / "tests" / "test_install.py",
}
SMOKED_HERE = [s for s in run_all.SCRIPTS if s.name not in SMOKED_ELSEWHERE]
# Caches other libraries keep in the temporary directory on purpose, for the next process.
THIRD_PARTY_CACHES = ("torchinductor_",)


def test_every_script_is_listed() -> None:
    on_disk = {p.name for p in BENCHMARKS.glob("*.py")} - {"run_all.py"}
    listed = {s.name for s in run_all.SCRIPTS}
    assert on_disk == listed, f"not in run_all.SCRIPTS: {sorted(on_disk - listed)}"


def test_every_script_is_smoked_here_or_by_a_named_test() -> None:
    for name, test in SMOKED_ELSEWHERE.items():
        text = test.read_text()
        # The other test starts the script at its smoke size and checks its exit code.
        assert f'"{name}"), "--smoke"' in text and "returncode == 0" in text, (name, test)
    assert {s.name for s in SMOKED_HERE} | set(SMOKED_ELSEWHERE) == {
        s.name for s in run_all.SCRIPTS
    }


@pytest.mark.model
@pytest.mark.parametrize("script", SMOKED_HERE, ids=[s.name for s in SMOKED_HERE])
def test_smoke(script, tmp_path: Path) -> None:
    args, why = run_all.arguments(script, smoke=True)
    if why:
        pytest.skip(f"{script.name}: {why}")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run(
        run_all.command(script, args),
        cwd=tmp_path,  # scripts that store runs write them here, not into the checkout
        env={**os.environ, "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script.name} --smoke: exit {done.returncode}\n{done.stderr[-3000:]}"
    )
    assert done.stdout.strip(), f"{script.name} --smoke printed nothing"
    # A scratch folder the user did not name is gone when the script ends: `make test` and
    # `make bench` run these again and again on a user's machine.
    left = sorted(p.name for p in scratch.iterdir() if not p.name.startswith(THIRD_PARTY_CACHES))
    assert not left, f"{script.name} --smoke left {left} in the temporary directory"


def test_make_bench_names_the_failing_script(tmp_path: Path) -> None:
    # run_all stops at the first failure with one line naming the script and its command.
    broken = run_all.Script("bench_does_not_exist.py")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, runpy; sys.argv = ['run_all.py', '--only', 'bench_does_not_exist.py'];"
            f"import run_all; run_all.SCRIPTS = (run_all.Script({broken.name!r}),);"
            "run_all.main()",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(BENCHMARKS), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "make bench: benchmarks/bench_does_not_exist.py failed (exit 2): "
        "python benchmarks/bench_does_not_exist.py"
    )
