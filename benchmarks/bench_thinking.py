"""Thinking budgets on the embedded instruct model: the share of thinking forced closed and the
score with one budget (thinking and answer together) and with two (thinking, then the answer).

    .venv/bin/python benchmarks/bench_thinking.py                      # LongCtx tier 1 (4K)
    .venv/bin/python benchmarks/bench_thinking.py --thinking 128 --answer 32 --out runs/think
    .venv/bin/python benchmarks/bench_thinking.py --lengths 1k         # LongCtx's grid at 1K
    .venv/bin/python benchmarks/bench_thinking.py --smoke              # one 512-token needle

The model is SmolLM2 135M Instruct (`llamacpp/smollm2-135m`) with a chat template that opens a
think block (tests/fixtures/think_chatml.jinja), as a reasoning model's template does. It never
closes the block on its own, which is the failure a thinking budget is for: with one budget of
THINK + ANSWER tokens every answer is empty (scored 0, and nothing says why); with
`--thinking-budget THINK --max-tokens ANSWER` the thinking is closed at THINK tokens and the model
answers. Both variants get the same samples and the same total output budget.

Checked on every run: every generation of the two-budget run stores what its budget did, a thinking
that used its whole budget was forced closed (one the model ended itself, by end-of-sequence inside
the block, is forced closed too, with fewer tokens) and every answer stayed within its own budget;
the one-budget run stores none and its answers are all empty: the thinking never closed.
"""

from __future__ import annotations

import argparse
import atexit
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from longscope.api import evaluate
from longscope.run.assemble import build_suite
from longscope.run.spec import RunSpec
from longscope.run.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tests" / "fixtures" / "think_chatml.jinja"
MODEL = "llamacpp/smollm2-135m"


class Patient:
    """The suite with another per-request time limit (`--deadline`), all else forwarded: on a
    loaded machine the suite's own limit (120 s + 2 s per 1K tokens) times out every request."""

    def __init__(self, suite: Any, deadline_s: float) -> None:
        self._suite, self._deadline_s = suite, deadline_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    def timeout_s(self, sample: Any) -> float:
        return self._deadline_s


def variant(
    name: str, out: Path, suite_options: list[str], deadline: float | None, **budgets: Any
) -> dict[str, Any]:
    """Run one variant; return its row of the table, its invariants checked."""
    started = time.perf_counter()
    suite: Any = "longctx"
    if deadline is not None:
        suite = Patient(build_suite("longctx", suite_options), deadline)
    result = evaluate(
        RunSpec.of(
            suite,
            MODEL,
            suite_options=suite_options if deadline is None else (),
            model_options={"chat_template": str(TEMPLATE)},
            output=out / name,
            quiet=True,
            **budgets,
        )
    )
    wall = time.perf_counter() - started
    assert result.scores is not None
    summary = result.scores.summary
    with RunStore.open_readonly(out / name) as store:
        rows = [g for _, _, g in store.generations(result.run_id)]
    answered = [g for g in rows if g.status in ("ok", "length")]
    assert answered, f"{name}: nothing answered ({[g.error for g in rows][:3]})"
    thinking = budgets.get("thinking_budget")
    if thinking is None:
        assert all(g.budget is None for g in rows), "a one-budget run stored budgets"
    else:
        for g in answered:
            use = g.budget
            assert use is not None, f"{name}: a generation without its budget"
            assert use.thinking_tokens <= thinking and use.answer_tokens <= budgets["max_tokens"]
            # Forced at the budget, or where the model ended inside its thinking (then fewer).
            assert use.forced or use.thinking_tokens < thinking, use
    forced = sum(1 for g in answered if g.budget is not None and g.budget.forced)
    cut = sum(1 for g in answered if g.status == "length")
    empty = sum(1 for g in answered if not g.text.strip())
    return {
        "variant": name,
        "score": summary.overall,
        "answered": len(answered),
        "forced %": 100 * forced / len(answered),
        "cut %": 100 * cut / len(answered),
        "empty answers": empty,
        "mean output tokens": sum(g.completion_tokens for g in answered) / len(answered),
        "wall s": wall,
        "bound": ", ".join(k for k, c in summary.budgets.get("by_length", {}).items() if c["bound"])
        or "-",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one 512-token needle, tiny budgets")
    parser.add_argument("--thinking", type=int, default=64, help="thinking budget (tokens)")
    parser.add_argument("--answer", type=int, default=32, help="answer budget (tokens)")
    parser.add_argument("--lengths", default=None, help="LongCtx grid lengths instead of tier 1")
    parser.add_argument("--deadline", type=float, default=None, help="seconds per request "
                        "instead of the suite's (a loaded machine)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="run directories (default: temp)")
    args = parser.parse_args()
    if args.smoke:
        options = ["lengths=512", "depths=0.5", "types=needle"]
        thinking, answer = 8, 8
    else:
        options = [f"lengths={args.lengths}"] if args.lengths else ["tiers=1"]
        thinking, answer = args.thinking, args.answer
    out = args.out
    if out is None:  # a scratch nobody reads after: the figures are printed
        out = Path(tempfile.mkdtemp(prefix="bench-thinking-"))
        atexit.register(shutil.rmtree, out, True)
    one = variant("one-budget", out, options, args.deadline, max_tokens=thinking + answer)
    two = variant(
        "two-budgets", out, options, args.deadline, max_tokens=answer, thinking_budget=thinking
    )
    # This model never closes its think block: with one budget every answer is empty.
    assert one["empty answers"] == one["answered"], one
    assert two["forced %"] == 100.0, two
    print(
        f"# {MODEL} + think template, LongCtx {' '.join(options)}; thinking {thinking}, answer "
        f"{answer} tokens; {platform.machine()}, {platform.system()}"
    )
    columns = list(one)
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in (one, two):
        cells = [f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
