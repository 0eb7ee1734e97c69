"""`hf/split_tuning.py` (issue 46) on the CPU: the split stage's configuration before its launch
class is tuned is one the autotuner also builds and times (so a tuning that keeps it builds
nothing new), and the launch classes fall where the measurements put them."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from longscope.models.hf import split_tuning


def test_the_untuned_configuration_is_one_the_autotuner_times() -> None:
    candidates = {
        (c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in split_tuning._split_configs()
    }
    assert split_tuning.UNTUNED in candidates
    options = split_tuning.untuned_options()
    block, warps, stages = split_tuning.UNTUNED
    assert (options["BLOCK"], options["num_warps"], options["num_stages"]) == (block, warps, stages)


def test_launch_classes_of_rulers_long_rows() -> None:
    # Qwen2.5-7B's 4 KV heads: 4 rows of a 128K cache take 128 splits of 1,152 keys (class 8),
    # one row 512 splits of 384 (class 7), one row of 64K 256 splits of 256 (class 3).
    assert split_tuning.load_class(4 * 4 * 128, 1152) == 8
    assert split_tuning.load_class(1 * 4 * 512, 384) == 7
    assert split_tuning.load_class(1 * 4 * 256, 256) == 3
    # the thresholds themselves: 264 programs and 256 keys a split
    assert split_tuning.load_class(263, 256) == 0
    assert split_tuning.load_class(264, 257) == 4
