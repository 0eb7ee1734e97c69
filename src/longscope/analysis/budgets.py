"""How often a budget, not the model, ended an answer: per length and overall.

A reasoning model that thinks past its budget scores 0 with nothing said about why. Every scored
run therefore counts, per length, the answers cut by their budget (status `length`) and the thinking
closed by longscope at its thinking budget (`Generation.budget.forced`); a length where more than
`BOUND_SHARE` of the answers hit either is flagged as budget-bound: its score measures the budget.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from longscope.summary import length_key
from longscope.types import SCORABLE, ScoredRow

BOUND_SHARE = 0.10
"""More than this share of a length's answers hit a budget: the length is budget-bound."""


def _cell(answered: int, forced: int, cut: int, hit: int) -> dict[str, Any]:
    share = hit / answered if answered else 0.0
    return {
        "answered": answered,
        "forced": forced,
        "cut": cut,
        "hit": hit,
        "forced_share": round(forced / answered, 4) if answered else 0.0,
        "cut_share": round(cut / answered, 4) if answered else 0.0,
        "hit_share": round(share, 4),
        "bound": share > BOUND_SHARE,
    }


def budget_record(rows: Iterable[ScoredRow]) -> dict[str, Any]:
    """Return {thinking_budget, by_length: {length: cell}, overall: cell}, or {} when no answer
    had a thinking budget or hit a budget (a run the budgets did not touch reads as before).

    A cell counts the answered requests (`ok`, `length`), those whose thinking was forced closed,
    those cut at the answer's budget, and those that hit either; `bound` flags a share past
    `BOUND_SHARE`.
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    budgets: set[int] = set()
    for row in rows:
        gen = row.generation
        if gen.status not in SCORABLE:
            continue
        if gen.budget is not None:
            budgets.add(gen.budget.thinking_budget)
        forced = gen.budget is not None and gen.budget.forced
        cut = gen.status == "length"
        cell = counts[str(row.sample.get("length"))]
        cell[0] += 1
        cell[1] += forced
        cell[2] += cut
        cell[3] += forced or cut
    if not budgets and not any(c[3] for c in counts.values()):
        return {}
    total = [sum(c[i] for c in counts.values()) for i in range(4)]
    return {
        "thinking_budget": max(budgets) if budgets else None,
        "by_length": {
            k: _cell(*v) for k, v in sorted(counts.items(), key=lambda kv: length_key(kv[0]))
        },
        "overall": _cell(*total),
    }


def bound_lengths(record: Mapping[str, Any]) -> list[str]:
    """Return the lengths a budget record flags as budget-bound, in order."""
    return [k for k, cell in (record.get("by_length") or {}).items() if cell.get("bound")]


def leaderboard_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return what `compare` shows of a run's budgets: forced and cut shares, bound lengths."""
    overall = record.get("overall")
    if not overall:
        return {}
    return {
        "forced %": round(100 * overall["forced_share"], 1),
        "cut %": round(100 * overall["cut_share"], 1),
        "budget-bound": ", ".join(bound_lengths(record)) or "-",
    }


def budget_rows(record: Mapping[str, Any], scores: Mapping[int, float]) -> list[list[str]]:
    """Return the report's rows: length, score, answered, forced %, cut %, and the flag."""

    def row(name: str, cell: Mapping[str, Any], score: float | None) -> list[str]:
        return [
            name,
            "-" if score is None else f"{score:.1f}",
            str(cell["answered"]),
            f"{100 * cell['forced_share']:.1f}",
            f"{100 * cell['cut_share']:.1f}",
            "budget-bound" if cell["bound"] else "",
        ]

    out = []
    for length, cell in (record.get("by_length") or {}).items():
        out.append(row(length, cell, scores.get(int(length)) if length.isdigit() else None))
    if len(out) > 1 and record.get("overall"):
        out.append(row("all", record["overall"], None))
    return out


BUDGET_COLUMNS = ("length", "score", "answered", "thinking forced %", "answer cut %", "")
BUDGET_TITLE = "Budgets by length (share of answers)"


def budget_note(record: Mapping[str, Any]) -> str:
    """Return the line under the budget table: what budget-bound means, and where."""
    bound = bound_lengths(record)
    budget = record.get("thinking_budget")
    said = f"thinking budget {budget} tokens; " if budget else ""
    if not bound:
        return (
            f"{said}no length is budget-bound (at most {BOUND_SHARE:.0%} of answers hit a budget)"
        )
    return (
        f"{said}budget-bound at {', '.join(bound)}: over {BOUND_SHARE:.0%} of answers there hit a "
        "budget, so the score measures the budget, not the model"
    )
