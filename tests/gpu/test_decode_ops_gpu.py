"""The graph decode's Triton kernels (`decode_ops`, issue 46) on CUDA: attention against a float64
reference reading only each row's written keys, rotary + cache write and SiLU product bit-identical
to transformers' 16-bit ops, RMSNorm within a rounding of transformers' module, and a model
decoding the same tokens with the Triton step as with the torch step."""

from __future__ import annotations

import asyncio

import pytest

from longscope.types import GenerationConfig, Request

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def _reference(q, k, v, valid, lengths, scale, groups):  # type: ignore[no-untyped-def]
    import torch

    rows = []
    for b in range(q.shape[0]):
        n = int(lengths[b])
        keys = k[b, :, :n].double().repeat_interleave(groups, 0)
        values = v[b, :, :n].double().repeat_interleave(groups, 0)
        scores = (q[b].double()[:, None, :] @ keys.transpose(1, 2))[:, 0] * scale
        scores = scores.masked_fill(~valid[b, :n][None], float("-inf"))
        rows.append((scores.softmax(-1)[:, None, :] @ values)[:, 0].reshape(-1))
    return torch.stack(rows)


@pytest.mark.parametrize("tuned", [False, True])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize(
    "shape",
    [
        (1, 4, 7, 128, 33792),
        (6, 4, 7, 128, 9216),
        (3, 3, 3, 64, 2048),
        (64, 4, 7, 128, 4352),
        (8, 4, 7, 128, 66560),
    ],
)
def test_decode_attention_reads_each_row_to_its_length(cuda, shape, fused, tuned) -> None:  # type: ignore[no-untyped-def]
    """Keys past a row's length hold NaN (never written): the kernel must not read them; holes
    (padding) inside are masked; bf16 within 1e-2 of float64, as flash attention is. The third
    and fourth shapes have few splits: merged by the split stage itself where `fused` (in a captured
    graph replayed 3 times too: its arrival counter back at zero after each), else by the merge
    kernel. Untuned (`split_tuning.UNTUNED`; the last shape is in launch class 8, many programs
    reading long splits) and with the autotuner's choice (`tune`) alike."""
    torch = cuda
    from longscope.models.hf import decode_ops, gemv

    batch, kv_heads, groups, dim, capacity = shape
    heads = kv_heads * groups
    gen = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(batch, heads, dim, device="cuda", generator=gen).bfloat16()
    k = torch.randn(batch, kv_heads, capacity, dim, device="cuda", generator=gen).bfloat16()
    v = torch.randn(batch, kv_heads, capacity, dim, device="cuda", generator=gen).bfloat16()
    lengths = torch.tensor(
        [capacity - 17 * b if b % 2 == 0 else 1 + 97 * b % (capacity - 1) for b in range(batch)],
        device="cuda",
    )
    valid = torch.rand(batch, capacity, device="cuda", generator=gen) > 0.1
    for b in range(batch):
        k[b, :, int(lengths[b]) :] = float("nan")
        v[b, :, int(lengths[b]) :] = float("nan")
        valid[b, int(lengths[b]) - 1] = True
    attention = decode_ops.DecodeAttention(
        batch, heads, kv_heads, dim, capacity, torch.bfloat16, "cuda"
    )
    pdl = gemv.pdl_supported(torch.device("cuda"))  # launched as the step launches it
    if tuned:
        attention.tune(k, v, valid, lengths, pdl, fused)
    assert attention.tuned == tuned
    got = attention(q, k, v, valid, lengths, dim**-0.5, pdl=pdl, fused=fused)
    assert attention.fuses(fused) == (fused and shape[-1] <= 4352)
    want = _reference(q, k, v, valid, lengths, dim**-0.5, groups)
    assert torch.isfinite(got).all()
    error = ((got.double() - want).norm() / want.norm()).item()
    assert error < 1e-2, error
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed = attention(q, k, v, valid, lengths, dim**-0.5, pdl=pdl, fused=fused)
    for _ in range(3):
        graph.replay()
        assert torch.equal(replayed, got)
    assert int(attention.count.abs().sum()) == 0


