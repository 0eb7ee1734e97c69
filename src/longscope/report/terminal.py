"""Terminal tables for a scored run (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _breakdown(title: str, rows: dict[str, dict[str, Any]], label: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(label)
    table.add_column("points", justify="right")
    table.add_column("max", justify="right")
    table.add_column("score %", justify="right")
    for key, value in rows.items():
        table.add_row(key, f"{value['points']:g}", f"{value['max']:g}", f"{value['percent']:.1f}")
    return table


def print_longctx(summary: dict[str, Any], console: Console) -> None:
    """Print LongCtx's total, level, tier/type/depth tables and per-task lines."""
    console.print(
        f"[bold]LongCtx[/bold] {summary.get('model', '')}  total [bold]{summary['total']:.1f}/100[/bold]"
        f"  ({summary['level']})  raw points {summary['raw_points']:g} of {summary['max_points']:g}"
    )
    if any(k != "None" for k in summary["by_tier"]):
        console.print(_breakdown("By tier", summary["by_tier"], "tier"))
    console.print(_breakdown("By length (tokens)", summary["by_length"], "length"))
    console.print(_breakdown("By task type", summary["by_type"], "type"))
    if summary["by_depth"]:
        console.print(_breakdown("Needle depth (position bias)", summary["by_depth"], "depth"))
    if len(summary["heatmap"]) > 1 or any(len(v) > 1 for v in summary["heatmap"].values()):
        depths = sorted(
            {d for row in summary["heatmap"].values() for d in row}, key=lambda d: float(d[:-1])
        )
        heat = Table(title="Needle score % (length x depth)", title_justify="left")
        heat.add_column("length")
        for depth in depths:
            heat.add_column(depth, justify="right")
        for length, row in sorted(summary["heatmap"].items(), key=lambda kv: int(kv[0])):
            heat.add_row(length, *(f"{row[d]:.0f}" if d in row else "" for d in depths))
        console.print(heat)
    tasks = Table(title="Per task", title_justify="left")
    for name in ("id", "type", "length", "points", "status", "reason"):
        tasks.add_column(name, justify="right" if name in ("length", "points") else "left")
    for sid, row in summary["per_sample"].items():
        statuses = ", ".join(f"{k} {v}" if v > 1 else k for k, v in row["statuses"].items())
        tasks.add_row(
            sid,
            row["task"],
            str(row["length"]),
            f"{row['points']:g}",
            statuses,
            row.get("reason", ""),
        )
    console.print(tasks)
    console.print(
        "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items()))
    )


def print_longbench_pro(summary: dict[str, Any], console: Console) -> None:
    """Print LongBench Pro's overall, per-run, BoN / pass@ and breakdown tables per prompt mode."""
    for mode, result in summary["modes"].items():
        console.print(
            f"[bold]LongBench Pro[/bold] {summary.get('model', '')} ({mode})  overall "
            f"[bold]{result['average_overall_metric']:.2f}[/bold]  questions "
            f"{result['total_questions_num']}, runs {result['inference_iterations']}, "
            f"failed {result['fail_samples_num']}, truncated {result['truncated_questions_num']}"
        )
        runs = Table(title="Runs, best-of-N and pass@N", title_justify="left")
        for name in ("i", "run i overall", "BoN-i", "pass@i"):
            runs.add_column(name, justify="right")
        for i in range(1, result["inference_iterations"] + 1):
            runs.add_row(
                str(i),
                f"{result[f'inference_iteration_{i}_overall_metric']:.2f}",
                f"{result[f'BoN-{i}']['overall_metric']:.2f}",
                f"{result[f'pass@{i}']:.2f}",
            )
        console.print(runs)
        for key, value in result.items():
            if key.startswith("average_") and key.endswith("_metric") and isinstance(value, dict):
                dimension = key.removeprefix("average_").removesuffix("_metric")
                table = Table(title=f"By {dimension.replace('_', ' ')}", title_justify="left")
                table.add_column(dimension)
                table.add_column("score", justify="right")
                for group, score in value.items():
                    table.add_row(group, f"{score:.2f}")
                console.print(table)
    console.print(
        f"summary similarity: {summary.get('embedder')}; ROUGE-L parity: {summary.get('rouge_parity')}"
    )


def print_hundred(summary: dict[str, Any], console: Console) -> None:
    """Print 100-LongBench scores per task and length, LongScore, QA filter and judge failures."""
    lengths = list(summary["by_length"])
    table = Table(
        title=f"100-LongBench {summary.get('model', '')}: score % by length", title_justify="left"
    )
    table.add_column("task")
    for length in lengths:
        table.add_column(
            f"{int(length) // 1024}K" if int(length) >= 1024 else length, justify="right"
        )
    table.add_column("Base", justify="right")
    table.add_column("LongScore", justify="right")
    rows = {**summary["by_task"], "overall": summary["by_length"]}
    for task, scores in rows.items():
        ls = summary["longscore"].get(task, {})
        score = ls.get("undefined") or (
            "-" if ls.get("average") is None else f"{ls['average']:+.1f}"
        )
        base = "-" if ls.get("base") is None else f"{ls['base']:.1f}"
        table.add_row(
            task, *(f"{scores[n]:.1f}" if n in scores else "" for n in lengths), base, score
        )
    console.print(table)
    console.print(
        "tokens sent per target length: "
        + ", ".join(f"{k}: {v}" for k, v in summary["achieved_length"].items())
    )
    present = {
        *summary["by_task"],
        *summary.get("judge_failures", {}),
        *summary.get("qa_filter", {}).get("dropped", {}),
    }
    judged = sorted(t for t in present if t.endswith(("_qa", "_sum")))
    if judged:
        names = "LLM judge" if summary.get("metric") == "judge" else "token F1 / ROUGE-L"
        console.print(f"QA and summary metric: {names} ({', '.join(judged)})")
    dropped = summary.get("qa_filter", {}).get("dropped") or {}
    if dropped:
        console.print(f"QA filter (>= {summary['qa_filter']['threshold']}) dropped: {dropped}")
    if summary.get("judge_failures"):
        console.print(f"judge failures (not scored): {summary['judge_failures']}")
    console.print(
        "statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items()))
    )


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print a run's summary as tables (suites without their own layout get a generic one)."""
    console = console or Console()
    if summary.get("suite") == "longctx":
        print_longctx(summary, console)
        return
    if summary.get("suite") == "longbench-pro":
        print_longbench_pro(summary, console)
        return
    if summary.get("suite") == "hundred":
        print_hundred(summary, console)
        return
    console.print_json(data=summary)
