"""The hf backend on tiny random-weight models: grouped == one by one == transformers' generate."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from longscope.types import GenerationConfig, Message, PromptParts, Request
from tests.gpu.conftest import device

pytestmark = pytest.mark.gpu

CONTEXT = "The quick brown fox jumps over the lazy dog. The secret number is 4821. " * 40
QUESTIONS = ["Question: what is the secret number?", "Alpha beta gamma", "x"]


@pytest.fixture(scope="module")
def tiny() -> tuple:
    dev = device()
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    return tiny_qwen2(vocab_size=len(tok), device=dev), tok


def _backend(tiny: tuple, **kwargs):  # type: ignore[no-untyped-def]
    from longscope.models.hf import HFBackend

    model, tok = tiny
    return HFBackend("tiny", model=model, tokenizer=tok, **kwargs)


def _requests(mode: str = "completion", max_tokens: int = 16, temperature: float = 0.0):  # type: ignore[no-untyped-def]
    requests = []
    for repeat, question in enumerate([QUESTIONS[0], QUESTIONS[0], *QUESTIONS[1:]]):
        config = GenerationConfig(max_tokens=max_tokens, temperature=temperature, seed=7 + repeat)
        parts = PromptParts("", CONTEXT, question)
        if mode == "completion":
            req = Request("s", repeat, "completion", prompt=CONTEXT + question, config=config)
        else:
            req = Request("s", repeat, "chat", messages=(Message("user", CONTEXT + question),))
            req = Request("s", repeat, "chat", messages=req.messages, config=config)
        requests.append(Request(**{**req.__dict__, "parts": parts}))
    return requests


def _hf_generate(backend, request: Request) -> list[int]:  # type: ignore[no-untyped-def]
    import torch

    ids = backend.encode_request(request)
    model = backend._model
    out = model.generate(
        torch.tensor([ids], device=model.device),
        max_new_tokens=request.config.max_tokens,
        do_sample=False,
        eos_token_id=sorted(backend._eos),
        pad_token_id=0,
    )
    new = out[0, len(ids) :].tolist()
    return [t for t in new if t not in backend._eos]


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "eager"])
@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_grouped_equals_one_by_one_equals_generate(tiny: tuple, mode: str, graph: bool) -> None:
    # A prefill chunk smaller than the prompt exercises chunked prefill and the lower-right mask.
    backend = _backend(tiny, prefill_chunk=64, cuda_graph=graph)
    requests = _requests(mode)
    alone = [asyncio.run(backend.generate(r)) for r in requests]
    grouped = asyncio.run(backend.generate_group(requests))
    expected = ("graph" if device() == "cuda" else "static") if graph else "eager"
    assert backend.engine.last_decode["path"] == expected, backend.engine.last_decode
    _, tok = tiny
    for request, one, many in zip(requests, alone, grouped, strict=True):
        reference = _hf_generate(backend, request)
        assert one.status in ("ok", "length")
        assert one.completion_tokens == len(reference) > 0
        assert one.text == tok.decode(reference, skip_special_tokens=True)
        assert (many.text, many.completion_tokens, many.status) == (
            one.text,
            one.completion_tokens,
            one.status,
        )
    assert alone[0].prompt_tokens > 64


def _documents(temperature: float) -> list[list[Request]]:
    """Two documents of about one length (their rows decode together) and one four times as
    long (joining would make every row read its empty slots: it waits), answers of 12-40 tokens."""
    texts = [
        "Document one. " + CONTEXT,
        "Document two. " + CONTEXT.replace("4821", "7310"),
        CONTEXT * 4,
    ]
    documents = []
    for number, (text, answer) in enumerate(zip(texts, (24, 12, 16), strict=True)):
        documents.append(
            [
                Request(
                    f"d{number}",
                    repeat,
                    "completion",
                    prompt=text + question,
                    config=GenerationConfig(
                        max_tokens=answer + 8 * repeat, temperature=temperature, seed=repeat
                    ),
                )
                for repeat, question in enumerate(QUESTIONS)
            ]
        )
    return documents


async def _queued_in_order(backend, documents):  # type: ignore[no-untyped-def]
    """Hand documents over at once, queued in their order before the engine admits any (its
    loop waits on the lock held here), so which one joins which does not depend on timing."""
    tasks = []
    with backend.engine._wake:
        queued = len(backend.engine._jobs)
        for document in documents:
            tasks.append(asyncio.create_task(backend.generate_group(document)))
            while len(backend.engine._jobs) < queued + len(tasks):
                await asyncio.sleep(0.005)
    return await asyncio.gather(*tasks)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_groups_decode_together_as_each_would_alone(tiny: tuple, temperature: float) -> None:
    """Documents handed over at once share decode steps (the second joins while the first
    decodes, and the first decodes between the second's prefill chunks): same tokens as alone."""
    backend = _backend(tiny, prefill_chunk=64)
    documents = _documents(temperature)
    alone = [asyncio.run(backend.generate_group(d)) for d in documents]
    assert backend.engine.stats["joined"] == 0
    steps_alone = backend.engine.stats["steps"]

    joined = asyncio.run(_queued_in_order(backend, documents))
    stats = backend.engine.stats
    assert stats["joined"] == 1, stats  # the second document; the long one waited
    assert stats["steps_in_prefill"] >= 3, stats  # its prefill has 4+ chunks of 64 tokens
    # Shared steps: fewer steps than the documents took one after another.
    assert stats["steps"] - steps_alone < steps_alone, stats
    _, tok = tiny
    for group_alone, group_joined, requests in zip(alone, joined, documents, strict=True):
        for one, many, request in zip(group_alone, group_joined, requests, strict=True):
            assert one.status in ("ok", "length")
            assert (many.text, many.completion_tokens, many.status) == (
                one.text,
                one.completion_tokens,
                one.status,
            )
            if temperature == 0.0:
                reference = _hf_generate(backend, request)
                assert one.text == tok.decode(reference, skip_special_tokens=True)
    assert len({g[0].text for g in joined}) == 3  # the documents' answers differ


def test_out_of_memory_of_a_joining_document_leaves_the_running_one(tiny: tuple) -> None:
    """An out-of-memory error while a second document prefills beside a decoding one: the second
    is recorded skipped with the reason, the first answers as it would alone, the engine goes on."""
    import torch

    backend = _backend(tiny, prefill_chunk=64)
    first, second, _ = _documents(0.0)
    alone = asyncio.run(backend.generate_group(first))
    real = backend.engine._prefill_steps
    running_then = []

    def failing(unit):  # type: ignore[no-untyped-def]
        if unit.members[0].request.sample_id == "d1":
            running_then.append(len(backend.engine._rows))
            raise torch.OutOfMemoryError("provoked")
        return real(unit)

    backend.engine._prefill_steps = failing

    kept, lost = asyncio.run(_queued_in_order(backend, [first, second]))
    assert running_then == [3]  # the first document's rows were decoding when it failed
    assert [g.text for g in kept] == [g.text for g in alone]
    assert {g.status for g in lost} == {"skipped"}
    assert all(
        g.error.startswith("insufficient_vram: needs ")
        and g.error.endswith("(out of memory while running; the plan said it fits)")
        for g in lost
    )
    backend.engine._prefill_steps = real
    again = asyncio.run(backend.generate_group(second))
    assert {g.status for g in again} <= {"ok", "length"}


def test_graph_decode_over_several_key_blocks_equals_generate(tiny: tuple) -> None:
    """A cache past one block (1024 keys) sums the value product per block; still exact."""
    backend = _backend(tiny, prefill_chunk=512)
    long_context = CONTEXT * 3
    config = GenerationConfig(max_tokens=40)
    requests = [
        Request("s", r, "completion", prompt=long_context + q, config=config)
        for r, q in enumerate([QUESTIONS[0], QUESTIONS[0], QUESTIONS[2]])
    ]
    grouped = asyncio.run(backend.generate_group(requests))
    stats = backend.engine.last_decode
    path = "graph" if device() == "cuda" else "static"
    assert stats["path"] == path and stats["capacity"] > 1024, stats
    _, tok = tiny
    for request, many in zip(requests, grouped, strict=True):
        reference = _hf_generate(backend, request)
        assert many.completion_tokens == len(reference) > 0
        assert many.text == tok.decode(reference, skip_special_tokens=True)
    assert grouped[0].prompt_tokens > 1024


def test_chunk_rest_split_and_fused_norm_prefill_equal_generate(tiny: tuple) -> None:
    """A rest past a cached prefix splits into whole quanta and a short tail; the prefill's
    fused RMSNorm leaves the greedy tokens those of transformers' `generate`."""
    from longscope.models import hf

    backend = _backend(tiny, prefill_chunk=2048)
    config = GenerationConfig(max_tokens=24)
    unit = CONTEXT[: CONTEXT.index("4821.") + 6]  # one sentence pair: at most 72 tokens
    context = CONTEXT
    while True:
        request = Request("s", 0, "completion", prompt=context + QUESTIONS[0], config=config)
        if len(backend.encode_request(request)) > 3300:
            break
        context += unit
    prefix = len(backend.encode_request(request)) - 1
    bounds = hf.chunk_bounds(prefix, 2048)
    assert 3072 < prefix < 4096 and len(bounds) == 3, (prefix, bounds)
    assert (bounds[1][1] - bounds[1][0]) % 1024 == 0 and bounds[2][1] - bounds[2][0] < 1024
    one = asyncio.run(backend.generate(request))
    reference = _hf_generate(backend, request)
    _, tok = tiny
    assert one.completion_tokens == len(reference) > 0
    assert one.text == tok.decode(reference, skip_special_tokens=True)


def test_fused_prefill_norm_matches_transformers_rmsnorm() -> None:
    if device() != "cuda":  # skips first where torch is not installed (CI)
        pytest.skip("the fused prefill norm runs on CUDA only")
    import torch

    from longscope.models import hf
    from tests.gpu.tiny import tiny_qwen2

    model = tiny_qwen2(hidden=256, dtype="bfloat16", device="cuda")
    norm = model.model.norm
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    gen = torch.Generator(device="cuda").manual_seed(5)
    hidden = (torch.randn(4096, 256, device="cuda", generator=gen) * 3).bfloat16()
    with torch.inference_mode():
        with hf.fused_prefill_norms(model) as switched:
            fused = norm(hidden)
        assert switched == 2 * 2 + 1  # two per layer and the final one
        assert "forward" not in norm.__dict__
        reference = norm(hidden)
    assert fused.dtype == reference.dtype == torch.bfloat16
    # Same arithmetic but the order of the float32 sum: at most one bf16 rounding step apart.
    close = torch.isclose(fused.float(), reference.float(), rtol=2**-7, atol=0)
    assert bool(close.all())
    assert (fused != reference).float().mean().item() < 0.05


def test_triton_rope_and_silu_mul_are_bit_identical_to_transformers() -> None:
    on = device()  # skips first where torch is not installed (CI)
    if on != "cuda":
        pytest.skip("the Triton prefill kernels run on CUDA only")
    import torch
    from transformers.models.qwen2 import modeling_qwen2

    from longscope.models.hf import triton_ops as hf_triton

    gen = torch.Generator(device="cuda").manual_seed(11)
    hf_triton._rope_kernel.device_caches.clear()  # built here from nothing, whatever ran before
    for batch, cos_batch in ((1, 1), (3, 3), (3, 1)):
        # As the attention makes them: projections viewed (batch, seq, heads, dim), transposed.
        q = torch.randn(batch, 777, 28, 128, device="cuda", generator=gen).bfloat16()
        k = torch.randn(batch, 777, 4, 128, device="cuda", generator=gen).bfloat16()
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        angles = torch.rand(cos_batch, 777, 64, device="cuda", generator=gen) * 100
        angles = torch.cat([angles, angles], dim=-1)
        cos, sin = angles.cos().bfloat16(), angles.sin().bfloat16()
        assert hf_triton.rope_fits(q, cos, sin) and hf_triton.rope_fits(k, cos, sin)
        want_q, want_k = modeling_qwen2.apply_rotary_pos_emb(q, k, cos, sin)
        assert torch.equal(hf_triton.rope(q, cos, sin), want_q)
        assert torch.equal(hf_triton.rope(k, cos, sin), want_k)
    # one build for every chunk length: 777 above, a multiple of 16 and 1 here
    built: list[str] = []
    runtime = getattr(getattr(__import__("triton"), "knobs", None), "runtime", None)
    if runtime is not None and hasattr(runtime, "jit_cache_hook"):
        saved, runtime.jit_cache_hook = runtime.jit_cache_hook, lambda *_, **k: built.append("x")
        try:
            for seq in (1024, 1):
                q = torch.randn(1, 28, seq, 128, device="cuda", generator=gen).bfloat16()
                cos, sin = (torch.rand(1, seq, 128, device="cuda").bfloat16() for _ in range(2))
                want_q, _ = modeling_qwen2.apply_rotary_pos_emb(q, q, cos, sin)
                assert torch.equal(hf_triton.rope(q, cos, sin), want_q)
        finally:
            runtime.jit_cache_hook = saved
        assert built == [], f"{len(built)} more builds of the rotary kernel"
    gate = (torch.randn(4099, 1000, device="cuda", generator=gen) * 4).bfloat16()
    up = torch.randn(4099, 1000, device="cuda", generator=gen).bfloat16()
    want = torch.nn.functional.silu(gate) * up
    assert torch.equal(hf_triton.silu_mul(gate, up), want)
    # Past 2**31 elements (a 128K-token chunk of a 7B MLP): offsets are 64-bit.
    count = (1 << 31) + 4096
    gate = torch.full((count,), -1.5, device="cuda", dtype=torch.bfloat16)
    gate[-4096:] = torch.linspace(-8, 8, 4096, device="cuda").bfloat16()
    up = torch.full_like(gate, 2.0)
    out = hf_triton.silu_mul(gate, up)
    assert torch.equal(out[-4096:], torch.nn.functional.silu(gate[-4096:]) * up[-4096:])
    assert torch.equal(out[:4096], torch.nn.functional.silu(gate[:4096]) * up[:4096])
    del gate, up, out
    torch.cuda.empty_cache()


def test_fused_prefill_ops_leave_the_prefill_bit_identical() -> None:
    """Prefill logits of a bf16 model with 128-wide heads, Triton kernels on and off: equal."""
    on = device()
    if on != "cuda":
        pytest.skip("the Triton prefill kernels run on CUDA only")
    import torch
    from transformers import DynamicCache

    from longscope.models import hf
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    model = tiny_qwen2(
        vocab_size=len(tok), hidden=512, heads=4, kv_heads=2, dtype="bfloat16", device="cuda"
    )
    backend = hf.HFBackend("wide-heads", model=model, tokenizer=tok)
    gen = torch.Generator(device="cuda").manual_seed(2)
    ids = torch.randint(3, len(tok), (3000,), device="cuda", generator=gen)
    logits = []
    switches = backend.engine.kernels
    for enabled in (True, False):
        switches.fused_prefill_ops = enabled
        with torch.inference_mode(), hf.fused_prefill_ops(model, switches) as switched:
            out = backend.prefill_ids(ids, DynamicCache(config=model.config), 1024)
        logits.append(out.logits.float())
        assert switched == (2 if enabled else 0)
    assert switches.fused_ops_error == ""
    assert torch.equal(logits[0], logits[1])


def test_cudnn_split_prefill_attention_matches_reference() -> None:
    """A prefill chunk after a cached prefix, as two cuDNN calls merged by log-sum-exp."""
    on = device()  # skips first where torch is not installed (CI)
    import torch

    if on != "cuda" or torch.cuda.get_device_capability() < (8, 0):
        pytest.skip("cuDNN attention needs an Ampere or newer GPU")
    from longscope.models import hf

    class Module:
        num_key_value_groups = 4

    gen = torch.Generator(device="cuda").manual_seed(3)
    # Whole multiples of 1024: the lengths the backend hands to cuDNN (their graphs recur).
    q_len, kv_len, heads, kv_heads, dim = 1024, 3072, 8, 2, 128
    query = torch.randn(2, heads, q_len, dim, device="cuda", generator=gen).bfloat16()
    key = torch.randn(2, kv_heads, kv_len, dim, device="cuda", generator=gen).bfloat16()
    value = torch.randn(2, kv_heads, kv_len, dim, device="cuda", generator=gen).bfloat16()
    switches = hf.KernelSwitches()
    with hf.using(switches):
        out, _ = hf.attention(Module(), query, key, value, None, scaling=dim**-0.5)
    assert switches.cudnn_used == 1, switches.cudnn_error
    # Reference in float64: queries at the end of the keys (lower-right causal).
    q, k, v = (t.double() for t in (query, key, value))
    k, v = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)
    scores = q @ k.transpose(2, 3) * dim**-0.5
    rows = torch.arange(q_len, device="cuda")[:, None] + (kv_len - q_len)
    scores = scores.masked_fill(torch.arange(kv_len, device="cuda")[None, :] > rows, float("-inf"))
    reference = (scores.softmax(-1) @ v).transpose(1, 2)
    error = (out.double() - reference).norm() / reference.norm()
    assert error < 1e-2, error


