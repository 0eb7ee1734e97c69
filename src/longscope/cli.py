"""The `longscope` command: parses options (`cli_options`), calls the library (`api`), prints.

The library checks every value before anything is sent or stored: a bad value ends in one line on
stderr and exit code 2. Text that did not come from longscope (model names, paths, server errors,
dataset strings) is printed through `text.safe_text`: as text, never markup, controls made visible.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

try:  # newer typer carries its own copy of click: its usage errors are these
    from typer._click.exceptions import UsageError as ClickUsageError
except ImportError:  # older typer raises click's own
    from click.exceptions import UsageError as ClickUsageError
try:  # click 8.2+ raises it for a bare command; older ones print the help and exit 0 themselves
    from typer._click.exceptions import NoArgsIsHelpError
except ImportError:
    try:
        from click.exceptions import NoArgsIsHelpError
    except ImportError:
        NoArgsIsHelpError = ()  # type: ignore[assignment,misc]

from longscope import api
from longscope.cli_options import EPILOG, EXIT_INCOMPLETE, EXIT_USAGE, Opt, arg, option, takes_spec
from longscope.errors import UsageError
from longscope.report import terminal
from longscope.report.terminal import print_summary, safe_console
from longscope.run.spec import RunSpec
from longscope.run.store import StoreError
from longscope.text.safe_text import plain, visible

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # Help texts are plain text: rich markup would eat their brackets ("[run|bon_idx]").
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    help="Measure how far a language model really reads: long-context benchmarks, scored exactly.",
    epilog=EPILOG,
)
out, err = safe_console(), safe_console(stderr=True)


@app.command("run")
@takes_spec(run=True)
def run_command(
    spec: RunSpec,
    adaptive: Opt.adaptive = False,
    confidence: Opt.confidence = 0.95,
    adaptive_rule: Opt.adaptive_rule = "absolute",
    budget_tokens: Opt.budget_tokens = None,
) -> None:
    """Run a suite on a model, store every generation, score, and print the table.

    Exits 0 when every request was scored or deliberately skipped (its context cannot fit the
    model), 3 when some failed or were not answered (the scores shown are provisional; the same
    command retries them), 2 on bad input. With --adaptive: 0 once effective length is decided,
    3 when it stopped undecided (budget spent, requests failing).
    """
    if adaptive:
        from longscope.run.adaptive import AdaptiveSpec

        rule = AdaptiveSpec(confidence, adaptive_rule, budget_tokens=budget_tokens)  # type: ignore[arg-type]
        made = api.adaptive(spec, rule, notify=_note)
        print_summary(made.scores.summary, out)
        out.print(plain(made.describe(), one_line=False))
        out.print(plain(f"run {made.run_id[:12]} stored in {made.run_dir}"))
        if not made.decision.decided:
            raise typer.Exit(EXIT_INCOMPLETE)
        return
    if budget_tokens is not None or adaptive_rule != "absolute" or confidence != 0.95:
        raise UsageError("--confidence, --adaptive-rule and --budget-tokens go with --adaptive")
    result = api.evaluate(spec, notify=_note)
    summary = result.scores.summary
    print_summary(summary, out)
    if spec.routing.active:
        out.print(plain(api.routes(result), one_line=False))
    out.print(plain(f"run {result.run_id[:12]} stored in {result.run_dir} "
                    f"({result.sent} sent, {result.skipped} skipped this time)"))  # fmt: skip
    # Failed or unanswered requests exit 3, not deliberately skipped ones (no tier fits the
    # model). A shard whose own requests are all answered exits 0 (its job array task succeeded),
    # while every number it shows says it is a shard, provisional until `merge`.
    record = summary.completeness or {}
    if record.get("failed", 0) + record.get("missing", 0):
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command("plan")
@takes_spec()
def plan_command(
    spec: RunSpec,
    as_json: Opt.json_out = False,
    adaptive: Opt.adaptive = False,
    confidence: Opt.confidence = 0.95,
    adaptive_rule: Opt.adaptive_rule = "absolute",
) -> None:
    """Print what `run` with the same options would send: prompt tokens per length, requests,
    an ETA (stated or --probe rates) and a cost (--price-in/--price-out). Sends nothing else.
    With --adaptive, also what `run --adaptive` is expected to send (a simulation)."""
    if adaptive:
        from longscope.run.adaptive import AdaptiveSpec

        rule = AdaptiveSpec(confidence, adaptive_rule)  # type: ignore[arg-type]
        made = api.adaptive(spec, rule, plan_only=True)
    else:
        made = api.plan(spec)
    if as_json:
        return _print_json(made.as_dict())
    out.print(plain(made.table(), one_line=False))


@app.command("merge")
def merge_command(
    output: arg(Path, "Directory of the merged run (new, or an earlier merge's)"),
    run_dirs: arg(list[Path], "Shard run directories of the same run"),
    run_id: Opt.run_id = None,
) -> None:
    """Merge shard stores of one run (same identity) into one run that scores and reports."""
    merged = api.merge(output, run_dirs, run_id)
    out.print(plain(merged.describe(), one_line=False))
    if merged.scores is not None:
        print_summary(merged.scores.summary, out)
    if not merged.complete:  # gaps, unanswered or failed requests: the merged run is provisional
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command("judge")
def judge_command(
    run_dir: Opt.run_dir,
    judge_model: option(str, "--judge-model", help="Judge model, e.g. openai/NAME"),
    judge_base_url: Opt.judge_base_url = None,
    model_arg: Opt.model_args = None,
) -> None:
    """Judge a stored run's answers its suite asks a judge about (resumable), then re-score."""
    made = api.judge(run_dir, judge_model, judge_base_url, model_arg or [], notify=_note)
    print_summary(made.scored.summary, out)


