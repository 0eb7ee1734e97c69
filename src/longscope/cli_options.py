"""The command line's options, declared once: their types, flags and help (`longscope.cli`).

`run` and `plan` share `spec_options` (and `run` adds `run_options`): each is a keyword of
`RunSpec.of` by the same name, and `takes_spec` hands a command the `RunSpec` they make.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from longscope.run.spec import RunSpec

EXIT_USAGE = 2
"""Bad input (an option, a file, a run directory): one line on stderr, nothing sent or stored."""
EXIT_INCOMPLETE = 3
"""`run` finished but some requests failed or were not answered: scores are provisional."""
EPILOG = (
    "Exit codes: 0 done (every request scored or deliberately skipped); 2 bad input (one line on "
    f"stderr, nothing stored lost); {EXIT_INCOMPLETE} `run` finished with failed or unanswered "
    "requests (scores provisional: re-run the same command to retry them); 130 interrupted."
)


def option(kind: Any, *names: str, help: str) -> Any:
    """An option's annotation: its type, names and help on one line."""
    return Annotated[kind, typer.Option(*names, help=help)]


def arg(kind: Any, help: str) -> Any:
    return Annotated[kind, typer.Argument(help=help)]


# fmt: off
class Opt:
    """Options, declared once (several commands share some)."""

    model = option(str, "--model", "-m", help="PROVIDER/NAME: llamacpp/gemma3-270m, llamacpp/PATH."
                   "gguf, openai/NAME, hf/NAME, scripted/NAME")
    model_args = option(list[str] | None, "--model-arg", "-M", help="Backend option KEY=VALUE "
                        "(context_length, prompt_mode, tokenizer, ...)")
    suite_args = option(list[str] | None, "--suite-option", "-S", help="Suite parameter KEY=VALUE, "
                        "repeatable (see `longscope list SUITE`)")
    scoring_args = option(list[str] | None, "--suite-option", "-S", help="Suite parameter that "
                          "changes scores only, KEY=VALUE (see `longscope list SUITE`)")
    base_url = option(list[str] | None, "--base-url", help="OpenAI-compatible endpoint, e.g. "
                      "http://127.0.0.1:8000/v1; repeat for several serving the same model")
    base_urls = option(Path | None, "--base-urls", help="A file of endpoints, one URL per line")
    tokens_in_flight = option(int | None, "--max-tokens-in-flight", help="Cap on prompt tokens in "
                              "flight over all endpoints (default: from their context lengths)")
    prefill_rate = option(float | None, "--prefill-rate", help="Prefill tokens/s of one endpoint: "
                          "deadlines grow with prompt length; the plan's ETA")
    decode_rate = option(float | None, "--decode-rate", help="Output tokens/s of one endpoint")
    shard = option(str | None, "--shard", help="Run part i/N (0-based; default from a Slurm array "
                   "or Kubernetes indexed job); join the parts with `longscope merge`")
    probe = option(bool, "--probe", help="Measure prefill and decode rates with two short requests "
                   "for the ETA")
    price_in = option(float | None, "--price-in", help="Price per million prompt tokens")
    price_out = option(float | None, "--price-out", help="Price per million output tokens")
    concurrency = option(int | None, "--concurrency", help="Requests in flight")
    request_timeout = option(float | None, "--request-timeout", help="Client timeout per HTTP "
                             "request, s")
    lengths = option(str | None, "--lengths", help="Context lengths, e.g. 4k,16k (the suite's "
                     "`lengths`: -S lengths=...)")
    limit = option(int | None, "--limit", help="Run only the first N samples: per task x length "
                   "for suites built by cells (RULER), else in all")
    repeats = option(int | None, "--repeats", help="Generations per sample (default: the suite's)")
    seed = option(int, "--seed", help="Seed for sampling (and the suite's `seed`)")
    max_tokens = option(int | None, "--max-tokens", help="Override the suite's output budget")
    thinking_budget = option(int | None, "--thinking-budget", help="Tokens a reasoning model may "
                             "think before its thinking is closed for it (on top of the answer's "
                             "budget; default: the suite's, else one budget for both)")
    temperature = option(float | None, "--temperature", help="Override the suite's temperature")
    output = option(Path | None, "--output", "-o", help="Run directory (default: "
                    "runs/SUITE-MODEL-ID)")
    quiet = option(bool, "--quiet", "-q", help="No progress bar")
    serial = option(bool, "--serial", help="One request at a time, in order (debugging)")
    router = option(Path | None, "--router", help="Keep the model inside its effective length: a "
                    "profile from `longscope profile`")
    router_strategy = option(str, "--router-strategy", help="Router: map-reduce, truncate, "
                             "retrieve or auto")
    router_basis = option(str, "--router-basis", help="Router: the profile's absolute (85.6) or "
                          "relative effective length")
    router_length = option(str | None, "--router-length", help="Router: a token budget instead of "
                           "the profile's, e.g. 4k")
    judge_model = option(str | None, "--judge-model", help="Judge for suites scored by an LLM "
                         "judge (default: the evaluated model)")
    judge_base_url = option(str | None, "--judge-base-url", help="Endpoint of an openai/ judge")
    run_dir = arg(Path, "A run directory written by `longscope run`")
    run_dirs = arg(list[Path], "Run directories")
    run_id = option(str | None, "--run-id", help="Run id prefix (default: the latest)")
    json_out = option(bool, "--json", help="Print JSON")
    adaptive = option(bool, "--adaptive", help="Measure effective length adaptively: each length "
                      "only until its verdict is sure (docs/runs.md#adaptive-runs)")
    confidence = option(float, "--confidence", help="--adaptive: the confidence of the decision")
    adaptive_rule = option(str, "--adaptive-rule", help="--adaptive: absolute (score >= 85.6, "
                           "RULER's) or relative (0.9 x the shortest length's score)")
    budget_tokens = option(int | None, "--budget-tokens", help="--adaptive: prompt tokens it may "
                           "send in all (stops undecided, with its interval, past them)")
    predictions = option(Path | None, "--predictions", help="Predictions made elsewhere, read by "
                         "the suite (LongBench Pro: JSONL rows id, prediction, [run|bon_idx], "
                         "[thinking]; -S data=FILE)")
    score_args = option(list[str] | None, "--suite-option", "-S", help="KEY=VALUE: with a run, "
                        "options that change scores only (embedder=...); with predictions, the "
                        "suite's parameters (data=FILE)")
    html = option(Path | None, "--html", help="Write a self-contained HTML report")
    markdown = option(Path | None, "--markdown", help="Write a Markdown report")
    thresholds = option(list[float] | None, "--threshold", help="Effective length at this score, "
                        "repeatable (default RULER's 85.6)")
    published = option(list[str] | None, "--published", help="Published rows beside the runs: a "
                       "CSV/JSON file with a source line, or a suite's shipped table "
                       "(its name: longscope list)")
    profile_out = option(Path, "--output", "-o", help="Where to write PROFILE.json")
    threshold = option(float, "--threshold", help="Absolute threshold (RULER: 85.6)")
    relative = option(float, "--relative", help="Relative threshold: a share of the shortest "
                      "length's score")
    high = option(list[Path], "--high", help="Runs of high-tier models (repeatable)")
    mid = option(list[Path], "--mid", help="Runs of mid-tier models (repeatable)")
    low = option(list[Path], "--low", help="Runs of low-tier models (repeatable)")
    labels_out = option(Path, "--output", "-o", help="Where to write the labels JSON")
    base = option(str, "--base", help="Base lengths, e.g. 2k,4k,6k")
    floor = option(float, "--floor", help="Base Ability below this leaves LongScore undefined")
