"""Issues 17 and 30's hand-made mutants, each applied to a copy of the committed sources and run against the
default test suite's tests for that code (never `-m slow`). Every one must be killed.

Usage: python -m tools.mutation.named_mutants [--workdir DIR] [NAME ...]

mutmut does not mutate module-level constants (SCORABLE, RETRYABLE, the overlap thresholds) or
the report template; these mutants cover them, and guard the boundaries the issue found unguarded.
Prints one line per mutant (killed/SURVIVED, seconds) and exits 1 when one survives.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    """One source edit (`old` occurs exactly once in `path`) and the tests that must catch it."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    marks: str = "not slow and not model"


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "effective-length-at-85.6",
        "src/longscope/analysis/effective.py",
        "if scores[length] < threshold:",
        "if scores[length] <= threshold:",
        ("tests/analysis",),
    ),
    Mutant(
        "longctx-overlap-0.6-to-0.75",
        "src/longscope/suites/longctx/grading.py",
        "CLOSE_OVERLAP = Fraction(3, 5)",
        "CLOSE_OVERLAP = Fraction(3, 4)",
        ("tests/suites/longctx",),
    ),
    Mutant(
        "longctx-overlap-0.3-exclusive",
        "src/longscope/suites/longctx/grading.py",
        "if ratio >= PARTIAL_OVERLAP:",
        "if ratio > PARTIAL_OVERLAP:",
        ("tests/suites/longctx",),
    ),
    Mutant(
        "longbench-pro-budget-off-by-one",
        "src/longscope/suites/longbench_pro/suite.py",
        "ctx.context_length - budget - (thinking or 0) if ctx.context_length else None",
        "ctx.context_length - budget - (thinking or 0) - 1 if ctx.context_length else None",
        (
            "tests/suites/longbench_pro/test_suite.py",
            "tests/suites/longbench_pro/test_budget_boundaries.py",
        ),
    ),
    Mutant(
        "length-not-scorable",
        "src/longscope/types.py",
        'SCORABLE: frozenset[Status] = frozenset({"ok", "length"})',
        'SCORABLE: frozenset[Status] = frozenset({"ok"})',
        ("tests/run/test_status_boundaries.py", "tests/report/test_report_boundaries.py"),
    ),
    Mutant(
        "gold-unescaped-in-html",
        "src/longscope/report/html.py",
        "<p>gold: {{ item.gold }}</p>",
        "<p>gold: {{ item.gold|safe }}</p>",
        ("tests/report",),
    ),
    Mutant(
        "html-autoescape-off",
        "src/longscope/report/html.py",
        "_TEMPLATE = jinja2.Environment(autoescape=True,",
        "_TEMPLATE = jinja2.Environment(autoescape=False,",
        ("tests/report",),
    ),
    Mutant(
        "tier-at-n_ctx-skipped",
        "src/longscope/run/prepared.py",
        "needs <= info.context_length",
        "needs < info.context_length",
        ("tests/run/test_status_boundaries.py",),
    ),
    Mutant(
        "tier-at-n_ctx-skipped-on-the-model",
        "src/longscope/run/prepared.py",
        "needs <= info.context_length",
        "needs < info.context_length",
        (
            "tests/run/test_status_boundaries.py::test_a_grid_length_equal_to_n_ctx_runs_and_resume_keeps_overflow",
        ),
        marks="model",
    ),
    Mutant(
        "calibration-extreme-below-one",
        "src/longscope/suites/longbench_pro/calibrate.py",
        'if counts["high"] <= 1:',
        'if counts["high"] < 1:',
        ("tests/analysis",),
    ),
    Mutant(
        "longctx-total-not-floored",
        "src/longscope/suites/longctx/summary.py",
        "total = round(100 * max(0.0, raw) / max_points, 2)",
        "total = round(100 * raw / max_points, 2)",
        ("tests/suites/longctx",),
    ),
    Mutant(
        "resume-retries-context-overflow",
        "src/longscope/types.py",
        'RETRYABLE: frozenset[Status] = frozenset({"skipped", "timeout", "error"})',
        'RETRYABLE: frozenset[Status] = frozenset({"skipped", "timeout", "error", "context_overflow"})',
        ("tests/run/test_status_boundaries.py", "tests/run/test_store.py"),
    ),
    Mutant(
        "statuses-per-length-table-dropped",
        "src/longscope/report/html.py",
        "{% if run.section.status_cells %}<h3>Statuses per length</h3>",
        "{% if false %}<h3>Statuses per length</h3>",
        ("tests/report",),
    ),
    Mutant(
        "longscore-sign",
        "src/longscope/analysis/longscore.py",
        "100 * (raw[n] - base) / base",
        "100 * (base - raw[n]) / base",
        ("tests/analysis",),
    ),
    Mutant(
        "best-of-n-first-not-max",
        "src/longscope/suites/longbench_pro/official.py",
        "if row.id not in best or row.metric > best[row.id].metric:",
        "if row.id not in best:",
        ("tests/suites/longbench_pro/test_official.py",),
    ),
    Mutant(
        "truncation-one-token-short",
        "src/longscope/text/truncate.py",
        "kept = ids[:half] + ids[len(ids) - (limit - half) :]",
        "kept = ids[:half] + ids[len(ids) - (limit - half) + 1 :]",
        (
            "tests/suites/longbench_pro/test_suite.py",
            "tests/suites/longbench_pro/test_budget_boundaries.py",
        ),
    ),
    # Issue 30: the run machinery, endpoints, router, judge and suites' fit code; each a bug a
    # developer could plausibly write, and each one users would be hurt by.
    Mutant(
        "resume-done-per-sample",
        "src/longscope/run/prepared.py",
        "left = tuple(r for r in repeats if (sample.id, r) not in done)",
        "left = tuple(r for r in repeats if (sample.id, 0) not in done)",
        ("tests/run/test_run_machinery.py",),
    ),
    Mutant(
        "second-run-takes-the-first-runs-answers",
        "src/longscope/run/store.py",
        'f"SELECT sample_id, repeat FROM generations WHERE run_id=? "',
        'f"SELECT sample_id, repeat FROM generations WHERE length(?) > 0 "',
        ("tests/run/test_run_machinery.py",),
    ),
    Mutant(
        "context-overflow-counted-as-failure",
        "src/longscope/run/scoring.py",
        'elif row.generation.status in ("skipped", "context_overflow"):',
        'elif row.generation.status in ("skipped",):',
        ("tests/run/test_overflow_runs.py", "tests/run/test_completeness.py"),
    ),
    Mutant(
        "merge-error-row-hides-the-answer",
        "src/longscope/run/merge.py",
        "held.status in RETRYABLE and generation.status not in RETRYABLE",
        "False",
        ("tests/run/test_run_machinery.py",),
    ),
    Mutant(
        "endpoints-sized-by-the-largest",
        "src/longscope/models/endpoints.py",
        "context_length=min(lengths) if lengths else base.context_length,",
        "context_length=max(lengths) if lengths else base.context_length,",
        ("tests/run/test_run_machinery.py",),
    ),
    Mutant(
        "plan-counts-the-bare-text",
        "src/longscope/run/plan.py",
        "prompt = request.prompt_tokens or len(tokenizer.encode(request.text))",
        "prompt = len(tokenizer.encode(request.text))",
        ("tests/run/test_plan_sent.py",),
        marks="model",
    ),
    Mutant(
        "silent-truncation-allowed-to-20-percent",
        "src/longscope/models/openai_api.py",
        "floor = sent - max(8, sent // 100) if exact else int(sent * 0.8)",
        "floor = int(sent * 0.8)",
        ("tests/models/test_overflow.py", "tests/models/test_openai_api.py"),
    ),
    Mutant(
        "llama-server-overflow-retried-forever",
        "src/longscope/models/overflow.py",
        '        "exceed_context_size_error",  # llama.cpp server: `type`\n',
        "",
        ("tests/models/test_overflow.py",),
    ),
    Mutant(
        "router-relative-basis-most-optimistic",
        "src/longscope/router/profile.py",
        "relative=min(relative) if relative else None,",
        "relative=max(relative) if relative else None,",
        ("tests/router/test_router_numbers.py", "tests/router/test_backend.py"),
    ),
    Mutant(
        "router-map-reduce-one-calls-tokens",
        "src/longscope/router/backend.py",
        "prompt_tokens=sum(g.prompt_tokens for g in calls),",
        "prompt_tokens=final.prompt_tokens,",
        ("tests/router/test_router_numbers.py", "tests/router/test_backend.py"),
    ),
    Mutant(
        "judge-base-url-ignored-beside-base-url",
        "src/longscope/run/assemble.py",
        "url = spec.judge.base_url if spec.judge.base_url is not None else (urls[0] if urls else None)",
        "url = urls[0] if urls else spec.judge.base_url",
        ("tests/run/test_run_machinery.py",),
    ),
    Mutant(
        "second-judge-reuses-the-first-judges-verdicts",
        "src/longscope/run/store.py",
        '"SELECT sample_id, repeat FROM judgements WHERE run_id=? AND judge=?",',
        '"SELECT sample_id, repeat FROM judgements WHERE run_id=? AND length(?) > 0",',
        ("tests/run/test_run_machinery.py", "tests/run/test_judge.py"),
    ),
    Mutant(
        "ruler-qa-scored-with-match-all",
        "src/longscope/suites/ruler/tasks.py",
        '        32,\n        "string_match_part",',
        '        32,\n        "string_match_all",',
        ("tests/suites/ruler/test_ruler_fit.py",),
    ),
    Mutant(
        "ruler-whole-prompt-recount-never-used",
        "src/longscope/suites/ruler/suite.py",
        "whole = env.counter(draft.sep).count(prompt) != draft.predicted",
        "whole = False",
        ("tests/suites/ruler/test_ruler_fit.py",),
    ),
    Mutant(
        "ruler-chat-margin-not-reserved",
        "src/longscope/suites/ruler/suite.py",
        "budget = length - task.template.tokens_to_generate - overhead - margin",
        "budget = length - task.template.tokens_to_generate - overhead",
        ("tests/suites/ruler/test_ruler_fit.py",),
    ),
    Mutant(
        "hundred-chat-margin-not-reserved",
        "src/longscope/suites/hundred/suite.py",
        '+ ctx.fit("").reserved  # BOS, or the chat template\'s tokens',
        '+ ctx.fit("").counted  # BOS, or the chat template\'s tokens',
        ("tests/suites/hundred/test_hundred_fit.py",),
    ),
    Mutant(
        "hundred-chat-margin-not-in-length",
        "src/longscope/suites/hundred/suite.py",
        "length=sent + frame.margin + max_tokens,",
        "length=sent + max_tokens,",
        ("tests/suites/hundred/test_hundred_fit.py",),
    ),
    Mutant(
        # counting_stars' true list must be the counts in the order the context tells them
        "hundred-stars-not-in-reading-order",
        "src/longscope/suites/hundred/suite.py",
        "places = sorted(rng.sample(range(len(pieces)), len(inserts)))",
        "places = rng.sample(range(len(pieces)), len(inserts))",
        ("tests/suites/hundred/test_hundred_build.py",),
    ),
)


