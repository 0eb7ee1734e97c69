"""Every Triton kernel of the graph decode step builds for an H100/H200 (sm_90) and an A100 (sm_80)
on a machine without a GPU: Triton's front end and ptxas run here, so a kernel that would not build
on the card (a name typed alike in two branches cost a device call, issue 46) fails on the CPU
first. Each is built launched programmatically dependent (`PDL`, sm_90) and not: with it, the
kernel waits for the one before it (`griddepcontrol.wait`) before it reads or writes anything;
without it, no such instruction (it needs sm_90, and older cards run the same kernels)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow

BF16, F32 = "*bf16", "*fp32"


def _build(
    fn: Any, signature: dict[str, str], constants: dict[str, Any], warps: int = 4, arch: int = 90
) -> str:
    import triton
    from triton.backends.compiler import GPUTarget

    full = {**signature, **{name: "constexpr" for name in constants}}
    names = list(full)
    source = triton.compiler.ASTSource(
        fn,
        full,
        constexprs={(names.index(name),): value for name, value in constants.items()},
        attrs={(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n in signature},
    )
    options = {"num_warps": warps}
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options).asm["ptx"]


def _waits_first(ptx: str, pdl: bool) -> None:
    # griddepcontrol.wait precedes every global load and store of the kernel, or is absent
    body = ptx[ptx.index(".entry") :]
    wait = body.find("griddepcontrol.wait")
    if not pdl:
        assert wait < 0 and "griddepcontrol" not in body
        return
    assert 0 <= wait < body.find("griddepcontrol.launch_dependents")
    for access in ("ld.global", "st.global", "atom.global", "red.global", "cp.async"):
        first = body.find(access)
        assert first < 0 or wait < first, access


@pytest.mark.parametrize(("arch", "pdl"), [(90, False), (90, True), (80, False)])
def test_every_decode_kernel_builds_for_hopper_and_ampere(arch: int, pdl: bool) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from longscope.models.hf import decode_ops, gemv

    def build(fn: Any, signature: dict[str, str], constants: dict[str, Any], warps: int = 4) -> str:
        return _build(fn, signature, constants, warps, arch)

    built = []
    for splits, bias in ((0, False), (3, True)):
        given = F32 if splits else BF16
        operand = {"bias_ptr": BF16 if bias else given, "split_stride": "i32"}
        ptx = build(
            decode_ops._rope_store_kernel,
            {"qkv_ptr": given, **operand, "cos_ptr": BF16, "sin_ptr": BF16, "q_out_ptr": BF16,
             "k_ptr": BF16, "v_ptr": BF16, "slot_ptr": "*i64", "stride_xb": "i32",
             "stride_cb": "i32", "stride_kb": "i32", "stride_kh": "i32", "stride_vb": "i32",
             "stride_vh": "i32"},
            {"HEADS": 28, "KV_HEADS": 4, "HALF": 64, "SPLITS": splits, "HAS_BIAS": bias,
             "PDL": pdl},
        )  # fmt: skip
        built.append(ptx)
        ptx = build(
            decode_ops._add_rms_norm_kernel,
            {"residual_ptr": BF16, "x_ptr": given, **operand, "weight_ptr": BF16,
             "out_ptr": BF16, "width": "i32", "eps": "fp32"},
            {"ADD": True, "BLOCK": 4096, "SPLITS": splits, "HAS_BIAS": bias, "PDL": pdl},
        )  # fmt: skip
        built.append(ptx)
        ptx = build(
            decode_ops._silu_mul_packed_kernel,
            {"x_ptr": given, **operand, "out_ptr": BF16, "width": "i32"},
            {"BLOCK": 1024, "SPLITS": splits, "HAS_BIAS": bias, "PDL": pdl},
        )
        built.append(ptx)
    for merge in (False, True):
        ptx = build(
            decode_ops._attention_split_body,
            {"q_ptr": BF16, "k_ptr": BF16, "v_ptr": BF16, "valid_ptr": "*u8", "len_ptr": "*i64",
             "part_ptr": F32, "lse_ptr": F32, "count_ptr": "*i32", "out_ptr": BF16,
             "scale": "fp32", "split_size": "i32", "splits": "i32", "load_class": "i32",
             "stride_qb": "i32", "stride_kb": "i32", "stride_kh": "i32", "stride_vb": "i32",
             "stride_vh": "i32", "stride_mb": "i32", "stride_ob": "i32"},
            {"GROUPS": 7, "GROUP_PAD": 16, "DIM": 128, "BLOCK": 64, "IEEE": False, "PDL": pdl,
             "MERGE": merge, "BALANCED": merge},
        )  # fmt: skip
        # the arrival releases this program's stores and acquires the others'
        assert ("atom.global.gpu.acq_rel.add" in ptx) == merge, merge
        built.append(ptx)
    ptx = build(
        decode_ops._attention_merge_kernel,
        {"part_ptr": F32, "lse_ptr": F32, "out_ptr": BF16, "stride_ob": "i32", "splits": "i32"},
        {"GROUPS": 7, "GROUP_PAD": 16, "DIM": 128, "SPLITS_PAD": 64, "CHUNK": 64, "DBLOCK": 32,
         "PDL": pdl},
    )  # fmt: skip
    built.append(ptx)
    for ptx in built:
        _waits_first(ptx, pdl)
    gemv_args = {"x_ptr": BF16, "w_ptr": BF16, "part_ptr": F32, "bias_ptr": BF16, "M": "i32",
                 "N": "i32", "K": "i32", "k_split": "i32", "stride_xm": "i32",
                 "stride_wn": "i32"}  # fmt: skip
    for pad, tiles in (
        (1, gemv.ONE_ROW),
        (16, gemv.FEW_ROWS),
        (32, gemv.FEW_ROWS),
        (64, gemv.FEW_ROWS),
    ):
        for block_n, block_k, warps, _stages in tiles:
            for even in (True, False):
                ptx = build(
                    gemv._gemv_kernel,
                    gemv_args,
                    {"M_PAD": pad, "BLOCK_N": block_n, "BLOCK_K": block_k, "EVEN": even,
                     "EVEN_N": even, "PDL": pdl, "GATED": False, "HAS_BIAS": False},
                    warps,
                )  # fmt: skip
                _waits_first(ptx, pdl)
                # the gate/up projection with the SiLU product (16-bit out), with a bias or not
                gated = build(
                    gemv._gemv_kernel,
                    {**gemv_args, "part_ptr": BF16},
                    {"M_PAD": pad, "BLOCK_N": block_n, "BLOCK_K": block_k, "EVEN": even,
                     "EVEN_N": even, "PDL": pdl, "GATED": True, "HAS_BIAS": not even},
                    warps,
                )  # fmt: skip
                _waits_first(gated, pdl)
                if pad == 1 and even:
                    # the weights stream in 16-byte loads, or the GEMV cannot reach the bound
                    assert "ld.global.v4.b32" in ptx, (block_n, block_k)