@app.command("score")
def score_command(
    target: arg(str, "A run directory, or a suite name with --predictions"),
    predictions: Opt.predictions = None,
    suite_option: Opt.score_args = None,
    output: Opt.output = None,
    run_id: Opt.run_id = None,
) -> None:
    """Re-score a stored run without a model, or score predictions made elsewhere."""
    result = api.score(target, run_id, options=suite_option or [], predictions=predictions,
                       output=output)  # fmt: skip
    if predictions is not None:
        out.print(plain(f"stored in {result.run_dir}"))
    print_summary(result.summary, out)


@app.command("report")
def report_command(
    run_dirs: Opt.run_dirs,
    run_id: Opt.run_id = None,
    html: Opt.html = None,
    markdown: Opt.markdown = None,
    as_json: Opt.json_out = False,
    suite_option: Opt.scoring_args = None,
) -> None:
    """Print stored runs' results (tables or JSON) and optionally write HTML / Markdown."""
    made = api.report(run_dirs, run_id, options=suite_option or [])
    if html is not None or markdown is not None or as_json:
        # Tables print the incomplete line themselves; files and JSON get it on stderr.
        _warn(made.incomplete_lines())
    for path in api.write_reports(made, html=html, markdown=markdown):
        err.print(plain(f"wrote {path}"))
    if as_json:
        _print_json(made.summaries())
    elif html is None and markdown is None:
        for run in made.runs:
            print_summary(run.scored.summary, out)
            if run.adaptive_text():
                out.print(plain(run.adaptive_text(), one_line=False))


@app.command("compare")
def compare_command(
    run_dirs: arg(list[Path], "Run directories to rank side by side"),
    as_json: Opt.json_out = False,
    threshold: Opt.thresholds = None,
    published: Opt.published = None,
    html: option(Path | None, "--html", help="Also write the runs side by side as HTML") = None,
) -> None:
    """Leaderboard across runs: overall, breakdowns, lengths, claimed vs effective length."""
    made = api.compare(run_dirs, thresholds=threshold or [], published=published or [], html=html)
    if html is not None:
        err.print(plain(f"wrote {html}"))
    if as_json:
        return _print_json(list(made.rows))
    terminal.print_leaderboard(made.rows)
    for source in made.sources:
        out.print(plain(f"published: {source}"))
    if made.provisional:
        _warn([f"{made.provisional} of {len(made.rows)} runs incomplete: their scores are "
               "provisional (see `longscope report RUN_DIR`)"])  # fmt: skip


@app.command("profile")
def profile_command(
    run_dirs: arg(list[Path], "Runs of one model with a length sweep"),
    output: Opt.profile_out,
    threshold: Opt.threshold = 85.6,
    relative: Opt.relative = 0.9,
) -> None:
    """Write a model profile (claimed vs effective context) from stored runs."""
    made = api.profile(run_dirs, output, threshold=threshold, relative=relative)
    out.print(plain(made.describe()))
    if made.provisional:
        _warn(["measured from an incomplete run: the profile is provisional"])


@app.command("calibrate")
def calibrate_command(
    high: Opt.high,
    mid: Opt.mid,
    low: Opt.low,
    output: Opt.labels_out,
) -> None:
    """Write model-calibrated difficulty labels (use with -S difficulty_labels=FILE)."""
    out.print(plain(api.calibrate({"high": high, "mid": mid, "low": low}, output).describe()))


