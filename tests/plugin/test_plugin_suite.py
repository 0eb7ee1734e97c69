"""The suite contract holds: a suite defined here, in tests/, plugs in through the entry-point
group and every command runs on it (run, score, report in each format, compare, profile, list)
with nothing changed anywhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.summary import Summary

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An installed distribution that declares the suite in the `longscope.suites` group."""
    site = tmp_path_factory.mktemp("site")
    info = site / "echo_suite-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-suite\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[longscope.suites]\necho = tests.plugin.echo_suite:EchoSuite\n"
    )
    path = os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


MODEL = [
    "--model",
    "scripted/reader",
    "-M",
    r"pattern=The key is (\w+)",
    "-M",
    "context_length=400",
]


def test_every_command_on_a_plugged_in_suite(site, tmp_path: Path) -> None:
    listed = cli(site, "list")
    assert listed.returncode == 0 and "echo" in listed.stdout, listed.stderr
    params = cli(site, "list", "echo")
    assert "-S samples=N" in params.stdout and "(default: 2)" in params.stdout
    assert "-S word=TEXT" in params.stdout and "(default: key)" in params.stdout
    # `data` asks the suite for its sources: nothing registered beside the suite itself
    data = cli(site, "data", "echo", str(tmp_path / "data"))
    assert data.returncode == 0, data.stderr
    assert data.stdout.strip() == (
        f"by hand: nothing to download: echo writes its own filler (into {tmp_path / 'data'})"
    )
    run_dir = tmp_path / "run"
    # 256-token samples fit the scripted model's 400 tokens; 512-token ones are skipped (0).
    made = cli(site, "run", "echo", *MODEL, "-S", "samples=3", "-o", str(run_dir), "-q")
    assert made.returncode == 0, made.stderr
    assert "Echo scripted/reader  overall 50.0" in made.stdout
    assert "(3 sent, 3 skipped this time)" in made.stdout
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    typed = Summary.from_dict(summary)
    assert typed.by_length == {256: 100.0, 512: 0.0} and typed.completeness["skipped"] == 3
    assert cli(site, "score", str(run_dir)).returncode == 0
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    files = cli(site, "report", str(run_dir), "--html", str(html), "--markdown", str(md))
    assert files.returncode == 0, files.stderr
    assert "echo: scripted/reader" in html.read_text(encoding="utf-8")
    assert md.read_text(encoding="utf-8").startswith("## echo: scripted/reader")
    as_json = json.loads(cli(site, "report", str(run_dir), "--json").stdout)
    assert as_json["suite"] == "echo" and as_json["longscope"]["views"][0]["overall"] == 50.0
    board = json.loads(cli(site, "compare", str(run_dir), "--json").stdout)
    assert board[0]["suite"] == "echo" and board[0]["effective"] == "256"
    profile = tmp_path / "p.json"
    assert cli(site, "profile", str(run_dir), "-o", str(profile)).returncode == 0
    assert json.loads(profile.read_text())["effective_context"] == 256
    # the suite's own parameters are typed and checked like any other suite's
    bad = cli(site, "run", "echo", *MODEL, "-S", "samples=0", "-o", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "error: bad -S samples=0: expected a whole number of at least 1"
    )


def test_the_plugins_restate_no_option_and_register_nothing_else() -> None:
    """One file each: the options are declared once (their defaults included) and reach the
    constructor complete; no factory restates them, no other table names the plug-ins."""
    from .echo_suite import EchoSuite
    from .reader_backend import ReaderBackend

    assert not {"from_params", "from_options"} & set(vars(EchoSuite))
    assert "from_options" not in vars(ReaderBackend)
    assert {p.name: p.default for p in EchoSuite.OPTIONS} == {
        "lengths": (256, 512),
        "samples": 2,
        "word": "key",
    }
    built = EchoSuite.from_options({"lengths": [300], "samples": 1, "word": "door"})
    assert (built.lengths, built.samples, built.word) == ((300,), 1, "door")
    # stored parameters read back through the same defaults
    assert EchoSuite.from_params({"samples": 5}).params() == {
        "lengths": [256, 512],
        "samples": 5,
        "word": "key",
    }


def test_register_suite_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from longscope import api, suites
    from longscope.models.scripted import ScriptedBackend, from_pattern
    from longscope.suites import register_suite, suite_names

    from .echo_suite import EchoSuite

    # The registration lasts for this test only: later tests (the CLI reference) list the suites.
    monkeypatch.setattr(suites.REGISTRY, "_registered", dict(suites.REGISTRY._registered))
    monkeypatch.setattr(suites.REGISTRY, "_loaded", dict(suites.REGISTRY._loaded))
    register_suite("echo", EchoSuite)
    assert "echo" in suite_names()
    backend = ScriptedBackend("reader", answer=from_pattern(r"The door is (\w+)"))
    spec = api.RunSpec.of(
        "echo", backend, suite_options=["word=door", "lengths=300"], output=tmp_path
    )
    result = api.evaluate(spec)
    assert result.scores.summary.overall == 100.0 and len(backend.requests) == 2
    assert backend.closed
