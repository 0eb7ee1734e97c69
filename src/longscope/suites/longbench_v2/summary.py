"""LongBench v2's aggregation: one view per prompt mode, accuracy by bin, difficulty and split.

`official_line` is the leaderboard's line of one mode; each view records the rows it summarises
(`View.where`) and each cell its requests, for their standard errors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from longscope.suites.longbench_v2.official import (
    MODE_NAMES,
    TEMPLATES,
)
from longscope.summary import (
    Breakdown,
    Headline,
    Summary,
    View,
    curve,
    group_cells,
    percent,
    row_value,
)
from longscope.types import (
    SCORABLE,
    ScoredRow,
)

QUESTIONS = 503


UNFIT = ("skipped", "context_overflow")


def official_line(rows: Sequence[ScoredRow]) -> dict[str, float | None]:
    """Return `result.py`'s line for one setting: Overall, Easy, Hard, Short, Medium, Long (%, 1
    decimal), over the questions answered (the official script keeps every written answer)."""

    def acc(selected: list[ScoredRow]) -> float | None:
        return (
            round(100 * sum(row_value(r) for r in selected) / len(selected), 1)
            if selected
            else None
        )

    out: dict[str, float | None] = {"Overall": acc(list(rows))}
    for name in ("Easy", "Hard"):
        out[name] = acc([r for r in rows if r.sample["meta"]["difficulty"] == name])
    for name in ("Short", "Medium", "Long"):
        out[name] = acc([r for r in rows if r.sample["meta"]["length_split"] == name])
    return out


def longbench_v2_summary(rows: Sequence[ScoredRow]) -> Summary:
    """One view per setting: accuracy overall, by difficulty, by length split and by prompt tokens.

    A question that cannot fit even cut (the window smaller than the output budget) is left out
    and counted as skipped; a failed request counts 0.
    """
    by_mode: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_mode[str(row.sample["meta"]["mode"])].append(row)
    views, native = [], {}
    questions: set[str] = set()
    for mode in (m for m in TEMPLATES if m in by_mode):
        group = by_mode[mode]
        sent = [r for r in group if r.generation.status not in UNFIT]
        questions |= {str(r.sample["id"]).partition("/")[2] for r in sent}
        line = official_line(sent)
        bins = group_cells(sent, lambda r: r.sample["meta"]["bin"])
        truncated = sum(1 for r in sent if r.sample["meta"].get("truncated"))
        no_letter = sum(
            1 for r in sent if r.score is not None and r.score.evidence.get("pred") is None
        )
        overall = percent(row_value(r) for r in sent)
        skipped = len(group) - len(sent)
        views.append(
            View(
                name=MODE_NAMES[mode],
                where={"meta.mode": mode},
                headline=Headline(
                    "accuracy",
                    overall,
                    scale="%",
                    digits=1,
                    note=f"{len(sent)} questions, {truncated} cut to the window, {skipped} skipped",
                ),
                overall=overall,
                by_length=curve(bins),
                breakdowns=(
                    Breakdown("length", "By prompt tokens before the cut", bins),
                    Breakdown(
                        "difficulty",
                        "By difficulty",
                        group_cells(sent, lambda r: r.sample["meta"]["difficulty"]),
                        compare=True,
                    ),
                    Breakdown(
                        "length_split",
                        "By length split (words: <32K, 32K-128K, >128K)",
                        group_cells(sent, lambda r: r.sample["meta"]["length_split"]),
                        compare=True,
                    ),
                    Breakdown(
                        "domain",
                        "By domain",
                        group_cells(sent, lambda r: r.sample["meta"]["domain"] or None),
                    ),
                ),
                facts=(
                    ("questions / skipped", f"{len(sent)} / {skipped}"),
                    ("cut to the window (truncated)", f"{truncated}/{len(sent)}"),
                    ("no answer letter", f"{no_letter}/{len(sent)}"),
                ),
            )
        )
        native[MODE_NAMES[mode]] = {
            **line,
            "questions": len(sent),
            "truncated": truncated,
            "no_answer_letter": no_letter,
            "skipped": skipped,
        }
    data = sorted({str(r.sample["meta"].get("data")) for r in rows})
    differences = leaderboard_differences(rows, data)
    verdict = "no" if differences else "yes"
    if not differences and len(questions) < QUESTIONS:
        verdict = f"subset of {QUESTIONS}"
        differences = [f"{len(questions)} of the {QUESTIONS} questions"]
    notes = (
        f"data: {', '.join(data) or '-'}",
        "score: pred.py's extract_answer ('The correct answer is (X)', then '... is X'), right "
        "letter 1, else 0; prompts longer than the window cut in the middle (pred.py's cut)",
    )
    return Summary(
        suite="longbench-v2",
        title="LongBench v2",
        views=tuple(views) or (View(),),
        notes=(
            *notes,
            *(f"not comparable with the leaderboard: {d}" for d in differences if verdict == "no"),
        ),
        native={
            "longbench_v2": native,
            "comparable_with_published": verdict,
            "differences": differences,
        },
    )


def leaderboard_differences(rows: Sequence[ScoredRow], data: Sequence[str]) -> list[str]:
    """Return how a run differs from the leaderboard's setup (empty: the same)."""
    out = []
    if any(not d.startswith("THUDM/LongBench-v2@") for d in data):
        out.append(f"data {', '.join(data)} (the leaderboard: THUDM/LongBench-v2, pinned)")
    if any(r.sample["meta"].get("mode") == "cot" for r in rows):
        out.append(
            "w/ CoT: the letter is read from the reasoning itself; pred.py asks again "
            "(0shot_cot_ans.txt) for it"
        )
    if any(r.sample["meta"].get("answer_prefix") for r in rows):
        out.append("completion mode: the answer line's start was given (the leaderboard: chat)")
    if any(r.score is not None and r.score.value == 0.25 for r in rows):
        out.append("compensated: no letter counted 0.25 (result.py's default is off)")
    unfit = sum(1 for r in rows if r.generation.status in UNFIT)
    if unfit:
        out.append(f"{unfit} questions did not fit the model even cut and were left out")
    failed = sum(1 for r in rows if r.generation.status not in (*SCORABLE, *UNFIT))
    if failed:
        out.append(f"{failed} requests failed (they count 0; pred.py drops empty answers)")
    return out


__all__ = ["QUESTIONS", "UNFIT", "leaderboard_differences", "longbench_v2_summary", "official_line"]
