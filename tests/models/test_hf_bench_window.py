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

    bench_hf = _bench_hf()
    engine = [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in split_tuning._split_configs()]
    try:
        bench_hf.set_split_candidates("32/w2s2,128/w8s3")
        for configs in (decode_ops._split_configs(), split_tuning._split_configs()):
            got = [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in configs]
            assert got == [(32, 2, 2), (128, 8, 3)]
        kernel = decode_ops._attention_split_kernel
        if hasattr(kernel, "configs"):  # the autotuner (not under Triton's interpreter)
            assert [c.kwargs["BLOCK"] for c in kernel.configs] == [32, 128]
    finally:
        bench_hf.set_split_candidates("engine")
    back = [(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in decode_ops._split_configs()]
    assert back == engine and len(engine) == 5
    assert decode_ops._split_configs is split_tuning._split_configs
    original = split_tuning._split_configs
    kernel = decode_ops._attention_split_kernel
    chosen = getattr(kernel, "cache", {})
    chosen[("a", "launch", "class")] = "a choice"
    bench_hf.set_split_candidates("engine")  # the engine's already: nothing swapped or forgotten
    assert split_tuning._split_configs is original
    assert chosen.pop(("a", "launch", "class")) == "a choice"
