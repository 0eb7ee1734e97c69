"""LongCtx: 20 synthetic tasks over 5 tiers (the fixed preset), or any lengths x depths x types grid."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from longscope.errors import UsageError
from longscope.params import Param
from longscope.suites.base import BuildContext, PromptTemplate, ScoredRow, Suite
from longscope.suites.longctx.grading import MAX_POINTS, grade
from longscope.suites.longctx.tasks import TASK_TYPES, TASKS, TASKS_BY_ID, TIERS, TaskSpec
from longscope.summary import Breakdown, Cell, Grid, Headline, Summary, Table, View, length_key
from longscope.text.haystack import FillerPool, Insert, build_haystack
from longscope.types import SCORABLE, Generation, GenerationConfig, Sample, Score

TEMPLATES = {
    "en": PromptTemplate(
        body=(
            "Below is a long document. Read it carefully, then answer the question that follows "
            "it. Answer concisely using only the document.\n\n"
            "Document:\n{context}\n\nQuestion: {question}"
        ),
        answer_prefix="\nAnswer:",
        completion_stop=("\n\n", "\nQuestion:", "\nDocument:"),
    ),
    "zh": PromptTemplate(
        body="下面是一份很长的文档。请仔细阅读，然后只根据文档简洁地回答后面的问题。\n\n文档：\n{context}\n\n问题：{question}",
        answer_prefix="\n答案：",
        completion_stop=("\n\n", "\n问题：", "\n文档："),
    ),
}
# Grid cells reuse these tasks' facts (type -> task) unless told otherwise.
GRID_TASKS = {
    "needle": "LCB-001",
    "position_bias": "LCB-003",
    "multi_fact": "LCB-002",
    "reasoning": "LCB-004",
}
LEVELS = (
    (90, "Excellent Retention"),
    (75, "Strong Retention"),
    (60, "Functional Retention"),
    (40, "Partial Retention"),
    (20, "Limited Retention"),
    (0, "Severe Context Loss"),
)


def level(total: float) -> str:
    """Return the seed's level name for a total out of 100."""
    return next(name for floor, name in LEVELS if total >= floor)


SEAM_TOKENS = 4
"""Kept free where the haystack meets the template: the two are counted apart, and a tokenizer
may merge or split one or two tokens differently when it reads them joined (SmolLM2's chat
template read 3,897 tokens for a prompt counted as 3,896)."""


@dataclass(frozen=True)
class GridSpec:
    """Any lengths x depths x task types, built by the same code as the fixed 20."""

    lengths: tuple[int, ...]
    depths: tuple[float, ...]
    types: tuple[str, ...]


