"""Hugging Face transformers models on a GPU: one prefill per shared prefix, continuous batching
across groups, VRAM-aware skipping.

torch and transformers are imported lazily (the optional `gpu` extra), so longscope imports and its
CI runs without them. The rooms, each leaning only on those after it:

- `adapter`: the backend's face (`HFBackend`): `-M` options, loading, `info`, requests in;
- `checks`: the tokenizer sanity check before a run (round trip, not character-level, BOS);
- `engine`: one thread owns the device; groups queue, are admitted by the memory plan, prefilled
  and decoded together in one continuous batch (`Engine`, its settings, switches and statistics);
- `prefill`: a unit's shared prefix once, in chunks, then the members' own tokens as a batch;
- `decoder`: the static-cache decode step captured as a CUDA graph, and the eager loop;
- `members`: requests, units and rows, and how tokens become a generation;
- `kernels`: which fused ops and attention kernels run (`KernelSwitches`, per engine) and our
  attention function; `triton_ops` (prefill) and `decode_ops` (the graph decode step): the
  Triton kernels themselves, with `split_tuning` (the attention's split configuration) and
  `gemv` (the thin projections), each tuned once a batch has decoded long enough to repay it.

The decode is a plain loop of steps, not `generate`; each member samples with its own seeded
generator, so a request gives the same tokens alone or in any batch.
"""

from longscope.models.hf.adapter import HFBackend, HFTokenizerAdapter
from longscope.models.hf.decoder import StaticDecoder, graph_unsupported
from longscope.models.hf.engine import Engine
from longscope.models.hf.kernels import (
    ATTENTION,
    KernelSwitches,
    attention,
    cudnn_after_prefix,
    decode_kernels,
    fused_prefill_norms,
    fused_prefill_ops,
    prefill_kernels,
    using,
)
from longscope.models.hf.members import Member
from longscope.models.hf.prefill import chunk_bounds

__all__ = [
    "ATTENTION",
    "Engine",
    "HFBackend",
    "HFTokenizerAdapter",
    "KernelSwitches",
    "Member",
    "StaticDecoder",
    "attention",
    "chunk_bounds",
    "cudnn_after_prefix",
    "decode_kernels",
    "fused_prefill_norms",
    "fused_prefill_ops",
    "graph_unsupported",
    "prefill_kernels",
    "using",
]
