"""100-LongBench in chat mode with a template nobody counted: its margin is kept free."""

from __future__ import annotations

from longscope.suites import create_suite
from longscope.suites.base import CHAT_MARGIN_TOKENS, BuildContext
from longscope.types import GenerationConfig


def test_an_unknown_chat_templates_margin_is_reserved_within_the_target(qwen_tokenizer) -> None:
    suite = create_suite("hundred", {"lengths": [2048, 4096], "samples": 2})
    ctx = BuildContext(qwen_tokenizer, "chat", GenerationConfig(max_tokens=64))
    samples = suite.build(ctx)
    assert samples
    for sample in samples:
        _, messages = suite.template.render(sample, "chat")
        text = len(qwen_tokenizer.encode(messages[0].content))
        assert sample.prompt_tokens == text == sample.meta["achieved_length"]
        # The prompt fills the target length with the template's margin kept free (the output
        # comes on top, as 100-LongBench counts it)...
        assert text + CHAT_MARGIN_TOKENS <= sample.meta["target_length"], sample.id
        # ...and the runner checks the margin too against the model's context.
        assert sample.length == text + CHAT_MARGIN_TOKENS + sample.max_tokens, sample.id
