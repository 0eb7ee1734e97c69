"""`run SUITE --adaptive`: measure effective length with as few requests as the answer needs.

The driver works through what every suite built by cells declares: its cells (one task at one
length, samples in index order), its `score`, and the ordinary store. A suite built whole is seen as
one cell per grid length (`PreparedRun.by_cells`: its samples in a fixed pseudo-random order). Each look is an ordinary run
of the same identity with a per-cell count: the first `n` samples of every task at one length, so
the tasks stay balanced (`analysis.adaptive`'s rounds); everything is stored, resumed, scored and
reported like any run. The decision is a pure function of the stored rows: the driver replays the
looks from the first, taking the rounds each one asked for from the store while the store holds
them, so a run interrupted at any point resumes to the same decision. What was decided, at what
confidence, and what it cost against the full grid is written to `adaptive.json` in the run
directory (atomically) and read by `profile`. The cost is tokens and time (run/adaptive_time.py:
what the requests took, and the full grid's time estimated as `plan` estimates it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from longscope.analysis.adaptive import (
    DEFAULT_CONFIDENCE,
    SINGLE_SAMPLE_METHOD,
    Decision,
    Forecast,
    Method,
    Rule,
    RuleKind,
    decide,
    forecast,
    synthetic_curves,
)
from longscope.analysis.effective import RULER_THRESHOLD
from longscope.errors import UsageError
from longscope.files import write_atomic
from longscope.models.base import Backend
from longscope.run.adaptive_record import ADAPTIVE_NAME
from longscope.run.adaptive_record import adaptive_of as adaptive_of
from longscope.run.adaptive_record import adaptive_state as adaptive_state
from longscope.run.adaptive_record import drop_stale_record as drop_stale_record
from longscope.run.adaptive_record import read_adaptive as read_adaptive
from longscope.run.adaptive_time import SentRequest, Timing, describe_time, timing_of
from longscope.run.plan import Plan, Rates, format_duration, probe_rates
from longscope.run.prepared import PlannedCell, PreparedRun, RunOptions
from longscope.run.runner import RunResult, default_run_dir, run_prepared
from longscope.run.scoring import ScoreResult, score_run
from longscope.run.spec import RunSpec
from longscope.run.store import STORE_NAME, RunStore
from longscope.suites.base import Suite
from longscope.types import SCORABLE, Generation, Sample


@dataclass(frozen=True)
class AdaptiveSpec:
    """How an adaptive run decides: the rule, the confidence, an optional token budget."""

    confidence: float = DEFAULT_CONFIDENCE
    rule: RuleKind = "absolute"
    threshold: float = RULER_THRESHOLD
    fraction: float = 0.9
    budget_tokens: int | None = None
    """Prompt tokens the run may send in all (None: until decided)."""
    method: Method = "asymptotic"

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1.0:
            raise UsageError(
                f"bad --confidence {self.confidence!r}: use a level from 0.5 to below 1, e.g. 0.95"
            )
        if self.rule not in ("absolute", "relative"):
            raise UsageError(f"bad --adaptive-rule {self.rule!r}: use absolute or relative")
        if not 0.0 < self.threshold <= 100.0:
            raise UsageError(f"bad threshold {self.threshold!r}: a score from 0 to 100")
        if not 0.0 < self.fraction <= 1.0:
            raise UsageError(f"bad fraction {self.fraction!r}: from 0 to 1")
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise UsageError(f"bad --budget-tokens {self.budget_tokens!r}: a positive count")

    @property
    def decision_rule(self) -> Rule:
        """Return the rule `analysis.adaptive` decides."""
        return Rule(self.rule, self.threshold, self.fraction)


@dataclass(frozen=True)
class AdaptiveResult:
    """An adaptive run: its decision, what it sent against the full grid, and the stored run."""

    decision: Decision
    stopped: str
    """`decided`, `budget` (the token budget would be passed) or `stalled` (requests failing)."""
    looks: int
    """Looks sent by this invocation."""
    sent_requests: int
    grid_requests: int
    sent_tokens: int
    grid_tokens: int
    run_id: str
    run_dir: Path
    scores: ScoreResult
    method: Method = "asymptotic"
    stored_samples: int = 0
    """Samples the store held for the run when the record was written: a record whose run holds
    more since (a later full run, a merge) no longer describes it (`adaptive_state`)."""
    timing: Timing | None = None
    """What the requests took and the full grid's estimated time (None: not measured)."""

    def record(self) -> dict[str, Any]:
        """Return what `adaptive.json` holds."""
        d = self.decision
        return {
            "decided": d.decided,
            "stopped": self.stopped,
            "effective": d.effective,
            "effective_tokens": d.tokens,
            "interval": [d.low, d.high],
            "confidence": d.confidence,
            "rule": asdict(d.rule),
            "rule_text": d.rule.describe(),
            "bar": list(d.bar),
            "method": self.method,
            "non_monotone": [list(p) for p in d.non_monotone],
            "lengths": [
                {
                    "length": v.length,
                    "status": v.status,
                    "rounds": v.bounds.rounds,
                    "rounds_full": v.bounds.population,
                    "estimate": None if v.bounds.estimate is None else round(v.bounds.estimate, 2),
                    "low": round(v.bounds.low, 2),
                    "high": round(v.bounds.high, 2),
                }
                for v in d.verdicts
            ],
            "sent_requests": self.sent_requests,
            "grid_requests": self.grid_requests,
            "sent_prompt_tokens": self.sent_tokens,
            "grid_prompt_tokens": self.grid_tokens,
            "run_id": self.run_id,
            "stored_samples": self.stored_samples,
            **(self.timing.record() if self.timing is not None else {}),
        }

    def describe(self) -> str:
        """Return the lines the CLI prints: the decision, its confidence and its cost."""
        return describe_record(self.record())


