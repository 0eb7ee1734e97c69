"""The longctx run spec api's fast tests build: the needle grid on the scripted backend (in
process, no model), which answers every needle right unless told otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longscope.models.base import Backend
from longscope.run.spec import RunSpec

NEEDLE = r"(\d\.\d+ arc-seconds)"
# The scripted model answers with the needle's value: every sample scores 100.
ANSWERS = {"pattern": NEEDLE, "tokenizer": "qwen2.5"}
GRID = ("types=needle", "depths=0.5")


def longctx_spec(
    output: str | Path,
    *,
    model: str | Backend = "scripted/x",
    lengths: str = "1k,2k",
    **kwargs: Any,
) -> RunSpec:
    """`RunSpec.of("longctx", model, ...)` of one needle at depth 0.5 per length; `kwargs` are
    RunSpec.of's (model_options default to ANSWERS)."""
    kwargs.setdefault("model_options", ANSWERS)
    kwargs.setdefault("suite_options", list(GRID))
    return RunSpec.of("longctx", model, lengths=lengths, output=output, **kwargs)


FIXTURES = Path(__file__).parent / "fixtures"
VERDICT = 'Fine. {"fluency": 2, "correctness": 3}'
"""A judge's reply that 100-LongBench reads as a full-score verdict."""
JUDGED = (
    "tasks=single_doc_qa",
    "lengths=1024",
    "samples=2",
    "metric=judge",
    f"source=single_doc_qa={FIXTURES / 'longbench_v1_qa.jsonl'}",
)
"""100-LongBench scored by an LLM judge: two QA questions of the fixture file, each asked with its
context (judged) and without (not judged)."""
