"""The embeddings endpoint's answers (issue 39.11): a malformed 200 is one line naming the endpoint
and what is wrong (exit 2 on the command line), never a traceback; a good one gives the vectors in
input order. The fault server plays the endpoint; the embedder and the CLI are the product."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from longscope.metrics.similarity import EmbedderError, OpenAIEmbedder

from ..cli_helper import longscope
from ..models.fault_server import FaultServer

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _answer(server: FaultServer, body: bytes) -> np.ndarray:
    server.script.append(("raw", (200, "application/json", body)))
    return OpenAIEmbedder("emb", server.url).embed(["a", "b"])


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"data": [ <truncated', "the body is not JSON"),
        (b"<html><body>nginx</body></html>", "the body is not JSON"),
        (b"{}", "no `data` list"),
        (b'{"data": null}', "no `data` list"),
        (b'{"data": []}', "no `data` list"),
        (b'{"data": [{"embedding": [1, 0]}]}', "1 vectors for 2 texts"),
        (b'{"data": [{"embedding": "AAAA"}, {"embedding": [1]}]}', "an `embedding` is not a list"),
        (b'{"data": [{"embedding": [1, 2]}, {"embedding": [1]}]}', "vectors of different lengths"),
        (b'{"data": [{"embedding": [1, 2]}, {"embedding": [1, 1e999]}]}', "not finite"),
        (b'{"data": [1, 2]}', "a `data` item is not an object"),
    ],
)
def test_a_malformed_200_is_one_line(body: bytes, why: str) -> None:
    with FaultServer() as server, pytest.raises(EmbedderError) as refused:
        _answer(server, body)
    message = str(refused.value)
    assert "\n" not in message and why in message
    assert message.startswith(f"embedder openai/emb at {server.url} answered 200 without usable")


def test_vectors_come_back_normalised_in_input_order() -> None:
    body = {"data": [{"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [3, 4]}]}
    with FaultServer() as server:
        vectors = _answer(server, json.dumps(body).encode())
        sent = server.requests[0]
    assert sent["path"] == "/v1/embeddings"
    assert sent["body"] == {"model": "emb", "input": ["a", "b"], "encoding_format": "float"}
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 1.0]])


def test_a_malformed_200_on_the_command_line_is_one_line_and_keeps_the_predictions(
    tmp_path: Path,
) -> None:
    with FaultServer() as server:
        server.script.extend([("raw", (200, "application/json", b"{}"))] * 5)
        made = longscope(
            "score", "longbench-pro", "-S", f"data={FIXTURES / 'longbench_pro_mini.json'}",
            "--predictions", str(FIXTURES / "longbench_pro_mini_predictions.jsonl"),
            "-S", "embedder=openai/emb", "-S", f"embed_base_url={server.url}",
            "-o", str(tmp_path / "run"),
        )  # fmt: skip
    lines = [x for x in made.stderr.splitlines() if x.strip()]
    assert made.returncode == 2 and len(lines) == 1, made.stderr[-2000:]
    assert lines[0].startswith("error: embedder openai/emb at") and "no `data` list" in lines[0]
    with sqlite3.connect(tmp_path / "run" / "longscope.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM generations").fetchone()[0] > 0