def snapshot(workdir: Path) -> None:
    """Unpack the committed tree (`git archive HEAD`) into `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "HEAD"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive.stdout, check=True)


def _pytest(mutant: Mutant, workdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(workdir / "src")}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-m", mutant.marks, *mutant.tests],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def check(mutant: Mutant, workdir: Path) -> tuple[bool, float]:
    """Apply `mutant` in `workdir`, run its tests, restore the file; return (killed, seconds)."""
    source = workdir / mutant.path
    original = source.read_text(encoding="utf-8")
    if original.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.name}: {mutant.old!r} is not exactly once in {mutant.path}")
    # The same tests on the unmutated code must pass, or a failure would prove nothing.
    baseline = _pytest(mutant, workdir)
    if baseline.returncode != 0:
        raise SystemExit(
            f"{mutant.name}: its tests fail on the unmutated code: fix them first\n"
            + baseline.stdout[-3000:]
        )
    source.write_text(original.replace(mutant.old, mutant.new), encoding="utf-8")
    started = time.perf_counter()
    try:
        returncode = _pytest(mutant, workdir).returncode
    finally:
        source.write_text(original, encoding="utf-8")
    # pytest: 1 = tests failed (killed); 0 = passed (survived); anything else is a broken setup
    if returncode not in (0, 1):
        raise SystemExit(f"{mutant.name}: pytest exited {returncode} (not a test result)")
    return returncode == 1, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Check the named mutants (all by default); return 0 when every one is killed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/longscope-named-mutants"))
    args = parser.parse_args(argv)
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"unknown mutant {unknown[0]!r}: use one of {', '.join(known)}", file=sys.stderr)
        return 2
    snapshot(args.workdir)
    survived = 0
    for mutant in [known[n] for n in args.names] or MUTANTS:
        killed, seconds = check(mutant, args.workdir)
        survived += not killed
        print(f"{'killed  ' if killed else 'SURVIVED'} {mutant.name} ({seconds:.0f} s)", flush=True)
    print(f"{len(args.names or MUTANTS) - survived} of {len(args.names or MUTANTS)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
