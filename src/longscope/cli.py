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

from longscope import api
from longscope.errors import UsageError
from longscope.report import terminal
from longscope.report.terminal import print_summary, safe_console
from longscope.run.store import StoreError
from longscope.summary import incomplete_line
from longscope.text.safe_text import plain, visible

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


def _o(kind: Any, *names: str, help: str) -> Any:
    """An option's annotation: its type, names and help on one line."""
    return Annotated[kind, typer.Option(*names, help=help)]


def _a(kind: Any, help: str) -> Any:
    return Annotated[kind, typer.Argument(help=help)]


# fmt: off
class _Opt:
    """Options, declared once (several commands share some)."""

    model = _o(str, "--model", "-m", help="PROVIDER/NAME: llamacpp/gemma3-270m, llamacpp/PATH."
               "gguf, openai/NAME, hf/NAME, scripted/NAME")
    model_args = _o(list[str] | None, "--model-arg", "-M", help="Backend option KEY=VALUE "
                    "(context_length, prompt_mode, tokenizer, ...)")
    suite_args = _o(list[str] | None, "--suite-option", "-S", help="Suite parameter KEY=VALUE, "
                    "repeatable (see `longscope list SUITE`)")
    scoring_args = _o(list[str] | None, "--suite-option", "-S", help="Suite parameter that "
                      "changes scores only, KEY=VALUE (see `longscope list SUITE`)")
    base_url = _o(list[str] | None, "--base-url", help="OpenAI-compatible endpoint, e.g. "
                  "http://127.0.0.1:8000/v1; repeat for several serving the same model")
    base_urls = _o(Path | None, "--base-urls", help="A file of endpoints, one URL per line")
    tokens_in_flight = _o(int | None, "--max-tokens-in-flight", help="Cap on prompt tokens in "
                          "flight over all endpoints (default: from their context lengths)")
    prefill_rate = _o(float | None, "--prefill-rate", help="Prefill tokens/s of one endpoint: "
                      "deadlines grow with prompt length; the plan's ETA")
    decode_rate = _o(float | None, "--decode-rate", help="Output tokens/s of one endpoint")
    shard = _o(str | None, "--shard", help="Run part i/N (0-based; default from a Slurm array "
               "or Kubernetes indexed job); join the parts with `longscope merge`")
    probe = _o(bool, "--probe", help="Measure prefill and decode rates with two short requests "
               "for the ETA")
    price_in = _o(float | None, "--price-in", help="Price per million prompt tokens")
    price_out = _o(float | None, "--price-out", help="Price per million output tokens")
    concurrency = _o(int | None, "--concurrency", help="Requests in flight")
    request_timeout = _o(float | None, "--request-timeout", help="Client timeout per HTTP "
                         "request, s")
    lengths = _o(str | None, "--lengths", help="Context lengths, e.g. 4k,16k (the suite's "
                 "`lengths`: -S lengths=...)")
    limit = _o(int | None, "--limit", help="Run only the first N samples: per task x length "
               "for suites built by cells (RULER), else in all")
    repeats = _o(int | None, "--repeats", help="Generations per sample (default: the suite's)")
    seed = _o(int, "--seed", help="Seed for sampling (and the suite's `seed`)")
    max_tokens = _o(int | None, "--max-tokens", help="Override the suite's output budget")
    thinking_budget = _o(int | None, "--thinking-budget", help="Tokens a reasoning model may "
                         "think before its thinking is closed for it (on top of the answer's "
                         "budget; default: the suite's, else one budget for both)")
    temperature = _o(float | None, "--temperature", help="Override the suite's temperature")
    output = _o(Path | None, "--output", "-o", help="Run directory (default: "
                "runs/SUITE-MODEL-ID)")
    quiet = _o(bool, "--quiet", "-q", help="No progress bar")
    serial = _o(bool, "--serial", help="One request at a time, in order (debugging)")
    router = _o(Path | None, "--router", help="Keep the model inside its effective length: a "
                "profile from `longscope profile`")
    router_strategy = _o(str, "--router-strategy", help="Router: map-reduce, truncate, retrieve or auto")
    router_basis = _o(str, "--router-basis", help="Router: the profile's absolute (85.6) or "
                      "relative effective length")
    router_length = _o(str | None, "--router-length", help="Router: a token budget instead of "
                       "the profile's, e.g. 4k")
    judge_model = _o(str | None, "--judge-model", help="Judge for suites scored by an LLM judge "
                     "(default: the evaluated model)")
    judge_base_url = _o(str | None, "--judge-base-url", help="Endpoint of an openai/ judge")
    run_dir = _a(Path, "A run directory written by `longscope run`")
    run_dirs = _a(list[Path], "Run directories")
    run_id = _o(str | None, "--run-id", help="Run id prefix (default: the latest)")
    json_out = _o(bool, "--json", help="Print JSON")
    predictions = _o(Path | None, "--predictions", help="Predictions made elsewhere, read by the "
                     "suite (LongBench Pro: JSONL rows id, prediction, [run|bon_idx], [thinking];"
                     " -S data=FILE)")
    score_args = _o(list[str] | None, "--suite-option", "-S", help="KEY=VALUE: with a run, "
                    "options that change scores only (embedder=...); with predictions, the suite's"
                    " parameters (data=FILE)")
    html = _o(Path | None, "--html", help="Write a self-contained HTML report")
    markdown = _o(Path | None, "--markdown", help="Write a Markdown report")
    thresholds = _o(list[float] | None, "--threshold", help="Effective length at this score, "
                    "repeatable (default RULER's 85.6)")
    published = _o(list[str] | None, "--published", help="Published rows beside the runs: a CSV/"
                   "JSON file with a source line, or a suite's shipped table (longbench-pro)")
    profile_out = _o(Path, "--output", "-o", help="Where to write PROFILE.json")
    threshold = _o(float, "--threshold", help="Absolute threshold (RULER: 85.6)")
    relative = _o(float, "--relative", help="Relative threshold: a share of the shortest "
                  "length's score")
    high = _o(list[Path], "--high", help="Runs of high-tier models (repeatable)")
    mid = _o(list[Path], "--mid", help="Runs of mid-tier models (repeatable)")
    low = _o(list[Path], "--low", help="Runs of low-tier models (repeatable)")
    labels_out = _o(Path, "--output", "-o", help="Where to write the labels JSON")
    base = _o(str, "--base", help="Base lengths, e.g. 2k,4k,6k")
    floor = _o(float, "--floor", help="Base Ability below this leaves LongScore undefined")
