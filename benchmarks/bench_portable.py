"""Prefill tokens/s of the portable llama.cpp build against a native one, on the same prompts.

Each build lives in its own Python environment (two builds of one library cannot share a process),
so every trial starts a fresh child of each interpreter, alternating which goes first; a child loads
the embedded Gemma 3 270M with the same settings (n_ctx 32768, flash attention, all cores), warms
up, then prefills each length once (one output token, a unique first word so nothing is cached).
The ratio of medians is what to read: absolute rates drift on this shared machine.

    .venv/bin/python benchmarks/bench_portable.py --other /tmp/venv-noamx/bin/python \\
        [--lengths 4k,16k] [--trials 5]
    .venv/bin/python benchmarks/bench_portable.py --smoke   # this build against itself, 512 tokens

Checked on every run: each child prefilled exactly the tokens claimed for each length (one under it,
for the answer token), and both builds answered every trial.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from longscope.models.registry import resolve_model_path

CHILD = r"""
import json, os, sys, time
import llama_cpp
path, lengths, tag = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], sys.argv[3]
n_ctx = int(sys.argv[4])
cores = os.cpu_count() or 1
llama = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, flash_attn=True, n_threads=cores,
                        n_threads_batch=cores, verbose=False)
import pydoc_data.topics as t
words = " ".join(t.topics.values()).split()
llama.create_completion(prompt=" ".join(words[:200]), max_tokens=1, temperature=0.0)
rates, sent = {}, {}
for n in lengths:
    ids = llama.tokenize(f"{tag} ".encode() + " ".join(words).encode(), add_bos=True)[: n - 1]
    llama.reset()
    started = time.perf_counter()
    llama.create_completion(prompt=ids, max_tokens=1, temperature=0.0)
    rates[n] = len(ids) / (time.perf_counter() - started)
    sent[n] = len(ids)
info = llama_cpp.llama_print_system_info().decode()
print(json.dumps({"rates": rates, "sent": sent, "info": info}))
"""


def _child(python: str, model: str, lengths: list[int], tag: str, n_ctx: int) -> dict:
    done = subprocess.run(
        [python, "-c", CHILD, model, ",".join(map(str, lengths)), tag, str(n_ctx)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{python} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--other", help="python of the environment to compare")
    parser.add_argument("--lengths", default="4k,16k")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="this build against itself, 512 tokens"
    )
    args = parser.parse_args()
    n_ctx = 32768
    if args.smoke:
        args.other, args.lengths, args.trials, n_ctx = args.other or sys.executable, "512", 1, 1024
    if not args.other:
        parser.error("--other PYTHON is needed (or pass --smoke)")
    lengths = [int(x[:-1]) * 1024 if x.endswith("k") else int(x) for x in args.lengths.split(",")]
    model = str(resolve_model_path("gemma3-270m"))
    builds = {"portable": sys.executable, "other": args.other}
    rates: dict[str, dict[int, list[float]]] = {b: {n: [] for n in lengths} for b in builds}
    infos: dict[str, str] = {}
    for trial in range(args.trials):
        order = list(builds) if trial % 2 == 0 else list(reversed(builds))
        for build in order:
            out = _child(builds[build], model, lengths, f"trial{trial}{build}", n_ctx)
            infos[build] = out["info"]
            assert out["sent"] == {str(n): n - 1 for n in lengths}, out["sent"]
            for n in lengths:
                rates[build][n].append(out["rates"][str(n)])
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, {args.trials} trials"
    )
    for build, info in infos.items():
        print(f"# {build}: {info.strip()}")
    print("| length | portable tok/s (median) | other tok/s (median) | portable / other |")
    print("|---|---|---|---|")
    assert all(len(rates[b][n]) == args.trials for b in builds for n in lengths)
    for n in lengths:
        mine = statistics.median(rates["portable"][n])
        other = statistics.median(rates["other"][n])
        label = f"{n // 1024}K" if n >= 1024 else str(n)
        print(f"| {label} | {mine:.0f} | {other:.0f} | {mine / other:.3f} |")


if __name__ == "__main__":
    main()
