"""Run every benchmark script: at full size (`make bench`) or at `--smoke` size (seconds each).

    .venv/bin/python benchmarks/run_all.py            # full sizes, stops at the first failure
    .venv/bin/python benchmarks/run_all.py --smoke    # what tests/test_benchmarks.py runs

Each script asserts its own invariants (the lengths of what it builds, the ratios it prints are
computed from the figures it measured), so a script that no longer matches the code fails here,
with its name, instead of rotting. Scripts that need what this machine may lack say why and are
skipped: a CUDA GPU with torch (bench_hf.py, profile_prefill.py), a checkout of NVIDIA/RULER with a
Python holding its dependencies (RULER=DIR RULER_PYTHON=PATH), a second llama-cpp-python build
(OTHER_PYTHON=PATH).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Script:
    """One benchmark script: its full-size arguments and what it needs beyond this checkout."""

    name: str
    full: tuple[str, ...] = ()
    needs: str = ""
    """"cuda": torch and a CUDA device; "torch": torch and transformers (its full size: CUDA);
    "ruler" / "other": see `missing` (full size only)."""


SCRIPTS: tuple[Script, ...] = (
    Script("bench_longbench_pro.py"),
    Script("bench_embedding_stability.py"),
    Script("bench_prompts.py"),
    Script("bench_overhead.py"),
    Script("bench_openai_overhead.py"),
    Script("bench_hundred.py"),
    Script("bench_scaleout.py"),
    Script("bench_prefill.py"),
    Script(
        "bench_router.py",
        ("--profile", "docs/gemma3-270m-profile.json", "--basis", "relative", "--tiers", "2"),
    ),
    Script("bench_prepared.py"),
    Script("bench_kill_loss.py"),
    Script("bench_coverage.py"),
    Script("bench_uncertainty_cost.py"),
    Script("bench_adaptive.py"),
    # The suite's own per-request limit (120 s + 2 s per 1K) times out a 2-core machine's 4K
    # thinking runs; the recorded table used this deadline.
    Script("bench_thinking.py", ("--deadline", "1800")),
    Script("bench_thinking_hf.py", needs="cuda"),
    # Installs from PyPI into fresh venvs (as `make install` does, the network is PyPI only).
    Script("bench_install.py"),
    Script("bench_ruler.py", needs="ruler"),
    Script("bench_ruler_gpu.py", needs="cuda"),
    Script("bench_portable.py", needs="other"),
    Script("bench_hf.py", needs="cuda"),
    Script("bench_devices.py", needs="torch"),
    # Full size: a real model converted into models/smollm2 (BENCHMARKS.md, issue 46).
    Script(
        "bench_hf_agreement.py",
        ("--model", "models/smollm2", "--out", "build/agreement"),
        needs="torch",
    ),
    # Full size: llama.cpp on the stored fp32 4K-8K agreement prompts (~15 min on 2 cores);
    # the smoke scores the recorded comparison again without llama.cpp.
    Script(
        "bench_hf_llamacpp.py",
        ("--work", "build/llamacpp-agreement", "--out", "build/llamacpp-agreement/llamacpp.jsonl"),
    ),
    Script("profile_prefill.py", needs="cuda"),
)


def cuda_missing() -> str:
    """Return why the CUDA scripts cannot run here ("" when they can)."""
    if importlib.util.find_spec("torch") is None:
        return "needs torch and a CUDA GPU (pip install -e '.[gpu]' on a CUDA machine)"
    import torch

    return "" if torch.cuda.is_available() else "needs a CUDA GPU (torch finds none)"


def arguments(script: Script, smoke: bool) -> tuple[list[str], str]:
    """Return the script's arguments and, when it cannot run here, why (then the list is empty)."""
    if script.needs == "cuda" and (why := cuda_missing()):
        return [], why
    # "torch": the smoke size runs two CPU engines; the full size wants several CUDA devices.
    if script.needs == "torch" and importlib.util.find_spec("transformers") is None:
        return [], "needs torch and transformers (pip install -e '.[gpu]')"
    if script.needs == "torch" and not smoke and (why := cuda_missing()):
        return [], why
    if smoke:
        extra = []
        if script.needs == "ruler" and os.environ.get("RULER"):
            extra = ["--ruler", os.environ["RULER"]]
        return ["--smoke", *extra], ""
    if script.needs == "ruler":
        if not (os.environ.get("RULER") and os.environ.get("RULER_PYTHON")):
            return [], "set RULER=DIR (a checkout of NVIDIA/RULER) and RULER_PYTHON=PATH"
        return ["--ruler", os.environ["RULER"], "--ruler-python", os.environ["RULER_PYTHON"]], ""
    if script.needs == "other":
        if not os.environ.get("OTHER_PYTHON"):
            return [], "set OTHER_PYTHON=PATH (the python of a second llama-cpp-python build)"
        return ["--other", os.environ["OTHER_PYTHON"]], ""
    return list(script.full), ""


def command(script: Script, args: list[str]) -> list[str]:
    """Return the command line that runs `script` with `args`."""
    return [sys.executable, str(HERE / script.name), *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smoke sizes (seconds each)")
    parser.add_argument("--only", default="", help="comma-separated script names")
    options = parser.parse_args()
    chosen = [s for s in SCRIPTS if not options.only or s.name in options.only.split(",")]
    for script in chosen:
        args, why = arguments(script, options.smoke)
        if why:
            print(f"== {script.name}: skipped: {why}", flush=True)
            continue
        line = command(script, args)
        print(f"== {script.name} {' '.join(args)}", flush=True)
        started = time.perf_counter()
        code = subprocess.call(line, cwd=HERE.parent)
        if code != 0:
            shown = " ".join(["python", f"benchmarks/{script.name}", *args])
            raise SystemExit(f"make bench: benchmarks/{script.name} failed (exit {code}): {shown}")
        print(f"== {script.name}: done in {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
