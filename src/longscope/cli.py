"""The `longscope` command: parses options, calls the library (`longscope.api`), prints.

Every value is checked by the library before anything is sent or stored: a bad value ends in one
line on stderr and exit code 2. Everything printed that did not come from longscope itself (model
names, paths, server errors, dataset strings) goes through `report.safe_text`: shown as text, never
as rich markup, with control characters made visible.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from longscope import api
from longscope.errors import UsageError
from longscope.report.safe_text import plain, visible
from longscope.report.terminal import print_summary, safe_console
from longscope.run.store import StoreError
from longscope.summary import incomplete_line

EXIT_USAGE = 2
"""Bad input (an option, a file, a run directory): one line on stderr, nothing sent or stored."""
EXIT_INCOMPLETE = 3
"""`run` finished but some requests failed or were not answered: scores are provisional."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # Help texts are plain text: rich markup would eat their brackets ("[run|bon_idx]").
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    help="Measure how far a language model really reads: long-context benchmarks, scored exactly.",
    epilog=(
        "Exit codes: 0 done (every request scored or deliberately skipped); 2 bad input (one "
        f"line on stderr, nothing stored lost); {EXIT_INCOMPLETE} `run` finished with failed or "
        "unanswered requests (scores provisional: re-run the same command to retry them); "
        "130 interrupted."
    ),
)
out = safe_console()
err = safe_console(stderr=True)


def _note(message: str) -> None:
    err.print(plain(message))


class _Opt:
    """Options shared by several commands, declared once."""

    model = Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="PROVIDER/NAME: llamacpp/gemma3-270m, "
            "llamacpp/PATH.gguf, openai/NAME, hf/NAME, scripted/NAME",
        ),
    ]
    model_args = Annotated[
        list[str] | None,
        typer.Option(
            "--model-arg",
            "-M",
            help="Backend option KEY=VALUE (context_length, prompt_mode, tokenizer, ...)",
        ),
    ]
    suite_args = Annotated[
        list[str] | None,
        typer.Option(
            "--suite-option",
            "-S",
            help="Suite parameter KEY=VALUE, repeatable (see `longscope list SUITE`)",
        ),
    ]
    scoring_args = Annotated[
        list[str] | None,
        typer.Option(
            "--suite-option",
            "-S",
            help="Suite parameter that changes scores only, "
            "KEY=VALUE (e.g. embedder=NAME; see `longscope list SUITE`)",
        ),
    ]
    output = Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Run directory (default: runs/SUITE-MODEL-ID)"),
    ]
    run_dir = Annotated[Path, typer.Argument(help="A run directory written by `longscope run`")]
    run_dirs = Annotated[list[Path], typer.Argument(help="Run directories")]
    run_id = Annotated[
        str | None, typer.Option("--run-id", help="Run id prefix (default: the latest)")
    ]
    judge_model = Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="Judge for suites scored by an LLM judge (default: the evaluated model)",
        ),
    ]
    judge_base_url = Annotated[
        str | None, typer.Option("--judge-base-url", help="Endpoint of an openai/ judge")
    ]
    json_out = Annotated[bool, typer.Option("--json", help="Print JSON")]


