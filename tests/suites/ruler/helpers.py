"""What the RULER tests share: a tokenizer with a twist a real one can have, the fixtures' Env."""

from __future__ import annotations

from pathlib import Path

from longscope.suites.ruler import generate
from longscope.suites.ruler.data import load_essays, load_hotpotqa, load_squad
from longscope.text.tokenizers import QwenTokenizer

FIXTURES = Path(__file__).parent / "fixtures"


class RunMergingTokenizer:
    """Qwen2.5's tokens, except that a token repeated right after itself merges with it.

    Like a real BPE whose merges cross the places where the harness joins pieces: the counts of
    the pieces (filler words, `...` runs) no longer add up to the count of the whole prompt.
    """

    name, exact = "run-merging", True

    def __init__(self, qwen: QwenTokenizer | None = None) -> None:
        self._qwen = qwen or QwenTokenizer()

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for token in self._qwen.encode(text):
            if out and out[-1] == token:
                out[-1] = -token - 1
            else:
                out.append(token)
        return out

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode([i if i >= 0 else -i - 1 for i in ids])


def fixture_env(seed: int = 42) -> generate.Env:
    """RULER's generation environment on the test fixtures (essays, SQuAD, HotpotQA)."""
    return generate.Env(
        seed,
        essays=load_essays(FIXTURES / "essays.json"),
        qa={
            "squad": load_squad(FIXTURES / "squad.json"),
            "hotpotqa": load_hotpotqa(FIXTURES / "hotpotqa.json"),
        },
    )