# fmt: on


@app.command("run")
def run_command(
    suite: _a(str, "Suite name (see `longscope list`)"),
    model: _Opt.model,
    suite_option: _Opt.suite_args = None,
    model_arg: _Opt.model_args = None,
    base_url: _Opt.base_url = None,
    concurrency: _Opt.concurrency = None,
    request_timeout: _Opt.request_timeout = None,
    lengths: _Opt.lengths = None,
    limit: _Opt.limit = None,
    repeats: _Opt.repeats = None,
    seed: _Opt.seed = 0,
    max_tokens: _Opt.max_tokens = None,
    thinking_budget: _Opt.thinking_budget = None,
    temperature: _Opt.temperature = None,
    output: _Opt.output = None,
    quiet: _Opt.quiet = False,
    serial: _Opt.serial = False,
    router: _Opt.router = None,
    router_strategy: _Opt.router_strategy = "map-reduce",
    router_basis: _Opt.router_basis = "absolute",
    router_length: _Opt.router_length = None,
    judge_model: _Opt.judge_model = None,
    judge_base_url: _Opt.judge_base_url = None,
    base_urls: _Opt.base_urls = None,
    max_tokens_in_flight: _Opt.tokens_in_flight = None,
    prefill_rate: _Opt.prefill_rate = None,
    decode_rate: _Opt.decode_rate = None,
    shard: _Opt.shard = None,
    probe: _Opt.probe = False,
    price_in: _Opt.price_in = None,
    price_out: _Opt.price_out = None,
) -> None:
    """Run a suite on a model, store every generation, score, and print the table.

    Exits 0 when every request was scored or deliberately skipped (its context cannot fit the
    model), 3 when some failed or were not answered (the scores shown are provisional; the same
    command retries them), 2 on bad input.
    """
    routing = {"strategy": router_strategy, "basis": router_basis, "length": router_length}
    scale = _scale(locals())
    given = dict(locals())
    for key in ("suite", "model", "suite_option", "model_arg", "router_strategy", "router_basis",
                "router_length", "routing", "scale", *_SCALE_KEYS):  # fmt: skip
        given.pop(key)
    result = api.evaluate(
        suite, model, suite_options=suite_option or [], model_options=model_arg or [],
        router_options=routing, scale=scale, notify=_note, **given,
    )  # fmt: skip
    summary = result.result.result
    print_summary(summary, out)
    if router is not None or router_length is not None:
        out.print(plain(api.routes(result), one_line=False))
    out.print(plain(f"run {result.run_id[:12]} stored in {result.run_dir} "
                    f"({result.sent} sent, {result.skipped} skipped this time)"))  # fmt: skip
    # Failed or unanswered requests exit 3; a run whose every request was deliberately skipped
    # (no tier fits the model), or a shard that holds no sample, asked nothing that failed. A
    # shard whose own requests are all answered exits 0 (its job array task succeeded), while
    # every number it shows says it is a shard, provisional until `merge`.
    record = summary.completeness or {}
    if record.get("failed", 0) + record.get("missing", 0):
        raise typer.Exit(EXIT_INCOMPLETE)