@app.command("run")
def run_command(
    suite: Annotated[str, typer.Argument(help="Suite name (see `longscope list`)")],
    model: _Opt.model,
    suite_option: _Opt.suite_args = None,
    model_arg: _Opt.model_args = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
        ),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", help="Requests in flight")
    ] = None,
    request_timeout: Annotated[
        float | None, typer.Option("--request-timeout", help="Client timeout per HTTP request, s")
    ] = None,
    lengths: Annotated[
        str | None,
        typer.Option(
            "--lengths", help="Context lengths, e.g. 4k,16k (the suite's `lengths`: -S lengths=...)"
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Run only the first N samples")
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", help="Generations per sample (default: the suite's)")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed for sampling (and the suite's `seed`)")
    ] = 0,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Override the suite's output budget")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Override the suite's temperature")
    ] = None,
    output: _Opt.output = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar")] = False,
    serial: Annotated[
        bool, typer.Option("--serial", help="One request at a time, in order (debugging)")
    ] = False,
    router: Annotated[
        Path | None,
        typer.Option(
            "--router",
            help="Keep the model inside its effective length: a profile from `longscope profile`",
        ),
    ] = None,
    router_strategy: Annotated[
        str, typer.Option("--router-strategy", help="Router: map-reduce or truncate")
    ] = "map-reduce",
    router_basis: Annotated[
        str,
        typer.Option(
            "--router-basis",
            help="Router: the profile's absolute (85.6) or relative effective length",
        ),
    ] = "absolute",
    router_length: Annotated[
        str | None,
        typer.Option(
            "--router-length", help="Router: a token budget instead of the profile's, e.g. 4k"
        ),
    ] = None,
    judge_model: _Opt.judge_model = None,
    judge_base_url: _Opt.judge_base_url = None,
) -> None:
    """Run a suite on a model, store every generation, score, and print the table.

    Exits 0 when every request was scored or deliberately skipped (its context cannot fit the
    model), 3 when some failed or were not answered (the scores shown are provisional; the same
    command retries them), 2 on bad input.
    """
    result = api.evaluate(
        suite,
        model,
        suite_options=suite_option or [],
        model_options=model_arg or [],
        base_url=base_url,
        concurrency=concurrency,
        request_timeout=request_timeout,
        router=router,
        router_options={
            "strategy": router_strategy,
            "basis": router_basis,
            "length": router_length,
        },
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        lengths=lengths,
        seed=seed,
        limit=limit,
        repeats=repeats,
        max_tokens=max_tokens,
        temperature=temperature,
        output=output,
        quiet=quiet,
        serial=serial,
        notify=_note,
    )
    summary = result.result.result
    print_summary(summary, out)
    if router is not None or router_length is not None:
        out.print(plain(api.routes(result), one_line=False))
    out.print(
        plain(
            f"run {result.run_id[:12]} stored in {result.run_dir} "
            f"({result.sent} sent, {result.skipped} skipped this time)"
        )
    )
    if summary.state != "complete":
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command("judge")
def judge_command(
    run_dir: _Opt.run_dir,
    judge_model: Annotated[
        str, typer.Option("--judge-model", help="Judge model, e.g. openai/NAME")
    ],
    judge_base_url: _Opt.judge_base_url = None,
    model_arg: _Opt.model_args = None,
) -> None:
    """Judge a stored run's answers its suite asks a judge about (resumable), then re-score."""
    _, result = api.judge(run_dir, judge_model, judge_base_url, model_arg or [], notify=_note)
    print_summary(result.result, out)


@app.command("score")
def score_command(
    target: Annotated[
        str, typer.Argument(help="A run directory, or a suite name with --predictions")
    ],
    predictions: Annotated[
        Path | None,
        typer.Option(
            "--predictions",
            help="Predictions made elsewhere, read by the "
            "suite (LongBench Pro: JSONL rows id, prediction, [run|bon_idx], "
            "[thinking]; -S data=FILE)",
        ),
    ] = None,
    suite_option: Annotated[
        list[str] | None,
        typer.Option(
            "--suite-option",
            "-S",
            help="KEY=VALUE: with a run, options "
            "that change scores only (embedder=...); with predictions, the "
            "suite's parameters (data=FILE)",
        ),
    ] = None,
    output: _Opt.output = None,
    run_id: _Opt.run_id = None,
) -> None:
    """Re-score a stored run without a model, or score predictions made elsewhere."""
    result = api.score(
        target, run_id, options=suite_option or [], predictions=predictions, output=output
    )
    if predictions is not None:
        out.print(plain(f"stored in {result.run_dir}"))
    print_summary(result.result, out)


