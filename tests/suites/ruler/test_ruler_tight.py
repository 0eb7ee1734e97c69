"""The tight fill (`fill=exact`) at its boundary: every prompt is the largest that fits.

RULER grows each prompt to the largest haystack whose tokens plus the answer's fit the length
(NVIDIA/RULER scripts/data/synthetic/*.py: a search over the haystack size, then `while length +
tokens_to_generate > max_seq_length: shrink`). The tight fill does the same per sample from
counted pieces. These tests pin, with Qwen2.5's tokenizer: the prompt's real token count is the
count reported and fits the budget; at its own count the same prompt is built (it fits, inclusive);
and the next larger haystack costs more than the budget (one more unit would not fit).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.ruler import tight
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import TASKS
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import GenerationConfig

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def qwen() -> QwenTokenizer:
    return QwenTokenizer()


def _env(tokenizer, mode: str = "completion", template: str = "base", seed: int = 42) -> tight.Env:
    suite = RulerSuite(
        tasks=list(TASKS), lengths=[4096], seed=seed, fill="exact", model_template=template, **DATA
    )
    return suite.env(BuildContext(tokenizer, mode, GenerationConfig()))


def _draft(
    env: tight.Env, task: str, budget: int, length: int = 4096, key: str = "s"
) -> tight.Draft:
    rng = random.Random(f"{key}:{task}")
    return RulerSuite._draft(TASKS[task], rng, env, budget, length, 0)


def _prompt(env: tight.Env, d: tight.Draft, pieces: list[str] | None = None) -> str:
    context = d.sep.join(d.pieces if pieces is None else pieces)
    prefix = d.answer_prefix if env.mode == "completion" else ""
    return d.head + context + d.question + prefix


def _count(env: tight.Env, text: str) -> int:
    return len(env.tokenizer.encode(text))


def _next_size(env, task: str, budget: int, length: int, span: int = 600) -> int:
    """Return the smallest budget above `budget` whose fill differs from the fill at `budget`."""
    base = _draft(env, task, budget, length).predicted
    lo, hi = budget, budget + span
    assert _draft(env, task, hi, length).predicted != base, "no larger fill within the span"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _draft(env, task, mid, length).predicted == base:
            lo = mid
        else:
            hi = mid
    return hi


GROWN = ["niah_single_1", "niah_single_2", "niah_single_3", "niah_multivalue", "vt", "cwe", "fwe"]


@pytest.mark.parametrize("mode", ["completion", "chat"])
@pytest.mark.parametrize("task", GROWN)
def test_the_prompt_is_the_largest_that_fits(qwen, task: str, mode: str) -> None:
    env = _env(qwen, mode)
    length = 2048 if task == "cwe" else 4096
    for budget in (1500, 1777):
        d = _draft(env, task, budget, length)
        # The count reported is the prompt's real count, and it fits.
        assert d.predicted == _count(env, _prompt(env, d)) <= budget, (task, budget)
        # At exactly its own size a prompt as large is built: the fit is inclusive.
        again = _draft(env, task, d.predicted, length)
        assert (len(again.pieces), again.predicted) == (len(d.pieces), d.predicted)
        # One token less and the haystack shrinks.
        assert _draft(env, task, d.predicted - 1, length).predicted < d.predicted
        # The next larger haystack fills its own budget exactly, which is above this one: one
        # more unit would not have fit.
        step = _next_size(env, task, budget, length)
        bigger = _draft(env, task, step, length)
        assert bigger.predicted == _count(env, _prompt(env, bigger)) == step > budget
        assert len(bigger.pieces) >= len(d.pieces)
