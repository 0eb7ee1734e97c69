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
