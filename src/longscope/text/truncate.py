"""Middle truncation: keep a text's start and end, drop its middle (LongBench's convention)."""

from __future__ import annotations

from longscope.text.tokenizers import Tokenizer


def middle_truncate(text: str, limit: int, tokenizer: Tokenizer) -> tuple[str, int, bool]:
    """Keep the first and last limit/2 tokens of `text`; return (text, tokens, truncated)."""
    # A token is at least one byte: text of at most `limit` bytes always fits, no tokenizing needed.
    if len(text.encode("utf-8")) <= limit:
        return text, -1, False
    ids = tokenizer.encode(text)
    if len(ids) <= limit:
        return text, len(ids), False
    half = limit // 2
    kept = ids[:half] + ids[len(ids) - (limit - half) :]
    return tokenizer.decode(kept), len(kept), True