@app.command("report")
def report_command(
    run_dirs: _Opt.run_dirs,
    run_id: _Opt.run_id = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report")
    ] = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Write a Markdown report")
    ] = None,
    as_json: _Opt.json_out = False,
    suite_option: _Opt.scoring_args = None,
) -> None:
    """Print stored runs' results (tables or JSON) and optionally write HTML / Markdown."""
    results = api.report(run_dirs, run_id, options=suite_option or [])
    if html is not None or markdown is not None or as_json:
        # Tables print the incomplete line themselves; files and JSON get it on stderr.
        for run_dir, result in results:
            line = incomplete_line(result.result.completeness)
            if line:
                err.print(plain(f"{run_dir}: {line}", "bold red"))
    for path in api.write_reports(results, html=html, markdown=markdown):
        err.print(plain(f"wrote {path}"))
    if as_json:
        summaries = [result.summary for _, result in results]
        _print_json(summaries[0] if len(summaries) == 1 else summaries)
    elif html is None and markdown is None:
        for _, result in results:
            print_summary(result.result, out)


@app.command("compare")
def compare_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories to rank side by side")],
    as_json: _Opt.json_out = False,
    threshold: Annotated[
        list[float] | None,
        typer.Option(
            "--threshold", help="Effective length at this score, repeatable (default RULER's 85.6)"
        ),
    ] = None,
    published: Annotated[
        list[str] | None,
        typer.Option(
            "--published",
            help="Published rows beside the runs: a CSV/"
            "JSON file with a source line, or a suite's shipped table "
            "(longbench-pro)",
        ),
    ] = None,
) -> None:
    """Leaderboard across runs: overall, breakdowns, lengths, claimed vs effective length."""
    from longscope.report.terminal import print_leaderboard

    rows = api.compare(run_dirs, thresholds=threshold or [], published=published or [])
    if as_json:
        _print_json(rows)
        return
    print_leaderboard(rows)
    for source in dict.fromkeys(r["source"] for r in rows if r.get("source")):
        out.print(plain(f"published: {source}"))
    provisional = [r for r in rows if r["state"] not in ("complete", "published")]
    if provisional:
        err.print(
            plain(
                f"{len(provisional)} of {len(rows)} runs incomplete: their scores are provisional "
                "(see `longscope report RUN_DIR`)",
                "bold red",
            )
        )


@app.command("profile")
def profile_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Runs of one model with a length sweep")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write PROFILE.json")],
    threshold: Annotated[
        float, typer.Option("--threshold", help="Absolute threshold (RULER: 85.6)")
    ] = 85.6,
    relative: Annotated[
        float,
        typer.Option(
            "--relative", help="Relative threshold: a share of the shortest length's score"
        ),
    ] = 0.9,
) -> None:
    """Write a model profile (claimed vs effective context) from stored runs."""
    profile = api.profile(run_dirs, output, threshold=threshold, relative=relative)
    out.print(
        plain(
            f"{profile['model']}: claimed {profile['claimed_context']}, "
            f"effective {profile['effective_context']} -> {output}"
        )
    )
    if not all(m["complete"] for m in profile["measured"]):
        err.print(plain("measured from an incomplete run: the profile is provisional", "bold red"))