def test_rope_store_and_silu_are_bit_identical_to_transformers(cuda) -> None:  # type: ignore[no-untyped-def]
    torch = cuda
    from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

    from longscope.models.hf import decode_ops

    batch, heads, kv_heads, dim, capacity = 3, 28, 4, 128, 64
    gen = torch.Generator(device="cuda").manual_seed(2)
    qkv = torch.randn(batch, (heads + 2 * kv_heads) * dim, device="cuda", generator=gen)
    qkv = qkv.bfloat16()
    angle = torch.rand(batch, dim // 2, device="cuda", generator=gen) * 1000
    angle = torch.cat([angle, angle], dim=-1)
    cos, sin = angle.cos().bfloat16(), angle.sin().bfloat16()
    keys = torch.zeros(batch, kv_heads, capacity, dim, device="cuda", dtype=torch.bfloat16)
    values = torch.zeros_like(keys)
    slot = torch.tensor([0, 17, 63], device="cuda")
    query = decode_ops.rope_store(qkv, cos, sin, keys, values, slot, heads, kv_heads)
    q = qkv[:, : heads * dim].view(batch, heads, 1, dim)
    k = qkv[:, heads * dim : (heads + kv_heads) * dim].view(batch, kv_heads, 1, dim)
    v = qkv[:, (heads + kv_heads) * dim :].view(batch, kv_heads, dim)
    want_q, want_k = apply_rotary_pos_emb(q, k, cos[:, None], sin[:, None])
    assert torch.equal(query, want_q[:, :, 0])
    for b in range(batch):
        assert torch.equal(keys[b, :, int(slot[b])], want_k[b, :, 0])
        assert torch.equal(values[b, :, int(slot[b])], v[b])
    assert int((keys != 0).any(dim=-1).sum()) == batch * kv_heads  # nothing else written
    packed = torch.randn(5, 2 * 18944, device="cuda", generator=gen).bfloat16()
    gate, up = packed[:, :18944], packed[:, 18944:]
    assert torch.equal(decode_ops.silu_mul_packed(packed), torch.nn.functional.silu(gate) * up)


def test_add_rms_norm_matches_transformers_rmsnorm(cuda) -> None:  # type: ignore[no-untyped-def]
    torch = cuda
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    from longscope.models.hf import decode_ops

    norm = Qwen2RMSNorm(3584, eps=1e-6).to("cuda", torch.bfloat16)
    gen = torch.Generator(device="cuda").manual_seed(3)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(3584, device="cuda", generator=gen) + 0.5)
    residual = torch.randn(4, 3584, device="cuda", generator=gen).bfloat16()
    x = torch.randn(4, 3584, device="cuda", generator=gen).bfloat16()
    summed = residual + x
    kept = residual.clone()
    with torch.no_grad():
        got = decode_ops.add_rms_norm(kept, x, norm.weight, norm.variance_epsilon)
        want = norm(summed)
    assert torch.equal(kept, summed)  # the residual is the bf16 sum, in place
    # One bf16 rounding step at most (the float32 sum of squares runs in another order).
    step = want.float().abs() * 2**-7
    assert ((got.float() - want.float()).abs() <= step).all()


def _two_documents(torch, dtype, max_tokens, configure):  # type: ignore[no-untyped-def]
    """Decode two documents of different lengths together on a 7B-like head (128 dims, 7 query
    heads per KV head) with the engine's switches set by `configure`: their greedy answers and
    the engine's last decode stats."""
    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    texts = ["The quick brown fox jumps over the lazy dog. " * n for n in (40, 130)]
    model = tiny_qwen2(
        vocab_size=len(tok), layers=2, hidden=896, heads=7, kv_heads=1, dtype=dtype,
        device="cuda",
    )  # fmt: skip
    backend = HFBackend("tiny", model=model, tokenizer=tok, prompt_mode="completion")
    configure(backend.engine.kernels)
    config = GenerationConfig(max_tokens=max_tokens)

    async def both(backend=backend):  # type: ignore[no-untyped-def]
        groups = [
            [Request(f"d{i}", 0, "completion", prompt=t, config=config)]
            for i, t in enumerate(texts)
        ]
        return await asyncio.gather(*(backend.generate_group(g) for g in groups))

    answers = [g[0].text for g in asyncio.run(both())]
    last = dict(backend.engine.last_decode)
    del model, backend
    torch.cuda.empty_cache()
    return answers, last