def describe_record(record: Mapping[str, Any]) -> str:
    """Return an adaptive run's decision and cost as lines of text (from `adaptive.json`)."""
    conf = f"{100 * float(record['confidence']):g}%"
    low, high = record["interval"]
    if record["decided"]:
        head = f"adaptive: effective length {record['effective']} ({record['rule_text']}), "
        head += f"decided at {conf} confidence"
    else:
        why = {"budget": "the token budget is spent", "stalled": "requests keep failing"}.get(
            str(record["stopped"]), str(record["stopped"])
        )
        head = f"adaptive: undecided ({why}): effective length between {low} and {high} "
        head += f"at {conf} confidence ({record['rule_text']})"
    lines = [head]
    for row in record["lengths"]:
        if row["rounds"]:
            lines.append(
                f"  {row['length']}: {row['status']}, score {row['estimate']} "
                f"[{row['low']}, {row['high']}] from {row['rounds']} of {row['rounds_full']} rounds"
            )
        else:
            lines.append(f"  {row['length']}: not measured")
    for fail, passed in record["non_monotone"]:
        lines.append(f"  non-monotone: {fail} surely fails below {passed}, which surely passes")
    unmeasured = [str(row["length"]) for row in record["lengths"] if not row["rounds"]]
    if unmeasured:
        lines.append(
            f"  the tables above cover the measured cells only: {', '.join(unmeasured)} not "
            "measured, so their curve metrics are not the decision"
        )
    grid_tokens = max(1, int(record["grid_prompt_tokens"]))
    lines.append(
        f"cost: {record['sent_requests']:,} of the full grid's {record['grid_requests']:,} "
        f"requests, {record['sent_prompt_tokens']:,} of {record['grid_prompt_tokens']:,} prompt "
        f"tokens ({100 * record['sent_prompt_tokens'] / grid_tokens:.1f}%)"
    )
    time_line = describe_time(record)
    if time_line:
        lines.append(time_line)
    return "\n".join(lines)