def test_sampling_is_seeded_per_request(tiny: tuple) -> None:
    backend = _backend(tiny)
    requests = _requests(temperature=1.0, max_tokens=24)
    alone = [asyncio.run(backend.generate(r)) for r in requests]
    grouped = asyncio.run(backend.generate_group(requests))
    assert [g.text for g in grouped] == [g.text for g in alone]
    # Two repeats of one prompt with different seeds must differ (else repeats measure nothing).
    assert alone[0].text != alone[1].text
    again = asyncio.run(backend.generate(requests[0]))
    assert again.text == alone[0].text


def test_stop_string_cuts_the_answer(tiny: tuple) -> None:
    backend = _backend(tiny)
    request = _requests(max_tokens=24)[0]
    free = asyncio.run(backend.generate(request))
    stop = free.text[5:8]
    assert stop.strip()
    cut_config = GenerationConfig(max_tokens=24, stop=(stop,))
    cut = asyncio.run(backend.generate(Request(**{**request.__dict__, "config": cut_config})))
    assert cut.status == "ok"
    assert cut.text == free.text[: free.text.find(stop)]


def test_request_the_device_cannot_hold_is_skipped_with_reason(tiny: tuple) -> None:
    backend = _backend(tiny, vram_gib=0.01)
    generations = asyncio.run(backend.generate_group(_requests()))
    assert {g.status for g in generations} == {"skipped"}
    reason = generations[0].error
    assert reason.startswith("insufficient_vram: needs ")
    assert " sequences, 0.0 GiB free" in reason
    # A group too large as a batch but fine one by one runs in smaller batches.
    plan = backend.engine.last_plan
    # -M vram_gib is the budget for everything longscope holds: the weights count against it.
    half = _backend(
        tiny, vram_gib=(backend.engine.held_bytes() + plan.needed_bytes * 3) / (1 << 30)
    )
    assert {g.status for g in asyncio.run(half.generate_group(_requests()))} <= {"ok", "length"}


