"""LongCtx's four task types on the embedded INSTRUCT model in chat mode, in-process and through
llama.cpp's server.

Both paths apply the GGUF's own chat template and decode greedily with the same engine, so they
must read the same prompt tokens and write the same answers; the length that does not fit the 8K
window is skipped with its reason, never truncated. The fixed tiers' 4K prompts cost four times
the prefill of these 1K ones and test nothing more here: the chat template's overhead is the same
at any length, and tier 1 itself runs in tests/run/test_runner_e2e.py.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from longscope.models.registry import create_backend, resolve_model_path
from longscope.run.runner import RunOptions, run
from longscope.suites import create_suite
from longscope.suites.longctx.tasks import TASK_TYPES

from ..llama_server import start_server, stop, wait_ready

pytestmark = pytest.mark.model

# LongCtx's four task types (the fixed tasks' facts and questions) at 1K, which fits, and at 16K,
# which the 8K window cannot hold.
GRID = {"lengths": [1024, 16384], "depths": [0.5], "types": list(TASK_TYPES)}
ANSWER = 64
FITS = ("needle-1024-d050", "position_bias-1024-d050", "multi_fact-1024-native",
        "reasoning-1024-native")  # fmt: skip
TOO_LONG = tuple(sid.replace("1024", "16384") for sid in FITS)


def _rows(run_dir: Path) -> dict[str, tuple]:
    db = sqlite3.connect(run_dir / "longscope.sqlite")
    return {
        row[0]: row[1:]
        for row in db.execute(
            "SELECT sample_id, status, text, error, prompt_tokens FROM generations"
        )
    }


@pytest.fixture(scope="module")
def in_process_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("smol-local")
    suite = create_suite("longctx", GRID)
    # A 64-token answer budget (the suite sizes prompts for it): decoding 200 tokens four times is
    # most of this test's time on 2 cores, and the chat path is the same.
    options = RunOptions(output=out, quiet=True, max_tokens=ANSWER)
    run(suite, create_backend("llamacpp/smollm2-135m"), options)
    return out


def test_chat_mode_on_the_embedded_instruct_model(in_process_run: Path) -> None:
    rows = _rows(in_process_run)
    db = sqlite3.connect(in_process_run / "longscope.sqlite")
    header = json.loads(db.execute("SELECT header FROM runs").fetchone()[0])
    assert header["model_info"]["prompt_mode"] == "chat"
    overhead = header["model_info"]["chat_overhead"]
    assert overhead > 5
    samples = {
        sid: json.loads(data) for sid, data in db.execute("SELECT sample_id, data FROM samples")
    }
    for task in FITS:
        status, _text, error, prompt_tokens = rows[task]
        assert status in ("ok", "length"), (task, status, error)
        # Counted from the template itself: the tokens the engine read are the tokens the suite
        # sized, within the one or two a tokenizer may merge where message and template meet, and
        # prompt plus the answer budget fills the 1K length without passing it.
        assert abs(prompt_tokens - samples[task]["prompt_tokens"]) <= 2, task
        assert 880 < prompt_tokens <= 1024 - ANSWER
    for task in TOO_LONG:
        status, _text, error, _ = rows[task]
        assert status == "skipped"
        assert error == (
            "insufficient_context: needs 16384 tokens (prompt and answer), backend holds 8192 (n_ctx)"
        )


@pytest.fixture(scope="module")
def smol_server(tmp_path_factory: pytest.TempPathFactory):
    log_path = tmp_path_factory.mktemp("smol-server") / "server.log"
    proc, url = start_server(
        resolve_model_path("smollm2-135m"), log_path, n_ctx=8192, alias="smollm2-135m"
    )
    try:
        wait_ready(proc, url, log_path)
        yield url
    finally:
        stop(proc)


def test_llama_server_chat_completions_match_in_process(
    smol_server: str, in_process_run: Path, tmp_path: Path
) -> None:
    suite = create_suite("longctx", {**GRID, "types": ["needle"]})
    backend = create_backend(
        "openai/smollm2-135m",
        # The server applies the template; we size prompts with the same GGUF's tokenizer and a
        # margin for the template we cannot see, and state the window it does not report.
        {"prompt_mode": "chat", "context_length": 8192, "tokenizer": "smollm2-135m"},
        base_url=smol_server,
        concurrency=1,
    )
    # The 1K needle is sent and the 16K one skipped: the in-process run above covers the other
    # task types. The server reports no window, so the one stated is the one the skip names.
    run(suite, backend, RunOptions(output=tmp_path, quiet=True, max_tokens=ANSWER))
    served, local = _rows(tmp_path), _rows(in_process_run)
    assert set(served) == {FITS[0], TOO_LONG[0]}
    status, _text, error, prompt_tokens = served[FITS[0]]
    assert status in ("ok", "length"), (status, error)
    assert 880 < prompt_tokens <= 1024 - ANSWER
    status, _text, error, _ = served[TOO_LONG[0]]
    assert status == "skipped" and "backend holds 8192 (user)" in error, error
    # Same context and question, so the same chat prompt minus the margin the server path leaves
    # for an unseen template: the in-process prompt holds more filler, never fewer tokens.
    assert local[FITS[0]][3] >= prompt_tokens
