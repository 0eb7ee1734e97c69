"""The hf backend counts the tokens its tokenizer's chat template adds around one user message,
so that suites size chat prompts with the template's tokens (ModelInfo.chat_overhead)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from longscope.models.hf.adapter import HFBackend
from longscope.types import Message, Request
from tests.gpu.tiny import tiny_tokenizer


def test_the_chat_overhead_is_what_the_template_adds_to_any_message() -> None:
    tok = tiny_tokenizer()
    backend = HFBackend("tiny", tokenizer=tok, prompt_mode="chat")
    overhead = backend.chat_overhead()
    assert overhead > 3  # ChatML: <|im_start|>user\n ... <|im_end|>\n<|im_start|>assistant\n
    for text in ("The grass is green. What is the special magic number?", "x"):
        sent = backend.encode_request(Request("s", 0, "chat", messages=(Message("user", text),)))
        # What the model reads is the message's own tokens plus exactly that many.
        assert len(sent) == len(tok.encode(text, add_special_tokens=False)) + overhead
    assert HFBackend("tiny", tokenizer=tok, prompt_mode="completion").chat_overhead() == 0