class _Grid:
    """The run's cells by length: tasks, full counts, and the ids of their samples by index."""

    def __init__(self, prepared: PreparedRun) -> None:
        self.prepared = prepared
        cells = [p for p in prepared.cells if p.count and not p.cell.skipped]
        if not cells or any(p.cell.length <= 0 for p in cells):
            raise UsageError(
                f"{prepared.suite.name} has a cell at no length (0 tokens): --adaptive measures "
                "lengths of one or more tokens; leave that length out (-S lengths=...)"
            )
        self.by_length: dict[int, list[PlannedCell]] = {}
        for p in cells:
            self.by_length.setdefault(p.cell.length, []).append(p)
        if len(self.by_length) < 1:
            raise UsageError(f"{prepared.suite.name}: no length to measure")
        self.lengths = sorted(self.by_length)
        self.populations = {n: min(p.count for p in c) for n, c in self.by_length.items()}
        self._ids: dict[tuple[str, int], list[str]] = {}
        self._lengths: dict[str, int] = {}
        self._made: dict[tuple[str, int], Iterator[Sample]] = {}

    def length_of(self, sample: Mapping[str, Any]) -> int:
        """Return the grid length a stored sample belongs to (its cell's, once its ids are known;
        else its `length`)."""
        return self._lengths.get(str(sample.get("id")), int(sample.get("length") or 0))

    def id_at(self, planned: PlannedCell, index: int) -> str | None:
        """Return the id of sample `index` of one cell (None past its full count): from the
        cell's id format when it has one, else made as pulled, never past what is asked (a suite
        without the format, e.g. NoLiMa, builds only the samples the store holds and one more)."""
        key = (planned.cell.task, planned.cell.length)
        known = self._ids.setdefault(key, [])
        while len(known) <= index < self.populations[planned.cell.length]:
            formatted = planned.cell.sample_id(len(known))
            if formatted is None:
                if key not in self._made:
                    self._made[key] = self.prepared.source.samples(planned.cell, planned.count)
                sample = next(self._made[key], None)
                if sample is None:
                    return None
                formatted = sample.id
            known.append(formatted)
            self._lengths[formatted] = planned.cell.length
        return known[index] if index < len(known) else None

    def rounds(self, values: Mapping[str, float]) -> tuple[dict[int, list[float]], dict[int, int]]:
        """Return each length's complete rounds (equal weights over its tasks, as a mean of task
        means) and how many there are, from each stored sample's value."""
        out: dict[int, list[float]] = {}
        for n, cells in self.by_length.items():
            full = self.populations[n]
            per_task = []
            for planned in cells:
                series: list[float] = []
                while len(series) < full:
                    sample_id = self.id_at(planned, len(series))
                    if sample_id is None or sample_id not in values:
                        break
                    series.append(values[sample_id])
                per_task.append(series)
            count = min(len(s) for s in per_task)
            out[n] = [sum(s[r] for s in per_task) / len(per_task) for r in range(count)]
        return out, {n: len(v) for n, v in out.items()}


def _values(
    run_dir: Path, run_id: str, suite: Suite, repeats: int
) -> tuple[dict[str, float], dict[str, dict[str, Any]], int]:
    """Return each stored sample's value in [0, 1] (mean over its repeats, a failed request 0 as
    the suites count it), the stored samples, and the (sample, repeat) pairs stored final."""
    if not (run_dir / STORE_NAME).is_file():
        return {}, {}, 0
    with RunStore.open_readonly(run_dir) as store:
        if not any(run["run_id"] == run_id for run in store.runs()):
            return {}, {}, 0
        samples = store.samples(run_id)
        done = store.done_keys(run_id)
        stored = [(s, r, g) for s, r, g in store.generations(run_id) if (s, r) in done]
    by_sample: dict[str, list[float]] = {}
    for sample_id, repeat, generation in stored:
        sample = samples.get(sample_id)
        if sample is None or repeat >= repeats:
            continue
        by_sample.setdefault(sample_id, []).append(_value(suite, sample, generation))
    values = {s: sum(v) / len(v) for s, v in by_sample.items() if len(v) == repeats}
    return values, samples, len(stored)


def _value(suite: Suite, sample: dict[str, Any], generation: Generation) -> float:
    if generation.status not in SCORABLE:
        return 0.0
    return float(suite.score(sample, generation).fraction)


