"""The LLM judge on the real embedded model: what it is asked, what is stored, resume, the score.

`Recording` passes every request to llama.cpp's gemma3-270m unchanged and keeps a copy; no verdict
is scripted. The model's words vary by machine, so the score is checked by re-deriving it from
the verdicts stored for this run (a failure is left out, never counted as 0).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from longscope.models.base import Forwarding
from longscope.run.judge import judge
from longscope.run.scoring import score_run
from longscope.run.store import RunStore
from longscope.types import Generation, Request

from .test_judge import _qa_run

pytestmark = pytest.mark.model


class Recording(Forwarding):
    """The real backend, passing every request through and keeping a copy."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        super().__init__(inner)
        self.requests: list[Request] = []

    async def aclose(self) -> None:
        return None

    async def generate(self, request: Request) -> Generation:
        self.requests.append(request)
        return await self.inner.generate(request)


def test_real_judge_prompts_storage_resume_and_score(tmp_path: Path, qwen_tokenizer) -> None:
    from longscope.models.registry import create_backend

    _qa_run(tmp_path, qwen_tokenizer)
    model = create_backend("llamacpp/gemma3-270m", {"context_length": 2048})
    try:
        first = Recording(model)
        counts = judge(tmp_path, first)
        assert counts["judged"] + counts["failed"] == 2 and counts["cached"] == 0
        # a base model is handed the verdict's opening, at temperature 0 on the first try
        assert len(first.requests) >= 2
        opening = first.requests[0]
        assert opening.mode == "completion" and opening.prompt.endswith('Verdict: {"fluency":')
        assert opening.config.temperature == 0.0
        # resumed: nothing is asked again
        again = Recording(model)
        assert judge(tmp_path, again) == {"judged": 0, "failed": 0, "cached": 2}
        assert again.requests == []
    finally:
        asyncio.run(model.aclose())
    with RunStore(tmp_path, create=False) as store:
        verdicts = store.judgements("j1")
    values = [j.value for j in verdicts.values() if j.value is not None]
    assert all(0.0 <= v <= 1.0 for v in values)
    cell = score_run(tmp_path).to_dict()["by_task"]["single_doc_qa"].get("1024")
    if values:
        assert cell == pytest.approx(round(100 * sum(values) / len(values), 2), abs=0.01)
    else:
        assert cell is None  # every verdict failed: no score, not a 0
