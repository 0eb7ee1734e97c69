"""The plan's prompt tokens are what the model is sent (BOS, chat template), not the bare text."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from longscope.models.registry import create_backend
from longscope.run.plan import make_plan
from longscope.run.runner import RunOptions, run_async
from longscope.suites import create_suite

pytestmark = pytest.mark.model

GRID = {"lengths": [1024], "depths": [0.3, 0.7], "types": ["needle"]}


def test_the_forecast_counts_the_prompt_tokens_the_model_reads(tmp_path: Path) -> None:
    # The embedded instruct model in chat mode: its template adds tokens around the text.
    backend = create_backend("llamacpp/smollm2-135m")
    options = RunOptions(output=tmp_path, max_tokens=1, quiet=True)

    async def main():
        try:
            plan = await make_plan(create_suite("longctx", GRID), backend, options)
            result = await run_async(create_suite("longctx", GRID), backend, options)
            return plan, result
        finally:
            await backend.aclose()

    plan, result = asyncio.run(main())
    db = sqlite3.connect(tmp_path / "longscope.sqlite")
    read = db.execute("SELECT SUM(prompt_tokens), COUNT(*) FROM generations").fetchone()
    db.close()
    assert result.sent == read[1] == 2
    # llama.cpp reports the tokens it evaluated, the chat template included. It reports one token
    # more per request than the harness counts (llama-cpp-python's usage; an open finding of
    # issue 30), so the forecast may be short by that token and no more.
    assert 0 <= read[0] - plan.prompt_tokens <= read[1]
