"""Tokenizers the RULER tests share: real counts with a twist a real tokenizer can have."""

from __future__ import annotations

from longscope.text.tokenizers import QwenTokenizer


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