@app.command("calibrate")
def calibrate_command(
    high: Annotated[
        list[Path], typer.Option("--high", help="Runs of high-tier models (repeatable)")
    ],
    mid: Annotated[list[Path], typer.Option("--mid", help="Runs of mid-tier models (repeatable)")],
    low: Annotated[list[Path], typer.Option("--low", help="Runs of low-tier models (repeatable)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the labels JSON")],
) -> None:
    """Write model-calibrated difficulty labels (use with -S difficulty_labels=FILE)."""
    labels = api.calibrate({"high": high, "mid": mid, "low": low}, output)
    counts: dict[str, int] = {}
    for label in labels["labels"].values():
        counts[label] = counts.get(label, 0) + 1
    out.print(
        plain(
            f"{len(labels['labels'])} labels -> {output}: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
    )


@app.command("longscore")
def longscore_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Runs with a length sweep")],
    base: Annotated[str, typer.Option("--base", help="Base lengths, e.g. 2k,4k,6k")] = "2k,4k,6k",
    floor: Annotated[
        float, typer.Option("--floor", help="Base Ability below this leaves LongScore undefined")
    ] = 5.0,
) -> None:
    """Base Ability, per-length raw score and LongScore, averages, and both rankings across runs."""
    from longscope.report.terminal import print_longscore

    ranking = []
    for run_dir, summary, base_lengths, floor_ in api.longscore(run_dirs, base, floor):
        line = incomplete_line(summary.completeness)
        if line:
            err.print(plain(f"{run_dir}: {line}", "bold red"))
        model = summary.model or str(run_dir)
        title = f"{model} ({summary.suite}, {run_dir})"
        ranking.append(print_longscore(model, title, summary, base_lengths, floor_)["longscore"])
        ranking[-1] = (model, ranking[-1])
    if len(ranking) > 1:
        by_raw = sorted(ranking, key=lambda r: -(r[1].raw_average or 0.0))
        by_ls = sorted(ranking, key=lambda r: -(r[1].average if r[1].average is not None else -1e9))
        out.print(plain("ranking by raw average:  " + " > ".join(m for m, _ in by_raw)))
        out.print(plain("ranking by LongScore:    " + " > ".join(m for m, _ in by_ls)))


@app.command("list")
def list_command(
    suite: Annotated[str | None, typer.Argument(help="A suite: list its -S parameters")] = None,
) -> None:
    """List suites and named models, or one suite's parameters with defaults and help."""
    from longscope.catalogue import KNOWN_MODELS
    from longscope.models.registry import PROVIDERS
    from longscope.suites import suite_description, suite_names, suite_options
    from longscope.suites.params import describe

    if suite is not None:
        out.print(plain(f"{suite}: {suite_description(suite)}", "bold"))
        rows = describe(suite_options(suite))
        if not rows:
            out.print(plain("  (no declared parameters: -S key=value reaches the suite as text)"))
        for usage, default, text in rows:
            out.print(plain(f"  -S {usage}"))
            out.print(plain(f"      {text} (default: {default})"))
        return
    out.print(Text("Suites", style="bold"))
    for name in suite_names():
        out.print(plain(f"  {name:<14} {suite_description(name)}"))
    out.print(Text.assemble(("Named models", "bold"), " (llamacpp/NAME; any .gguf path works too)"))
    for name, known in KNOWN_MODELS.items():
        out.print(plain(f"  {name:<14} {known.description}; prompt mode {known.prompt_mode}"))
    out.print(
        Text.assemble(
            ("Providers", "bold"), f" {', '.join(PROVIDERS)} (openai/NAME --base-url URL)"
        )
    )


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _one_line_error(message: str) -> None:
    # Plain write: one line however narrow the terminal (rich would wrap it); the message may
    # quote a server, a path or a file's content, so control characters are made visible.
    sys.stderr.write(f"error: {visible(message)}\n")


def main() -> None:
    """Entry point: bad input prints one line and exits 2, never a traceback.

    Exit codes: 0 done; 2 bad input; 3 `run` left requests failed or unanswered; 130 interrupted.
    """
    try:
        code = app(standalone_mode=False)
    except (UsageError, StoreError) as exc:
        _one_line_error(str(exc))
        raise SystemExit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        err.print("interrupted: stored generations are kept; run the same command again to resume")
        raise SystemExit(130) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        raise SystemExit(130) from None
    except typer.TyperException as exc:  # bad options and arguments: typer's own usage errors
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        format_message = getattr(exc, "format_message", None)
        _one_line_error((format_message() if format_message else str(exc)) + hint)
        raise SystemExit(getattr(exc, "exit_code", EXIT_USAGE)) from None
    # In non-standalone mode typer returns a typer.Exit's code instead of raising it.
    if isinstance(code, int) and code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
