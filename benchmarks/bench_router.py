"""The router's value, measured: one suite at lengths beyond the model's effective (and claimed)
length, without the router, behind it with map-reduce, and behind it with middle truncation.

    .venv/bin/python benchmarks/bench_router.py --profile PROFILE.json --tiers 2,3 [--limit N]
    .venv/bin/python benchmarks/bench_router.py --model llamacpp/smollm2-135m --length 4096 \
        --tiers 1,2,3 --out runs/router-bench-smollm2

The profile comes from `longscope profile RUN -o PROFILE.json`. Runs are stored under
runs/router-bench/ (resumable); the table compares scores per tier, model calls and prompt tokens
processed per sample, and wall time.

Checked on every run: the unrouted variant makes one call per sample; a routed request longer than
its budget is split or truncated, never passed; a truncated context keeps at most the budget; the
percentages printed are the stored summary's. `--smoke`: one 1K needle prompt behind a 512-token
budget (map-reduce and truncate both act), 16-token answers, in a scratch directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from longscope.api import evaluate
from longscope.run.scoring import score_run
from longscope.run.store import RunStore


def check(label: str, rows: list, routes: dict) -> None:
    """Assert what the router promises on the stored rows and route plans of one variant."""
    if label == "no router":
        assert not routes, "an unrouted run stored route plans"
        return
    assert len(routes) == len(rows), (label, len(routes), len(rows))
    for plan in routes.values():
        over = plan["prompt_tokens"] > plan["budget"]
        expected = ("truncate" if "truncate" in label else "map-reduce") if over else "pass"
        assert plan["decision"] in (expected, "refused"), (label, plan)
        if plan["decision"] == "truncate":
            assert plan["context_tokens_kept"] <= plan["budget"], plan
        if plan["decision"] == "map-reduce":
            assert plan.get("calls", 1) >= 2, plan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", help="a profile from `longscope profile` (or give --length)")
    parser.add_argument(
        "--length", type=int, help="the router's budget in tokens instead of a profile's"
    )
    parser.add_argument("--tiers", default="2,3")
    parser.add_argument("--basis", default="relative", choices=("absolute", "relative"))
    parser.add_argument("--model", default="llamacpp/gemma3-270m")
    parser.add_argument("--out", default="runs/router-bench")
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--no-run", action="store_true", help="only re-score the stored runs")
    parser.add_argument("--smoke", action="store_true", help="one 1K prompt, a 512-token budget")
    args = parser.parse_args()
    suite_params: dict = {"tiers": [int(t) for t in args.tiers.split(",")]}
    max_tokens = None
    if args.smoke:
        suite_params = {"lengths": [1024], "depths": [0.5], "types": ["needle"]}
        args.profile, args.length, args.limit, max_tokens = None, 512, 1, 16
        args.out = tempfile.mkdtemp(prefix="router-smoke-")
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    if (args.profile is None) == (args.length is None):
        parser.error("give --profile or --length")
    budget = {"basis": args.basis} if args.length is None else {"length": args.length}
    variants = {
        "no router": None,
        "router: map-reduce": {"strategy": "map-reduce", **budget},
        "router: truncate": {"strategy": "truncate", **budget},
    }
    rows = []
    for label, options in variants.items():
        out = Path(args.out) / label.replace("router: ", "").replace(" ", "-")
        started = time.perf_counter()
        if args.no_run:
            result, sent = score_run(out), 0
        else:
            run = evaluate(
                "longctx",
                args.model,
                suite_params=suite_params,
                router=args.profile if options and args.profile else None,
                router_options=options,
                output=out,
                quiet=True,
                limit=args.limit,
                max_tokens=max_tokens,
            )
            result, sent = run.result, run.sent
        seconds = time.perf_counter() - started
        with RunStore(out, create=False) as store:
            routes = store.routes(result.run_id)
        calls = [
            routes.get((row.sample["id"], row.repeat), {}).get("calls", 1) for row in result.rows
        ]
        tokens = [
            row.generation.prompt_tokens for row in result.rows if row.generation.prompt_tokens
        ]
        budget = next(iter(routes.values()), {}).get("budget", "-")
        check(label, result.rows, routes)
        rows.append(
            (label, budget, result.summary, calls, tokens, f"{seconds:.0f}" if sent else "stored")
        )
    shown = sorted({int(t) for _, _, summary, *_ in rows for t in summary["by_length"]})
    header = ["variant", "prompt budget", *(f"{t // 1024}K %" for t in shown), "statuses"]
    header += ["calls/sample", "prompt tokens/answered sample", "wall s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, budget, summary, calls, tokens, wall in rows:
        cells = [summary["by_length"].get(str(t), {}).get("percent") for t in shown]
        print(
            "| "
            + " | ".join(
                [
                    label,
                    str(budget),
                    *("" if c is None else f"{c:.1f}" for c in cells),
                    ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items())),
                    f"{sum(calls) / max(len(calls), 1):.1f}",
                    f"{sum(tokens) / max(len(tokens), 1):,.0f}",
                    wall,
                ]
            )
            + " |"
        )


if __name__ == "__main__":
    main()
