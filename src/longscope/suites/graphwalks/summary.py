"""GraphWalks' aggregation: one view per problem type, mean F1 overall, by bin and by set.

Rows too long for the model are left out of the means and counted as skipped; each view records
the rows it summarises (`View.where`) and each cell its requests, for their standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from longscope.suites.graphwalks.schema import (
    bin_label,
)
from longscope.summary import (
    Breakdown,
    Headline,
    Summary,
    Table,
    View,
    curve,
    group_cells,
    percent,
    row_value,
)
from longscope.types import SCORABLE, ScoredRow

UNFIT = ("skipped", "context_overflow")


def graphwalks_summary(rows: Sequence[ScoredRow]) -> Summary:
    """One view per problem type: mean F1 (%), by bin, and by the model cards' sets.

    A row that cannot fit the model (skipped unsent, or refused for its length) is left out of the
    means and counted as skipped; a request that failed (timeout, error) counts 0.
    """
    by_type: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_type[str(row.sample["meta"]["problem_type"])].append(row)
    views, native = [], {}
    for kind, group in sorted(by_type.items()):
        sent = [r for r in group if r.generation.status not in UNFIT]
        bins = group_cells(sent, lambda r: r.sample["meta"]["bin"])
        sets = group_cells(sent, lambda r: r.sample["meta"]["set"])
        overall = percent(row_value(r) for r in sent)
        skipped = len(group) - len(sent)
        failed = sum(
            1 for r in sent if r.score is not None and r.score.evidence.get("parse_failed")
        )
        by_set = ", ".join(
            f"{name}: {cell.score:.1f}" for name, cell in sets.items() if cell.score is not None
        )
        table = Table(
            "By bin (prompt tokens)",
            ("bin", "rows", "mean F1", "no answer line"),
            tuple(
                (
                    bin_label(int(upper)),
                    str(cell.n),
                    "-" if cell.score is None else f"{cell.score:.1f}",
                    _unparsed(r for r in sent if str(r.sample["meta"]["bin"]) == upper),
                )
                for upper, cell in bins.items()
            ),
            where=tuple(
                (None, None, {"meta.problem_type": kind, "meta.bin": upper}, None) for upper in bins
            ),
        )
        views.append(
            View(
                name=kind,
                where={"meta.problem_type": kind},
                headline=Headline(
                    "mean F1",
                    overall,
                    scale="%",
                    digits=1,
                    note=f"{len(sent)} rows sent, {skipped} skipped (too long)"
                    + (f"; {by_set}" if by_set else ""),
                ),
                overall=overall,
                by_length=curve(bins),
                breakdowns=(
                    Breakdown("length", "By bin (prompt tokens)", bins),
                    Breakdown("set", "By set (as model cards report)", sets, compare=True),
                ),
                tables=(table,) if bins else (),
                facts=(
                    ("rows sent / skipped", f"{len(sent)} / {skipped}"),
                    ("no answer line (scored 0)", f"{failed}/{len(sent)}"),
                ),
            )
        )
        native[kind] = {
            "mean_f1": overall,
            "rows": len(sent),
            "skipped": skipped,
            "no_answer_line": failed,
            "sets": {name: {"mean_f1": c.score, "rows": c.n} for name, c in sets.items()},
            "bins": {bin_label(int(k)): {"mean_f1": c.score, "rows": c.n} for k, c in bins.items()},
        }
    data = sorted({str(r.sample["meta"].get("data")) for r in rows})
    differences = card_differences(rows, data)
    verdict = "no" if differences else "yes"
    missing = _subset(rows)
    if not differences and missing:
        verdict, differences = "subset", missing
    notes = (
        f"data: {', '.join(data) or '-'}",
        "score: set F1 of the nodes on the answer's last line `Final Answer: [...]` (the card's "
        "grade; no such line scores 0); rows too long for the model are skipped and left out",
        "bins: prompt tokens in the model tokenizer; sets: OpenAI's two files (<128k, >128k)",
    )
    return Summary(
        suite="graphwalks",
        title="OpenAI GraphWalks",
        views=tuple(views) or (View(),),
        notes=(
            *notes,
            *(f"not comparable with model cards: {d}" for d in differences if verdict == "no"),
        ),
        native={
            "graphwalks": {"data": data, "problem_types": native},
            "comparable_with_published": verdict,
            "differences": differences,
        },
    )


def card_differences(rows: Sequence[ScoredRow], data: Sequence[str]) -> list[str]:
    """Return how a run differs from the model cards' setup (empty: comparable)."""
    out = []
    if any(not d.startswith("openai/graphwalks@") for d in data):
        out.append(f"data {', '.join(data)} (the cards: openai/graphwalks, pinned)")
    if any(r.sample["meta"].get("answer_prefix") for r in rows):
        out.append("completion mode: the answer line's start was given (the cards: chat)")
    unfit = sum(1 for r in rows if r.generation.status in UNFIT)
    if unfit:
        out.append(f"{unfit} rows did not fit the model and were left out")
    failed = sum(1 for r in rows if r.generation.status not in (*SCORABLE, *UNFIT))
    if failed:
        out.append(f"{failed} requests failed or were never answered (they score 0)")
    return out


def _subset(rows: Sequence[ScoredRow]) -> list[str]:
    """Return, per problem type and set, `N of M rows` where the run holds fewer than the data."""
    held: dict[tuple[str, str], int] = defaultdict(int)
    sizes: dict[tuple[str, str], int] = {}
    for row in rows:
        meta = row.sample["meta"]
        key = (str(meta["problem_type"]), str(meta["set"]))
        held[key] += 1
        sizes[key] = int(meta.get("set_rows") or 0)
    return [
        f"{kind} {name}: {held[(kind, name)]} of {size} rows"
        for (kind, name), size in sorted(sizes.items())
        if held[(kind, name)] < size
    ]


def _unparsed(rows: Any) -> str:
    scored = [r for r in rows if r.score is not None]
    if not scored:
        return "-"
    failed = sum(1 for r in scored if r.score.evidence.get("parse_failed"))
    return f"{failed}/{len(scored)}"


__all__ = ["UNFIT", "card_differences", "graphwalks_summary"]