class LongCtxSuite(Suite):
    """The LongCtx benchmark (docs/benchmarks/longctx.md)."""

    name = "longctx"
    title = "LongCtx"
    DESCRIPTION = (
        "LongCtx: 20 synthetic tasks (needle, position bias, multi-fact, reasoning), 4K-128K"
    )
    OPTIONS = (
        Param(
            "tiers",
            "ints",
            (1, 2, 3, 4, 5),
            "the fixed 20 tasks' tiers (1=4K 2=16K 3=32K 4=64K 5=128K)",
            choices=(),
        ),
        Param(
            "lengths",
            "lengths",
            (),
            "grid mode: any context lengths, e.g. 2k,4k,8k (replaces the tiers)",
        ),
        Param(
            "depths",
            "depths",
            (0.1, 0.3, 0.5, 0.7, 0.9),
            "grid mode: needle depths, fractions or percents",
        ),
        Param("types", "strs", ("needle",), "grid mode: task types", choices=TASK_TYPES),
        Param("language", "choice", "en", "prompts, documents and answers", choices=("en", "zh")),
        Param("seed", "int", 0, "filler text (also the run's --seed)", low=0),
    )
    default_repeats = 1
    version = "longctx-1"
    default_config = GenerationConfig(max_tokens=200, temperature=0.0)

    def __init__(
        self,
        *,
        tiers: Sequence[int],
        lengths: Sequence[int],
        depths: Sequence[float],
        types: Sequence[str],
        language: str,
        seed: int,
    ) -> None:
        """Any `lengths` make a grid (lengths x depths x task types); none, the fixed 20 tasks
        of `tiers`."""
        bad = [t for t in tiers if t not in TIERS]
        if bad:
            raise ValueError(f"unknown LongCtx tier(s) {bad}: tiers are 1-5 ({_tier_names()})")
        if language not in TEMPLATES:
            raise ValueError(f"unknown language {language!r}: use en or zh")
        grid = GridSpec(tuple(lengths), tuple(depths), tuple(types)) if lengths else None
        if grid is not None:
            unknown = [t for t in grid.types if t not in TASK_TYPES]
            if unknown or any(not 0 <= d <= 1 for d in grid.depths):
                raise ValueError(
                    f"bad grid: types must be among {', '.join(TASK_TYPES)} and depths in 0..1"
                )
        self.tiers = tuple(sorted(set(tiers)))
        self.language = language
        self.seed = seed
        self.grid = grid
        self.template = TEMPLATES[language]

    @classmethod
    def from_options(cls, values: dict[str, Any]) -> LongCtxSuite:
        """Build from complete `-S` values: depths and types belong to grid mode (lengths)."""
        default = cls.completed({})
        changed = {k for k in ("depths", "types", "tiers") if values[k] != default[k]}
        if not values["lengths"] and changed & {"depths", "types"}:
            raise ValueError("-S depths and -S types need -S lengths (grid mode)")
        if values["lengths"] and "tiers" in changed:
            raise ValueError("-S tiers is the fixed preset, -S lengths the grid: give one")
        return cls.from_params(values)

    def prepare(self) -> None:
        """Nothing to load: LongCtx generates its data."""

    def params(self) -> dict[str, Any]:
        base: dict[str, Any] = {"language": self.language, "seed": self.seed}
        if self.grid is None:
            return {**base, "preset": "fixed20", "tiers": list(self.tiers)}
        return {
            **base,
            "preset": "grid",
            "lengths": list(self.grid.lengths),
            "depths": list(self.grid.depths),
            "types": list(self.grid.types),
        }

    def _cells(self) -> list[tuple[str, TaskSpec, int, float | None]]:
        """Return (sample id, task, length, depth override) for every sample."""
        if self.grid is None:
            return [(t.id, t, t.tokens, None) for t in TASKS if t.tier in self.tiers]
        cells = []
        for kind in self.grid.types:
            task = TASKS_BY_ID[GRID_TASKS[kind]]
            # Only single-needle tasks move with depth; multi-fact and reasoning keep their layout.
            depths = self.grid.depths if len(task.facts) == 1 else (None,)
            for length in self.grid.lengths:
                for depth in depths:
                    where = f"d{round(depth * 100):03d}" if depth is not None else "native"
                    cells.append((f"{kind}-{length}-{where}", task, length, depth))
        return cells

    def build(self, ctx: BuildContext) -> list[Sample]:
        pool = FillerPool(ctx.tokenizer, self.language, self.seed)
        lang = self.language
        samples = []
        for sample_id, task, length, depth in self._cells():
            question = task.question[lang]
            prompt, messages = self.template.render(
                Sample("probe", "probe", lang, "", question, ()), ctx.prompt_mode
            )
            # The template, question and BOS are counted; a chat template's role markers are
            # counted when the backend knows its template (local GGUF), else covered by a margin
            # that is not reported as sent (a server's template is unknown to us).
            fit = ctx.fit(prompt or messages[0].content)
            counted, overhead = fit.counted, fit.reserved
            budget = length - overhead - ctx.config.max_tokens - SEAM_TOKENS
            inserts = [
                Insert(getattr(fact, lang), fact.depth if depth is None else depth)
                for fact in task.facts
            ]
            if ctx.context_length is not None and length > ctx.context_length:
                # The runner skips it unsent (it cannot fit): no haystack is built for it.
                samples.append(_unbuilt(sample_id, task, lang, question, length, inserts, self))
                continue
            try:
                hay = build_haystack(pool, budget, inserts)
            except ValueError as exc:  # the output budget leaves the facts no room
                raise UsageError(
                    f"length {length} cannot hold the task's facts with an output budget of "
                    f"{ctx.config.max_tokens} tokens ({exc}): use a smaller --max-tokens or longer "
                    "lengths"
                ) from None
            samples.append(
                Sample(
                    id=sample_id,
                    task=task.type,
                    language=lang,
                    context=hay.text,
                    question=question,
                    gold=(task.answer[lang],),
                    length=length,
                    prompt_tokens=hay.tokens + counted,
                    meta={
                        "task_id": task.id,
                        "tier": task.tier if self.grid is None else None,
                        "context_tokens": hay.tokens,
                        "depths": [p.depth for p in hay.inserts],
                        "actual_depths": [p.actual_depth for p in hay.inserts],
                        "depth": round(mean(p.depth for p in hay.inserts), 4),
                    },
                )
            )
        return samples

    def score(self, sample: dict[str, Any], generation: Generation) -> Score:
        task = TASKS_BY_ID[sample["meta"]["task_id"]]
        return grade(task, generation.text, sample["language"])

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        return longctx_summary(summarize_longctx(rows), rows)


