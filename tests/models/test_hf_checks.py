"""The hf engine's tokenizer sanity check (issue 46.4): a character-level tokenizer, one that does
not round-trip, or one that gives a BOS-trained model no BOS is refused in one line before the
weights load; the tests' own tiny tokenizer and a proper BOS tokenizer pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from longscope.errors import UsageError

pytest.importorskip("torch")
pytest.importorskip("transformers")

from longscope.models.hf.checks import (
    MAX_TOKENS_PER_CHARACTER,
    SENTENCE,
    check_tokenizer,
    tokenizer_problem,
)

LETTERS = sum(1 for c in SENTENCE if not c.isspace())


def _fast(tok: Any, **kwargs: Any) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def character_tokenizer() -> Any:
    """Return a byte-level BPE with no merges: every character one token (what transformers
    5.17's GGUF conversion of Gemma gave on the card)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + 1,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=alphabet,
        show_progress=False,
    )
    tok.train_from_iterator([SENTENCE] * 4, trainer)
    return _fast(tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def bos_tokenizer(add_bos: bool) -> Any:
    """Return the tests' tiny BPE with a `<bos>` token, prepended by its post-processor or not."""
    from tokenizers import processors

    from tests.gpu.tiny import tiny_tokenizer

    base = tiny_tokenizer()
    inner = base.backend_tokenizer
    inner.add_special_tokens(["<bos>"])
    bos = inner.token_to_id("<bos>")
    if add_bos:
        inner.post_processor = processors.TemplateProcessing(
            single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)]
        )
    return _fast(inner, bos_token="<bos>", eos_token="<|im_end|>", pad_token="<|endoftext|>")


def test_a_character_level_tokenizer_is_named_as_such() -> None:
    tok = character_tokenizer()
    ids = tok.encode(SENTENCE, add_special_tokens=False)
    assert len(ids) == len(SENTENCE)  # the fixture really is character-level
    problem = tokenizer_problem(tok)
    assert problem == (
        f"splits plain English into single characters ({len(SENTENCE)} tokens for {LETTERS} "
        "characters)"
    )


def test_the_tests_tiny_tokenizer_and_the_threshold() -> None:
    """The tiny BPE passes, and the threshold sits between it and a character-level one."""
    from tests.gpu.tiny import tiny_tokenizer

    tok = tiny_tokenizer()
    assert tokenizer_problem(tok) == ""
    ratio = len(tok.encode(SENTENCE, add_special_tokens=False)) / LETTERS
    assert ratio <= MAX_TOKENS_PER_CHARACTER < len(SENTENCE) / LETTERS


def test_a_tokenizer_that_does_not_round_trip_is_refused() -> None:
    from tokenizers import normalizers

    from tests.gpu.tiny import tiny_tokenizer

    inner = tiny_tokenizer().backend_tokenizer
    inner.normalizer = normalizers.Lowercase()
    problem = tokenizer_problem(_fast(inner, eos_token="<|im_end|>"))
    assert problem.startswith("does not round-trip plain English (decodes 'the quick brown")


def test_a_gemma_model_needs_its_bos() -> None:
    assert tokenizer_problem(bos_tokenizer(add_bos=True), "gemma3_text") == ""
    assert tokenizer_problem(bos_tokenizer(add_bos=False), "gemma3_text") == (
        f"does not put its BOS ({bos_tokenizer(False).bos_token_id}) first in a completion prompt"
    )
    from tests.gpu.tiny import tiny_tokenizer

    assert tokenizer_problem(tiny_tokenizer(), "gemma3_text") == (
        "has no BOS token, and gemma3_text models expect one"
    )
    # A model type without a BOS of its own (Qwen2) takes the same tokenizer as it is.
    assert tokenizer_problem(tiny_tokenizer(), "qwen2") == ""


def test_a_chat_template_that_drops_the_bos_is_refused() -> None:
    tok = bos_tokenizer(add_bos=True)
    tok.add_bos_token = True  # the tokenizer itself says prompts start with a BOS
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert "first in a chat prompt" in tokenizer_problem(tok, "llama", "chat")
    tok.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert tokenizer_problem(tok, "llama", "chat") == ""


def test_check_tokenizer_raises_one_line_with_the_name_and_the_fix() -> None:
    with pytest.raises(UsageError) as caught:
        check_tokenizer(character_tokenizer(), "models/gemma3", "gemma3_text")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the tokenizer of models/gemma3 splits plain English into single")
    assert "put the model's tokenizer.json and tokenizer_config.json in its folder" in message


def test_the_backend_refuses_a_character_tokenizer_before_loading_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the loading path a run takes (`hf/FOLDER`): one usage error, no weights read."""
    import transformers

    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2

    tok = character_tokenizer()
    folder = tmp_path / "model"
    tiny_qwen2(vocab_size=len(tok), layers=1, hidden=32, heads=2, kv_heads=1).save_pretrained(
        str(folder)
    )
    tok.save_pretrained(str(folder))

    def no_weights(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("weights loaded before the tokenizer was checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    backend = HFBackend(str(folder), prompt_mode="completion")
    with pytest.raises(UsageError, match=f"^the tokenizer of {folder} splits plain English"):
        backend.tokenizer()
