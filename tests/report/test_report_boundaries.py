"""The HTML report's status and completeness tables, with the exact counts and the score behind them.

A stored LongCtx grid run (2 lengths x 3 depths) where each status appears: the statuses-per-length
table and the completeness table must show every cell, and a `length` answer (cut at max_tokens)
is scored like an `ok` one.
"""

from __future__ import annotations

import re
from pathlib import Path

from longscope.report.html import render_html
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.suites.base import BuildContext
from longscope.suites.longctx.suite import LongCtxSuite
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

from ..factories import make_suite

# (length, depth index) -> the generation stored for that sample
PLAN = {
    (1024, 0): "ok",
    (1024, 1): "length",
    (1024, 2): "error",
    (2048, 0): "skipped",
    (2048, 1): "skipped",
    (2048, 2): "timeout",
}


def _run(run_dir: Path) -> None:
    suite = make_suite(
        LongCtxSuite, lengths=(1024, 2048), depths=(0.1, 0.5, 0.9), types=("needle",)
    )
    samples = suite.build(BuildContext(QwenTokenizer(), "chat", GenerationConfig()))
    assert len(samples) == 6
    with RunStore(run_dir) as store:
        store.put_run("b1", "longctx", {"params": suite.params(), "model": "m"})
        store.put_samples("b1", samples)
        for sample in samples:
            index = [0.1, 0.5, 0.9].index(sample.meta["depth"])
            status = PLAN[(sample.length, index)]
            text = sample.gold[0] if status in ("ok", "length") else ""
            error = {"error": "HTTP 500", "timeout": "timeout after 60 s"}.get(status, "")
            if status == "skipped":
                error = "insufficient_context: needs 2048 tokens (prompt and answer), backend holds 1024 (n_ctx)"
            store.put_generation("b1", sample.id, 0, Generation(text, status, error=error))


def _table(html: str, title: str) -> list[list[str]]:
    """Return the rows (cells as text) of the table under the <h3> `title`."""
    start = html.index(f"<h3>{title}</h3>")
    table = html[start : html.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    return [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in rows
    ]


def test_statuses_per_length_and_completeness_tables(tmp_path: Path) -> None:
    _run(tmp_path / "run")
    result = score_run(tmp_path / "run", persist=False)
    # The two answered samples score 5 of 5 each ("length" is scorable); the rest count 0.
    assert result.to_dict()["raw_points"] == 10.0 and result.to_dict()["max_points"] == 30.0
    assert result.to_dict()["total"] == 33.33
    assert result.to_dict()["by_length"]["1024"]["percent"] == 66.7
    assert result.to_dict()["by_length"]["2048"]["percent"] == 0.0
    html = render_html([(tmp_path / "run", result)])
    statuses = {row[0]: row[1].split() for row in _table(html, "Statuses per length") if row}
    assert set(statuses) == {"1024", "2048"}
    assert sorted(zip(statuses["1024"][::2], statuses["1024"][1::2], strict=True)) == [
        ("error", "1"),
        ("length", "1"),
        ("ok", "1"),
    ]
    assert sorted(zip(statuses["2048"][::2], statuses["2048"][1::2], strict=True)) == [
        ("skipped", "2"),
        ("timeout", "1"),
    ]
    # length, requested, scored, skipped, failed, not run
    completeness = {
        row[0]: row[1:] for row in _table(html, "Completeness by length (requests)") if row
    }
    assert completeness == {
        "1024": ["3", "2", "0", "1", "0"],
        "2048": ["3", "0", "2", "1", "0"],
        "all": ["6", "2", "2", "2", "0"],
    }
    # One of the two answers at 1K ran into its budget (`length`): 1K is budget-bound, so the
    # score measures the budget and no retention level is given.
    assert "total 33.3/100 (no level: budget-bound at 1K)" in html
    assert "Limited Retention" not in html
