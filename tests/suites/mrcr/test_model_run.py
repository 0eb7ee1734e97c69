"""The issue's command on the embedded INSTRUCT model: `longscope run mrcr --model
llamacpp/smollm2-135m -S data=FIXTURE --lengths 4k`, as a user types it.

Two rows the test builds: a short 2-needle chat that is sent and graded, and a 4-needle chat in
the same 8K bin that cannot fit SmolLM2's 8192 tokens once the chat template and an answer are
added: skipped with its need, never truncated.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.models.registry import resolve_model_path
from longscope.suites.mrcr.grading import grade
from longscope.suites.mrcr.suite import MESSAGE_MARGIN
from longscope.text.tokenizers import GGUFTokenizer

from .rows import mrcr_row, write_jsonl

pytestmark = pytest.mark.model


def _tokens(tokenizer: GGUFTokenizer, row: dict) -> int:
    chat = json.loads(row["prompt"])
    return sum(len(tokenizer.encode(m["content"])) for m in chat) + len(
        tokenizer.encode(row["answer"])
    )


def _long_row(tokenizer: GGUFTokenizer) -> dict:
    """A 4-needle row whose prompt and answer hold 8,132-8,192 tokens: in the 8K bin, too long to
    send with the chat template's tokens and the answer's room (a few hundred more)."""
    row = mrcr_row(4, target=3, prefix="Zq9", words=75, turns=10, needle=("riddle", "owls"))
    chat = json.loads(row["prompt"])
    pad = 0
    for _ in range(8):
        total = _tokens(tokenizer, row)
        if 8132 <= total <= 8192:
            return row
        pad = max(0, pad + (8162 - total))
        chat[0]["content"] = "write a riddle about owls" + " pad" * pad
        row = {**row, "prompt": json.dumps(chat)}
    raise AssertionError(f"could not size the long row ({total} tokens)")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    base = tmp_path_factory.mktemp("mrcr-smol")
    tokenizer = GGUFTokenizer(resolve_model_path("smollm2-135m"), name="smollm2-135m")
    fixture = write_jsonl(
        base / "mrcr_fixture.jsonl",
        [mrcr_row(2, target=2, words=3, turns=2), _long_row(tokenizer)],
    )
    out = base / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "longscope.cli",
            "run",
            "mrcr",
            "--model",
            "llamacpp/smollm2-135m",
            "-S",
            f"data={fixture}",
            "--lengths",
            "4k",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    return out, done


def test_the_issues_command_runs_and_reports(run_dir) -> None:
    out, done = run_dir
    assert done.returncode == 0, done.stderr[-2000:]
    assert "OpenAI MRCR" in done.stdout and "2-needle" in done.stdout
    db = sqlite3.connect(out / "longscope.sqlite")
    samples = {sid: json.loads(d) for sid, d in db.execute("SELECT sample_id, data FROM samples")}
    rows = {
        r[0]: r[1:]
        for r in db.execute("SELECT sample_id, status, text, error, prompt_tokens FROM generations")
    }
    assert {s["meta"]["bin"] for s in samples.values()} == {8192}

    status, text, _error, engine_prompt = rows["2n-0000"]
    sample = samples["2n-0000"]
    assert status in ("ok", "length")
    # llama.cpp read the conversation through SmolLM2's own template: at least what the suite
    # counted, and within the margin it reserved for the template's per-message tokens.
    counted = sample["prompt_tokens"]
    margin = MESSAGE_MARGIN * (sample["meta"]["messages"] - 1)
    assert counted <= engine_prompt <= counted + margin
    value, evidence = db.execute(
        "SELECT value, evidence FROM scores WHERE sample_id = '2n-0000'"
    ).fetchone()
    graded = grade(text, sample["gold"][0], sample["meta"]["prefix"])
    assert value == pytest.approx(graded.ratio)
    assert json.loads(evidence)["prefixed"] is graded.prefixed

    status, _text, error, _ = rows["4n-0000"]
    need = samples["4n-0000"]["length"]
    assert status == "skipped" and need > 8192
    assert error == (
        f"insufficient_context: needs {need} tokens (prompt and answer), backend holds 8192 (n_ctx)"
    )

    summary = json.loads((out / "summary.json").read_text())
    views = {v["name"]: v for v in summary["longscope"]["views"]}
    assert set(views) == {"2-needle", "4-needle"}
    assert views["2-needle"]["by_length"] == {"8192": pytest.approx(100 * graded.ratio, abs=0.01)}
    assert views["4-needle"]["overall"] is None  # its only row was skipped, not scored 0
    assert summary["mrcr"]["needles"]["4"]["skipped"] == 1
