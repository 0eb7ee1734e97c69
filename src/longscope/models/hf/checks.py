"""Checks on a loaded tokenizer before the hf engine runs anything with it.

Earlier Gemma 3 cells on a GPU were spoiled by a tokenizer that transformers 5.17 built from a
GGUF: it split English into single characters and added no `<bos>`, and the model answered
" 1 1 1 ..." with nothing to say why (BENCHMARKS.md, "Issue 25: ... correction"). So before a run
the engine encodes one fixed English sentence: it must decode back to itself, take well under one
token per character, and, for a model that expects a BOS, start with it as the engine encodes a
prompt. A failure is one line naming the tokenizer and the fix.
"""

from __future__ import annotations

from typing import Any

from longscope.errors import UsageError

SENTENCE = (
    "The quick brown fox jumps over the lazy dog. Long context evaluation measures how far "
    "a language model really reads."
)
"""Plain English every tokenizer of a text model encodes in words or pieces of words."""
MAX_TOKENS_PER_CHARACTER = 0.6
"""Above this many tokens per non-space character a tokenizer reads English letter by letter.
Real subword tokenizers take 0.2-0.3 on the sentence (Qwen2.5, Gemma 3, SmolLM2); the tests'
tiny BPE (`tests/gpu/tiny.py`) takes 0.24; a character-level one takes 1.0."""
BOS_MODEL_TYPES = ("gemma",)
"""Model types trained with a BOS at the start of every sequence whatever the tokenizer says
(Gemma's own tokenizers add `<bos>`; without it the model's first positions are off)."""


def tokenizer_problem(tokenizer: Any, model_type: str = "", prompt_mode: str = "completion") -> str:
    """Return what is wrong with `tokenizer` for a model of `model_type` ("" when nothing)."""
    ids = list(tokenizer.encode(SENTENCE, add_special_tokens=False))
    decoded = tokenizer.decode(ids, skip_special_tokens=True)
    if " ".join(decoded.split()) != " ".join(SENTENCE.split()):
        return f"does not round-trip plain English (decodes {decoded[:60]!r})"
    letters = sum(1 for c in SENTENCE if not c.isspace())
    if len(ids) > MAX_TOKENS_PER_CHARACTER * letters:
        return (
            f"splits plain English into single characters ({len(ids)} tokens for {letters} "
            "characters)"
        )
    if not expects_bos(tokenizer, model_type):
        return ""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return f"has no BOS token, and {model_type or 'this'} models expect one"
    first = _first_prompt_ids(tokenizer, prompt_mode)
    if not first or first[0] != bos:
        return f"does not put its BOS ({bos}) first in a {prompt_mode} prompt"
    return ""


def expects_bos(tokenizer: Any, model_type: str) -> bool:
    """Return whether prompts for this model must start with a BOS: the tokenizer is set to add
    one (`add_bos_token`), or the model type was trained with one (`BOS_MODEL_TYPES`)."""
    if getattr(tokenizer, "add_bos_token", False) is True:
        return True
    return model_type.startswith(BOS_MODEL_TYPES)


def check_tokenizer(tokenizer: Any, name: str, model_type: str = "", prompt_mode: str = "") -> None:
    """Raise a one-line usage error naming the tokenizer of `name` and the fix, if it fails
    `tokenizer_problem`."""
    problem = tokenizer_problem(tokenizer, model_type, prompt_mode or "completion")
    if problem:
        raise UsageError(
            f"the tokenizer of {name} {problem}: it is not the model's own tokenizer (a GGUF "
            "converted by transformers older than 5.24 gives this); put the model's "
            "tokenizer.json and tokenizer_config.json in its folder"
        )


def _first_prompt_ids(tokenizer: Any, prompt_mode: str) -> list[int]:
    """Return the first ids of a prompt encoded as the engine encodes one (`encode_request`)."""
    if prompt_mode == "chat" and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": SENTENCE}], tokenize=False, add_generation_prompt=True
        )
        return list(tokenizer.encode(text, add_special_tokens=False))[:2]
    return list(tokenizer.encode(SENTENCE, add_special_tokens=True))[:2]
