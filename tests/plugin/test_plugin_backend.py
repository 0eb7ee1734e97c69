"""The backend contract holds: a backend defined here, in tests/, plugs in through the
`longscope.backends` entry-point group, its typed `-M` options are listed and checked in one
place, and run, plan, score and report work on it with nothing changed anywhere else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from longscope.summary import Summary
from tests.plugin.test_plugin_suite import ROOT, cli


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An installed distribution declaring the reader backend (and the echo suite it reads)."""
    site = tmp_path_factory.mktemp("site")
    info = site / "reader_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reader-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[longscope.backends]\nreader = tests.plugin.reader_backend:ReaderBackend\n\n"
        "[longscope.suites]\necho = tests.plugin.echo_suite:EchoSuite\n"
    )
    path = os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200"}


MODEL = ["--model", "reader/skim", "-M", "context_length=400"]


def test_every_command_on_a_plugged_in_backend(site, tmp_path: Path) -> None:
    listed = cli(site, "list")
    assert listed.returncode == 0, listed.stderr
    assert "reader         Reader: answers 'What is the X?'" in listed.stdout
    options = cli(site, "list", "reader")
    assert options.returncode == 0, options.stderr
    assert "-M context_length=N" in options.stdout and "(default: 100000)" in options.stdout
    assert "-M shout=true|false" in options.stdout

    planned = cli(site, "plan", "echo", *MODEL, "-S", "samples=3", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    # 256-token samples fit the 400 tokens stated with -M; 512-token ones are skipped.
    assert (plan["requests"], plan["skipped"]) == (3, 3)

    run_dir = tmp_path / "run"
    made = cli(site, "run", "echo", *MODEL, "-S", "samples=3", "-o", str(run_dir), "-q")
    assert made.returncode == 0, made.stderr
    assert "Echo reader/skim  overall 50.0" in made.stdout
    assert "(3 sent, 3 skipped this time)" in made.stdout
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    typed = Summary.from_dict(summary)
    assert typed.by_length == {256: 100.0, 512: 0.0} and typed.completeness["skipped"] == 3

    assert cli(site, "score", str(run_dir)).returncode == 0
    as_json = json.loads(cli(site, "report", str(run_dir), "--json").stdout)
    assert as_json["suite"] == "echo" and as_json["model"] == "reader/skim"
    assert as_json["longscope"]["views"][0]["overall"] == 50.0

    # A typed option reaches the backend: shouted keys are wrong answers.
    loud = cli(site, "run", "echo", *MODEL, "-M", "shout=yes", "-o", str(tmp_path / "l"), "-q")
    assert loud.returncode == 0, loud.stderr
    assert "Echo reader/skim  overall 0.0" in loud.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["-M", "colour=red"],
            "error: unknown reader option(s) colour: reader takes context_length, prompt_mode, "
            "latency_s, shout (see `longscope list reader`)",
        ),
        (["-M", "context_length=lots"], "error: bad -M context_length=lots: expected a whole "
         "number of at least 1"),
        (["-M", "shout=loudly"], "error: bad -M shout=loudly: expected true or false"),
        (["-M", "prompt_mode=poem"], "error: bad -M prompt_mode=poem: use one of chat, completion"),
    ],
)  # fmt: skip
def test_bad_backend_options_are_one_line_and_exit_2(
    site, tmp_path: Path, extra: list[str], message: str
) -> None:
    for command in ("run", "plan"):
        out = tmp_path / command
        done = cli(site, command, "echo", "--model", "reader/skim", *extra, "-o", str(out))
        assert done.returncode == 2 and done.stderr.strip() == message, done.stderr
        assert not out.exists()


def test_register_backend_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The registrations last for this test only: later tests (the CLI reference) list them.
    from longscope import api, suites
    from longscope.models import registry
    from longscope.models.registry import create_backend, provider_names, register_backend
    from longscope.suites import register_suite

    from .echo_suite import EchoSuite
    from .reader_backend import ReaderBackend

    for plugins in (suites.REGISTRY, registry.BACKENDS):
        monkeypatch.setattr(plugins, "_registered", dict(plugins._registered))
        monkeypatch.setattr(plugins, "_loaded", dict(plugins._loaded))
    register_backend("reader", ReaderBackend)
    register_suite("echo", EchoSuite)
    assert "reader" in provider_names()
    backend = create_backend("reader/x", {"latency_s": "0.001"})
    assert isinstance(backend, ReaderBackend) and backend.latency_s == 0.001
    spec = api.RunSpec.of("echo", "reader/x", suite_options=["lengths=300"], output=tmp_path)
    result = api.evaluate(spec)
    assert result.scores.summary.overall == 100.0
