"""Terminal tables for a scored run (rich).

A run's completeness comes first: an incomplete run opens with the line saying how many requests
failed and why, its scores are marked provisional, and a run that scored nothing prints no total
and no level. Every string from a store, a dataset or a server is printed through `safe_text.plain`:
as text, never as rich markup, with control characters made visible.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from longscope.report.safe_text import plain
from longscope.run.scoring import incomplete_line, no_score_text, result_state


def safe_console(**kwargs: Any) -> Console:
    """Return a Console that prints strings as they are: no markup, emoji codes or highlighting.

    Soft wrap: a line longer than the terminal is left to the terminal, never cut into two lines
    (tables still fit their columns to the width).
    """
    return Console(markup=False, emoji=False, highlight=False, soft_wrap=True, **kwargs)


def _say(console: Console, text: Text) -> None:
    # One logical line stays one line (a narrow terminal may still wrap it visually).
    console.print(text, soft_wrap=True)


def _table(title: str) -> Table:
    return Table(title=plain(title), title_justify="left")


def _row(table: Table, *cells: object) -> None:
    table.add_row(*(cell if isinstance(cell, Text) else plain(cell) for cell in cells))


def _headline(*parts: object) -> Text:
    """Join literal parts (str: ours, bold when wrapped in a 1-tuple) and untrusted ones (plain)."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(plain(part[0], "bold"))
        else:
            text.append(plain(part))
    return text


def _no_score(suite: str, summary: dict[str, Any]) -> Text:
    return _headline((suite,), f" {summary.get('model') or ''}  {no_score_text(summary)}")


def _breakdown(title: str, rows: dict[str, dict[str, Any]], label: str) -> Table:
    table = _table(title)
    table.add_column(label)
    table.add_column("points", justify="right")
    table.add_column("max", justify="right")
    table.add_column("score %", justify="right")
    for key, value in rows.items():
        _row(table, key, f"{value['points']:g}", f"{value['max']:g}", f"{value['percent']:.1f}")
    return table


def completeness_table(summary: dict[str, Any]) -> Table | None:
    """Return requested / scored / skipped / failed / not run per length, or None without a record."""
    record = summary.get("completeness")
    if record is None:
        return None
    table = _table("Completeness by length (requests)")
    for name in ("length", "requested", "scored", "skipped", "failed", "not run"):
        table.add_column(name, justify="right")
    for length, cell in record["by_length"].items():
        _row(
            table,
            length,
            *(str(cell[k]) for k in ("requested", "scored", "skipped", "failed", "missing")),
        )
    if len(record["by_length"]) > 1:
        _row(
            table,
            "all",
            *(str(record[k]) for k in ("requested", "scored", "skipped", "failed", "missing")),
        )
    return table