def _unbuilt(
    sample_id: str,
    task: Any,
    lang: str,
    question: str,
    length: int,
    inserts: list[Insert],
    suite: Any,
) -> Sample:
    """Return the cell of a sample too long for the model, without its context (never sent)."""
    depths = [i.depth for i in inserts]
    return Sample(
        id=sample_id,
        task=task.type,
        language=lang,
        context="",
        question=question,
        gold=(task.answer[lang],),
        length=length,
        meta={
            "task_id": task.id,
            "tier": task.tier if suite.grid is None else None,
            "context_tokens": 0,
            "depths": depths,
            "actual_depths": [],
            "depth": round(mean(depths), 4),
        },
    )


def _tier_names() -> str:
    return ", ".join(f"{n}={tokens // 1024}K" for n, tokens in TIERS.items())


def summarize_longctx(rows: Sequence[ScoredRow]) -> dict[str, Any]:
    """Total /100 with its level, per tier, per type, per depth, per length, and status counts.

    Each sample's points are the mean over its repeats; a generation that is not scorable (skipped,
    overflow, timeout, error) counts 0. The raw total keeps reasoning penalties; the total floors at 0.
    """
    by_sample: dict[str, list[float]] = defaultdict(list)
    samples: dict[str, dict[str, Any]] = {}
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: dict[str, str] = {}
    for row in rows:
        sid = row.sample["id"]
        samples[sid] = row.sample
        status = row.generation.status
        statuses[sid][status] += 1
        if status not in SCORABLE and row.generation.error:
            reasons[sid] = row.generation.error
        scorable = status in SCORABLE and row.score is not None
        by_sample[sid].append(row.score.value if scorable and row.score else 0.0)
    points = {sid: mean(values) for sid, values in by_sample.items()}

    def group(key: str) -> dict[str, dict[str, float]]:
        out: dict[str, list[float]] = defaultdict(list)
        for sid, value in points.items():
            out[str(_group_value(samples[sid], key))].append(value)
        return {
            k: {
                "points": round(sum(v), 3),
                "max": MAX_POINTS * len(v),
                "percent": round(100 * max(0.0, sum(v)) / (MAX_POINTS * len(v)), 1),
                "n": len(v),
            }
            for k, v in sorted(out.items(), key=lambda kv: length_key(kv[0]))
        }

    raw = sum(points.values())
    max_points = MAX_POINTS * len(points)
    # The level is read from the total as shown: 5/3-point facts sum to 89.999999 where a person
    # adds up 90, and "90.0 Strong Retention" would contradict itself.
    total = round(100 * max(0.0, raw) / max_points, 2) if max_points else 0.0
    heatmap: dict[str, dict[str, float]] = defaultdict(dict)
    for sid, value in points.items():
        s = samples[sid]
        if s["task"] in ("needle", "position_bias"):
            heatmap[str(s["length"])][f"{round(s['meta']['depth'] * 100)}%"] = round(
                100 * max(0.0, value) / MAX_POINTS, 1
            )
    status_counts = Counter()
    for counter in statuses.values():
        status_counts.update(counter)
    return {
        "total": total,
        "raw_points": round(raw, 3),
        "max_points": max_points,
        "level": level(total),
        "samples": len(points),
        "by_tier": group("tier"),
        "by_length": group("length"),
        "by_type": group("task"),
        "by_depth": {k: v for k, v in group("depth_pct").items() if k != "None"},
        "heatmap": dict(heatmap),
        "statuses": dict(status_counts),
        "per_sample": {
            sid: {
                "task": samples[sid]["task"],
                "length": samples[sid]["length"],
                "points": round(points[sid], 3),
                "statuses": dict(statuses[sid]),
                **({"reason": reasons[sid]} if sid in reasons else {}),
            }
            for sid in sorted(points, key=length_key)
        },
    }


