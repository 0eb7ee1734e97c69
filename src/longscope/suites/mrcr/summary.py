"""MRCR's aggregation: one view per needle count, the mean ratio overall and by bin.

Rows too long for the model are left out of the means (as OpenAI's script and lm-evaluation-harness
leave them out) and counted as skipped; each bin's cell records its requests (`Cell.where`) and each
view the needle count it summarises (`View.where`), for their standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from longscope.suites.mrcr.schema import BINS, bin_label
from longscope.summary import Breakdown, Cell, Headline, Summary, Table, View, curve_where, percent
from longscope.types import SCORABLE, ScoredRow

UNFIT = ("skipped", "context_overflow")
"""Statuses of rows that could not fit the model: left out of the means."""


def _value(row: ScoredRow) -> float:
    if row.generation.status in SCORABLE and row.score is not None:
        return row.score.fraction
    return 0.0


def mrcr_summary(rows: Sequence[ScoredRow]) -> Summary:
    """One view per needle count: the mean ratio, by bin, and how often the prefix was kept.

    A row that cannot fit the model (skipped unsent, or refused by the server for its length) is
    left out of the means, as OpenAI's script and lm-evaluation-harness leave it out, and counted
    as skipped; a request that failed (timeout, error) counts 0.
    """
    by_needles: dict[int, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_needles[int(row.sample["meta"]["n_needles"])].append(row)
    views, native = [], {}
    for needles, group in sorted(by_needles.items()):
        sent = [r for r in group if r.generation.status not in UNFIT]
        per_bin: dict[int, list[ScoredRow]] = defaultdict(list)
        for row in sent:
            per_bin[int(row.sample["meta"]["bin"])].append(row)
        cells = {
            str(upper): Cell(
                percent(_value(r) for r in members), len(members), where={"meta.bin": str(upper)}
            )
            for upper, members in sorted(per_bin.items())
        }
        scored = [r for r in sent if r.score is not None]
        kept = sum(1 for r in scored if r.score is not None and r.score.evidence.get("prefixed"))
        overall = percent(_value(r) for r in sent)
        skipped = len(group) - len(sent)
        table = Table(
            "By bin (prompt + answer tokens)",
            ("bin", "tokens", "rows", "mean", "prefix kept", "cut (scored 0)"),
            tuple(
                (
                    bin_label(upper),
                    f"{_low(upper)}-{upper}",
                    str(len(members)),
                    "-" if cells[str(upper)].score is None else f"{cells[str(upper)].score:.1f}",
                    _share(members),
                    _cut(members),
                )
                for upper, members in sorted(per_bin.items())
            ),
            where=tuple(
                # The mean's requests, for its standard error (analysis/uncertainty.py).
                (
                    None,
                    None,
                    None,
                    {"meta.n_needles": str(needles), "meta.bin": str(upper)},
                    None,
                    None,
                )
                for upper in sorted(per_bin)
            ),
        )
        views.append(
            View(
                name=f"{needles}-needle",
                headline=Headline(
                    "mean ratio",
                    overall,
                    scale="%",
                    digits=1,
                    note=f"{len(sent)} rows sent, {skipped} skipped (too long), prefix kept "
                    f"{kept}/{len(scored)}",
                ),
                overall=overall,
                by_length={int(k): c.score for k, c in cells.items() if c.score is not None},
                breakdowns=(Breakdown("length", "By bin (tokens)", cells),),
                where={"meta.n_needles": str(needles)},
                length_where=curve_where(cells),
                tables=(table,) if per_bin else (),
                facts=(("rows sent / skipped", f"{len(sent)} / {skipped}"),),
            )
        )
        native[str(needles)] = {
            "mean": overall,
            "rows": len(sent),
            "skipped": skipped,
            "prefix_kept": kept,
            "cut": sum(1 for r in sent if r.generation.status == "length"),
            "bins": {bin_label(int(k)): {"mean": c.score, "rows": c.n} for k, c in cells.items()},
        }
    data = sorted({str(r.sample["meta"].get("data")) for r in rows})
    counted = sorted({str(r.sample["meta"].get("bins_counted_in")) for r in rows})
    tokenizers = {"model": "the model tokenizer", "o200k": "OpenAI o200k_base"}
    notes = (
        f"data: {', '.join(data) or '-'}",
        "score: difflib SequenceMatcher ratio after the random prefix, 0 without it (the OpenAI "
        "grade); rows too long for the model are skipped and left out of the means",
        "bins: the OpenAI edges on prompt + answer tokens (the messages' texts and the answer, "
        "no chat template), counted in "
        + (", ".join(tokenizers.get(c, c) for c in counted) or "-"),
    )
    differences = board_differences(rows, data, counted)
    return Summary(
        suite="mrcr",
        title="OpenAI MRCR",
        views=tuple(views) or (View(),),
        notes=(*notes, *(f"not comparable with the published board: {d}" for d in differences)),
        native={
            "mrcr": {"data": data, "bins_counted_in": counted, "needles": native},
            "comparable_with_published": "no" if differences else "yes",
            "differences": differences,
        },
    )


def board_differences(
    rows: Sequence[ScoredRow], data: Sequence[str], counted: Sequence[str]
) -> list[str]:
    """Return how a run differs from the published board's setup (empty: comparable).

    The board (contextarena.ai) ran openai/mrcr, binned in o200k_base, 2 needles and more.
    """
    out = []
    if any(not d.startswith("openai/mrcr@") or d.endswith(":unpinned") for d in data):
        out.append(f"data {', '.join(data)} (the board: openai/mrcr, pinned)")
    if any(c != "o200k" for c in counted):
        out.append("bins counted in the model tokenizer (the board: o200k_base; -S bins=o200k)")
    failed = sum(1 for r in rows if r.generation.status not in (*SCORABLE, *UNFIT))
    if failed:
        out.append(f"{failed} requests failed or were never answered (they score 0)")
    return out


def _low(upper: int) -> int:
    index = BINS.index(upper)
    return 4096 if index == 0 else BINS[index - 1]


def _cut(rows: Sequence[ScoredRow]) -> str:
    """Return how many answers of a bin hit their output budget (scored 0), `2/10 (20%)`."""
    cut = sum(1 for r in rows if r.generation.status == "length")
    return f"{cut}/{len(rows)} ({100 * cut / len(rows):.0f}%)" if rows else "-"


def _share(rows: Sequence[ScoredRow]) -> str:
    scored = [r for r in rows if r.score is not None]
    if not scored:
        return "-"
    kept = sum(1 for r in scored if r.score is not None and r.score.evidence.get("prefixed"))
    return f"{kept}/{len(scored)}"


__all__ = ["UNFIT", "board_differences", "mrcr_summary"]
