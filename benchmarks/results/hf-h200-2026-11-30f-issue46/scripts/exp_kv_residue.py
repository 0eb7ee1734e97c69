"""Issue 46, prepared 2026-11-30f for the next card: does torch's SDPA go wrong at key lengths 1
past a multiple of 32 on real weights (pytorch/pytorch#191937), and does the engine's attention
mend it? (Run 2026-11-30g: torch's SDPA is wrong there and the engine's padding as it was at
eff1e86, `kernels.pad_past_bad_kv_length`, did not mend it; `kernels.with_contiguous_shared_kv`,
which replaced it at b578189, does: hf-h200-2026-11-30g-issue46/callKR-*.)

    python3 exp_kv_residue.py --model /root/gemma3 [--lengths 8064,8065,8066,8097] [--dtype float32]

Per length: seeded random token ids (`<bos>` first), one forward each (no cache, every logit of the
last position) through transformers' eager attention (the reference), its SDPA, and the engine's
registered attention; printed: the largest logit gap of SDPA and of the engine against eager, and
whether the top token agrees. `--model tiny`: a random-weight 4-layer Gemma 3 with one KV head (on
the CPU nothing is wrong: the run checks that the script runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "src" / "longscope").is_dir())
sys.path.insert(0, str(ROOT / "src"))

from longscope.models.hf.kernels import prefill_kernels, register_attention  # noqa: E402


def load(model: str, attention: str, dtype: torch.dtype, device: str) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

    if model == "tiny":
        torch.manual_seed(0)
        config = Gemma3TextConfig(
            vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=1, head_dim=16, sliding_window=16,
            layer_types=["sliding_attention"] * 3 + ["full_attention"],
            max_position_embeddings=16384, attn_implementation=attention,
        )  # fmt: skip
        made = Gemma3ForCausalLM(config).to(dtype)
    else:
        made = AutoModelForCausalLM.from_pretrained(
            model, dtype=dtype, attn_implementation=attention
        )
    return made.to(device).eval()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--lengths", default="8064,8065,8066,8097")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = getattr(torch, args.dtype)
    models = {name: load(args.model, name, dtype, device) for name in ("eager", "sdpa")}
    models["engine"] = load(args.model, register_attention(None), dtype, device)
    vocab = models["eager"].config.vocab_size
    card = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    for length in [int(n) for n in args.lengths.split(",")]:
        gen = torch.Generator().manual_seed(length)
        ids = torch.randint(10, vocab, (1, length), generator=gen)
        ids[0, 0] = models["eager"].config.bos_token_id or 2
        ids = ids.to(device)
        logits = {}
        with torch.no_grad(), prefill_kernels():
            for name, model in models.items():
                logits[name] = model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
        want = logits["eager"]
        row = {"card": card, "length": length, "residue_32": length % 32, "dtype": args.dtype}
        for name in ("sdpa", "engine"):
            row[f"{name}_gap"] = round((logits[name] - want).abs().max().item(), 5)
            row[f"{name}_same_top"] = bool(logits[name].argmax() == want.argmax())
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
