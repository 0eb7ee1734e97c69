"""The router's value, measured: one suite at lengths beyond the model's effective (and claimed)
length, without the router, behind it with map-reduce, and behind it with middle truncation.

    .venv/bin/python benchmarks/bench_router.py --profile PROFILE.json --tiers 2,3

The profile comes from `longscope profile RUN -o PROFILE.json`. Runs are stored under
runs/router-bench/ (resumable); the table compares scores per tier, model calls and prompt tokens
processed per sample, and wall time.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from longscope.api import evaluate
from longscope.run.store import RunStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", required=True)
    parser.add_argument("--tiers", default="2,3")
    parser.add_argument("--basis", default="relative", choices=("absolute", "relative"))
    parser.add_argument("--model", default="llamacpp/gemma3-270m")
    parser.add_argument("--out", default="runs/router-bench")
    args = parser.parse_args()
    tiers = [int(t) for t in args.tiers.split(",")]
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    variants = {
        "no router": None,
        "router: map-reduce": {"strategy": "map-reduce", "basis": args.basis},
        "router: truncate": {"strategy": "truncate", "basis": args.basis},
    }
    rows = []
    for label, options in variants.items():
        out = Path(args.out) / label.replace("router: ", "").replace(" ", "-")
        started = time.perf_counter()
        result = evaluate(
            "longctx",
            args.model,
            suite_params={"tiers": tiers},
            router=args.profile if options else None,
            router_options=options,
            output=out,
            quiet=True,
        )
        seconds = time.perf_counter() - started
        summary = result.result.summary
        with RunStore(out, create=False) as store:
            routes = store.routes(result.run_id)
            generations = store.generations(result.run_id)
        calls = [plan.get("calls", 1) for plan in routes.values()] or [1] * len(generations)
        tokens = sum(g.prompt_tokens for _, _, g in generations)
        budget = next(iter(routes.values()), {}).get("budget", "-")
        rows.append(
            (
                label,
                budget,
                *(f"{summary['by_tier'].get(str(t), {}).get('percent', 0):.1f}" for t in tiers),
                ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())),
                f"{sum(calls) / max(len(calls), 1):.1f}",
                f"{tokens / max(len(generations), 1):,.0f}",
                f"{seconds:.0f}" if result.sent else "stored",
            )
        )
    header = ["variant", "prompt budget", *(f"tier {t} %" for t in tiers), "statuses"]
    header += ["calls/sample", "prompt tokens/sample", "wall s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
