"""`hf/split_tuning.py` (issue 46) on the CPU: the split stage's configuration before its launch
class is tuned is one the autotuner also builds and times, chosen per class at head dims up to
128, and one that does not fit the card gives way to `UNTUNED` for good, before a graph could be
captured with it."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from triton.runtime.errors import OutOfResources

from longscope.models.hf import split_tuning


def _candidates() -> set[tuple[int, int, int]]:
    return {(c.kwargs["BLOCK"], c.num_warps, c.num_stages) for c in split_tuning._split_configs()}


@pytest.mark.parametrize("dim", [64, 128, 256])
def test_every_untuned_configuration_is_one_the_autotuner_times(dim: int) -> None:
    for load_class in range(9):
        for width in (2, 4):
            config = split_tuning.untuned(load_class, dim, width)
            assert config in _candidates(), (load_class, dim, width)


def test_long_splits_read_by_many_programs_have_their_own_configuration_at_dim_128() -> None:
    # Qwen2.5-7B's 4 KV heads: 4 rows of a 128K cache take 128 splits of 1,152 keys (class 8),
    # one row 512 splits of 384 (class 7).
    assert split_tuning.load_class(4 * 4 * 128, 1152) == 8
    assert split_tuning.load_class(1 * 4 * 512, 384) == 7
    assert split_tuning.untuned(7, 128) != split_tuning.UNTUNED
    assert split_tuning.untuned(8, 128) != split_tuning.UNTUNED
    assert split_tuning.untuned(3, 128) == split_tuning.UNTUNED  # 1 row at 64K
    # Recorded at head dim 128 in bf16 only: larger heads (Gemma's 256) and float32 keep the
    # default.
    assert split_tuning.untuned(7, 256) == split_tuning.UNTUNED
    assert split_tuning.untuned(7, 128, width=4) == split_tuning.UNTUNED


class _Kernel:
    """A split-stage launch that fails where its configuration reads 128 keys a step, as on a
    card with less shared memory than the one the configurations were recorded on."""

    def __init__(self, fits: Any) -> None:
        self.fits, self.launched = fits, []

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **options: Any) -> None:
            config = (options["BLOCK"], options["num_warps"], options["num_stages"])
            if not self.fits(config):
                raise OutOfResources(196608, 101376, "shared memory")
            self.launched.append(config)

        return launch


def test_a_class_configuration_that_does_not_fit_gives_way_to_the_default_for_good(
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(split_tuning, "_PLAIN", set())
    kernel = _Kernel(fits=lambda config: config[0] < 128)
    options = {"DIM": 128, "GROUP_PAD": 16}
    split_tuning.launch_untuned(kernel, (4, 4, 128), (), options, 7, 2)
    split_tuning.launch_untuned(kernel, (4, 4, 128), (), options, 7, 2)
    assert kernel.launched == [split_tuning.UNTUNED, split_tuning.UNTUNED]
    assert split_tuning.untuned(7, 128) == split_tuning.UNTUNED  # a graph captured now uses it
    assert split_tuning.untuned(8, 128) != split_tuning.UNTUNED  # another class is unaffected
    assert split_tuning.untuned(7, 64) != split_tuning.UNTUNED  # and another head size


def test_the_default_not_fitting_is_an_error_the_step_falls_back_on(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(split_tuning, "_PLAIN", set())
    kernel = _Kernel(fits=lambda config: False)
    with pytest.raises(OutOfResources):
        split_tuning.launch_untuned(kernel, (1, 4, 8), (), {"DIM": 128}, 3, 2)
    assert kernel.launched == []
