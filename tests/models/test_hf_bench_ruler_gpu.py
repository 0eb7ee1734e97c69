"""`bench_ruler_gpu.py` (issue 46) on the CPU: its ratio is the command's wall time over the
engine's prefill time for the prompts it sent (each at its length's rate alone), skipped requests
left out; its timed phases nest and are taken off again, so that a next variant's run patches
afresh."""

from __future__ import annotations

import pytest

from tests.bench_helper import load_benchmark


def _bench():  # type: ignore[no-untyped-def]
    return load_benchmark("bench_ruler_gpu")


def test_ratio_is_wall_over_the_sent_prompts_prefill_time() -> None:
    bench = _bench()
    rates = {4096: {"tokens_per_s": 40_000.0}, 131072: {"tokens_per_s": 15_000.0}}
    rows = [
        (4096, 4000, 30, "length", 1.0),
        (131072, 150_000, 128, "ok", 9.0),
        (131072, 0, 0, "skipped", 0.0),  # never sent: no prefill time, no tokens
    ]
    run = {"wall_s": 12.5, "phases": {"load": 2.5, "prefill": 9.0, "decode": 0.5}}
    got = bench.summarize(run, rows, rates)
    engine = 4000 / 40_000 + 150_000 / 15_000  # 10.1 s
    assert got["sent"] == 2 and got["requests"] == 3
    assert got["statuses"] == {"length": 1, "ok": 1, "skipped": 1}
    assert got["prompt_tokens"] == 154_000 and got["completion_tokens"] == 158
    assert got["engine_prefill_s"] == pytest.approx(engine)
    assert got["ratio_whole"] == pytest.approx(12.5 / engine)
    assert got["ratio_without_load"] == pytest.approx(10.0 / engine)
    assert got["engine_idle_s"] == pytest.approx(12.5 - 2.5 - 9.5)


def test_phases_nest_inside_a_prefill_and_are_taken_off_after() -> None:
    bench = _bench()

    class Engine:
        def join(self) -> str:
            return self.tune()

        def tune(self) -> str:
            return "tuned"

    original_join, original_tune = Engine.join, Engine.tune
    phases = bench.Phases()
    phases.patch(Engine, "join", "prefill", inside="prefill")
    phases.patch(Engine, "tune", "tune")
    engine = Engine()
    assert engine.join() == "tuned" and engine.tune() == "tuned"
    assert phases.calls == {"prefill": 1, "tune_in_prefill": 1, "tune": 1}
    phases.restore()
    assert Engine.join is original_join and Engine.tune is original_tune
    engine.join()
    assert sum(phases.calls.values()) == 3  # nothing counted once taken off