def replay(
    rounds: Mapping[int, Sequence[float]],
    grid_lengths: Sequence[int],
    populations: Mapping[int, int],
    spec: AdaptiveSpec,
) -> tuple[Decision, dict[int, int]]:
    """Return the decision the looks reach from the stored rounds, and the rounds they hold.

    The looks are replayed from the first: each asks for a length's first `n` rounds; while the
    store holds them the replay goes on. The result depends only on the stored rounds, never on
    when a run was interrupted.
    """
    held = dict.fromkeys(grid_lengths, 0)
    while True:
        decision = decide(
            {n: list(rounds.get(n, ()))[: held[n]] for n in grid_lengths},
            grid_lengths,
            spec.decision_rule,
            spec.confidence,
            populations,
            spec.method,
        )
        if decision.decided or decision.next_length is None:
            return decision, held
        length, want = decision.next_length, decision.next_rounds
        if len(rounds.get(length, ())) < want:
            return decision, held
        held[length] = want


async def drive(
    prepared: PreparedRun,
    spec: AdaptiveSpec,
    say: Callable[[str], None] = lambda _: None,
    rates: Rates | None = None,
) -> AdaptiveResult:
    """Run the adaptive search on a prepared run until decided, over budget, or stalled; the full
    grid's time is estimated at `rates` (None: at the rates the run's own requests show)."""
    suite, options = prepared.suite, prepared.options
    if suite.JUDGED and suite.needs_judge:
        raise UsageError(f"{suite.name} is scored by a judge: --adaptive needs scores as they come")
    if suite.shard is not None:
        raise UsageError("--adaptive decides from the whole run: it cannot run one --shard")
    # A suite built whole is seen as one cell per length, its samples in a fixed random order.
    regrouped = prepared.by_cells()
    if regrouped is not prepared:
        # Its rounds are single samples: the asymptotic sequence undercovers so few values per
        # round (93.6% of simulated runs gave the full grid's answer at 95%, rounds of one 0/1
        # sample; benchmarks/bench_adaptive.py), the betting one holds at every size.
        spec = replace(spec, method=SINGLE_SAMPLE_METHOD)
    prepared = regrouped
    grid = _Grid(prepared)
    run_dir = Path(options.output or default_run_dir(suite, prepared.backend, prepared.run_id))
    repeats = options.repeats
    looks, last_sent = 0, -1
    stopped = "decided"
    while True:
        values, samples, stored = _values(run_dir, prepared.run_id, suite, repeats)
        rounds, _ = grid.rounds(values)
        decision, _ = replay(rounds, grid.lengths, grid.populations, spec)
        if decision.decided or decision.next_length is None:
            break
        length, want = decision.next_length, decision.next_rounds
        spent = _tokens(samples, grid, repeats)
        extra = _look_tokens(grid, length, want, len(rounds.get(length, ())), samples)
        if spec.budget_tokens is not None and spent + extra > spec.budget_tokens:
            stopped = "budget"
            break
        if stored == last_sent:
            stopped = "stalled"
            break
        last_sent = stored
        say(
            f"adaptive look {looks + 1}: {want} rounds at {length} ({decision.low}..{decision.high})"
        )
        look = prepared.with_counts(lambda cell, n=length, w=want: w if cell.length == n else 0)
        outcome: RunResult = await run_prepared(look, score=False)
        looks += 1
        if outcome.sent == 0 and outcome.skipped == 0:
            stopped = "stalled"
            break
    scores = score_run(run_dir, prepared.run_id)
    sent_requests = sum(1 for s in samples if _in_grid(samples[s], grid)) * repeats
    grid_tokens = _grid_tokens(grid, samples, repeats)
    timing = timing_of(
        _sent_requests(run_dir, prepared.run_id, grid, repeats),
        {n: sum(p.count for p in cells) * repeats for n, cells in grid.by_length.items()},
        grid_tokens,
        rates,
        len(prepared.backend.endpoints) or 1,
    )
    result = AdaptiveResult(
        decision=decision,
        stopped=stopped,
        looks=looks,
        sent_requests=sent_requests,
        grid_requests=sum(p.count for c in grid.by_length.values() for p in c) * repeats,
        sent_tokens=_tokens(samples, grid, repeats),
        grid_tokens=grid_tokens,
        run_id=prepared.run_id,
        run_dir=run_dir,
        scores=scores,
        method=spec.method,
        stored_samples=len(samples),
        timing=timing,
    )
    write_atomic(run_dir / ADAPTIVE_NAME, json.dumps(result.record(), indent=2))
    return result


