"""Tiny random-weight models and a tokenizer built offline, for GPU tests and the benchmark."""

from __future__ import annotations

from typing import Any

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = [
    "The quick brown fox jumps over the lazy dog. The secret number is 4821.",
    "Long context evaluation measures how far a language model really reads.",
    "Question: what is the secret number? Answer: the secret number is",
    "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho.",
] * 4
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def tiny_tokenizer(vocab_size: int = 512) -> Any:
    """Return a byte-level BPE fast tokenizer with a ChatML template (no download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = CHATML
    return fast


def tiny_qwen2(
    vocab_size: int = 512,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    intermediate: int = 0,
    kv_heads: int = 2,
    max_positions: int = 32768,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
) -> Any:
    """Return a random-weight Qwen2 causal LM built from a config (no download)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    model = Qwen2ForCausalLM(config).to(dtype=getattr(torch, dtype), device=device)
    # Larger weights make greedy choices decisive, so batched and single runs agree exactly.
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
    return model.eval()


def tiny_device(
    device: str = "cpu",
    *,
    fault: str = "",
    fail_after: int = 1,
    mark: str = "",
    spare_gib: float | None = None,
) -> Any:
    """Return an `HFBackend` over the devices tests' tiny model (built where it is called: in a
    device's worker process). With `fault`, the real model fails from its `fail_after`-th forward
    on, as a failing device does: "cuda" raises a CUDA error, "oom" an out-of-memory error,
    "assert" runs a real device-side assert, "kill" kills the worker process; each time is
    appended to the file `mark`. `spare_gib`: the memory the plan may use beside the weights."""
    import os
    import signal

    import torch

    from longscope.models.hf import HFBackend
    from longscope.models.memory_plan import GIB

    tok = tiny_tokenizer()
    # The same seed on every device: the same weights everywhere, as from one folder.
    model = tiny_qwen2(vocab_size=len(tok), layers=1, hidden=32, heads=2, kv_heads=1, device=device)
    backend = HFBackend("tiny", model=model, tokenizer=tok, device=device, prefill_chunk=64)
    if spare_gib is not None:
        backend.engine.vram_gib = backend.engine.held_bytes() / GIB + spare_gib
    if not fault:
        return backend
    calls = [0]

    def hook(module: Any, args: Any, output: Any) -> Any:
        calls[0] += 1
        if calls[0] < fail_after:
            return output
        if mark:
            with open(mark, "a") as f:
                f.write(f"{fault}\n")
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "oom":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")
        if fault == "assert":
            index = torch.tensor([1 << 20], device=device)
            torch.zeros(4, device=device)[index].sum().item()  # a real device-side assert
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    model.register_forward_hook(hook)
    return backend
