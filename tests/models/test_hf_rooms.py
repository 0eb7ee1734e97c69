"""The hf package's layout and its switches as engine state (pure Python: runs without torch)."""

from __future__ import annotations

from pathlib import Path

import longscope.models.hf as hf
from longscope.models.hf import HFBackend, KernelSwitches
from longscope.models.hf.kernels import active, using


def test_no_room_of_the_hf_package_is_over_600_lines() -> None:
    folder = Path(hf.__file__).parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert {"adapter.py", "engine.py", "decoder.py", "kernels.py"} <= set(sizes)
    assert max(sizes.values()) <= 600, sizes


def test_kernel_switches_belong_to_each_engine() -> None:
    first, second = HFBackend("a", vram_gib=1), HFBackend("b", vram_gib=1)
    first.engine.kernels.fused_prefill_ops = False
    first.engine.kernels.cudnn_split = False
    assert second.engine.kernels == KernelSwitches()
    # Our attention reads the switches of the engine prefilling on this thread, else defaults.
    assert active() == KernelSwitches()
    with using(first.engine.kernels):
        assert active() is first.engine.kernels
        with using(second.engine.kernels):
            assert active() is second.engine.kernels
        assert active() is first.engine.kernels
    assert active() == KernelSwitches()