def _cells(groups: dict[str, dict[str, Any]]) -> dict[str, Cell]:
    return {k: Cell(v["percent"], v["n"], v["points"], v["max"]) for k, v in groups.items()}


def longctx_summary(native: dict[str, Any], rows: Sequence[ScoredRow]) -> Summary:
    """The typed summary of LongCtx's own (`native`): total and level, breakdowns, heatmap."""
    scored = bool(native["per_sample"])
    total = native["total"] if scored else None
    by_type_length: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in native["per_sample"].values():
        by_type_length[row["task"]][int(row["length"])].append(row["points"])
    curves = {
        kind: {
            n: round(100 * max(0.0, sum(v)) / (MAX_POINTS * len(v)), 1)
            for n, v in sorted(by_length.items())
        }
        for kind, by_length in sorted(by_type_length.items())
    }
    if len({n for c in curves.values() for n in c}) < 2:
        curves = {}
    breakdowns = []
    if any(k != "None" for k in native["by_tier"]):
        breakdowns.append(Breakdown("tier", "By tier", _cells(native["by_tier"])))
    breakdowns.append(Breakdown("length", "By length (tokens)", _cells(native["by_length"])))
    breakdowns.append(
        Breakdown("type", "By task type", _cells(native["by_type"]), compare=True, plot=True)
    )
    if native["by_depth"]:
        breakdowns.append(
            Breakdown("depth", "Needle depth (position bias)", _cells(native["by_depth"]))
        )
    heat = native["heatmap"]
    grids = ()
    if len(heat) > 1 or any(len(v) > 1 for v in heat.values()):
        ordered = {k: heat[k] for k in sorted(heat, key=int)}
        grids = (Grid("Needle score % (length x depth)", "length", "depth", ordered),)
    per_task = Table(
        "Per task",
        ("id", "type", "length", "points", "status", "reason"),
        tuple(
            (
                sid,
                row["task"],
                str(row["length"]),
                f"{row['points']:g}",
                ", ".join(f"{k} {v}" if v > 1 else k for k, v in row["statuses"].items()),
                row.get("reason", ""),
            )
            for sid, row in native["per_sample"].items()
        ),
    )
    view = View(
        headline=Headline(
            "total",
            total,
            scale="/100",
            digits=1,
            level=native["level"] if scored else None,
            note=f"raw points {native['raw_points']:g} of {native['max_points']:g}",
        ),
        overall=total,
        by_length={int(k): v["percent"] for k, v in native["by_length"].items()},
        curves=curves,
        breakdowns=tuple(breakdowns),
        grids=grids,
        tables=(per_task,),
        facts=(("raw points", f"{native['raw_points']:g} of {native['max_points']:g}"),),
    )
    return Summary(suite="longctx", title="LongCtx", views=(view,), native=native)


def _group_value(sample: dict[str, Any], key: str) -> Any:
    if key == "tier":
        return sample["meta"].get("tier")
    if key == "depth_pct":
        if sample["task"] not in ("needle", "position_bias"):
            return None
        return f"{round(sample['meta']['depth'] * 100)}%"
    return sample[key]
