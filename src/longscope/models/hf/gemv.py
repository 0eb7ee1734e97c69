"""The graph decode step's thin projections on CUDA: a split-K GEMV whose reduction costs no kernel.

Why (issue 46, a decode step after 32K on an H200, BENCHMARKS.md): cuBLAS read the thin
projections' weights at 1.2-1.8x their bytes' time (QKV 1.36x, o_proj 1.76x, down 1.22x): 224-288
output blocks for 132 multiprocessors leave the card half idle on the last wave, and the split-K
kernels it picks instead add a reduction kernel each (0.10 ms a step). Here each projection is cut
over K as well (`Plan.splits`), every program writes float32 partial sums, and the kernel that
reads the projection (rotary + cache write, residual add + RMSNorm, the SiLU product) sums them in
split order, adds the bias and rounds once, as cuBLAS rounds its float32 accumulator once: the
reduction rides in a kernel the step runs anyway. Gate/up in one slice may carry the SiLU product
itself (`run_gated`, where `tune_gated` timed it faster): one kernel and 16-bit output fewer. One row runs on the CUDA cores (a matrix
instruction would do 16x the arithmetic for nothing); 2-64 rows as the weights times the rows
(weights as the tall operand, rows padded to 16, 32 or 64: "swap AB", as TensorRT-LLM and vLLM do
for small batches). Each shape's plan is timed once per row padding against torch's matmul over
the model's own layers' weights (so no weight is read from L2 twice) before a graph is captured,
once that padding has decoded `TUNE_AFTER_STEPS` steps; torch's matmul stays where it is faster.
A plan's sums run in one order, but the choice is timed and comes at a step: another process or
card may choose another plan, and an answer decoded across that step rounds a projection
differently in its last bit from there (`plans()` says what was chosen).

Programmatic dependent launch (Hopper and later, `pdl`): a step is ~300 kernels of 3-40 us, and
each waited for the one before it to drain and for its own launch. Launched with `launch_pdl`, a
kernel's programs are placed while the one before it finishes; each waits (`griddepcontrol.wait`)
before it reads anything the step wrote or writes anything, then lets the next one be placed
(as TensorRT-LLM's and FlashInfer's decode kernels do under CUDA graphs). Weight rows asked for
in L2 before the wait (Hopper's bulk prefetch) lost: 64 rows 8.305 -> 8.399 ms (H200, issue 46).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from longscope.models.hf.triton_builds import build_at_once, count_step, reached

try:  # grid dependency control (Triton 3.3 and later)
    from triton.language.extra import cuda as _gdc
except ImportError:  # an older Triton: kernels launch one after another
    _gdc = None

ROWS = 64
"""Rows (batch) up to which the GEMV is considered; more run torch's matmul."""
SPLITS = (1, 2, 4, 8)
"""K slices tried per shape."""
GATED = True
"""The gate/up projection may carry the SiLU product in its kernel (`gated`) where that timed
faster than the two kernels (`tune_gated`)."""


@dataclass(frozen=True)
class Plan:
    """How one (rows padding, N, K) shape runs: output columns and K step per program, warps,
    pipeline stages, and how many K slices (each a program of its own) are summed by the reader."""

    block_n: int
    block_k: int
    warps: int
    stages: int
    splits: int

    def label(self) -> str:
        return f"{self.block_n}x{self.block_k}/w{self.warps}s{self.stages}/k{self.splits}"


ONE_ROW = ((16, 256, 4, 3), (8, 512, 4, 3), (32, 128, 4, 3), (16, 512, 8, 3))
"""(block_n, block_k, warps, stages) tried for one row."""
FEW_ROWS = (
    (64, 128, 4, 4), (128, 128, 4, 3), (64, 256, 4, 3), (128, 64, 4, 4), (64, 64, 4, 4),
    (64, 64, 4, 3), (64, 128, 4, 3), (64, 128, 8, 4),
)  # fmt: skip
"""... for 2-64 rows: the tiles that led a wider sweep (`bench_hf.py` ops46, an H200, issue 46:
48 tiles x 4 slicings at a 7B's four projections, 8 and 64 rows); 256x64 never did."""


