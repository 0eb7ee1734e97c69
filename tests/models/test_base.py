import pytest

from longscope.errors import UsageError
from longscope.models.base import split_reasoning
from longscope.models.registry import parse_model_options, split_model_spec


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("plain answer", "plain answer", ""),
        ("<think>a</think>b", "b", "a"),
        ("<think>\na\n</think>\n\nb", "b", "a"),
        ("a</think>b", "b", "a"),  # template opened the block in the prompt
        ("<think>unfinished", "", "unfinished"),
        # A block the model opens again after its answer and never closes is thinking, not answer.
        ("<think>a</think>b<think>c", "b", "a\nc"),
        ("<think>a</think>b <think>c</think> d", "b\nd", "a\nc"),
        ("a</think>b<think>more", "b", "a\nmore"),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str) -> None:
    assert split_reasoning(text) == (answer, reasoning)


@pytest.mark.parametrize("separator", ["", "\n\n", "\n", " "])
def test_inline_thinking_and_a_server_reasoning_field_give_the_same_answer(separator: str) -> None:
    # A reasoning parser (vLLM's, SGLang's, llama.cpp's) leaves what followed the close marker in
    # the content, the separator included; inline, the same text comes with its markers.
    answer = "abc123 The poem about tapirs.  "
    inline = split_reasoning(f"<think>plan it</think>{separator}{answer}")
    parsed = split_reasoning(f"{separator}{answer}", "plan it")
    assert inline == parsed == ("abc123 The poem about tapirs.", "plan it")
    # Without any thinking the content is the answer exactly as sent.
    assert split_reasoning(f"{separator}{answer}") == (f"{separator}{answer}", "")


def test_model_options_are_typed() -> None:
    assert parse_model_options(["context_length=8192", "flash_attn=false", "prompt_mode=chat"]) == {
        "context_length": 8192,
        "flash_attn": False,
        "prompt_mode": "chat",
    }
    with pytest.raises(UsageError, match="malformed model option"):
        parse_model_options(["=3"])


def test_model_spec_keeps_slashes_in_the_name() -> None:
    assert split_model_spec("openai/Qwen/Qwen2.5-7B") == ("openai", "Qwen/Qwen2.5-7B")
    with pytest.raises(UsageError, match="bad model spec"):
        split_model_spec("nosuch/x")


def test_the_limit_kind_not_the_source_text_decides_the_skip_reason() -> None:
    from longscope.models.base import ModelInfo
    from longscope.run.prepared import skip_reason
    from longscope.types import Sample

    sample = Sample("a", "t", "en", "", "", (), length=9000)
    memory = ModelInfo("m", 8192, "a GPU's free memory", "chat", "t", limit="device_memory")
    context = ModelInfo("m", 8192, "host memory, said the user", "chat", "t")
    assert skip_reason(sample, memory).startswith("insufficient_memory: needs 9000 tokens")
    assert skip_reason(sample, context).startswith("insufficient_context: needs 9000 tokens")