def test_out_of_memory_is_recorded_and_the_backend_goes_on(tiny: tuple) -> None:
    import torch

    if device() != "cuda":
        pytest.skip("needs CUDA to provoke a real out-of-memory error")
    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    # Wide MLP: a 32K-token prefill chunk needs gigabytes of activations.
    # 128K positions: the 48,000-token prompt must fit the context it declares (past it, it is
    # refused as context_overflow before any memory is asked for).
    model = tiny_qwen2(
        vocab_size=len(tok), hidden=512, heads=8, kv_heads=2, intermediate=16384, device="cuda",
        max_positions=1 << 17,
    )  # fmt: skip
    backend = HFBackend("wide", model=model, tokenizer=tok, prefill_chunk=1 << 16, vram_gib=1000)
    long_prompt = "alpha beta gamma delta " * 8000
    big = Request("big", 0, "completion", prompt=long_prompt, config=GenerationConfig(max_tokens=4))
    small = Request("small", 0, "completion", prompt="alpha", config=GenerationConfig(max_tokens=4))
    total = torch.cuda.get_device_properties(0).total_memory
    allowed = torch.cuda.memory_allocated() + (64 << 20)
    torch.cuda.set_per_process_memory_fraction(allowed / total)
    try:
        torch.cuda.empty_cache()
        failed = asyncio.run(backend.generate(big))
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    assert failed.status == "skipped"
    assert failed.error.startswith("insufficient_vram: needs ")
    assert "out of memory while running" in failed.error
    assert asyncio.run(backend.generate(small)).status in ("ok", "length")