def _sent_requests(run_dir: Path, run_id: str, grid: _Grid, repeats: int) -> list[SentRequest]:
    """Return the requests of the grid's cells the store holds (not the skipped ones), each with
    its tokens, latency and when it was answered."""
    if not (run_dir / STORE_NAME).is_file():
        return []
    with RunStore.open_readonly(run_dir) as store:
        samples = store.samples(run_id)
        rows = store.generations(run_id)
        answered = store.answer_times(run_id)
    made = []
    for sample_id, repeat, generation in rows:
        sample = samples.get(sample_id)
        if sample is None or repeat >= repeats or generation.status == "skipped":
            continue
        if not _in_grid(sample, grid):
            continue
        made.append(
            SentRequest(
                length=grid.length_of(sample),
                prompt_tokens=generation.prompt_tokens or _prompt_tokens(sample, grid),
                output_tokens=generation.completion_tokens,
                latency_s=max(0.0, generation.latency_s),
                answered=answered.get((sample_id, repeat), 0.0),
                scorable=generation.status in SCORABLE,
            )
        )
    return made


def _in_grid(sample: Mapping[str, Any], grid: _Grid) -> bool:
    return grid.length_of(sample) in grid.by_length


def _prompt_tokens(sample: Mapping[str, Any], grid: _Grid) -> int:
    """Return a stored sample's prompt tokens as its suite counted them, else its length, else its
    grid length (a suite that counts neither, e.g. LongBench Pro's buckets)."""
    return int(sample.get("prompt_tokens") or sample.get("length") or grid.length_of(sample))


def _tokens(samples: Mapping[str, Mapping[str, Any]], grid: _Grid, repeats: int) -> int:
    """Return the prompt tokens of the stored samples of the grid's cells (x repeats)."""
    return repeats * sum(_prompt_tokens(s, grid) for s in samples.values() if _in_grid(s, grid))


def _mean_prompt(samples: Mapping[str, Mapping[str, Any]], length: int, grid: _Grid) -> float:
    at = [_prompt_tokens(s, grid) for s in samples.values() if grid.length_of(s) == length]
    return sum(at) / len(at) if at else float(length)


def _look_tokens(
    grid: _Grid, length: int, want: int, have: int, samples: Mapping[str, Mapping[str, Any]]
) -> int:
    """Return the prompt tokens a look of `want` rounds at `length` adds (estimated from the
    samples stored at that length, else the length itself)."""
    tasks = len(grid.by_length[length])
    return round(max(0, want - have) * tasks * _mean_prompt(samples, length, grid))


def _grid_tokens(grid: _Grid, samples: Mapping[str, Mapping[str, Any]], repeats: int) -> int:
    """Return the full grid's prompt tokens, each cell estimated at its stored samples' mean."""
    return round(
        repeats
        * sum(
            sum(p.count for p in cells) * _mean_prompt(samples, n, grid)
            for n, cells in grid.by_length.items()
        )
    )


def run_adaptive(
    suite: Suite,
    backend: Backend,
    options: RunOptions,
    spec: AdaptiveSpec,
    say: Callable[[str], None] = lambda _: None,
    *,
    rates: Rates | None = None,
    probe: bool = False,
) -> AdaptiveResult:
    """Prepare `suite` on `backend` and run the adaptive search (see `drive`); the full grid's
    time at `rates`, else at rates probed first (`probe`), else at the run's own."""

    async def main() -> AdaptiveResult:
        try:
            prepared = await PreparedRun.create(suite, backend, options)
            chosen = rates
            if chosen is None and probe:
                chosen = await probe_rates(backend, prepared.info)
            return await drive(prepared, spec, say, chosen)
        finally:
            await backend.aclose()

    return asyncio.run(main())