def print_longctx(summary: dict[str, Any], console: Console) -> None:
    """Print LongCtx's total, level, tier/type/depth tables and per-task lines."""
    state = result_state(summary)
    if state == "none":
        _say(console, _no_score("LongCtx", summary))
        _per_task(summary, console)
        return
    _say(
        console,
        _headline(
            ("LongCtx",),
            f" {summary.get('model') or ''}  total ",
            (f"{summary['total']:.1f}/100",),
            " provisional (incomplete run)" if state == "provisional" else "",
            f"  ({summary['level']})  raw points {summary['raw_points']:g} of "
            f"{summary['max_points']:g}",
        ),
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
        heat = _table("Needle score % (length x depth)")
        heat.add_column("length")
        for depth in depths:
            heat.add_column(depth, justify="right")
        for length, row in sorted(summary["heatmap"].items(), key=lambda kv: int(kv[0])):
            _row(heat, length, *(f"{row[d]:.0f}" if d in row else "" for d in depths))
        console.print(heat)
    _per_task(summary, console)


def _per_task(summary: dict[str, Any], console: Console) -> None:
    tasks = _table("Per task")
    for name in ("id", "type", "length", "points", "status", "reason"):
        tasks.add_column(name, justify="right" if name in ("length", "points") else "left")
    for sid, row in summary["per_sample"].items():
        statuses = ", ".join(f"{k} {v}" if v > 1 else k for k, v in row["statuses"].items())
        _row(
            tasks,
            sid,
            row["task"],
            str(row["length"]),
            f"{row['points']:g}",
            statuses,
            row.get("reason", ""),
        )
    console.print(tasks)
    _say(
        console,
        plain("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items()))),
    )


def print_longbench_pro(summary: dict[str, Any], console: Console) -> None:
    """Print LongBench Pro's overall, per-run, BoN / pass@ and breakdown tables per prompt mode."""
    state = result_state(summary)
    if state == "none":
        _say(console, _no_score("LongBench Pro", summary))
        return
    from longscope.suites.longbench_pro.suite import display_modes

    for mode, result in display_modes(summary).items():
        _say(
            console,
            _headline(
                ("LongBench Pro",),
                f" {summary.get('model') or ''} ({mode})  overall ",
                (f"{result['average_overall_metric']:.2f}",),
                " provisional (incomplete run)" if state == "provisional" else "",
                f"  questions {result['total_questions_num']}, runs "
                f"{result['inference_iterations']}, failed {result['fail_samples_num']}, "
                f"truncated {result['truncated_questions_num']}",
            ),
        )
        runs = _table("Runs, best-of-N and pass@N")
        for name in ("i", "run i overall", "BoN-i", "pass@i"):
            runs.add_column(name, justify="right")
        for i in range(1, result["inference_iterations"] + 1):
            _row(
                runs,
                str(i),
                f"{result[f'inference_iteration_{i}_overall_metric']:.2f}",
                f"{result[f'BoN-{i}']['overall_metric']:.2f}",
                f"{result[f'pass@{i}']:.2f}",
            )
        console.print(runs)
        for key, value in result.items():
            if key.startswith("average_") and key.endswith("_metric") and isinstance(value, dict):
                dimension = key.removeprefix("average_").removesuffix("_metric")
                table = _table(f"By {dimension.replace('_', ' ')}")
                table.add_column(dimension)
                table.add_column("score", justify="right")
                for group, score in value.items():
                    _row(table, group, f"{score:.2f}")
                console.print(table)
    _say(
        console,
        plain(
            f"summary similarity: {summary['longscope']['embedder']}; "
            f"official parity: {summary['longscope']['official_parity']}"
        ),
    )


def print_hundred(summary: dict[str, Any], console: Console) -> None:
    """Print 100-LongBench scores per task and length, LongScore, QA filter and judge failures."""
    state = result_state(summary)
    if state == "none":
        _say(console, _no_score("100-LongBench", summary))
        return
    lengths = list(summary["by_length"])
    provisional = " (provisional: incomplete run)" if state == "provisional" else ""
    table = _table(f"100-LongBench {summary.get('model') or ''}: score % by length{provisional}")
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
        _row(
            table, task, *(f"{scores[n]:.1f}" if n in scores else "" for n in lengths), base, score
        )
    console.print(table)
    _say(
        console,
        plain(
            "tokens sent per target length: "
            + ", ".join(f"{k}: {v}" for k, v in summary["achieved_length"].items())
        ),
    )
    present = {
        *summary["by_task"],
        *summary.get("judge_failures", {}),
        *summary.get("qa_filter", {}).get("dropped", {}),
    }
    judged = sorted(t for t in present if t.endswith(("_qa", "_sum")))
    if judged:
        names = "LLM judge" if summary.get("metric") == "judge" else "token F1 / ROUGE-L"
        _say(console, plain(f"QA and summary metric: {names} ({', '.join(judged)})"))
    dropped = summary.get("qa_filter", {}).get("dropped") or {}
    if dropped:
        _say(
            console, plain(f"QA filter (>= {summary['qa_filter']['threshold']}) dropped: {dropped}")
        )
    if summary.get("judge_failures"):
        _say(console, plain(f"judge failures (not scored): {summary['judge_failures']}"))
    _say(
        console,
        plain("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["statuses"].items()))),
    )


PRINTERS = {
    "longctx": print_longctx,
    "longbench-pro": print_longbench_pro,
    "hundred": print_hundred,
}


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print a run's summary: the incomplete line first, the suite's tables, then completeness.

    Suites without their own layout get their summary as JSON (escaped, so still text).
    """
    console = console or safe_console()
    line = incomplete_line(summary.get("completeness") or {})
    if line:
        _say(console, plain(line, "bold red"))
    printer = PRINTERS.get(summary.get("suite") or "")
    if printer is None:
        import json

        _say(console, plain(json.dumps(summary, indent=2, ensure_ascii=False), one_line=False))
    else:
        printer(summary, console)
    table = completeness_table(summary)
    if table is not None:
        console.print(table)