_SCALE_KEYS = ("base_url", "base_urls", "max_tokens_in_flight", "prefill_rate", "decode_rate",
               "shard", "probe", "price_in", "price_out")  # fmt: skip


def _scale(given: dict[str, Any]) -> api.Scale:
    values = {key: given[key] for key in _SCALE_KEYS}
    values["base_urls_file"] = values.pop("base_urls")
    return api.Scale(**values)


@app.command("plan")
def plan_command(
    suite: _a(str, "Suite name (see `longscope list`)"),
    model: _Opt.model,
    suite_option: _Opt.suite_args = None,
    model_arg: _Opt.model_args = None,
    base_url: _Opt.base_url = None,
    base_urls: _Opt.base_urls = None,
    concurrency: _Opt.concurrency = None,
    request_timeout: _Opt.request_timeout = None,
    lengths: _Opt.lengths = None,
    limit: _Opt.limit = None,
    repeats: _Opt.repeats = None,
    seed: _Opt.seed = 0,
    max_tokens: _Opt.max_tokens = None,
    thinking_budget: _Opt.thinking_budget = None,
    temperature: _Opt.temperature = None,
    output: _Opt.output = None,
    max_tokens_in_flight: _Opt.tokens_in_flight = None,
    prefill_rate: _Opt.prefill_rate = None,
    decode_rate: _Opt.decode_rate = None,
    shard: _Opt.shard = None,
    probe: _Opt.probe = False,
    price_in: _Opt.price_in = None,
    price_out: _Opt.price_out = None,
    as_json: _Opt.json_out = False,
) -> None:
    """Print what `run` with the same options would send: prompt tokens per length, requests,
    an ETA (stated or --probe rates) and a cost (--price-in/--price-out). Sends nothing else."""
    scale = _scale(locals())
    given = dict(locals())
    for key in ("suite", "model", "suite_option", "model_arg", "as_json", "scale", *_SCALE_KEYS):
        given.pop(key)
    made = api.plan(suite, model, suite_options=suite_option or [], model_options=model_arg or [],
                    scale=scale, **given)  # fmt: skip
    if as_json:
        return _print_json(made.as_dict())
    out.print(plain(made.table(), one_line=False))


@app.command("merge")
def merge_command(
    output: _a(Path, "Directory of the merged run (new, or an earlier merge's)"),
    run_dirs: _a(list[Path], "Shard run directories of the same run"),
    run_id: _Opt.run_id = None,
) -> None:
    """Merge shard stores of one run (same identity) into one run that scores and reports."""
    merged = api.merge(output, run_dirs, run_id)
    out.print(plain(merged.describe(), one_line=False))
    if merged.result is not None:
        print_summary(merged.result.result, out)
    if not merged.complete:  # gaps, unanswered or failed requests: the merged run is provisional
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command("judge")
def judge_command(
    run_dir: _Opt.run_dir,
    judge_model: _o(str, "--judge-model", help="Judge model, e.g. openai/NAME"),
    judge_base_url: _Opt.judge_base_url = None,
    model_arg: _Opt.model_args = None,
) -> None:
    """Judge a stored run's answers its suite asks a judge about (resumable), then re-score."""
    _, result = api.judge(run_dir, judge_model, judge_base_url, model_arg or [], notify=_note)
    print_summary(result.result, out)


@app.command("score")
def score_command(
    target: _a(str, "A run directory, or a suite name with --predictions"),
    predictions: _Opt.predictions = None,
    suite_option: _Opt.score_args = None,
    output: _Opt.output = None,
    run_id: _Opt.run_id = None,
) -> None:
    """Re-score a stored run without a model, or score predictions made elsewhere."""
    options = suite_option or []
    result = api.score(target, run_id, options=options, predictions=predictions, output=output)
    if predictions is not None:
        out.print(plain(f"stored in {result.run_dir}"))
    print_summary(result.result, out)


