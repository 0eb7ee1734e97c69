"""Chunked prefill in the hf engine (CPU, float32, a tiny random-weight Llama with grouped KV
heads): a prompt split into chunks, with a short rest after the cached prefix, must be read as
transformers reads it in one forward, whatever the chunk size and however the length falls
against a multiple of it."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from longscope.types import GenerationConfig, Request

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

# (prompt tokens, chunk): just below, at and just above a multiple of the chunk, a short rest
# after one or several whole chunks (1024 + 244 is the SmolLM2 prompt of routergpu's check), and
# a rest longer than the shape quantum after a 2048-token chunk, which `chunk_bounds` splits.
CASES = [
    (31, 32),
    (32, 32),
    (33, 32),
    (63, 32),
    (65, 32),
    (70, 32),
    (97, 32),
    (129, 64),
    (200, 64),
    (1023, 1024),
    (1025, 1024),
    (1268, 1024),
    (2050, 1024),
    (3316, 2048),
]


def tiny_llama(vocab_size: int, scale: float = 8.0) -> Any:
    """A 2-layer Llama: 4 query heads over 2 KV heads, float32, the same weights every call;
    `scale` multiplies the output head (larger: more decisive greedy choices)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    return model


@pytest.fixture(scope="module")
def tok() -> Any:
    from tests.gpu.tiny import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="module")
def words(tok: Any) -> list[str]:
    """Words that are one token each: a prompt of n of them is n tokens (plus none: no BOS)."""
    from tests.gpu.tiny import _CORPUS

    found = []
    for line in _CORPUS:
        for word in line.split(" "):
            word = " " + word
            if len(tok.encode(word, add_special_tokens=False)) == 1 and word not in found:
                found.append(word)
    return found


def _prompt(tok: Any, words: list[str], length: int) -> str:
    pick = random.Random(length)
    text = "".join(pick.choice(words) for _ in range(length))
    assert len(tok.encode(text, add_special_tokens=True)) == length
    return text


@pytest.mark.parametrize(("length", "chunk"), CASES, ids=[f"{n}-in-{c}" for n, c in CASES])
def test_chunked_prefill_logits_equal_one_forward(
    tok: Any, words: list[str], length: int, chunk: int
) -> None:
    """The logits the first answer token is drawn from, and the cache the answer then reads."""
    import transformers

    from longscope.models.hf import HFBackend

    ids = torch.tensor(tok.encode(_prompt(tok, words, length), add_special_tokens=True))
    reference = tiny_llama(len(tok))
    model = tiny_llama(len(tok))
    backend = HFBackend("tiny-llama", model=model, tokenizer=tok, prompt_mode="completion")
    cache = transformers.DynamicCache(config=model.config)
    with torch.no_grad():
        full = reference(input_ids=ids[None], use_cache=True)
        with backend.prefill_context():
            got = backend.prefill_ids(ids, cache, chunk).logits[0, -1]
        assert cache.get_seq_length() == length
        # One more token through each cache: a wrong position or key in it shows here.
        step = torch.tensor([[int(full.logits[0, -1].argmax())]])
        after = reference(input_ids=step, past_key_values=full.past_key_values).logits[0, -1]
        ours = model(input_ids=step, past_key_values=cache).logits[0, -1]
    assert (got - full.logits[0, -1]).abs().max().item() < 1e-4
    assert (ours - after).abs().max().item() < 1e-4


GREEDY_SCALE = 1.0
"""Unscaled: with decisive logits the random model's greedy text ignored most of the prompt (a
wrong mask in the rest chunk left it unchanged); float32 rounding stays far below its margins."""
GENERATE = [(33, 32), (70, 32), (1268, 1024), (3316, 2048)]


@pytest.mark.parametrize(("length", "chunk"), GENERATE, ids=[f"{n}-in-{c}" for n, c in GENERATE])
def test_greedy_text_with_chunks_equals_transformers_generate(
    tok: Any, words: list[str], length: int, chunk: int
) -> None:
    """The whole engine (prefix in chunks, the last token, the decode) against `generate`."""
    from longscope.models.hf import HFBackend

    prompt = _prompt(tok, words, length)
    backend = HFBackend(
        "tiny-llama",
        model=tiny_llama(len(tok), GREEDY_SCALE),
        tokenizer=tok,
        prompt_mode="completion",
        prefill_chunk=chunk,
        device="cpu",
    )
    request = Request(
        "s", 0, "completion", prompt=prompt, config=GenerationConfig(max_tokens=12, temperature=0.0)
    )
    ids = backend.encode_request(request)
    with torch.no_grad():
        made = tiny_llama(len(tok), GREEDY_SCALE).generate(
            torch.tensor([ids]), max_new_tokens=12, do_sample=False, pad_token_id=0
        )
    expected = tok.decode(made[0, len(ids) :], skip_special_tokens=True)
    generation = asyncio.run(backend.generate(request))
    asyncio.run(backend.aclose())
    assert generation.text == expected