@dataclass(frozen=True)
class Parts:
    """`x @ weight.T + bias` not yet summed: float32 partial sums (splits, rows, n) over K slices.
    The kernel that reads it sums the slices in order, adds `bias` and rounds to `dtype` once."""

    part: Any
    bias: Any
    dtype: Any

    @property
    def splits(self) -> int:
        return int(self.part.shape[0])

    @property
    def device(self) -> Any:
        return self.part.device

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.part.shape[1]), int(self.part.shape[2])

    def rounded(self) -> Any:
        """Return the projection as a tensor (rows, n) in `dtype`, summed as the readers sum."""
        total = self.part[0].clone()
        for index in range(1, self.splits):
            total += self.part[index]
        if self.bias is not None:
            total += self.bias.float()
        return total.to(self.dtype)


@triton.jit
def pdl_enter(PDL: tl.constexpr):
    """First thing in a step kernel launched with `launch_pdl`: wait for the kernel before it
    (and so for every one before that), then let the next one's programs be placed."""
    if PDL:
        _gdc.gdc_wait()
        _gdc.gdc_launch_dependents()


_PDL: dict[Any, bool] = {}


def pdl_supported(device: Any) -> bool:
    """Return whether kernels on `device` can launch programmatically dependent: a CUDA card of
    compute capability 9 or more, a Triton with grid dependency control and `launch_pdl`, not
    Triton's interpreter."""
    if os.environ.get("TRITON_INTERPRET") == "1" or _gdc is None:
        return False
    device = torch.device(device)
    if device.type != "cuda":
        return False
    if device not in _PDL:
        try:
            from triton.backends.nvidia.compiler import CUDAOptions

            has_option = "launch_pdl" in CUDAOptions.__dataclass_fields__
        except ImportError:
            has_option = False
        index = device.index if device.index is not None else torch.cuda.current_device()
        _PDL[device] = (
            has_option
            and hasattr(_gdc, "gdc_wait")
            and torch.cuda.get_device_capability(index)[0] >= 9
        )
    return _PDL[device]


def launch_options(pdl: bool) -> dict[str, Any]:
    """Return the launch keywords for a step kernel: `launch_pdl` only where used (Triton's
    interpreter and older Tritons do not take it)."""
    return {"launch_pdl": True} if pdl else {}