@app.command("report")
def report_command(
    run_dirs: _Opt.run_dirs,
    run_id: _Opt.run_id = None,
    html: _Opt.html = None,
    markdown: _Opt.markdown = None,
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
    run_dirs: _a(list[Path], "Run directories to rank side by side"),
    as_json: _Opt.json_out = False,
    threshold: _Opt.thresholds = None,
    published: _Opt.published = None,
) -> None:
    """Leaderboard across runs: overall, breakdowns, lengths, claimed vs effective length."""
    rows = api.compare(run_dirs, thresholds=threshold or [], published=published or [])
    if as_json:
        return _print_json(rows)
    terminal.print_leaderboard(rows)
    for source in dict.fromkeys(r["source"] for r in rows if r.get("source")):
        out.print(plain(f"published: {source}"))
    provisional = [r for r in rows if r["state"] not in ("complete", "published")]
    if provisional:
        err.print(plain(f"{len(provisional)} of {len(rows)} runs incomplete: their scores are "
                        "provisional (see `longscope report RUN_DIR`)", "bold red"))  # fmt: skip


@app.command("profile")
def profile_command(
    run_dirs: _a(list[Path], "Runs of one model with a length sweep"),
    output: _Opt.profile_out,
    threshold: _Opt.threshold = 85.6,
    relative: _Opt.relative = 0.9,
) -> None:
    """Write a model profile (claimed vs effective context) from stored runs."""
    made = api.profile(run_dirs, output, threshold=threshold, relative=relative)
    out.print(plain(f"{made['model']}: claimed {made['claimed_context']}, "
                    f"effective {made['effective_context']} -> {output}"))  # fmt: skip
    if not all(m["complete"] for m in made["measured"]):
        err.print(plain("measured from an incomplete run: the profile is provisional", "bold red"))


@app.command("calibrate")
def calibrate_command(
    high: _Opt.high,
    mid: _Opt.mid,
    low: _Opt.low,
    output: _Opt.labels_out,
) -> None:
    """Write model-calibrated difficulty labels (use with -S difficulty_labels=FILE)."""
    labels = api.calibrate({"high": high, "mid": mid, "low": low}, output)["labels"]
    counts = {name: list(labels.values()).count(name) for name in sorted(set(labels.values()))}
    out.print(plain(f"{len(labels)} labels -> {output}: "
                    + ", ".join(f"{k} {v}" for k, v in counts.items())))  # fmt: skip


@app.command("longscore")
def longscore_command(
    run_dirs: _a(list[Path], "Runs with a length sweep"),
    base: _Opt.base = "2k,4k,6k",
    floor: _Opt.floor = 5.0,
) -> None:
    """Base Ability, per-length raw score and LongScore, averages, and both rankings across runs."""
    for run_dir, summary, *_ in (runs := api.longscore(run_dirs, base, floor)):
        line = incomplete_line(summary.completeness)
        if line:
            err.print(plain(f"{run_dir}: {line}", "bold red"))
    terminal.print_longscores(runs, out)


@app.command("data")
def data_command(
    suite: _a(str, "A suite whose inputs to download (ruler, longbench-pro)"),
    folder: _a(Path | None, "Where to put them (default: the cache, where runs look)") = None,
    mirror: _o(str | None, "--mirror", help="Fetch each file from MIRROR/NAME instead") = None,
) -> None:
    """Download a suite's input files (pinned checksums, resumable) into the cache or FOLDER."""
    for line in api.download_data(suite, folder, mirror=mirror):
        out.print(plain(line))


@app.command("list")
def list_command(
    suite: _a(str | None, "A suite or a provider: its -S / -M options") = None,
) -> None:
    """List suites, named models and providers, or one's options with defaults and help."""
    terminal.print_catalogue(out, suite)


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
    """Entry point: bad input prints one line and exits 2, never a traceback.

    Exit codes: 0 done; 2 bad input; 3 `run` left requests failed or unanswered; 130 interrupted.
    """
    try:
        code = app(standalone_mode=False)
    except (UsageError, StoreError) as exc:
        _one_line_error(str(exc))
        raise SystemExit(EXIT_USAGE) from None
    except (KeyboardInterrupt, typer.Abort):
        _interrupted()
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.TyperException as exc:  # bad options and arguments: typer's own usage errors
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        format_message = getattr(exc, "format_message", None)
        _one_line_error((format_message() if format_message else str(exc)) + hint)
        raise SystemExit(getattr(exc, "exit_code", EXIT_USAGE)) from None
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
