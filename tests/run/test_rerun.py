"""The same `run` again: what it says when everything is stored already."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helper import longscope
from tests.models.fault_server import FaultServer

ARGS = [
    "run", "longctx", "-m", "openai/m", "-M", "context_length=8192", "-S", "lengths=1024",
    "-S", "types=needle", "-S", "depths=0.2,0.6", "-q",
]  # fmt: skip


def test_a_rerun_with_nothing_to_send_says_so_and_labels_the_totals_stored(tmp_path: Path) -> None:
    with FaultServer() as server:
        first = longscope(*ARGS, "--base-url", server.url, "-o", str(tmp_path))
        assert first.returncode == 0, first.stderr[-2000:]
        sent = len(server.requests)
        again = longscope(*ARGS, "--base-url", server.url, "-o", str(tmp_path))
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(server.requests) == sent == 2
    said = again.stderr.strip().splitlines()
    assert said[0] == "plan: nothing to send (2 requests stored already)"
    assert said[1].startswith(
        "nothing to send: every request is stored already (stored: 2 requests, "
    )
    assert not any(line.startswith("actual:") for line in said)
    assert first.stderr.splitlines()[1].startswith("actual: 2 requests, ")