@triton.jit
def _tile_rows(slot, N, BLOCK_N: tl.constexpr, GATED: tl.constexpr):
    # The weight rows of a program's tile slots, and which are real. GATED: the weight is
    # [gate; up] (N rows each half) and a tile holds BLOCK_N // 2 features' gate rows, then the
    # same features' up rows.
    if GATED:
        half: tl.constexpr = BLOCK_N // 2
        feature = tl.program_id(0) * half + slot % half
        return tl.where(slot < half, feature, feature + N // 2), feature < N // 2
    row = tl.program_id(0) * BLOCK_N + slot
    return row, row < N


@triton.jit(do_not_specialize=["M"])  # one build for every row count of a padding
def _gemv_kernel(
    x_ptr, w_ptr, part_ptr, bias_ptr, M, N, K, k_split, stride_xm, stride_wn,
    M_PAD: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN: tl.constexpr,
    EVEN_N: tl.constexpr, PDL: tl.constexpr, GATED: tl.constexpr, HAS_BIAS: tl.constexpr,
):  # fmt: skip
    pdl_enter(PDL)
    # part[split, m, n] = sum over k in this split's slice of x[m, k] * w[n, k], in float32.
    # GATED (one split): part is (M, N // 2) 16-bit, silu(gate) * up of the [gate; up] rows.
    split = tl.program_id(1)
    start = split * k_split
    end = tl.minimum(start + k_split, K)
    cols, in_cols = _tile_rows(tl.arange(0, BLOCK_N), N, BLOCK_N, GATED)
    steps = tl.arange(0, BLOCK_K)
    weights = w_ptr + cols[:, None].to(tl.int64) * stride_wn
    if M_PAD == 1:
        wide = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for first in range(start, end, BLOCK_K):
            ks = first + steps
            if EVEN and EVEN_N:
                x1 = tl.load(x_ptr + ks).to(tl.float32)
                w = tl.load(weights + ks[None, :])
            elif EVEN:
                x1 = tl.load(x_ptr + ks).to(tl.float32)
                w = tl.load(weights + ks[None, :], mask=in_cols[:, None], other=0.0)
            else:
                in_k = ks < end
                x1 = tl.load(x_ptr + ks, mask=in_k, other=0.0).to(tl.float32)
                w = tl.load(weights + ks[None, :], mask=in_cols[:, None] & in_k[None, :], other=0.0)
            wide += w.to(tl.float32) * x1[None, :]
        if GATED:
            gate, up = _halves(tl.sum(wide, 1)[:, None], cols, bias_ptr, N, BLOCK_N, HAS_BIAS)
            features = tl.program_id(0) * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
            done = silu_product(gate, up, part_ptr.dtype.element_ty)
            tl.store(part_ptr + features[:, None], done, mask=features[:, None] < N // 2)
        else:
            tl.store(part_ptr + split * N + cols, tl.sum(wide, 1), mask=in_cols)
    else:
        rows = tl.arange(0, M_PAD)
        in_rows = rows < M
        acc = tl.zeros([BLOCK_N, M_PAD], dtype=tl.float32)
        for first in range(start, end, BLOCK_K):
            ks = first + steps
            in_k = ks < end
            w = tl.load(weights + ks[None, :], mask=in_cols[:, None] & in_k[None, :], other=0.0)
            x = tl.load(
                x_ptr + rows[None, :] * stride_xm + ks[:, None],
                mask=in_k[:, None] & in_rows[None, :], other=0.0,
            )  # fmt: skip
            acc = tl.dot(w, x, acc)
        if GATED:
            gate, up = _halves(acc, cols, bias_ptr, N, BLOCK_N, HAS_BIAS)
            features = tl.program_id(0) * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
            done = silu_product(gate, up, part_ptr.dtype.element_ty)
            out = part_ptr + rows[None, :].to(tl.int64) * (N // 2) + features[:, None]
            tl.store(out, done, mask=(features[:, None] < N // 2) & in_rows[None, :])
        else:
            out = part_ptr + (split * M + rows[None, :]).to(tl.int64) * N + cols[:, None]
            tl.store(out, acc, mask=in_cols[:, None] & in_rows[None, :])


@triton.jit
def _halves(acc, cols, bias_ptr, N, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr):
    # A gated tile's sums (BLOCK_N, rows) as its features' gate and up (BLOCK_N // 2, rows) each,
    # with their biases: as `operand` gives them to `silu_mul_packed` from one slice.
    if HAS_BIAS:
        acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[:, None]
    pair = tl.permute(tl.reshape(acc, [2, BLOCK_N // 2, acc.shape[1]]), [1, 2, 0])
    return tl.split(pair)


@triton.jit
def silu_product(gate, up, dtype: tl.constexpr):
    # silu(gate) * up from float32 sums, rounded as torch's two 16-bit kernels round
    wide = gate.to(dtype).to(tl.float32)
    activated = (wide / (1.0 + tl.exp(-wide))).to(dtype)
    return (activated.to(tl.float32) * up.to(dtype).to(tl.float32)).to(dtype)


@triton.jit
def operand(ptr, offset, col, mask, bias_ptr, split_stride, SPLITS: tl.constexpr,
            HAS_BIAS: tl.constexpr):  # fmt: skip
    # A projection's value as the step's kernels read it: as stored (SPLITS 0, torch's matmul;
    # no bias then), or the GEMV's float32 slices (`Parts`) summed in order with the bias, for
    # the caller to round once.
    value = tl.load(ptr + offset, mask=mask, other=0.0)
    for index in tl.static_range(1, SPLITS):
        value += tl.load(ptr + index * split_stride + offset, mask=mask, other=0.0)
    if HAS_BIAS:
        value += tl.load(bias_ptr + col, mask=mask, other=0.0).to(tl.float32)
    return value


def operand_args(x: Any) -> tuple[Any, Any, int, int, bool]:
    """Return (pointer, bias pointer, split stride, splits, has bias) for a projection given as a
    tensor (rows, n) or as `Parts`."""
    if isinstance(x, Parts):
        rows, n = x.shape
        bias = x.bias if x.bias is not None else x.part
        return x.part, bias, rows * n, x.splits, x.bias is not None
    return x, x, 0, 0, False


def rows_pad(rows: int) -> int:
    """Return the padded row count a plan is made for: 1, 16, 32 or 64. (32: 17-32 rows padded
    to 64 read every tile of activations twice over and ran torch's matmul on QKV and gate/up,
    an H200, issue 46.)"""
    return 1 if rows == 1 else 16 if rows <= 16 else 32 if rows <= 32 else 64


def _k_split(width: int, plan: Plan) -> int:
    per = -(-width // plan.splits)
    return -(-per // plan.block_k) * plan.block_k


def run(x: Any, weight: Any, bias: Any, plan: Plan, part: Any = None, pdl: bool = False) -> Parts:
    """Return `x @ weight.T + bias` as `Parts` by `plan` (x (rows, K) contiguous, 16-bit),
    written into `part` (splits, rows, n) float32 where given; `pdl`: launched programmatically
    dependent (`pdl_supported`)."""
    if part is None:
        rows, width = x.shape
        splits = -(-width // _k_split(width, plan))
        part = torch.empty((splits, rows, weight.shape[0]), dtype=torch.float32, device=x.device)
    _launch(x, weight, None, plan, part, pdl)
    return Parts(part, bias, x.dtype)


def run_gated(x: Any, weight: Any, bias: Any, plan: Plan, pdl: bool = False) -> Any:
    """Return silu(gate) * up (rows, n / 2) in x's dtype, where [gate | up] = `x @ weight.T +
    bias` (`weight` the gate rows, then the up rows), by a one-slice `plan` in one kernel: the
    products rounded as `linear` then `decode_ops.silu_mul_packed` round them."""
    assert plan.splits == 1, plan
    out = torch.empty((x.shape[0], weight.shape[0] // 2), dtype=x.dtype, device=x.device)
    _launch(x, weight, bias, plan, out, pdl, gated=True)
    return out


def _launch(
    x: Any, weight: Any, bias: Any, plan: Plan, out: Any, pdl: bool, gated: bool = False
) -> None:
    grid, args, options = _call(x, weight, bias, plan, out, pdl, gated)
    _gemv_kernel[grid](*args, **options)


def _call(
    x: Any, weight: Any, bias: Any, plan: Plan, out: Any, pdl: bool, gated: bool = False
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    rows, width = x.shape
    n = weight.shape[0]
    k_split = _k_split(width, plan)
    even = width % plan.block_k == 0  # slices are whole steps; so is the last where K is
    tile = plan.block_n // 2 if gated else plan.block_n
    grid = (triton.cdiv(n // 2 if gated else n, tile), -(-width // k_split))
    args = (
        x, weight, out, bias if bias is not None else weight, rows, n, width, k_split,
        x.stride(0), weight.stride(0),
    )  # fmt: skip
    options = dict(
        M_PAD=rows_pad(rows), BLOCK_N=plan.block_n, BLOCK_K=plan.block_k, EVEN=even,
        EVEN_N=(n // 2 if gated else n) % tile == 0, PDL=pdl, GATED=gated,
        HAS_BIAS=gated and bias is not None,
        num_warps=plan.warps, num_stages=plan.stages, **launch_options(pdl),
    )  # fmt: skip
    return grid, args, options


_PLANS: dict[tuple[Any, ...], Plan | None] = {}
"""(rows padding, N, K, bias, dtype, device) -> the plan that ran fastest, None: torch's matmul;
the same + ("gated",) -> `tune_gated`'s one-kernel plan, None: the projection and the SiLU
product as two kernels."""
_TIMES: dict[tuple[Any, ...], tuple[float, float]] = {}
"""The same keys -> (torch's ms or the two kernels', the plan's ms) over the layers' weights."""
_STEPS: dict[tuple[int, str], int] = {}
"""Steps decoded so far in this process per (row padding, device)."""
_LOCK = threading.Lock()


_RANKED: dict[tuple[Any, ...], list[Plan]] = {}
"""The same keys -> the candidate plans that answered right, fastest first (for `tune_gated`)."""
GATED_CANDIDATES = 2
"""One-slice plans `tune_gated` tries: those of the fastest tiles for the same shape (each is one
more kernel to build on a machine's first run)."""


TUNE_AFTER_STEPS = 4096
"""Steps a row padding decodes on torch's matmul before `prepare` tunes its shapes (0: at once). A
tuning costs seconds and repays a few percent of each step after it: RULER through the CLI (52
short answers, about 800 steps) spent 6.5 of 190 s tuning 1 and 16 rows, and the plans save
0.3 ms of a 7B's 5-8 ms step at 16 rows, 0.07 ms at 64 (an H200, issue 46). At 16 rows, 4,096
untuned steps lose about a tuning's cost (1.2 s against 1.5-3 s), so such a run loses at most
about twice the better of tuning at once and never; at 64 rows an early end loses more."""


def stepped(rows: int, weight: Any) -> bool:
    """Count a step of `rows` rows through `weight` where the GEMV `fits`; return True on the
    step that makes their padding `due` (a graph captured before it runs torch's matmul)."""
    key = (rows_pad(rows), str(weight.device))
    return fits(rows, weight) and count_step(_STEPS, key, TUNE_AFTER_STEPS)


def due(rows: int, device: Any) -> bool:
    """Return whether `rows` rows' padding on `device` has decoded `TUNE_AFTER_STEPS` steps."""
    return reached(_STEPS, (rows_pad(rows), str(device)), TUNE_AFTER_STEPS)


def _key(rows: int, weight: Any, bias: Any, gated: bool = False) -> tuple[Any, ...]:
    key = (rows_pad(rows), *weight.shape, bias is not None, weight.dtype, weight.device)
    return (*key, "gated") if gated else key


def fits(rows: int, weight: Any) -> bool:
    """Return whether the GEMV takes `rows` rows through this weight: CUDA, 16-bit, rows up to
    `ROWS`, the weight's rows contiguous."""
    return (
        0 < rows <= ROWS
        and weight.dtype in (torch.bfloat16, torch.float16)
        and weight.device.type == "cuda"
        and weight.dim() == 2
        and weight.stride(1) == 1
        and os.environ.get("TRITON_INTERPRET") != "1"
    )


def _time(fn: Any, weights: list[tuple[Any, Any]], repeats: int = 4) -> float:
    # Device ms per call, over every layer's weight in turn (their bytes exceed the L2), by
    # events. The device first sleeps while the host queues every launch: launched eagerly, a
    # thin projection (6-10 us) takes less time than its launch (first try on an H200: torch's
    # and ours both timed at the host's launch rate, 24-30 us).
    for weight, bias in weights[:2]:
        fn(weight, bias)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(200_000 * repeats * len(weights))  # ~0.1 ms a launch at 2 GHz
    start.record()
    for _ in range(repeats):
        for weight, bias in weights:
            fn(weight, bias)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (repeats * len(weights))


def _candidates(pad: int, width: int) -> list[Plan]:
    shapes = ONE_ROW if pad == 1 else FEW_ROWS
    plans = [
        Plan(n, k, warps, stages, splits)
        for n, k, warps, stages in shapes
        for splits in SPLITS
        if width // splits >= k
    ]
    # only plans whose K cuts into as many slices as they say (3584 in 8 slices of 512 is 7)
    return [plan for plan in plans if -(-width // _k_split(width, plan)) == plan.splits]


def charged(ms: float, rate_ms: float, weight: Any, output_bytes: int) -> float:
    """Return `ms` for a projection plus the time its reader takes to read back `output_bytes`,
    at the rate torch's matmul read the weight in `rate_ms` (one rate for every plan): float32
    slices cost the next kernel more than torch's 16-bit output (64 rows, issue 46: QKV's 4
    slices are 14% of its weight's bytes)."""
    return ms + rate_ms * output_bytes / (weight.numel() * weight.element_size())


def _probe(rows: int, weight: Any) -> Any:
    # the same seeded activations (rows, K) for every tuning of a shape
    gen = torch.Generator(device=weight.device).manual_seed(0)
    return torch.randn(rows, weight.shape[1], device=weight.device, generator=gen).to(weight.dtype)


def tune(rows: int, weights: list[tuple[Any, Any]]) -> Plan | None:
    """Time the candidate plans and torch's matmul for `rows` rows over `weights` (one
    projection's (weight, bias) in every layer, one shape); return and keep the fastest plan, or
    None where torch's is faster or a plan's answer is off. Plans are timed launched as the step
    launches them where the card takes it (`pdl_supported`), each charged for its output's
    read-back (`charged`)."""
    weight, bias = weights[0]
    pdl = pdl_supported(weight.device)
    key = _key(rows, weight, bias)
    with _LOCK:
        if key in _PLANS:
            return _PLANS[key]
    x = _probe(rows, weight)
    # torch's own 16-bit answer as the reference (a float32 copy of gate/up would take 0.5 GB)
    want = torch.nn.functional.linear(x, weight, bias).float()
    scale = want.norm().clamp_min(1e-30)
    try:
        base = _time(lambda w, b: torch.nn.functional.linear(x, w, b), weights)
    except Exception:  # no device timing here (a torch without `_sleep`): torch's matmul
        base = float("inf")
    outputs = rows * weight.shape[0]
    rate = base
    base = charged(base, rate, weight, outputs * weight.element_size())
    best: tuple[float, Plan | None] = (base, None)
    ranked: list[tuple[float, Plan]] = []
    candidates = _candidates(rows_pad(rows), weight.shape[1]) if base < float("inf") else []
    scratch = torch.empty(1, dtype=torch.float32, device=x.device)  # a build reads no memory
    build_at_once(_gemv_kernel, [_call(x, weight, None, p, scratch, pdl) for p in candidates])
    for plan in candidates:
        try:
            got = run(x, weight, bias, plan, pdl=pdl).rounded().float()
            if not ((got - want).norm() / scale).item() < 1e-2:
                continue
            spent = _time(lambda w, b, plan=plan: run(x, w, b, plan, pdl=pdl), weights)
            spent = charged(spent, rate, weight, outputs * 4 * plan.splits)
        except Exception:  # a configuration this Triton or card cannot build: not a candidate
            continue
        ranked.append((spent, plan))
        if spent < 0.98 * best[0]:
            best = (spent, plan)
    with _LOCK:
        _PLANS[key] = best[1]
        _TIMES[key] = (base, best[0])
        _RANKED[key] = [plan for _, plan in sorted(ranked, key=lambda each: each[0])]
    return best[1]


def tune_gated(rows: int, weights: list[tuple[Any, Any]], silu: Any) -> Plan | None:
    """Time `silu(linear(...))` as the step runs it (the plan `tune` kept, then `silu`, the SiLU
    product kernel) against `run_gated`'s one kernel for the gate/up projection `weights`, on the
    one-slice plans of `tune`'s fastest tiles (`GATED_CANDIDATES`); keep and return the fastest
    gated plan, or None where the two kernels are faster or an answer is off (a gated plan must
    give the same bits as its one-slice projection then `silu`)."""
    weight, bias = weights[0]
    pdl = pdl_supported(weight.device)
    key = _key(rows, weight, bias, gated=True)
    with _LOCK:
        if key in _PLANS:
            return _PLANS[key]
    tune(rows, weights)
    tiles: list[Plan] = []
    for plan in _RANKED.get(_key(rows, weight, bias), []):
        one = Plan(plan.block_n, plan.block_k, plan.warps, plan.stages, 1)
        if one not in tiles:
            tiles.append(one)
    x = _probe(rows, weight)
    want = silu(linear(x, weight, bias, pdl)).float()
    scale = want.norm().clamp_min(1e-30)
    try:
        base = _time(lambda w, b: silu(linear(x, w, b, pdl)), weights)
    except Exception:  # no device timing here: the two kernels
        base = float("inf")
    best: tuple[float, Plan | None] = (base, None)
    tiles = tiles[:GATED_CANDIDATES] if base < float("inf") else []
    out = torch.empty(1, dtype=x.dtype, device=x.device)
    build_at_once(_gemv_kernel, [_call(x, weight, bias, p, out, pdl, gated=True) for p in tiles])
    for plan in tiles:
        try:
            got = run_gated(x, weight, bias, plan, pdl)
            if not torch.equal(got, silu(run(x, weight, bias, plan, pdl=pdl))):
                continue
            if not ((got.float() - want).norm() / scale).item() < 1e-2:
                continue
            spent = _time(lambda w, b, plan=plan: run_gated(x, w, b, plan, pdl), weights)
        except Exception:  # not buildable here: not a candidate
            continue
        if spent < 0.98 * best[0]:
            best = (spent, plan)
    with _LOCK:
        _PLANS[key] = best[1]
        _TIMES[key] = (base, best[0])
    return best[1]


def prepare(
    rows: int, projections: list[list[tuple[Any, Any]]], gated: Any = None, silu: Any = None
) -> None:
    """Tune each projection's shape for `rows` rows once their padding is `due`, where not yet
    done (never while a graph is captured): `projections` holds, per projection, its (weight,
    bias) in every layer; `gated`, the same for a gate/up projection `silu` reads (`tune_gated`)."""
    first = projections[0] if projections and projections[0] else gated
    if torch.cuda.is_current_stream_capturing() or not first or not due(rows, first[0][0].device):
        return
    for weights in projections:
        if weights and fits(rows, weights[0][0]):
            tune(rows, weights)
    if not (GATED and gated and silu is not None and gated[0][0].shape[0] % 2 == 0):
        return
    if fits(rows, gated[0][0]):
        tune_gated(rows, gated, silu)


def gated(x: Any, weight: Any, bias: Any = None, pdl: bool = False) -> Any:
    """Return silu(gate) * up of the gate/up projection `weight` for the decode step in one
    kernel (`run_gated`) where `tune_gated` kept a plan for this shape (and `GATED`), else None."""
    if not (GATED and x.dim() == 2 and x.is_contiguous() and x.dtype == weight.dtype):
        return None
    if x.shape[1] != weight.shape[-1]:
        return None
    if not fits(x.shape[0], weight):
        return None
    plan = _PLANS.get(_key(x.shape[0], weight, bias, gated=True))
    return run_gated(x, weight, bias, plan, pdl) if plan is not None else None


def linear(x: Any, weight: Any, bias: Any = None, pdl: bool = False) -> Any:
    """Return `torch.nn.functional.linear(x, weight, bias)` for the decode step, as `Parts` where
    a plan was tuned for this shape and won (launched with `pdl`), else as torch's tensor."""
    usable = (
        x.dim() == 2
        and x.is_contiguous()
        and x.dtype == weight.dtype
        and x.shape[1] == weight.shape[-1]
    )
    if not (usable and fits(x.shape[0], weight)):
        return torch.nn.functional.linear(x, weight, bias)
    plan = _PLANS.get(_key(x.shape[0], weight, bias))
    if plan is None:
        return torch.nn.functional.linear(x, weight, bias)
    return run(x, weight, bias, plan, pdl=pdl)


def plans() -> dict[str, Any]:
    """Return each tuned shape's choice: the plan's label and its time against torch's (ms, each
    charged for its output's read-back); for a gate/up shape `+silu`, the one-kernel plan's
    against the projection and the SiLU product as two kernels ("two kernels" where kept)."""
    out: dict[str, Any] = {}
    with _LOCK:
        chosen = dict(_PLANS)
    devices = {key[5] for key in chosen}
    for key, plan in chosen.items():
        base, spent = _TIMES.get(key, (0.0, 0.0))
        two = "two kernels" if len(key) > 6 else "torch"
        name = f"{key[0]}x{key[1]}x{key[2]}{'+b' if key[3] else ''}"
        name += ("+silu" if len(key) > 6 else "") + (f"@{key[5]}" if len(devices) > 1 else "")
        out[name] = {
            "plan": plan.label() if plan else two,
            "torch_ms": round(base, 4),
            "ms": round(spent, 4),
        }
    return out