# fmt: on


def spec_options(
    suite: arg(str, "Suite name (see `longscope list`)"),
    model: Opt.model,
    suite_options: Opt.suite_args = None,
    model_options: Opt.model_args = None,
    base_url: Opt.base_url = None,
    base_urls_file: Opt.base_urls = None,
    concurrency: Opt.concurrency = None,
    request_timeout: Opt.request_timeout = None,
    lengths: Opt.lengths = None,
    limit: Opt.limit = None,
    repeats: Opt.repeats = None,
    seed: Opt.seed = 0,
    max_tokens: Opt.max_tokens = None,
    thinking_budget: Opt.thinking_budget = None,
    temperature: Opt.temperature = None,
    output: Opt.output = None,
    max_tokens_in_flight: Opt.tokens_in_flight = None,
    prefill_rate: Opt.prefill_rate = None,
    decode_rate: Opt.decode_rate = None,
    shard: Opt.shard = None,
    probe: Opt.probe = False,
    price_in: Opt.price_in = None,
    price_out: Opt.price_out = None,
) -> None:
    """The options `run` and `plan` share: each is a keyword of `RunSpec.of`, by the same name."""


def run_options(
    quiet: Opt.quiet = False,
    serial: Opt.serial = False,
    router: Opt.router = None,
    router_strategy: Opt.router_strategy = "map-reduce",
    router_basis: Opt.router_basis = "absolute",
    router_length: Opt.router_length = None,
    judge_model: Opt.judge_model = None,
    judge_base_url: Opt.judge_base_url = None,
) -> None:
    """The options only `run` takes (also keywords of `RunSpec.of`)."""


def takes_spec(*, run: bool = False) -> Callable[[Callable[..., None]], Any]:
    """Give a command the options of `spec_options` (and with `run`, of `run_options`) in front of
    its own; it receives them as one `RunSpec` (its first parameter), built once, here."""
    declared = (spec_options, run_options) if run else (spec_options,)
    spec_keys = [name for d in declared for name in inspect.signature(d).parameters]
    params = [p for d in declared for p in inspect.signature(d, eval_str=True).parameters.values()]

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]

        def invoked(**given: Any) -> None:
            command(RunSpec.of(**{key: given.pop(key) for key in spec_keys}), **given)

        # typer reads a command's options from its signature: the declared ones, then its own.
        invoked.__signature__ = inspect.Signature([*params, *own])  # type: ignore[attr-defined]
        invoked.__doc__, invoked.__name__ = command.__doc__, command.__name__
        return invoked

    return wrap