def test_model_decodes_the_same_with_triton_and_torch_steps(cuda) -> None:  # type: ignore[no-untyped-def]
    """Two documents of different lengths decoding together: the Triton step's greedy tokens
    equal the torch step's; the path ran. In float32: two bf16 steps accumulate differently and
    a random model's near-ties then flip (on an H200 a bf16 run agreed for 21 tokens, then
    forked at a tie)."""
    answers = {}
    for triton in (True, False):

        def configure(kernels, triton=triton):  # type: ignore[no-untyped-def]
            kernels.decode_triton = triton

        answers[triton], last = _two_documents(cuda, "float32", 48, configure)
        assert last["kernels"] == ("triton" if triton else "torch")
        assert last["path"] == "graph"
    assert answers[True] == answers[False]
    assert all(len(a) > 0 for a in answers[True])


@pytest.mark.parametrize("rows", [1, 7, 24, 64])
def test_gemv_plans_match_torch_linear(cuda, rows, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every candidate plan of the split-K GEMV, its slices summed as the step's kernels sum
    them, against float64: as close as torch's own bf16 matmul is; every output column and row
    written (the slices' memory holds NaN before); launched programmatically dependent, the same
    bits. `linear` returns slices exactly where `tune` kept a plan,
    and they are right."""
    torch = cuda
    from longscope.models.hf import gemv

    pdl = gemv.pdl_supported(torch.device("cuda"))

    monkeypatch.setattr(gemv, "_PLANS", {})  # this test's tuning stays in this test
    monkeypatch.setattr(gemv, "_TIMES", {})
    gen = torch.Generator(device="cuda").manual_seed(rows)
    for n, k, bias in ((4608, 3584, True), (3584, 18944, False), (1000, 896, True)):
        x = torch.randn(rows, k, device="cuda", generator=gen).bfloat16()
        w = (torch.randn(n, k, device="cuda", generator=gen) / k**0.5).bfloat16()
        b = torch.randn(n, device="cuda", generator=gen).bfloat16() if bias else None
        want = torch.nn.functional.linear(x.double(), w.double(), b.double() if bias else None)
        floor = (torch.nn.functional.linear(x, w, b).double() - want).norm() / want.norm()
        for plan in gemv._candidates(gemv.rows_pad(rows), k):
            part = torch.full((plan.splits, rows, n), float("nan"), device="cuda")
            got = gemv.run(x, w, b, plan, part=part).rounded()
            assert got.shape == (rows, n) and torch.isfinite(got).all(), plan
            if pdl:  # launched as the step launches it: the same sums
                assert torch.equal(gemv.run(x, w, b, plan, pdl=pdl).rounded(), got), plan
            error = ((got.double() - want).norm() / want.norm()).item()
            assert error < max(2 * floor.item(), 4e-3), (n, k, plan, error, floor.item())
        weights = [(w, b)] + [
            ((torch.randn(n, k, device="cuda", generator=gen) / k**0.5).bfloat16(), b)
            for _ in range(15)
        ]
        plan = gemv.tune(rows, weights)
        name = f"{gemv.rows_pad(rows)}x{n}x{k}{'+b' if bias else ''}"
        assert gemv.plans()[name]["plan"] == (plan.label() if plan else "torch")
        out = gemv.linear(x, w, b)
        assert isinstance(out, gemv.Parts) == (plan is not None)
        rounded = out.rounded() if plan is not None else out
        assert ((rounded.double() - want).norm() / want.norm()).item() < max(2 * floor.item(), 4e-3)


@pytest.mark.parametrize("rows", [1, 24, 64])
def test_gated_gemv_is_the_projection_then_the_silu_product(cuda, rows, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The gate/up projection with the SiLU product in one kernel (`gemv.run_gated`) gives the
    one-slice projection then `silu_mul_packed`, bit for bit, on every one-slice tile, with and
    without a bias, launched as the step launches it; `tune_gated` keeps a plan only where it
    timed faster than those two kernels, and `gated` then answers with it."""
    torch = cuda
    from longscope.models.hf import decode_ops, gemv

    for name in ("_PLANS", "_TIMES", "_RANKED"):
        monkeypatch.setattr(gemv, name, {})
    pdl = gemv.pdl_supported(torch.device("cuda"))
    gen = torch.Generator(device="cuda").manual_seed(rows)
    features, k = 18944, 3584  # a 7B's MLP
    for bias in (True, False):
        x = torch.randn(rows, k, device="cuda", generator=gen).bfloat16()
        w = (torch.randn(2 * features, k, device="cuda", generator=gen) / k**0.5).bfloat16()
        b = torch.randn(2 * features, device="cuda", generator=gen).bfloat16() if bias else None
        for plan in [p for p in gemv._candidates(gemv.rows_pad(rows), k) if p.splits == 1]:
            got = gemv.run_gated(x, w, b, plan, pdl)
            two = decode_ops.silu_mul_packed(gemv.run(x, w, b, plan, pdl=pdl), pdl)
            assert got.shape == (rows, features) and torch.equal(got, two), (plan, bias)
    weights = [(w, b)] + [
        ((torch.randn(2 * features, k, device="cuda", generator=gen) / k**0.5).bfloat16(), b)
        for _ in range(3)
    ]
    plan = gemv.tune_gated(rows, weights, lambda out: decode_ops.silu_mul_packed(out, pdl))
    name = f"{gemv.rows_pad(rows)}x{2 * features}x{k}+silu"
    assert gemv.plans()[name]["plan"] == (plan.label() if plan else "two kernels")
    out = gemv.gated(x, w, b, pdl)
    assert (out is None) == (plan is None)
    if plan is not None:
        assert torch.equal(out, gemv.run_gated(x, w, b, plan, pdl))


def test_step_kernels_sum_gemv_slices_as_the_rounded_projection(cuda) -> None:  # type: ignore[no-untyped-def]
    """Rotary + cache write, residual add + RMSNorm and the SiLU product given the GEMV's slices
    (3 of them, with a bias) give bit for bit what they give on the rounded projection."""
    torch = cuda
    from longscope.models.hf import decode_ops, gemv

    gen = torch.Generator(device="cuda").manual_seed(9)
    batch, heads, kv_heads, dim, capacity, k = 3, 28, 4, 128, 64, 3584
    x = torch.randn(batch, k, device="cuda", generator=gen).bfloat16()

    def parts(n, bias):  # type: ignore[no-untyped-def]
        w = (torch.randn(n, k, device="cuda", generator=gen) / k**0.5).bfloat16()
        b = torch.randn(n, device="cuda", generator=gen).bfloat16() if bias else None
        return gemv.run(x, w, b, gemv.Plan(64, 128, 4, 3, 3))

    qkv = parts((heads + 2 * kv_heads) * dim, True)
    angle = torch.rand(batch, dim // 2, device="cuda", generator=gen) * 1000
    angle = torch.cat([angle, angle], dim=-1)
    cos, sin = angle.cos().bfloat16(), angle.sin().bfloat16()
    slot = torch.tensor([0, 17, 63], device="cuda")
    outs = []
    for given in (qkv, qkv.rounded()):
        keys = torch.zeros(batch, kv_heads, capacity, dim, device="cuda", dtype=torch.bfloat16)
        values = torch.zeros_like(keys)
        query = decode_ops.rope_store(given, cos, sin, keys, values, slot, heads, kv_heads)
        outs.append((query, keys, values))
    assert all(torch.equal(a, b) for a, b in zip(*outs, strict=True))
    o_proj = parts(3584, False)
    weight = torch.rand(3584, device="cuda", generator=gen).bfloat16() + 0.5
    residual = torch.randn(batch, 3584, device="cuda", generator=gen).bfloat16()
    kept = residual.clone()
    got = decode_ops.add_rms_norm(residual, o_proj, weight, 1e-6)
    assert torch.equal(got, decode_ops.add_rms_norm(kept, o_proj.rounded(), weight, 1e-6))
    assert torch.equal(residual, kept)
    gate_up = parts(2 * 18944, False)
    assert torch.equal(
        decode_ops.silu_mul_packed(gate_up), decode_ops.silu_mul_packed(gate_up.rounded())
    )


def test_model_decodes_the_same_with_and_without_the_gemv(cuda, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A float16 model's step with every projection by the GEMV (plans forced, one row and
    batched, sliced and not; gate/up with the SiLU product in it) decodes the same greedy tokens
    as with torch's matmuls, in the captured graph."""
    from longscope.models.hf import gemv

    runs = []
    real_run, real_gated = gemv.run, gemv.run_gated

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(args[3])
        return real_run(*args, **kwargs)

    def counted_gated(*args, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(("gated", args[3]))
        return real_gated(*args, **kwargs)

    def forced(rows, weights):  # type: ignore[no-untyped-def]
        weight, bias = weights[0]
        plan = gemv.Plan(16, 128, 4, 3, 4) if rows == 1 else gemv.Plan(64, 128, 4, 3, 2)
        gemv._PLANS[gemv._key(rows, weight, bias)] = plan
        return plan

    def forced_gated(rows, weights, silu):  # type: ignore[no-untyped-def]
        weight, bias = weights[0]
        plan = gemv.Plan(16, 128, 4, 3, 1) if rows == 1 else gemv.Plan(64, 128, 4, 3, 1)
        gemv._PLANS[gemv._key(rows, weight, bias, gated=True)] = plan
        return plan

    monkeypatch.setattr(gemv, "run", counted)
    monkeypatch.setattr(gemv, "run_gated", counted_gated)
    monkeypatch.setattr(gemv, "_PLANS", {})  # plans forced here stay in this test
    monkeypatch.setattr(gemv, "TUNE_AFTER_STEPS", 0)  # tuned (forced) at the first step
    monkeypatch.setattr(gemv, "tune", forced)
    monkeypatch.setattr(gemv, "tune_gated", forced_gated)
    answers = {}
    for use in (True, False):

        def configure(kernels, use=use):  # type: ignore[no-untyped-def]
            kernels.decode_gemv = use

        runs.clear()
        answers[use], last = _two_documents(cuda, "float16", 32, configure)
        assert last["kernels"] == "triton"
        assert last["path"] == "graph"
        # the GEMV ran (captured) only where switched on, gate/up with the SiLU product
        assert bool(runs) == use and any(isinstance(r, tuple) for r in runs) == use
    assert answers[True] == answers[False]
    assert all(len(a) > 0 for a in answers[True])


def test_the_gemv_is_tuned_once_its_padding_has_decoded_long_enough(cuda, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A row padding decodes on torch's matmul until it has taken `gemv.TUNE_AFTER_STEPS`
    steps: no tuning comes before that step, the batch's graph is captured again at it, and the
    GEMV runs (captured) only after it; the greedy tokens equal a run that never tunes."""
    from longscope.models.hf import decode_ops, gemv

    tuned: list[int] = []
    captured: list[int] = []
    real_run = gemv.run

    here = str(cuda.device("cuda", cuda.cuda.current_device()))  # where the model is put

    def steps(rows):  # type: ignore[no-untyped-def]
        return gemv._STEPS.get((gemv.rows_pad(rows), here), 0)

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        captured.append(steps(args[0].shape[0]))
        return real_run(*args, **kwargs)

    def forced(rows, weights):  # type: ignore[no-untyped-def]
        tuned.append(steps(rows))
        weight, bias = weights[0]
        plan = gemv.Plan(16, 128, 4, 3, 4) if rows == 1 else gemv.Plan(64, 128, 4, 3, 2)
        gemv._PLANS[gemv._key(rows, weight, bias)] = plan
        return plan

    monkeypatch.setattr(gemv, "run", counted)
    monkeypatch.setattr(gemv, "tune", forced)
    monkeypatch.setattr(gemv, "tune_gated", lambda rows, weights, silu: None)
    # the attention's split stage tuned at once in both runs: the GEMV's wait alone differs
    monkeypatch.setattr(decode_ops.DecodeAttention, "due", lambda self: True)
    monkeypatch.setattr(decode_ops.DecodeAttention, "stepped", lambda self: False)
    answers, captures = {}, {}
    for after in (6, 10**9):
        monkeypatch.setattr(gemv, "_PLANS", {})
        monkeypatch.setattr(gemv, "_STEPS", {})
        monkeypatch.setattr(gemv, "TUNE_AFTER_STEPS", after)
        tuned.clear(), captured.clear()
        answers[after], last = _two_documents(cuda, "float16", 24, lambda kernels: None)
        assert last["kernels"] == "triton" and last["path"] == "graph"
        captures[after] = last["captures"]
        if after == 6:
            assert tuned and min(tuned) == 6, tuned  # at the step that made it due, not before
            assert captured and min(captured) >= 6, captured
        else:
            assert tuned == [] and captured == []
    # the same schedule both times: the tuned run's graph was dropped and captured once more
    assert captures[6] > captures[10**9], captures
    assert answers[6] == answers[10**9]
    assert all(len(a) > 0 for a in answers[6])


def test_the_split_stage_is_tuned_once_its_launch_class_has_decoded_long_enough(
    cuda, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The attention's split stage runs `split_tuning.UNTUNED` until its launch class has taken
    `gemv.TUNE_AFTER_STEPS` steps: no tuning before that step, the graph captured again at it;
    a run that never gets there tunes nothing (the GEMV off: the split stage's wait alone)."""
    from longscope.models.hf import decode_ops, gemv, split_tuning

    tuned: list[int] = []
    real_tune = decode_ops.DecodeAttention.tune

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        tuned.append(split_tuning._STEPS.get(self._launch_key(), 0))
        return real_tune(self, *args, **kwargs)

    monkeypatch.setattr(decode_ops.DecodeAttention, "tune", counted)
    captures = {}
    for after in (6, 10**9):
        monkeypatch.setattr(split_tuning, "_STEPS", {})
        monkeypatch.setattr(gemv, "TUNE_AFTER_STEPS", after)
        tuned.clear()

        def configure(kernels):  # type: ignore[no-untyped-def]
            kernels.decode_gemv = False

        answers, last = _two_documents(cuda, "float16", 24, configure)
        assert last["kernels"] == "triton" and last["path"] == "graph"
        assert all(len(a) > 0 for a in answers)
        captures[after] = last["captures"]
        if after == 6:
            assert tuned and min(tuned) == 6, tuned  # at the step that made it due, not before
        else:
            assert tuned == []
    assert captures[6] > captures[10**9], captures


def test_programmatic_dependent_launch_decodes_bit_for_bit_alike(cuda) -> None:  # type: ignore[no-untyped-def]
    """On a card that takes it (compute capability 9+), the step's kernels launched
    programmatically dependent give the same bf16 greedy tokens as launched one after another,
    in the captured graph: a kernel that read its input before the one before it had written
    it would fork the answers (same kernels, same sums; only when each may start differs)."""
    torch = cuda
    from longscope.models.hf import gemv

    if not gemv.pdl_supported(torch.device("cuda")):
        pytest.skip("this card or Triton has no programmatic dependent launch")
    answers = {}
    for pdl in (True, False):

        def configure(kernels, pdl=pdl):  # type: ignore[no-untyped-def]
            kernels.decode_pdl = pdl

        answers[pdl], last = _two_documents(cuda, "bfloat16", 64, configure)
        assert (last["kernels"], last["path"], last["pdl"]) == ("triton", "graph", pdl)
    assert answers[True] == answers[False]
    assert all(len(a) > 0 for a in answers[True])


def test_single_requests_joining_and_leaving_decode_as_alone(cuda) -> None:  # type: ignore[no-untyped-def]
    """Single-request groups handed over at once join the running batch one by one and leave
    in several orders (from either end and from inside: views and copies of the written
    slots): every answer equals the one it gets alone."""
    torch = cuda
    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    # float32: bf16 matmuls may round a row differently at another batch size (a fork at a
    # random model's near-tie); what is tested here is which slots each row keeps.
    model = tiny_qwen2(
        vocab_size=len(tok), layers=2, hidden=896, heads=7, kv_heads=1, dtype="float32",
        device="cuda",
    )  # fmt: skip
    backend = HFBackend("tiny", model=model, tokenizer=tok, prompt_mode="completion")
    words = ["the", "cat", "sat", "on", "a", "mat", "while", "rain", "fell", "over", "a", "town"]
    groups = [
        [
            Request(
                f"r{i}", 0, "completion", prompt=" ".join(words[i % 5 :] * (3 + i)),
                config=GenerationConfig(max_tokens=tokens),
            )
        ]
        for i, tokens in enumerate((40, 12, 30, 8, 44, 20))
    ]  # fmt: skip
    alone = [asyncio.run(backend.generate_group(g))[0] for g in groups]

    async def together():  # type: ignore[no-untyped-def]
        return await asyncio.gather(*(backend.generate_group(g) for g in groups))

    before = backend.engine.stats["joined"]
    joined = [answers[0] for answers in asyncio.run(together())]
    assert backend.engine.stats["joined"] > before
    assert backend.engine.last_decode["rebuilds"] >= 2, backend.engine.last_decode
    assert backend.engine.last_decode["kernels"] == "triton"
    for one, many in zip(alone, joined, strict=True):
        assert (many.text, many.completion_tokens) == (one.text, one.completion_tokens)
    assert len({a.text for a in alone}) > 1
    torch.cuda.empty_cache()


def test_tunings_build_every_variant_at_once_before_timing(cuda, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The split stage's configurations and the GEMV's candidate plans are built at once
    (`triton_builds.build_at_once`: Triton's warmup, in threads) before a tuning times them: no launch of
    the tunings builds a kernel itself. Shapes no other test builds (3 query heads per KV head;
    a weight of 1,000 x 1,000, whose K no tile steps evenly)."""
    torch = cuda
    triton = pytest.importorskip("triton")
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime, "jit_cache_hook"):
        pytest.skip("this Triton reports no builds (jit_cache_hook)")
    from longscope.models.hf import decode_ops, gemv

    seen: list[tuple[str, bool]] = []

    def hook(*_, **kwargs):  # type: ignore[no-untyped-def]
        name = str(getattr(kwargs.get("fn"), "name", "")).rsplit(".", 1)[-1]
        warm = kwargs.get("is_manual_warmup", kwargs.get("compile", {}).get("is_warmup"))
        seen.append((name, bool(warm)))
        return False

    monkeypatch.setattr(runtime, "jit_cache_hook", hook)
    for table in ("_PLANS", "_TIMES", "_RANKED"):
        monkeypatch.setattr(gemv, table, {})
    pdl = gemv.pdl_supported(torch.device("cuda"))
    gen = torch.Generator(device="cuda").manual_seed(3)
    keys, values = (
        torch.randn(2, 2, 4096, 128, device="cuda", generator=gen).bfloat16() for _ in range(2)
    )
    valid = torch.ones(2, 4096, dtype=torch.bool, device="cuda")
    lengths = torch.tensor([4096, 1000], device="cuda")
    attention = decode_ops.DecodeAttention(2, 6, 2, 128, 4096, torch.bfloat16, "cuda")
    attention.tune(keys, values, valid, lengths, pdl, True)
    split = [warm for name, warm in seen if name == "_attention_split_body"]
    assert split == [True] * len(decode_ops._split_configs())
    weights = [
        ((torch.randn(1000, 1000, device="cuda", generator=gen) / 30).bfloat16(), None)
        for _ in range(4)
    ]
    gemv.tune(3, weights)
    built = [warm for name, warm in seen if name == "_gemv_kernel"]
    assert built and all(built), f"{built.count(False)} of {len(built)} built by a timed launch"
