"""Which decode-step kernels `builds` builds ahead for a model (issue 46): every configuration the
attention's tuner times, every K slicing a projection's reader takes, every merge a batch of up to
64 rows can ask for, every GEMV candidate by row padding; in the order a first batch needs them.
That each matches its launch's specialization is a GPU test (`tests/gpu/test_hf_builds_gpu.py`)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("triton")


def _model(**kwargs):  # type: ignore[no-untyped-def]
    from tests.gpu.tiny import tiny_qwen2

    shape = {"layers": 1, "hidden": 640, "heads": 5, "kv_heads": 1, "dtype": "bfloat16"}
    return tiny_qwen2(vocab_size=64, **{**shape, **kwargs})


def test_every_step_kernel_variant_is_listed_attention_first() -> None:
    from longscope.models.hf import builds, decode_ops, gemv
    from longscope.models.hf.kernels import KernelSwitches

    listed = builds.variants(_model(), KernelSwitches(), pdl=True)
    names = [b.name for b in listed]
    configs = [c.all_kwargs() for c in decode_ops._split_configs()]
    # the split stage first: each tuned configuration, merged in it and not (whole-block
    # capacities), then every other kernel, the short capacities' split stage last
    first = listed[: 2 * len(configs)]
    assert [b.options["MERGE"] for b in first] == [True] * len(configs) + [False] * len(configs)
    assert [{k: b.options[k] for k in configs[0]} for b in first] == configs * 2
    assert all(b.args[18] % 16 == 0 for b in first)
    short = listed[-2 * len(configs) :]
    assert all(b.name == "attention split" and b.args[18] % 16 for b in short)
    assert all(b.options["launch_pdl"] and b.options["PDL"] for b in listed)
    # a projection's reader for torch's output and for each K slicing of the GEMV
    for name in ("rotary", "silu"):
        assert sorted(b.options["SPLITS"] for b in listed if b.name == name) == [0, *gemv.SPLITS]
    # merges: only past the fused merge's splits, up to one row's (5 heads over 1 KV head)
    pads = {b.options["SPLITS_PAD"] for b in listed if b.name == "attention merge"}
    most = decode_ops.splits_for(1, 1, 1 << 30)
    assert min(pads) == 2 * decode_ops.FUSED_MERGE_SPLITS and max(pads) >= most > max(pads) // 2
    # the GEMV: every candidate tile of every projection's K at each padding, in padding order
    pads_seen = [b.options["M_PAD"] for b in listed if b.name.startswith("gemv")]
    assert pads_seen == sorted(pads_seen) and set(pads_seen) == {1, 16, 32, 64}
    for pad in (1, 16, 32, 64):
        # o_proj/QKV/gate_up read K = 640, down 1,920: one build serves both (K is specialized
        # by its divisibility by 16 alone)
        tiles = {
            (p.block_n, p.block_k, p.warps, p.stages)
            for width in (640, 1920)
            for p in gemv._candidates(pad, width)
        }
        got = {
            (o["BLOCK_N"], o["BLOCK_K"], o["num_warps"], o["num_stages"])
            for b in listed
            if b.name == f"gemv {pad} rows" and not b.options["GATED"]
            for o in [b.options]
        }
        assert got == tiles, pad
    gated = [b for b in listed if b.name.startswith("gemv") and b.options["GATED"]]
    assert gated and all(b.args[5] == 2 * 1920 and b.args[2] is b.args[0] for b in gated)
    assert len(names) == len(set(map(repr, ((b.args, b.options) for b in listed))))


def test_switches_and_shapes_the_step_does_not_take_build_less() -> None:
    from longscope.models.hf import builds
    from longscope.models.hf.kernels import KernelSwitches

    model = _model()
    no_gemv = builds.variants(model, KernelSwitches(decode_gemv=False), pdl=False)
    assert no_gemv and not any(b.name.startswith("gemv") for b in no_gemv)
    assert {b.options["SPLITS"] for b in no_gemv if b.name in ("rotary", "silu", "norm")} == {0}
    assert not any("launch_pdl" in b.options for b in no_gemv)
    unfused = builds.variants(model, KernelSwitches(decode_fused_merge=False), pdl=False)
    assert min(b.options["SPLITS_PAD"] for b in unfused if b.name == "attention merge") == 1
    model.config.hidden_act = "gelu"
    assert builds.variants(model, KernelSwitches(), pdl=False) == []
    # nothing starts off a CUDA card
    assert builds.start(_model(), KernelSwitches(), "cpu") is None
