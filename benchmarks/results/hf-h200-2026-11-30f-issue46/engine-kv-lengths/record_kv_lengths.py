"""Issue 46, 2026-11-30f: the key lengths of the hf engine's masked attention calls (its
sliding-window layers) for Gemma 3 270M (float32, the VM's CPU) on RULER's niah_single_3 and
niah_single_2 at 8K, whose prompts (7,489 and 8,065 tokens) are 1 past a multiple of 32.

    PYTHONPATH=src python benchmarks/results/hf-h200-2026-11-30f-issue46/engine-kv-lengths/record_kv_lengths.py

The converted model is in /tmp/gemma3run/gemma3 (hf-h200-2026-11-29e-issue46/gemma3-cpu/
convert_gemma.py); the run goes to /tmp/kvlen/out. Prints (query, key) lengths of the prefill's
masked calls and the decode's key lengths.
"""

import collections
import json
from pathlib import Path

from typer.testing import CliRunner

from longscope.cli import app
from longscope.models.hf import kernels

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
seen: collections.Counter = collections.Counter()
original = kernels.attention


def recording(module, query, key, value, attention_mask, *args, **kwargs):  # type: ignore[no-untyped-def]
    if attention_mask is not None:
        seen[(query.shape[2], key.shape[2])] += 1
    return original(module, query, key, value, attention_mask, *args, **kwargs)


# before the backend loads: `register_attention` registers the module's `attention` by name
kernels.attention = recording
command = ["run", "ruler", "--model", "hf//tmp/gemma3run/gemma3", "-M", "prompt_mode=completion",
           "-M", "dtype=float32", "--lengths", "8k", "-S", "samples=1",
           "-S", "tasks=niah_single_3,niah_single_2", f"-Sessays={FIXTURES / 'essays.json'}",
           f"-Ssquad={FIXTURES / 'squad.json'}", f"-Shotpotqa={FIXTURES / 'hotpotqa.json'}",
           "--max-tokens", "2", "-o", "/tmp/kvlen/out", "-q"]  # fmt: skip
result = CliRunner().invoke(app, command, catch_exceptions=False)
print(result.output[-500:])
prefill = {f"{q}x{kv}": n for (q, kv), n in seen.items() if q > 1}
decode = sorted({kv for (q, kv) in seen if q == 1})[:20]
print(json.dumps({"prefill_calls_q_by_kv": prefill, "decode_kv_lengths": decode}))
