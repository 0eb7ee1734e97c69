"""convert_gemma.py (hf-h200-2026-11-29e-issue46/gemma3-cpu) for the device, where the model's
package is not installed: Gemma 3 270M's GGUF (the path given) as a transformers folder,
dequantized to float32 by transformers' GGUF loader (its tokenizer conversion too).

    PYTHONPATH=DIR_WITH_gguf_AND_accelerate python3 convert_gemma_dev.py GGUF OUT
"""

import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, out = Path(sys.argv[1]), Path(sys.argv[2])
started = time.time()
tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
print("tokenizer", round(time.time() - started, 1), "s", flush=True)
model = AutoModelForCausalLM.from_pretrained(
    str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
)
out.mkdir(parents=True, exist_ok=True)
config = model.config
if hasattr(config, "quantization_config"):
    delattr(config, "quantization_config")
config.save_pretrained(out)
state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
if config.get_text_config().tie_word_embeddings:
    state.pop("lm_head.weight", None)
save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
model.generation_config.save_pretrained(out)
tokenizer.save_pretrained(out)
ids = tokenizer("The quick brown fox jumps over the lazy dog.").input_ids
print("saved", out, round(time.time() - started, 1), "s", config.model_type, flush=True)
print("first ids", ids[:4], "bos", tokenizer.bos_token, tokenizer.bos_token_id)