def evaluate_adaptive(
    spec: RunSpec, adaptive: AdaptiveSpec, say: Callable[[str], None] = lambda _: None
) -> AdaptiveResult:
    """Run `spec` adaptively (`run SUITE --adaptive`): its suite, model and options, the looks
    chosen by `adaptive`'s rule; return the decision and the stored run."""
    from longscope.run.assemble import assemble
    from longscope.run.launch import stated_rates

    if spec.routing.active:
        raise UsageError("--adaptive measures the model itself: leave out --router")
    suite, backend, _ = assemble(spec)
    scale = spec.scale
    return run_adaptive(
        suite,
        backend,
        spec.run_options(suite.default_repeats),
        adaptive,
        say,
        rates=stated_rates(scale.prefill_rate, scale.decode_rate, scale.probe),
        probe=scale.probe,
    )


@dataclass(frozen=True)
class AdaptivePlan:
    """`plan SUITE --adaptive`: the full grid's plan and what an adaptive run is expected to send."""

    plan: Plan
    forecast: Forecast
    spec: AdaptiveSpec

    def table(self) -> str:
        """Return the plan's table and the adaptive forecast as plain text lines."""
        lines = [self.plan.table(), self.forecast.describe()]
        tokens = round(self.forecast.mean * self.plan.prompt_tokens)
        line = f"adaptive: about {tokens:,} prompt tokens expected"
        if self.plan.eta_s is not None:
            line += f", ETA about {format_duration(self.forecast.mean * self.plan.eta_s)}"
        lines.append(line + f" ({self.spec.decision_rule.describe()}, {self.spec.confidence:g})")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """Return the plan and the forecast as JSON-ready data."""
        return {**self.plan.as_dict(), "adaptive": asdict(self.forecast)}


def reference_curves(
    suite: str | Suite, lengths: Sequence[int]
) -> tuple[list[dict[int, float]], str]:
    """Return the curves a forecast replays: the suite's published rows that score every one of
    `lengths`, else synthetic ones (and where they came from)."""
    from longscope.analysis.published import Published, read_published
    from longscope.suites import suite_factory

    factory = suite_factory(suite) if isinstance(suite, str) else type(suite)
    table = factory.published()
    if table is None and factory.PUBLISHED is not None:
        table = read_published(factory.PUBLISHED)
    rows = table.rows if isinstance(table, Published) else ()
    curves = [
        {n: float(row.lengths[n]) for n in lengths}
        for row in rows
        if all(n in row.lengths for n in lengths)
    ]
    if curves:
        return curves, "published curves of this suite at these lengths"
    return [], "synthetic curves (no published row scores every one of these lengths)"


def forecast_plan(
    plan: Plan, suite: str | Suite, spec: AdaptiveSpec, runs: int = 10
) -> AdaptivePlan:
    """Return `plan` (the full grid's) with the adaptive run's forecast: simulated runs on the
    suite's published curves at the plan's lengths (else synthetic ones), each cell weighted by its
    planned prompt tokens."""
    from longscope.suites import suite_factory

    cells = [c for c in plan.cells if c.requests and c.length > 0]
    if not cells:
        raise UsageError("nothing to forecast: the plan sends no request at any length")
    tasks = max(1, sum(1 for t in plan.tasks if t.requests and not t.reason))
    rounds = max(1, min(c.requests for c in cells) // tasks)
    method = spec.method
    factory = suite_factory(suite) if isinstance(suite, str) else type(suite)
    if factory.cells is Suite.cells:
        # Built whole: the run sends one sample a round, by the betting sequence.
        tasks, rounds, method = 1, min(c.requests for c in cells), SINGLE_SAMPLE_METHOD
    lengths = [c.length for c in cells]
    curves, source = reference_curves(suite, lengths)
    if not curves:
        curves = synthetic_curves(lengths, spec.decision_rule)
    made = forecast(
        curves,
        tasks,
        rounds,
        spec.decision_rule,
        spec.confidence,
        weights={c.length: float(c.prompt_tokens) for c in cells},
        runs=runs,
        source=source,
        method=method,
    )
    return AdaptivePlan(plan, made, spec)
