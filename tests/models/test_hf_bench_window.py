"""`bench_hf.window_summary` (issue 46): a batched step's device window from torch's chrome trace,
overlapping kernels (programmatic dependent launch) counted once, gaps with the kernels either
side, and host events left out."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench_helper import load_benchmark


def _bench_hf():  # type: ignore[no-untyped-def]
    return load_benchmark("bench_hf")


def test_window_counts_overlaps_once_and_names_the_gaps(tmp_path: Path) -> None:
    bench_hf = _bench_hf()
    events = [
        {"cat": "kernel", "ts": 100.0, "dur": 10.0, "name": "gemv"},
        {"cat": "kernel", "ts": 105.0, "dur": 10.0, "name": "norm"},  # placed early, overlaps
        {"cat": "kernel", "ts": 118.0, "dur": 4.0, "name": "rope"},  # 3 us after norm ends
        {"cat": "cpu_op", "ts": 90.0, "dur": 100.0, "name": "aten::copy_"},  # host: not counted
        {"cat": "gpu_memcpy", "ts": 130.0, "dur": 2.0, "name": "Memcpy DtoH"},  # 8 us idle first
    ]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    got = bench_hf.window_summary(str(trace))
    assert got["events"] == 4
    assert got["span_us"] == 32.0  # 100 -> 132
    assert got["busy_us"] == 21.0  # 100-115, 118-122, 130-132
    assert got["idle_us"] == 11.0
    assert got["gaps_over_2us"] == 2
    assert got["largest_gaps"] == [[8.0, "rope", "Memcpy DtoH"], [3.0, "norm", "rope"]]
    steps = bench_hf.WINDOW_STEPS
    assert got["kernel_us_per_step"]["gemv"] == round(10.0 / steps, 1)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"traceEvents": [events[3]]}))
    assert bench_hf.window_summary(str(empty)) == {"events": 0}


def test_split_candidates_are_swapped_and_put_back() -> None:
    """`bench_hf.set_split_candidates` (issue 46 sixteenth pass, `--split-configs`): the split
    stage's tuner and the list `tune` builds at once both take the given candidates, their choices
    forgotten; "engine" puts the engine's five back, and where they stand already leaves the
    tuner's choices as they are."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import decode_ops, split_tuning

    def described(configs: list) -> list[tuple[int, int, int]]:
        return [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in configs]

    bench_hf = _bench_hf()
    engine = described(split_tuning._split_configs())
    try:
        bench_hf.set_split_candidates("32/w2s2,128/w8s3")
        for configs in (decode_ops._split_configs(), split_tuning._split_configs()):
            assert described(configs) == [(32, 2, 2), (128, 8, 3)]
        kernel = decode_ops._attention_split_kernel
        if hasattr(kernel, "configs"):  # the autotuner (not under Triton's interpreter)
            assert [c.kwargs["BLOCK"] for c in kernel.configs] == [32, 128]
    finally:
        bench_hf.set_split_candidates("engine")
    assert described(decode_ops._split_configs()) == engine and len(engine) == 5
    assert decode_ops._split_configs is split_tuning._split_configs
    original = split_tuning._split_configs
    kernel = decode_ops._attention_split_kernel
    chosen = getattr(kernel, "cache", {})
    chosen[("a", "launch", "class")] = "a choice"
    bench_hf.set_split_candidates("engine")  # the engine's already: nothing swapped or forgotten
    assert split_tuning._split_configs is original
    assert chosen.pop(("a", "launch", "class")) == "a choice"


def test_ablated_step_kernels_launch_nothing_and_come_back() -> None:
    """`bench_hf.ablated` (`--ablate`): the named step kernels give buffers of their outputs'
    shapes and dtypes without touching their inputs (the residual stays as it was), and the
    engine's functions are back afterwards; an unknown name is refused, naming it."""
    import pytest

    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import decode_ops, gemv

    def step_functions() -> tuple:
        return (
            decode_ops.add_rms_norm,
            decode_ops.rope_store,
            decode_ops.DecodeAttention.__call__,
            decode_ops.silu_mul_packed,
        )

    bench_hf = _bench_hf()
    engine = step_functions()
    bf16 = torch.bfloat16
    residual = torch.ones(3, 8, dtype=bf16)
    keys = torch.zeros(3, 2, 16, 4, dtype=bf16)
    with bench_hf.ablated("norms,rope,attention,silu") as names:
        assert names == ["attention", "norms", "rope", "silu"]
        normed = decode_ops.add_rms_norm(residual, torch.ones(3, 8, dtype=bf16), None, 1e-6)
        assert normed.shape == (3, 8) and normed.dtype == bf16
        assert torch.equal(residual, torch.ones(3, 8, dtype=bf16))
        slot = torch.zeros(3, dtype=torch.long)
        query = decode_ops.rope_store(torch.zeros(3, 32), None, None, keys, keys, slot, 4, 2)
        assert query.shape == (3, 4, 4) and query.dtype == bf16
        attention = decode_ops.DecodeAttention(3, 4, 2, 4, 16, bf16, "cpu")
        assert attention(query, keys, keys, None, None, 1.0).shape == (3, 16)
        assert decode_ops.silu_mul_packed(torch.zeros(3, 10, dtype=bf16)).shape == (3, 5)
        parts = gemv.Parts(torch.zeros(2, 3, 10), None, bf16)  # the GEMV's unsummed slices
        product = decode_ops.silu_mul_packed(parts)
        assert product.shape == (3, 5) and product.dtype == bf16
    assert step_functions() == engine
    with bench_hf.ablated("none") as names:
        assert names == [] and decode_ops.add_rms_norm is engine[0]
    with pytest.raises(ValueError, match="bogus is not a step kernel"):
        bench_hf.ablation_names("norms,bogus")