@app.command("longscore")
def longscore_command(
    run_dirs: arg(list[Path], "Runs with a length sweep"),
    base: Opt.base = "2k,4k,6k",
    floor: Opt.floor = 5.0,
) -> None:
    """Base Ability, per-length raw score and LongScore, averages, and both rankings across runs."""
    made = api.longscore(run_dirs, base, floor)
    _warn(made.incomplete_lines())
    terminal.print_longscores(made.rows(), out)


@app.command("data")
def data_command(
    suite: arg(str, "A suite whose inputs to download (see `longscope list SUITE`)"),
    folder: arg(Path | None, "Where to put them (default: the cache, where runs look)") = None,
    mirror: option(str | None, "--mirror", help="Fetch each file from MIRROR/NAME instead") = None,
) -> None:
    """Download a suite's input files (pinned checksums, resumable) into the cache or FOLDER."""
    for line in api.download_data(suite, folder, mirror=mirror).lines:
        out.print(plain(line))


@app.command("list")
def list_command(
    suite: arg(str | None, "A suite or a provider: its -S / -M options") = None,
) -> None:
    """List suites, named models and providers, or one's options with defaults and help."""
    terminal.print_catalogue(out, api.catalogue(suite))


def _warn(lines: list[str]) -> None:
    for line in lines:
        err.print(plain(line, "bold red"))


@app.command("export")
def export_command(
    run_dirs: Opt.run_dirs,
    fmt: option(str, "--format", help="inspect, eee (Every Eval Ever), hf (.eval_results), mlflow"),
    output: option(str | None, "--output", "-o", help="Folder, or mlflow's tracking URI") = None,
    run_id: Opt.run_id = None,
    model_id: option(str | None, "--model-id", help="The model's Hub id, ORG/NAME") = None,
    provisional: option(bool, "--provisional", help="hf: export an incomplete run") = False,
) -> None:
    """Write stored runs where results are kept: Inspect, Every Eval Ever, Hugging Face, MLflow."""
    made = api.export(
        run_dirs, fmt, output, run_id=run_id, model_id=model_id, provisional=provisional
    )
    for done in made:
        out.print(plain(done.line()))
        if done.note:
            err.print(plain(f"{done.run_dir}: exported as provisional: {done.note}", "bold red"))
        if done.chosen:
            err.print(plain(done.chosen))


def _note(message: str) -> None:
    for line in message.splitlines():
        err.print(plain(line), soft_wrap=True)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _one_line_error(message: str) -> None:
    # Plain write: one line however narrow the terminal (rich would wrap it); the message may
    # quote a server, a path or a file's content, so control characters are made visible.
    sys.stderr.write(f"error: {visible(message)}\n")


def main() -> None:
    """Entry point: bad input prints one line and exits 2, never a traceback (see EPILOG)."""
    try:
        code = app(standalone_mode=False)
    except (UsageError, StoreError) as exc:
        _one_line_error(str(exc))
        # A run the disk stopped exits 3 (`DiskFull.exit_code`): its answers so far are stored.
        raise SystemExit(exc.exit_code if isinstance(exc, UsageError) else EXIT_USAGE) from None
    except (KeyboardInterrupt, typer.Abort):
        _interrupted()
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except NoArgsIsHelpError as exc:
        # Bare `longscope` asks what the tool does: the help, as `--help` prints it (stdout, exit
        # 0), not a usage error (click's default: stderr, exit 2).
        sys.stdout.write(exc.format_message().rstrip("\n") + "\n")
        raise SystemExit(0) from None
    except typer.TyperException as exc:  # bad options and arguments: typer's own usage errors
        hint = ""
        if isinstance(exc, ClickUsageError) and exc.ctx is not None:
            hint = f" (see `{exc.ctx.command_path} --help`)"
        _one_line_error(exc.format_message() + hint)
        raise SystemExit(exc.exit_code) from None
    # In non-standalone mode typer returns a typer.Exit's code instead of raising it, and Ctrl-C
    # as 130 (having caught the KeyboardInterrupt itself).
    if code == 130:
        _interrupted()
    if isinstance(code, int) and code:
        raise SystemExit(code)


def _interrupted() -> None:
    sys.stderr.write(
        "interrupted: stored generations are kept; run the same command again to resume\n"
    )
    raise SystemExit(130)


if __name__ == "__main__":
    main()
