"""NoLiMa's summary: the score by length, its base score and effective length, depth and hops.

A length's score is the mean of the authors' 0/1 metric over its tests, books and depths (as
`gather_results.ipynb` averages a test's depths and the README's table averages its tests; every
test has the same books and depths, so the mean over requests is the same number). A request that
could not fit the model (skipped unsent, or refused for its length) leaves the means; a request
that failed counts 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from longscope.suites.nolima.data import REPO, REVISION
from longscope.suites.nolima.prompts import PAPER_MAX, length_label
from longscope.suites.nolima.published import STATED_BASE, STATED_EFFECTIVE
from longscope.suites.nolima.scoring import (
    BASE_LENGTHS,
    EFFECTIVE_FRACTION,
    SWEEP_START,
    base_score,
    below_half,
    effective,
    effective_threshold,
)
from longscope.summary import (
    Breakdown,
    Grid,
    Headline,
    Summary,
    Table,
    View,
    curve,
    grid_where,
    group_cells,
    percent,
    row_value,
)
from longscope.types import SCORABLE, ScoredRow

UNFIT = ("skipped", "context_overflow")


def effective_label(scores: dict[int, float]) -> str:
    """Return NoLiMa's effective length in the README's style (`2K`, `<1K`), or `n/a`."""
    result = effective(scores)
    sweep = sorted(n for n in scores if n >= SWEEP_START)
    if result is None or not sweep:
        return "n/a"
    if result.tokens is None:
        return f"<{length_label(sweep[0])}"
    return length_label(result.tokens)


BOOKS = 5
"""The dataset's haystack books: the README's numbers average all five."""


def data_differences(rows: Sequence[ScoredRow]) -> list[str]:
    """Return how the stored rows' data differs from the README's (the pinned files, 5 books)."""
    out = []
    sources = sorted({str(r.sample.get("meta", {}).get("data")) for r in rows})
    unpinned = [s for s in sources if not s.startswith(f"{REPO}@{REVISION}")]
    if unpinned:
        out.append(f"data {', '.join(unpinned)} is not {REPO}@{REVISION[:12]} as pinned")
    books = {r.sample.get("meta", {}).get("book") for r in rows}
    if rows and len(books) != BOOKS:
        out.append(f"{len(books)} haystack book(s) (the table: the dataset's {BOOKS})")
    return out


def nolima_summary(rows: Sequence[ScoredRow], differences: Sequence[str], licence: str) -> Summary:
    """Return the typed summary of scored NoLiMa rows (see the module docstring)."""
    sent = [r for r in rows if r.generation.status not in UNFIT]
    skipped = len(rows) - len(sent)
    by_length = group_cells(sent, lambda r: r.sample.get("length"))
    scores = curve(by_length)
    base = base_score(scores)
    result = effective(scores)
    threshold = None if base.score is None else effective_threshold(base.score)
    label = effective_label(scores)
    by_type: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in sent:
        by_type[str(row.sample.get("task"))].append(row)
    curves = {
        kind: curve(group_cells(members, lambda r: r.sample.get("length")))
        for kind, members in sorted(by_type.items())
    }
    depth = group_cells(sent, lambda r: r.sample.get("meta", {}).get("depth"))
    kinds = group_cells(sent, lambda r: r.sample.get("task"))
    books = group_cells(sent, lambda r: r.sample.get("meta", {}).get("book"))
    grid_rows: dict[str, dict[str, float]] = {}
    for length in scores:
        at = [r for r in sent if r.sample.get("length") == length]
        cells = group_cells(at, lambda r: r.sample.get("meta", {}).get("depth"))
        grid_rows[str(length)] = {k: c.score for k, c in cells.items() if c.score is not None}
    # Each heatmap cell's requests, for its standard error (analysis.uncertainty).
    grid = grid_where(
        sent,
        lambda r: r.sample.get("length"),
        "length",
        lambda r: r.sample.get("meta", {}).get("depth"),
        "meta.depth",
    )
    overall = percent(row_value(r) for r in sent)
    beyond = [n for n in scores if n > PAPER_MAX]
    notes = [
        "score: the authors' metric per answer (1 when it holds a gold answer, case-sensitive for "
        "`contains`), averaged over tests, books and depths; lengths count book tokens in the "
        "model's tokenizer (1K = 1000)",
        f"base score: the best of the scores at 250, 500 and 1K; effective length: the longest "
        f"length from 1K whose score, and every shorter one's, stays at {EFFECTIVE_FRACTION:.0%} "
        "of it (the README's rule)",
        f"data licence: {licence}; the data is not shipped with longscope",
    ]
    if base.missing and base.score is not None:
        notes.append(
            f"base score read from {', '.join(map(length_label, base.lengths))} only (NoLiMa: 250, 500 "
            "and 1K): run those lengths for NoLiMa's base"
        )
    if base.score is None:
        notes.append("no base score: none of 250, 500, 1K was measured, so no effective length")
    elif base.score <= 0:
        notes.append("base score 0: every length would pass a bar of 0, so no effective length")
    if beyond:
        notes.append(
            f"{', '.join(map(length_label, beyond))}: beyond the paper's lengths (250 to 32K), measured "
            "the same way"
        )
    if skipped:
        notes.append(f"{skipped} requests could not fit the model: skipped, left out of the means")
    differences = [*differences, *data_differences(rows)]
    if base.missing:
        differences.append(
            f"base score from {', '.join(map(length_label, base.lengths)) or 'no length'} "
            "(the table: 250, 500 and 1K)"
        )
    failed = sum(1 for r in sent if r.generation.status not in SCORABLE)
    if failed:
        differences.append(f"{failed} requests failed or were never answered (they score 0)")
    notes += [f"not comparable with the README's table: {d}" for d in differences]
    marks = []
    for length, score in scores.items():
        mark = ""
        if base.score is not None and base.score > 0 and length >= SWEEP_START:
            if threshold is not None and score >= threshold:
                mark = f"at or above {EFFECTIVE_FRACTION:.0%} of base"
            elif below_half(score, base.score):
                mark = "below 50% of base"
        if length in BASE_LENGTHS:
            mark = (mark + "; " if mark else "") + "base length"
        if length > PAPER_MAX:
            mark = (mark + "; " if mark else "") + "beyond the paper"
        marks.append(
            (length_label(length), f"{score:.1f}", str(by_length[str(length)].n or 0), mark)
        )
    table = Table(
        "By length (the README's marks)",
        ("length", "score", "requests", "mark"),
        tuple(marks),
        where=tuple((None, {"length": str(n)}, None, None) for n in scores),
    )
    base_text = "-" if base.score is None else f"{base.score:.1f}"
    facts = (
        ("NoLiMa effective length", label),
        ("base score (x0.85: threshold)", f"{base_text} ({threshold:.1f})" if threshold else "-"),
        ("base lengths measured", ", ".join(map(length_label, base.lengths)) or "none"),
        ("requests sent / skipped (too long)", f"{len(sent)} / {skipped}"),
        ("data licence", licence),
    )
    view = View(
        headline=Headline(
            "mean over requests",
            overall,
            scale="%",
            digits=1,
            note=f"NoLiMa effective length {label}, base score {base_text}",
        ),
        overall=overall,
        by_length=scores,
        curves=curves if len(curves) > 1 else {},
        curve_where={kind: {"task": kind} for kind in curves},
        breakdowns=(
            Breakdown("length", "By length (book tokens)", by_length),
            Breakdown("task", "By question type", kinds, compare=True, plot=True),
            Breakdown("depth", "By depth (%)", depth, plot=True),
            Breakdown("book", "By haystack book", books),
        ),
        grids=(Grid("Score by length and depth", "length", "depth (%)", grid_rows, where=grid),)
        if grid_rows
        else (),
        tables=(table,) if marks else (),
        facts=facts,
        stated={STATED_EFFECTIVE: label, STATED_BASE: base_text},
    )
    data = sorted({str(r.sample.get("meta", {}).get("data")) for r in rows})
    native: dict[str, Any] = {
        "nolima": {
            "by_length": {str(k): v for k, v in scores.items()},
            "by_question_type": {k: {str(n): v for n, v in c.items()} for k, c in curves.items()},
            "base_score": base.score,
            "base_lengths": list(base.lengths),
            "threshold": None if threshold is None else round(threshold, 2),
            "effective_length": label,
            "effective_tokens": None if result is None else result.tokens,
            "beyond_paper": beyond,
            "sent": len(sent),
            "skipped": skipped,
            "data": data,
            "licence": licence,
        },
        "comparable_with_published": "no" if differences else "yes",
        "differences": differences,
    }
    return Summary(
        suite="nolima",
        title="NoLiMa",
        views=(view,),
        notes=tuple(notes),
        native=native,
    )


__all__ = ["effective_label", "nolima_summary"]