def test_longctx_tier_runs_end_to_end_through_the_cli(tiny: tuple, tmp_path: Path) -> None:
    model, tok = tiny
    folder = tmp_path / "tiny-qwen2"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path("src").resolve()), *sys.path])}
    run_dir = tmp_path / "run"
    args = ["run", "longctx", "--model", f"hf/{folder}", "-S", "tiers=1", "--limit", "2"]
    # Two repeats per sample: the runner hands each sample's pair to generate_group.
    args += ["--repeats", "2"]
    args += ["--max-tokens", "8", "--output", str(run_dir), "--quiet", "-M", "prompt_mode=chat"]
    args += ["-M", f"device={device()}"]
    done = subprocess.run(
        [sys.executable, "-m", "longscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import sqlite3

    store = next(run_dir.glob("*.sqlite*"))
    with sqlite3.connect(store) as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM generations")]
    assert len(statuses) == 4
    assert set(statuses) <= {"ok", "length"}


def test_requests_handed_over_together_join_before_a_step(tiny: tuple) -> None:
    """Short single requests (one prefill chunk each) queued together all join the running
    batch before its first step (one batch change: one graph capture on CUDA, no step per join),
    leave it parked (no capture per leave), and each answers as it does alone. Before, each join
    took a step of its own and a capture of its own."""
    backend = _backend(tiny)
    groups = [
        [
            Request(
                f"q{i}", 0, "completion", prompt=CONTEXT[:300] + question,
                config=GenerationConfig(max_tokens=10 + 6 * i),
            )
        ]
        for i, question in enumerate(QUESTIONS)
    ]  # fmt: skip
    alone = [asyncio.run(backend.generate_group(g))[0] for g in groups]
    before = dict(backend.engine.stats)
    together = [answers[0] for answers in asyncio.run(_queued_in_order(backend, groups))]
    stats, last = backend.engine.stats, backend.engine.last_decode
    assert stats["joined"] - before["joined"] == len(groups) - 1
    assert last["largest_batch"] == len(groups)
    # Every row stepped from the first step on: the longest answer's steps, no more.
    assert stats["steps"] - before["steps"] == max(a.completion_tokens for a in alone) - 1
    # Rows leaving while nothing waits stay parked: no rebuild, and on CUDA no new capture, per
    # leave (before: a capture per leave).
    leaves = len({a.completion_tokens for a in alone}) - 1
    if last["kernels"] == "triton":  # the torch step parks only while a group waits
        assert (last["parks"], last["rebuilds"]) == (leaves, len(groups) - 1), last
    if last["path"] == "graph":
        assert last["captures"] == 1, last
    for one, many in zip(alone, together, strict=True):
        assert (many.text, many.completion_tokens) == (one.text, one.completion_tokens)


def test_a_step_between_prefill_chunks_is_not_captured(tiny: tuple) -> None:
    """`step(tokens, capture=False)` (the engine's steps between a joining prompt's prefill
    chunks) runs the same step uncaptured: no graph, the same logits as a captured batch's, and
    the next step outside a prefill captures as before."""
    import torch
    from transformers import DynamicCache

    from longscope.models.hf import StaticDecoder
    from longscope.models.memory_plan import decode_capacity

    if device() != "cuda":
        pytest.skip("CUDA graphs need CUDA")
    backend = _backend(tiny)
    model = tiny[0]
    ids = backend.encode_request(_requests()[0])
    steps = {}
    for name, first in (("between chunks", False), ("captured", True)):
        with torch.inference_mode():
            cache = DynamicCache(config=model.config)
            with backend.prefill_context():
                backend.prefill_ids(torch.tensor(ids, device="cuda"), cache, 64)
            positions = torch.tensor([len(ids)], device="cuda")
            decoder = StaticDecoder(
                torch, model, cache, len(ids), decode_capacity(len(ids) + 16), None, positions,
                backend.engine.kernels,
            )  # fmt: skip
            del cache
            tokens, logits = torch.tensor([5], device="cuda"), []
            for index in range(6):
                out = decoder.step(tokens, capture=first or index >= 3).float().clone()
                captured = decoder.graph is not None
                assert captured == (first or index >= 3), (name, index)
                logits.append(out)
                tokens = out.argmax(-1)
            assert decoder.captures == 1
            steps[name] = torch.stack(logits)
            decoder.close()
    assert torch.equal(steps["between chunks"].argmax(-1), steps["captured"].argmax(-1))
    torch.testing.assert_close(steps["between chunks"], steps["captured"], rtol=0, atol=1e-3)


@pytest.mark.parametrize("provoked", [False, True], ids=["unwarmed", "fallback"])
def test_a_batch_captured_before_captures_again_without_a_warm_up(
    tiny: tuple, provoked: bool
) -> None:
    """After a rebuild (a join) the batch captures again on its stream without the warm-up step;
    where that capture fails (provoked: the step raises while it is being captured), it is
    captured after a warm-up, as the first time. Either way the steps give the logits of a batch
    stepping uncaptured."""
    import torch
    from transformers import DynamicCache

    from longscope.models.hf import StaticDecoder
    from longscope.models.memory_plan import decode_capacity

    if device() != "cuda":
        pytest.skip("CUDA graphs need CUDA")
    backend = _backend(tiny)
    model = tiny[0]
    prompts = [backend.encode_request(r) for r in _requests()[1:]]

    def decoder_of(ids: list[int]) -> StaticDecoder:
        cache = DynamicCache(config=model.config)
        with backend.prefill_context():
            backend.prefill_ids(torch.tensor(ids, device="cuda"), cache, 64)
        positions = torch.tensor([len(ids)], device="cuda")
        capacity = decode_capacity(max(len(p) for p in prompts) + 16)
        return StaticDecoder(
            torch, model, cache, len(ids), capacity, None, positions, backend.engine.kernels
        )

    runs = {}
    for name, capture in (("uncaptured", False), ("captured", True)):
        with torch.inference_mode():
            decoder = decoder_of(prompts[0])
            tokens, logits = torch.tensor([5], device="cuda"), []
            for _ in range(3):
                logits.append(decoder.step(tokens, capture=capture)[0].float().clone())
                tokens = logits[-1].argmax(-1, keepdim=True)
            decoder.rebuild([0], decoder.capacity, joining=decoder_of(prompts[1]))
            tokens = torch.cat([tokens, torch.tensor([7], device="cuda")])
            real, raised = decoder._forward, []

            def forward(real=real, raised=raised) -> object:  # type: ignore[no-untyped-def]
                if provoked and not raised and torch.cuda.is_current_stream_capturing():
                    raised.append(True)
                    raise RuntimeError("provoked while capturing")
                return real()

            decoder._forward = forward
            for _ in range(3):
                out = decoder.step(tokens, capture=capture).float().clone()
                logits.extend(out)
                tokens = out.argmax(-1)
            stats = decoder.stats()
            if capture:
                assert (stats["captures"], stats["unwarmed_failures"]) == (2, int(provoked))
                assert raised == ([True] if provoked else [])
            runs[name] = torch.stack(logits)
            decoder.close()
    assert torch.equal(runs["uncaptured"].argmax(-1), runs["captured"].argmax(-1))
    torch.testing.assert_close(runs["uncaptured"], runs["captured"], rtol=0, atol=1e-3)


def test_a_request_taking_a_parked_rows_place_decodes_in_the_captured_graph(tiny: tuple) -> None:
    """A row leaves (parked) and a request sent then takes its place (`StaticDecoder.replace`):
    the batch's captured graph goes on (one capture in all) and every answer is as alone."""
    from tests.models.test_hf_park import _request, late_join

    alone, together, stats = late_join(_backend(tiny), [_request(2, 5)])
    for one, many in zip(alone, together, strict=True):
        assert (many.text, many.completion_tokens, many.status) == (
            one.text,
            one.completion_tokens,
            one.status,
        )
    assert (stats["parks"], stats["replaces"], stats["rebuilds"]) == (2, 1, 1), stats
    if stats["path"] == "graph":
        assert stats["captures"] == 1, stats


def test_a_loaded_model_moves_to_the_device_staged_and_answers_the_same(
    tiny: tuple, tmp_path: Path
) -> None:
    """`hf/FOLDER` on CUDA moves its weights through pinned staging buffers (`hf/loading.py`,
    issue 46): every tensor equal to the one saved, and the same greedy answer as the model
    built in memory, on the same prompt ids."""
    import torch

    from longscope.models.hf import HFBackend

    model, tok = tiny
    folder = tmp_path / "tiny-qwen2"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    dev = device()
    loaded = HFBackend(str(folder), prompt_mode="completion", device=dev, dtype="float32")
    info = asyncio.run(loaded.info())
    assert info.details["weights_moved"] == ("staged" if dev == "cuda" else "to")
    theirs = {**dict(loaded._model.named_parameters()), **dict(loaded._model.named_buffers())}
    for name, tensor in (*model.named_parameters(), *model.named_buffers()):
        assert theirs[name].device.type == dev, name
        assert torch.equal(theirs[name], tensor), name
    request = Request(
        "q", 0, "completion", prompt=CONTEXT[:300] + QUESTIONS[0],
        config=GenerationConfig(max_tokens=12),
    )  # fmt: skip
    # The folder's tokenizer for both (a saved tokenizer may split a prompt otherwise).
    built = HFBackend("tiny", model=model, tokenizer=loaded._tok, prompt_mode="completion")
    assert asyncio.run(loaded.generate(request)).text == asyncio.run(built.generate(request)).text


def _dim128_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A saved tiny Qwen2 of head dim 128 in bf16 (the Triton step's shapes), every kernel of
    ours forgotten in this process, and the tunings' step counts and choices empty (the tests
    before may have decoded long enough for a tuning, which builds its candidates)."""
    from longscope.models.hf import decode_ops, gemv, split_tuning, triton_ops
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    for table in ("_STEPS", "_PLANS", "_TIMES", "_RANKED"):
        monkeypatch.setattr(gemv, table, {})
    monkeypatch.setattr(split_tuning, "_STEPS", {})

    tok = tiny_tokenizer()
    model = tiny_qwen2(vocab_size=len(tok), hidden=512, heads=4, kv_heads=2, dtype="bfloat16")
    folder = tmp_path / "qwen2-dim128"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    for module in (decode_ops, triton_ops):
        for value in list(vars(module).values()):
            if isinstance(getattr(value, "device_caches", None), dict):
                value.device_caches.clear()
    return folder


def _run_lengths(backend) -> None:  # type: ignore[no-untyped-def]
    """Prompts of 30, 700 and 5,000 words alone (a cache of one block, of a few, and the merge
    kernel's), then the three at once."""
    words = (CONTEXT * 10).split()  # 6,000 words

    def ask(count: int, tokens: int = 24) -> Request:
        return Request(
            f"q{count}", 0, "completion", prompt=" ".join(words[:count]),
            config=GenerationConfig(max_tokens=tokens),
        )  # fmt: skip

    lengths = [30, 700, 5000]
    for count in lengths:
        asyncio.run(backend.generate(ask(count)))
    asyncio.run(backend.generate_group([ask(count, 40) for count in lengths]))


def test_a_load_builds_the_kernels_its_run_launches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hf/FOLDER` on CUDA builds the Triton kernels of its run while the weights load
    (`hf/build_ahead.py`, issue 46): with every kernel of ours forgotten before the load, a run
    of prompts from 30 to 5,000 words, alone and three at a time, builds none after it."""
    import triton

    from longscope.models.hf import HFBackend

    if device() != "cuda":
        pytest.skip("the build ahead runs on CUDA only")
    folder = _dim128_folder(tmp_path, monkeypatch)
    built: list[str] = []

    def before(*_: object, **kwargs: object) -> bool:
        built.append(str(getattr(kwargs.get("fn"), "name", "?")).rsplit(".", 1)[-1])
        return False

    runtime = triton.knobs.runtime
    runtime.jit_cache_hook = before
    try:
        backend = HFBackend(str(folder), prompt_mode="completion", dtype="bfloat16", max_batch=4)
        info = asyncio.run(backend.info())
        summary = info.details["kernels_built_ahead"]
        done = re.match(r"(\d+) of (\d+) launches", summary)
        assert done and done.group(1) == done.group(2), summary
        assert "_attention_split_body" in built and "_rope_kernel" in built, built
        built.clear()
        _run_lengths(backend)
        assert built == [], built
        asyncio.run(backend.aclose())
    finally:
        runtime.jit_cache_hook = None


def test_a_build_process_fills_the_disk_cache_the_run_then_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build_ahead` "process": a process of its own builds the run's kernels into Triton's disk
    cache (this process's, set in code); once it has ended, the same run as above compiles
    nothing itself: every build it loads is one the process wrote."""
    import time

    import triton

    from longscope.models.hf import HFBackend

    if device() != "cuda":
        pytest.skip("the build ahead runs on CUDA only")
    folder = _dim128_folder(tmp_path, monkeypatch)
    cache, kept = tmp_path / "triton-cache", triton.knobs.cache.dir
    triton.knobs.cache.dir = str(cache)
    try:
        backend = HFBackend(str(folder), prompt_mode="completion", dtype="bfloat16", max_batch=4)
        backend.engine.kernels.build_ahead = "process"
        info = asyncio.run(backend.info())
        assert info.details["kernels_built_ahead"].startswith("in process "), info.details
        deadline = time.monotonic() + 240
        while ": " not in backend.kernels_built_ahead:  # what the process said, once it ended
            assert time.monotonic() < deadline
            time.sleep(0.2)
        summary = backend.kernels_built_ahead
        assert re.search(r": (\d+) of \1 launches", summary), summary
        written = {p.name for p in cache.rglob("*.cubin")}
        assert {"_rope_kernel.cubin", "_attention_split_body.cubin"} <= written, written
        before = {str(p) for p in cache.rglob("*.cubin")}
        _run_lengths(backend)
        assert {str(p) for p in cache.rglob("*.cubin")} == before
        asyncio.run(backend.aclose())
    finally:
        triton.knobs.cache.dir = kept
