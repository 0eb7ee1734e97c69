"""The graph decode step's kernels built ahead (`builds`, issue 46) on CUDA: built as `start`'s
threads build them, they leave a first decode (two documents of different lengths, plans tuned, a
graph captured) nothing to build."""

from __future__ import annotations

import asyncio
import threading

import pytest

from longscope.types import GenerationConfig, Request

pytestmark = pytest.mark.gpu

STEP_KERNELS = {
    "_attention_split_body", "_attention_merge_kernel", "_rope_store_kernel",
    "_add_rms_norm_kernel", "_silu_mul_packed_kernel", "_gemv_kernel",
}  # fmt: skip


def test_kernels_built_ahead_leave_the_first_decode_nothing_to_build(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    pytest.importorskip("transformers")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime, "jit_cache_hook"):
        pytest.skip("this Triton reports no builds (jit_cache_hook)")
    from longscope.models.hf import HFBackend, builds, gemv
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    # Other engines' build threads first: their builds would be counted as this decode's.
    for thread in threading.enumerate():
        if thread.name == "hf-builds":
            thread.join()
    monkeypatch.setattr(builds, "start", lambda *_: None)  # built here, in this thread
    monkeypatch.setattr(gemv, "_PLANS", {})  # tuned again: every candidate plan launches
    tok = tiny_tokenizer()
    # 5 query heads per KV head: a shape no other test builds (its kernels are new here)
    model = tiny_qwen2(
        vocab_size=len(tok), layers=2, hidden=640, heads=5, kv_heads=1, dtype="bfloat16",
        device="cuda",
    )  # fmt: skip
    backend = HFBackend("tiny", model=model, tokenizer=tok, prompt_mode="completion")
    switches = backend.engine.kernels
    built: list[str] = []
    missed: list[str] = []

    def hook(*_, **kwargs):  # type: ignore[no-untyped-def]
        name = str(getattr(kwargs.get("fn"), "name", "")).rsplit(".", 1)[-1]
        if name in STEP_KERNELS:
            (built if kwargs.get("is_manual_warmup") else missed).append(name)
        return False

    monkeypatch.setattr(runtime, "jit_cache_hook", hook)
    pdl = switches.decode_pdl and gemv.pdl_supported(model.device)
    ahead = builds.variants(model, switches, pdl)
    for build in ahead:
        build()
    assert "_attention_split_body" in built and "_gemv_kernel" in built

    texts = [
        "The quick brown fox jumps over the lazy dog. " * n for n in (100, 140)
    ]  # past 1,024 tokens each
    config = GenerationConfig(max_tokens=12)

    async def both():  # type: ignore[no-untyped-def]
        groups = [
            [Request(f"d{i}", 0, "completion", prompt=t, config=config)]
            for i, t in enumerate(texts)
        ]
        return await asyncio.gather(*(backend.generate_group(g) for g in groups))

    answers = asyncio.run(both())
    last = dict(backend.engine.last_decode)
    assert last["kernels"] == "triton" and last["path"] == "graph"
    assert all(g[0].completion_tokens == 12 for g in answers)
    assert gemv.plans(), "no GEMV plan was tuned: the decode did not reach the GEMV"
    assert missed == [], f"built by the decode, not ahead: {sorted(set(missed))}"
