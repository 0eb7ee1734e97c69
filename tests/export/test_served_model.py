"""The model's id in exports is the served model's own name, read back by its consumers: a real
llama.cpp server serves SmolLM2 under the name vLLM would give Qwen (`--served-model-name`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.catalogue import resolve_model_path
from longscope.errors import UsageError
from longscope.export import export
from longscope.models.registry import create_backend
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite

from ..llama_server import start_server, stop, wait_ready

pytestmark = pytest.mark.model

QWEN = "Qwen/Qwen2.5-7B-Instruct"
PARAMS = {"lengths": [1024], "depths": [0.5], "types": ["needle"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    log_path = tmp_path_factory.mktemp("qwen-named-server") / "server.log"
    proc, url = start_server(resolve_model_path("smollm2-135m"), log_path, n_ctx=2048, alias=QWEN)
    try:
        wait_ready(proc, url, log_path)
        yield url
    finally:
        stop(proc)


def _run(url: str, out: Path, model: str, **options: object) -> Path:
    backend = create_backend(
        f"openai/{model}", {"context_length": 2048, **options}, base_url=url, concurrency=1
    )
    made = run(
        create_suite("longctx", PARAMS), backend, RunOptions(output=out, max_tokens=8, quiet=True)
    )
    assert made.result is not None and made.result.typed.state == "complete"
    return out


def _eee(run_dir: Path, out: Path, **kwargs: object) -> dict:
    (done,) = export([run_dir], "eee", out, **kwargs)
    return json.loads(Path(done.where).read_text())


def test_eee_and_inspect_carry_the_served_models_name(server: str, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    run_dir = _run(server, tmp_path / "qwen", QWEN)
    record = _eee(run_dir, tmp_path / "eee")
    info = record["model_info"]
    assert (info["id"], info["developer"], info["name"]) == (QWEN, "Qwen", f"openai/{QWEN}")
    assert record["evaluation_id"].startswith(f"longscope_longctx/{QWEN}/")
    assert info["inference_platform"] == "OpenAI-compatible API"
    # llama-cpp-python's server names no engine (`owned_by: me`): none is made up.
    assert info["inference_engine"].get("name") is None
    samples = next((tmp_path / "eee").rglob("*_samples.jsonl")).read_text().splitlines()
    assert {json.loads(line)["model_id"] for line in samples} == {QWEN}
    (done,) = export([run_dir], "inspect", tmp_path / "inspect")
    assert read_eval_log(done.where).eval.model == f"openai/{QWEN}"


def test_a_flat_served_name_takes_the_stated_id_or_the_tokenizers_model(
    server: str, tmp_path: Path
) -> None:
    stated = _run(server, tmp_path / "stated", "qwen", model_id=QWEN)
    assert _eee(stated, tmp_path / "a")["model_info"]["id"] == QWEN
    counted = _run(server, tmp_path / "counted", "smol", tokenizer="smollm2-135m")
    assert (
        _eee(counted, tmp_path / "b")["model_info"]["id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    flat = _run(server, tmp_path / "flat", "qwen")
    with pytest.raises(UsageError, match=r"'qwen', without its developer.*--model-id ORG/NAME"):
        export([flat], "eee", tmp_path / "c")
    assert not (tmp_path / "c" / "data").exists()
    # From the command line, as docs/export.md shows it.
    done = subprocess.run(
        [sys.executable, "-m", "longscope.cli", "export", str(flat), "--format", "eee",
         "-o", str(tmp_path / "c"), "--model-id", QWEN],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = (tmp_path / "c" / "data" / "longscope_longctx" / "Qwen").rglob("*.json")
    assert json.loads(record.read_text())["model_info"]["developer"] == "Qwen"
