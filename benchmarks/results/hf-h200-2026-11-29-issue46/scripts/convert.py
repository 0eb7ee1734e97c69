"""Dequantize a GGUF with the card's transformers into a bf16 folder; put the VM's tokenizer files
(transformers 5.24's conversion) beside it and check they encode the VM's test string alike."""

import gzip
import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, out, tok = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
model = AutoModelForCausalLM.from_pretrained(
    str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
)
try:
    model.save_pretrained(out)
except ValueError as exc:  # print why, then save config + weights by hand
    print("save_pretrained:", str(exc)[:600], flush=True)
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(out)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    model.generation_config.save_pretrained(out)
for f in tok.iterdir():
    if f.name.endswith(".gz"):
        (out / f.name[:-3]).write_bytes(gzip.decompress(f.read_bytes()))
    elif f.name != "ids.json":
        shutil.copy(f, out / f.name)
want = json.loads((tok / "ids.json").read_text())
t = AutoTokenizer.from_pretrained(out)
got = t.encode(want["text"], add_special_tokens=False)
chat = t.apply_chat_template(
    [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
)
print(
    "tokenizer ids same:",
    got == want["ids"],
    "chat same:",
    chat == want["chat"],
    type(t).__name__,
    flush=True,
)
print(
    "config:",
    model.config.model_type,
    model.config.max_position_embeddings,
    model.dtype,
    sum(p.numel() for p in model.parameters()),
)
sys.exit(0 if got == want["ids"] else 1)
