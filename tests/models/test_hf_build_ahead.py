"""`hf/build_ahead.py` (issue 46) on the CPU: the twin's configuration, and the decode attention
launches built ahead covering every batch and cache the engine can form. On a card the GPU test
`test_a_load_builds_the_kernels_its_run_launches` shows a run building nothing after its load."""

from __future__ import annotations

import random
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
pytest.importorskip("transformers")

import transformers

from longscope.models.hf import build_ahead, decode_ops
from longscope.models.hf.kernels import KernelSwitches
from longscope.models.memory_plan import decode_capacity


def _signature(rows: int, heads: int, kv_heads: int, dim: int, capacity: int, fused: bool):  # type: ignore[no-untyped-def]
    """What a decode attention's builds depend on, computed as `DecodeAttention` computes it."""
    import torch

    attention = decode_ops.DecodeAttention(
        rows, heads, kv_heads, dim, capacity, torch.float32, "cpu"
    )
    merged = attention.fuses(fused)
    layout = None if merged else decode_ops.merge_layout(rows, heads, dim, attention.splits)
    return merged, capacity % 16 == 0, layout


@pytest.mark.parametrize(
    ("heads", "kv_heads", "max_batch", "fused"),
    [(28, 4, 32, True), (28, 4, 32, False), (32, 8, 8, True), (4, 2, 4, True)],
)
def test_every_batch_the_engine_can_form_has_its_attention_built_ahead(
    heads: int, kv_heads: int, max_batch: int, fused: bool
) -> None:
    dim = 128
    launches = build_ahead.attention_launches(max_batch, heads, kv_heads, dim, fused)
    built = {_signature(r, heads, kv_heads, dim, c, fused) for r, c in launches}
    assert len(built) == len(launches)  # one launch per variant, none twice
    generator = random.Random(46)
    tokens = [2, 15, 16, 999, 1000, 1024, 1025, 4500, 70000, 131072 + 64, 300000]
    tokens += [generator.randrange(2, 200_000) for _ in range(60)]
    for rows in range(1, max_batch + 1):
        for count in tokens:
            capacity = decode_capacity(count)
            assert _signature(rows, heads, kv_heads, dim, capacity, fused) in built, (rows, count)


def test_the_launches_are_the_smallest_of_their_variant() -> None:
    # Qwen2.5-7B: merged in the split stage over a cache of a multiple of 16 tokens and not, then the
    # merge kernel's padding from 32 to 512 splits of one row, and its wider dims block past 18
    # rows (19 x 28 heads x 4 blocks over 2,048 programs)
    launches = build_ahead.attention_launches(32, 28, 4, 128, True)
    assert launches == [
        (1, 256), (1, 264), (1, 5120), (1, 9216), (1, 17408), (1, 33792), (1, 66560), (19, 5120),
    ]  # fmt: skip


def test_the_twin_is_one_layer_of_the_same_widths() -> None:
    config = transformers.Qwen2Config(
        vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
        num_attention_heads=28, num_key_value_heads=4, pad_token_id=151643,
    )  # fmt: skip
    twin = build_ahead.twin_config(config)
    assert twin is not None and twin is not config
    assert (twin.num_hidden_layers, twin.vocab_size, twin.pad_token_id) == (1, 256, None)
    kept = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads")
    assert all(getattr(twin, k) == getattr(config, k) for k in kept)
    assert config.num_hidden_layers == 28 and config.vocab_size == 152064  # untouched
    import torch

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(twin)
    assert len(model.model.layers) == 1


def test_a_model_the_kernels_do_not_run_gets_no_twin() -> None:
    config = transformers.GPT2Config()
    assert build_ahead.twin_config(config) is None


def test_off_the_gpu_or_switched_off_nothing_starts() -> None:
    import torch

    config = transformers.Qwen2Config(num_hidden_layers=2, hidden_size=64, num_attention_heads=4)
    args = (torch, transformers, config, torch.float32)
    cpu = build_ahead.BuildAhead.start(*args, torch.device("cpu"), KernelSwitches(), 4, "sdpa")
    assert cpu.join() == "device cpu"
    off = KernelSwitches(build_ahead="off")
    cuda = build_ahead.BuildAhead.start(*args, torch.device("cuda"), off, 4, "sdpa")
    assert cuda.join() == "off"


@pytest.mark.slow  # 13 s on the VM: a new interpreter importing torch and transformers
def test_a_build_process_reads_its_order_and_runs_the_twin(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The "process" mode's protocol, run on the CPU (its launches are Triton's on CUDA only):
    the twin's configuration and switches cross as JSON, our attention is registered there too,
    the twin prefills and decodes, and the parent reads what it did without waiting for it."""
    import dataclasses
    import time

    from longscope.models.hf.kernels import ATTENTION

    config = transformers.Qwen2Config(
        vocab_size=512, hidden_size=256, intermediate_size=768, num_hidden_layers=3,
        num_attention_heads=2, num_key_value_heads=1, pad_token_id=300,
    )  # fmt: skip
    twin = build_ahead.twin_config(config)
    order = {
        "config": twin.to_dict(), "dtype": "float32", "device": None,
        "switches": dataclasses.asdict(KernelSwitches()), "max_batch": 4, "decode": True,
        "attention": ATTENTION,
    }  # fmt: skip
    ahead = build_ahead.BuildAhead()
    ahead._spawn(order)
    assert ahead.join().startswith("in process ")  # not waited for
    deadline = time.monotonic() + 240
    while "launches" not in ahead.summary and "exit code" not in ahead.summary:
        assert time.monotonic() < deadline, ahead.summary
        time.sleep(0.2)
    assert re.fullmatch(r"in process \d+: 1 of 1 launches in \d+\.\d s", ahead.summary), (
        ahead.summary
    )
    ahead.stop()  # ended already: nothing to do


def test_a_start_that_fails_says_so_and_lets_the_load_go_on() -> None:
    """`start` is best effort: here CUDA is asked for where there is none."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here")
    config = transformers.Qwen2Config(num_hidden_layers=2, hidden_size=64, num_attention_heads=4)
    ahead = build_ahead.BuildAhead.start(
        torch, transformers, config, torch.float32, torch.device("cuda", 0), KernelSwitches(),
        4, "sdpa",
    )  # fmt: skip
    assert ahead.join().startswith("failed: "), ahead.summary


def test_the_twin_is_gone_when_its_memory_goes_back(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`run_twin` frees the twin before it empties torch's cache (which hands the memory back to
    the device that the engine then measures), not when it returns."""
    import gc
    import types
    import weakref

    import torch

    from longscope.models.hf.kernels import register_attention

    config = transformers.Qwen2Config(
        vocab_size=512, hidden_size=256, intermediate_size=768, num_hidden_layers=3,
        num_attention_heads=2, num_key_value_heads=1,
    )  # fmt: skip
    twin = build_ahead._meta_twin(
        transformers, build_ahead.twin_config(config), torch.float32, register_attention(None)
    )
    alive = weakref.ref(twin)
    seen: list[bool] = []

    def collect() -> int:
        found = gc.collect()
        seen.append(alive() is not None)
        return found

    monkeypatch.setattr(build_ahead, "gc", types.SimpleNamespace(collect=collect))
    held = [twin]
    del twin
    summary = build_ahead.run_twin(torch, held, torch.device("cpu"), KernelSwitches(), 4, True)
    assert summary.startswith("1 of 1 launches"), summary
    assert seen == [False]
