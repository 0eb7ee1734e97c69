"""100-LongBench: length-controllable contexts from real documents, and LongScore.

The synthetic tasks (kv_retrieval, counting_stars, passage_count) run on the embedded default pool.
passage_retrieval needs a summary per document, which the default pool does not have: its source is
a summarisation set (LongBench v1 gov_report rows), whose other documents are its distractors. The
QA and summary tasks need a real source (LongBench v1 rows) and are scored with the deterministic
metrics (token F1, ROUGE-L) or, with `metric="judge"`, by the verdicts that `longscope.run.judge`
stores beside the generations.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from longscope.analysis.longscore import DEFAULT_BASE_LENGTHS
from longscope.errors import UsageError
from longscope.params import Param
from longscope.suites.base import BuildContext, ScoredRow, Suite
from longscope.suites.hundred import judging
from longscope.suites.hundred.pool import DEFAULT_POOL, WRAP, CountedPool, Document, load_pool
from longscope.suites.hundred.prompts import NO_CONTEXT, HundredTemplate
from longscope.suites.hundred.scoring import grade, score_answer
from longscope.suites.hundred.sources import (
    QA_TASKS,
    SUM_TASKS,
    Source,
    load_source,
    split_documents,
)
from longscope.suites.hundred.summary import hundred_summary, summarize_hundred
from longscope.suites.hundred.tasks import (
    ALL_TASKS,
    ONE_GOLD,
    REAL_TASKS,
    RETRIEVAL_TASK,
    SLACK,
    SYNTHETIC_TASKS,
    fill,
    real_question,
    repeated,
    star_options,
    task_parts,
)
from longscope.summary import Summary
from longscope.types import Generation, GenerationConfig, Judgement, JudgeTask, Sample, Score

__all__ = [
    "ALL_TASKS",
    "REAL_TASKS",
    "SYNTHETIC_TASKS",
    "HundredSuite",
    "fill",
    "grade",
    "hundred_summary",
    "star_options",
    "summarize_hundred",
]


class HundredSuite(Suite):
    """100-LongBench (arXiv 2025; docs/benchmarks/100-longbench.md): the synthetic tasks."""

    name = "hundred"
    # hundred-2: prompts count BOS and a known chat template (the lengths of hundred-1 differ).
    # hundred-3: the ground-truth sentences stand in the context in their order (counting_stars'
    # true list was the order drawn, not the order read).
    # hundred-4: the authors' prompt per task (prompts.py), their counting_stars options
    # ("unanswerable" first), ground-truth sentences as paragraphs of their own before a passage,
    # multi-document golds in random order among themselves.
    version = "hundred-4"
    title = "100-LongBench"
    DESCRIPTION = "100-LongBench: length-controllable real contexts, 8 tasks, QA filter, LongScore"
    OPTIONS = (
        Param("tasks", "strs", SYNTHETIC_TASKS, "tasks", choices=ALL_TASKS),
        Param("lengths", "lengths", (2048, 4096, 6144, 8192, 16384), "target context lengths"),
        Param("samples", "int", 10, "samples per task and length", low=1),
        Param("seed", "int", 0, "document choice and order (also the run's --seed)", low=0),
        Param(
            "pool",
            "str",
            DEFAULT_POOL,
            "document pool: pydoc (embedded) or a JSONL file of {id, context} rows",
        ),
        Param(
            "source",
            "pairs",
            {},
            "source of passage_retrieval and the QA/summary tasks, "
            "repeatable: TASK=FILE.jsonl (LongBench v1 rows or {id, context, answers}) or "
            "TASK=hub:NAME[:CONFIG]",
        ),
        Param(
            "metric",
            "choice",
            "deterministic",
            "QA/summary metric: deterministic (token F1, "
            "ROUGE-L) or judge (an LLM judge: run --judge-model, or `longscope judge`)",
            choices=("deterministic", "judge"),
            scoring=True,
        ),
        Param(
            "qa_filter",
            "float",
            0.5,
            "drop QA samples answered this well with no context",
            low=0.0,
            high=1.0,
            scoring=True,
        ),
    )
    default_repeats = 1
    default_config = GenerationConfig(max_tokens=64, temperature=0.0)
    template = HundredTemplate(completion_stop=("\n\n", "\nQuestion:"))

    base_lengths: tuple[int, ...] = DEFAULT_BASE_LENGTHS
    """The lengths LongScore's base ability averages (the paper's)."""

    def __init__(
        self,
        *,
        tasks: Sequence[str],
        lengths: Sequence[int],
        samples: int,
        seed: int,
        pool: str,
        source: dict[str, str],
        metric: str,
        qa_filter: float,
    ) -> None:
        if metric not in ("deterministic", "judge"):
            raise ValueError(f"unknown metric {metric!r}: use deterministic or judge")
        unknown = [t for t in tasks if t not in ALL_TASKS]
        if unknown or not tasks:
            raise ValueError(f"unknown task(s) {unknown}: use {', '.join(ALL_TASKS)}")
        sources = dict(source)
        if "passage_retrieval" in tasks and "passage_retrieval" not in sources:
            raise ValueError(
                "passage_retrieval needs a summary per document, which the default pydoc pool does "
                "not have: pass -S source=passage_retrieval=FILE.jsonl with rows whose answers "
                "summarise their context (LongBench v1 gov_report, or {id, context, answers})"
            )
        missing = [t for t in tasks if t in REAL_TASKS and t not in sources]
        if missing:
            raise ValueError(
                f"task(s) {', '.join(missing)} need a real source: pass -S source=TASK=FILE.jsonl with "
                "LongBench v1 rows (input, context, answers), e.g. qasper or hotpotqa for QA, "
                "gov_report or multi_news for summaries"
            )
        unused = [t for t in sources if t not in (RETRIEVAL_TASK, *REAL_TASKS)]
        if unused:
            raise ValueError(
                f"-S source is for passage_retrieval and the QA/summary tasks, not {', '.join(unused)}"
            )
        self.sources = {t: p for t, p in sources.items() if t in tasks}
        self.metric = metric
        self.qa_filter = qa_filter
        self.tasks = tuple(tasks)
        self.lengths = tuple(sorted(set(lengths)))
        self.samples = samples
        self.seed = seed
        self.pool = pool
        self._source_pools: dict[tuple[str, str], CountedPool] = {}
        self._loaded_sources: dict[str, Source] = {}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> HundredSuite:
        """Build from stored params (`params()`, which keeps `-S source` as `sources`) or typed
        `-S` values."""
        source = params.get("sources") or params.get("source")
        return cls(**cls.completed({**params, "source": source}))

    def params(self) -> dict[str, Any]:
        return {
            "tasks": list(self.tasks),
            "lengths": list(self.lengths),
            "samples": self.samples,
            "seed": self.seed,
            "pool": self.pool,
            "sources": {t: str(p) for t, p in sorted(self.sources.items())},
            "metric": self.metric,
            "qa_filter": self.qa_filter,
        }

    def prepare(self) -> None:
        load_pool(self.pool)
        self._load_sources()

    def _load_sources(self) -> dict[str, Source]:
        """Each source once per suite: a Hub source is a download, a file a full validation."""
        for task, spec in self.sources.items():
            if task not in self._loaded_sources:
                self._loaded_sources[task] = load_source(spec)
        return self._loaded_sources

    def samples_at_least(self) -> int:
        """Return the samples of the grid (task x length x samples), before the QA filter's."""
        return len(self.tasks) * len(self.lengths) * self.samples

    def build(self, ctx: BuildContext) -> list[Sample]:
        documents, source_id = load_pool(self.pool)
        pool = CountedPool(documents, source_id, ctx.tokenizer)
        sources = self._load_sources()
        out = []
        for task in self.tasks:
            for length in self.lengths:
                for row in range(self.samples):
                    if task in sources:
                        out.append(self._real_sample(task, length, row, pool, sources[task], ctx))
                    else:
                        out.append(self._sample(task, length, row, pool, ctx))
        # The QA filter: each QA question once more with no context at all.
        asked: set[tuple[str, str]] = set()
        for sample in list(out):
            key = (sample.task, sample.meta.get("source_row", ""))
            if sample.task in QA_TASKS and key not in asked:
                asked.add(key)
                out.append(self._no_context(sample, ctx))
        return out

    def _prompt_tokens(self, task: str, context: str, question: str, ctx: BuildContext) -> int:
        """Return the tokens of the prompt as it will be sent (template, context, question)."""
        prompt, messages = self.template.render(
            Sample("probe", task, "English", context, question, ()), ctx.prompt_mode
        )
        return len(ctx.tokenizer.encode(prompt or messages[0].content))

    def _sent(
        self,
        task: str,
        pieces: Sequence[tuple[str, int | None]],
        question: str,
        pool: CountedPool,
        ctx: BuildContext,
        additive: bool | None = None,
        before: dict[int, str] | None = None,
    ) -> tuple[str, int]:
        """Return the context of `pieces` (text, body tokens or None) and the prompt's exact length.

        `before` holds paragraphs that stand before a passage's header (by position). With an
        additive pool the length is the sum of the cached passage counts, and only the first and
        last passages (where they meet the template) and passages with paragraphs before them or
        edited are tokenized.
        """
        before = before or {}
        wrapped = [
            before.get(i, "") + WRAP.format(index=i + 1, text=text)
            for i, (text, _) in enumerate(pieces)
        ]
        context = "".join(wrapped)
        if not (pool.additive if additive is None else additive) or len(pieces) < 2:
            return context, self._prompt_tokens(task, context, question, ctx)
        encode = ctx.tokenizer.encode
        probe = Sample("probe", task, "English", "", question, ())
        frame = self.template.parts(probe, ctx.prompt_mode)
        head, tail = frame.head, frame.tail
        total = len(encode(head + wrapped[0])) + len(encode(wrapped[-1] + tail))
        for i in range(1, len(pieces) - 1):
            body = pieces[i][1]
            counted = body is not None and i not in before
            total += pool.header(i + 1) + body if counted else len(encode(wrapped[i]))
        return context, total

    def _real_sample(
        self,
        task: str,
        length: int,
        row: int,
        pool: CountedPool,
        source: Source,
        ctx: BuildContext,
    ) -> Sample:
        """A sample around real document(s): the gold among distractors, named by position.

        passage_retrieval draws its distractors from the other documents of its own source first
        (same domain, so the summary must tell them apart), then from the pool.
        """
        rng = random.Random(f"{self.seed}:{task}:{length}:{row}")
        order = list(range(len(source.rows)))
        rng.shuffle(order)
        for index in order:
            picked = source.rows[index]
            golds = [picked.context] if task in ONE_GOLD else split_documents(picked.context)
            probe = real_question(task, picked, [999, 998, 997][: len(golds)])
            gold_tokens = sum(
                len(ctx.tokenizer.encode(WRAP.format(index=999, text=d))) for d in golds
            )
            frame = ctx.fit("").reserved  # BOS, or the chat template's tokens
            budget = (
                length - self._prompt_tokens(task, "", probe, ctx) - frame - SLACK - gold_tokens
            )
            if budget >= 0:
                break
        else:
            raise UsageError(f"no {task} source row fits in {length} tokens: use longer lengths")
        pieces: list[tuple[str, int | None]] = []
        additive = pool.additive
        if task == RETRIEVAL_TASK:
            same = self._source_pool(source, ctx)
            additive = additive and same.additive
            chosen = fill(rng, same.counts, budget, exclude={index})
            pieces += [(same.documents[i].text, same.bodies[i]) for i in chosen]
            budget -= sum(same.counts[i] for i in chosen)
        from_source = len(pieces)
        pieces += [(pool.documents[i].text, pool.bodies[i]) for i in fill(rng, pool.counts, budget)]
        if from_source:
            rng.shuffle(pieces)
        # The golds of a multi-document row stand in random order among themselves too.
        rng.shuffle(golds)
        places = sorted(rng.sample(range(len(pieces) + len(golds)), len(golds)))
        for where, text in zip(places, golds, strict=True):
            pieces.insert(where, (text, None))
        gold_passages = [where + 1 for where in places]
        question = real_question(task, picked, gold_passages)
        context, achieved = self._sent(task, pieces, question, pool, ctx, additive)
        # Summaries need room to be written; the user's --max-tokens wins over it.
        max_tokens = ctx.output_budget(256 if task in SUM_TASKS else ctx.config.max_tokens)
        if task == RETRIEVAL_TASK:
            gold = (str(gold_passages[0]),)
            metric = {"answer": gold[0], "source_distractors": from_source}
        else:
            gold = tuple(picked.answers)
            metric = {"metric": "rouge_l" if task in SUM_TASKS else "f1"}
        meta = {
            **metric,
            "source_row": picked.id or str(index),
            "question_text": picked.input,
            "gold_passages": gold_passages,
        }
        return _sample(
            task, length, row, context, question, gold, achieved, len(pieces), meta, ctx, max_tokens
        )

    def _source_pool(self, source: Source, ctx: BuildContext) -> CountedPool:
        """A source's own documents as a counted pool (counts cached on disk like any pool)."""
        key = (source.identity, ctx.tokenizer.name)
        if key not in self._source_pools:
            documents = [Document(r.id or str(i), r.context) for i, r in enumerate(source.rows)]
            self._source_pools[key] = CountedPool(documents, source.identity, ctx.tokenizer)
        return self._source_pools[key]

    def _no_context(self, sample: Sample, ctx: BuildContext) -> Sample:
        question = sample.meta["question_text"]
        return Sample(
            f"{sample.task}-nocontext-{sample.meta['source_row']}",
            sample.task,
            "English",
            "",
            question,
            sample.gold,
            length=0,
            max_tokens=ctx.config.max_tokens,
            meta={
                "metric": "f1",
                NO_CONTEXT: True,
                "source_row": sample.meta["source_row"],
                "target_length": 0,
                "achieved_length": 0,
            },
        )

    def _sample(
        self, task: str, length: int, row: int, pool: CountedPool, ctx: BuildContext
    ) -> Sample:
        # Each sample depends on (seed, task, length, row) alone.
        rng = random.Random(f"{self.seed}:{task}:{length}:{row}")
        question, inserts, meta = task_parts(task, rng)
        overhead = (
            self._prompt_tokens(task, "", question, ctx)
            + ctx.fit("").reserved  # BOS, or the chat template's tokens
            + sum(len(ctx.tokenizer.encode(_paragraph(s))) for s in inserts)
        )
        budget = length - overhead - SLACK
        if pool.total_tokens < budget:
            raise UsageError(
                f"the {self.pool} pool holds {pool.total_tokens} tokens, too few for {length}-token "
                "contexts without repeating documents: give a larger pool (-S pool=FILE.jsonl)"
            )
        if task == "passage_count":
            pieces = repeated(rng, pool, budget, meta)
        else:
            pieces = [
                (pool.documents[i].text, pool.bodies[i]) for i in fill(rng, pool.counts, budget)
            ]
        if not pieces:
            raise UsageError(
                f"{length} tokens leave no room for a single document: use a longer length"
            )
        before: dict[int, str] = {}
        if task != "passage_count":
            rng.shuffle(pieces)
            # Ground-truth sentences go before randomly chosen passages (distinct ones when there
            # are enough; short contexts hold fewer passages than sentences), in their order:
            # counting_stars' true list is the counts as the context tells them, first to last.
            # Each is a paragraph of its own before the passage's header, as the reference has it.
            if len(pieces) >= len(inserts):
                places = sorted(rng.sample(range(len(pieces)), len(inserts)))
            else:
                places = sorted(rng.randrange(len(pieces)) for _ in inserts)
            for sentence, where in zip(inserts, places, strict=True):
                before[where] = before.get(where, "") + _paragraph(sentence)
        context, achieved = self._sent(task, pieces, question, pool, ctx, before=before)
        gold = (str(meta["answer"]),)
        return _sample(
            task,
            length,
            row,
            context,
            question,
            gold,
            achieved,
            len(pieces),
            meta,
            ctx,
            ctx.config.max_tokens,
        )

    JUDGED = True

    @property  # type: ignore[override]
    def needs_judge(self) -> bool:
        """With `metric=judge` the QA and summary answers are scored by an LLM judge's verdicts."""
        return self.metric == "judge"

    @staticmethod
    def judge_task(sample: dict[str, Any], generation: Generation) -> JudgeTask | None:
        return judging.judge_task(sample, generation)

    @staticmethod
    def parse_verdict(kind: str, text: str) -> float | None:
        return judging.parse_verdict(kind, text)

    def grid_length(self, sample: Sample) -> int:
        """Return the sample's target length (its by-length curve's column); 0 for a no-context
        base sample, which no length holds."""
        return int(sample.meta.get("target_length") or 0)

    def score(
        self, sample: dict[str, Any], generation: Generation, judgement: Judgement | None = None
    ) -> Score:
        return score_answer(sample, generation.text, self.metric, judgement)

    def cluster_key(self, sample: dict[str, Any]) -> str:  # type: ignore[override]
        """The source question (task and row), asked at every length."""
        return f"{sample['task']}:{sample['meta'].get('source_row', sample['id'])}"

    def summarize(self, rows: Sequence[ScoredRow]) -> Summary:
        native = {
            "metric": self.metric,
            **summarize_hundred(rows, self.base_lengths, self.qa_filter),
        }
        return hundred_summary(native)


def _paragraph(sentence: str) -> str:
    """A ground-truth sentence as the paragraph it stands in, before a passage's header."""
    return f"{sentence}\n\n"


def _sample(
    task: str,
    length: int,
    row: int,
    context: str,
    question: str,
    gold: tuple[str, ...],
    achieved: int,
    passages: int,
    meta: dict[str, Any],
    ctx: BuildContext,
    max_tokens: int,
) -> Sample:
    """A sample with the lengths every task records: target, achieved (all that is sent), answer.

    `achieved` counts the rendered prompt; BOS or the chat template's tokens are added as every
    suite counts them (`prompt_fit`), and a margin for an uncounted template reserved in `length`.
    """
    frame = ctx.fit("")
    sent = achieved + frame.counted
    return Sample(
        f"{task}-{length}-{row:03d}",
        task,
        "English",
        context,
        question,
        gold,
        length=sent + frame.margin + max_tokens,
        max_tokens=max_tokens,
        prompt_tokens=sent,
        meta={
            **meta,
            "target_length": length,
            "achieved_length": sent,
            "passages": passages,
        },
    )
