"""A plan before spending: tokens, requests, time and cost of a run, from the samples it would send.

The samples are those of the run's `PreparedRun` (run/prepared.py: same tokenizer, prompt mode,
settings, limit, shard), made one at a time and counted, so the prompt tokens are the ones the
harness counts for each request; per task too, with the tasks skipped whole and why. Before a
run, the forecast comes from the cells alone (`outline_plan`): the first request waits for nothing. Output tokens are the
requests' `max_tokens`: an upper bound (models usually stop earlier). Time comes from a short probe
of the endpoint (one long prompt with one output token, one short prompt with a few dozen) or from
rates the user states; cost from prices per million input and output tokens.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longscope.analysis.power import Detectable, detectable, detectable_lines
from longscope.models.base import Backend, ModelInfo
from longscope.run.prepared import PreparedRun, RunOptions
from longscope.suites.base import Suite
from longscope.types import GenerationConfig, Request, Sample, stable_hash

PROBE_PROMPT_TOKENS = 2048
PROBE_OUTPUT_TOKENS = 48


@dataclass(frozen=True)
class Rates:
    """Tokens per second one endpoint prefills and decodes, one request at a time."""

    prefill_tps: float
    decode_tps: float
    source: str
    """`stated`, `probe` (measured just now) or `measured` (fitted to what a run's own requests
    took, as throughput: run/adaptive.py)."""


@dataclass(frozen=True)
class PlanCell:
    """One length (tier) of the plan."""

    length: int
    requests: int
    prompt_tokens: int
    output_tokens: int
    skipped: int


@dataclass(frozen=True)
class PlanTask:
    """One task of the plan: what it sends, or why it is skipped whole."""

    task: str
    requests: int
    prompt_tokens: int
    output_tokens: int
    skipped: int
    reason: str = ""
    """Why no sample of the task is built (its data not given): "" when it runs."""


@dataclass(frozen=True)
class Plan:
    """What a run would send and what it would take."""

    run_id: str
    cells: tuple[PlanCell, ...]
    already_done: int
    endpoints: int
    rates: Rates | None
    price_in: float | None
    price_out: float | None
    shard: str = ""
    """`shard 1/4: 29 of 88 samples` when the run is one shard of a larger one."""
    power: tuple[Detectable, ...] = ()
    """Per length, the smallest difference the run can detect (`analysis.power`)."""
    tasks: tuple[PlanTask, ...] = ()
    limit: str = ""
    """What `--limit` meant (`--limit 10: per task x length`), "" without one."""
    bounded: bool = False
    """Tokens are bounds from the cells' lengths (the forecast before a run), not counted."""

    @property
    def requests(self) -> int:
        return sum(c.requests for c in self.cells)

    @property
    def skipped(self) -> int:
        return sum(c.skipped for c in self.cells)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.cells)

    @property
    def output_tokens(self) -> int:
        return sum(c.output_tokens for c in self.cells)

    @property
    def eta_s(self) -> float | None:
        """Return the estimated seconds, one request at a time per endpoint (no batching gains)."""
        if self.rates is None:
            return None
        return eta_seconds(self.prompt_tokens, self.output_tokens, self.rates, self.endpoints)

    @property
    def cost(self) -> float | None:
        """Return the cost at the stated prices per million tokens (None without prices)."""
        if self.price_in is None and self.price_out is None:
            return None
        return cost_of(self.prompt_tokens, self.output_tokens, self.price_in, self.price_out)

    def forecast(self) -> str:
        """Return the one-line forecast printed before a run."""
        if not self.requests and not self.skipped and self.already_done:
            line = f"plan: nothing to send ({_count(self.already_done, 'request')} stored already)"
            return f"{self.shard}; {line}" if self.shard else line
        parts = [
            f"plan: {_count(self.requests, 'request')} ({self.skipped} skipped, "
            f"{self.already_done} done)"
        ]
        if self.bounded:
            # Made as sent: nothing is counted before the first request leaves.
            parts.append(
                f"<= {self.prompt_tokens:,} tokens (prompt and output, from the lengths; "
                "`longscope plan` counts them)"
            )
        else:
            parts.append(f"{self.prompt_tokens:,} prompt tokens")
            parts.append(f"<= {self.output_tokens:,} output tokens")
        if self.limit:
            parts.append(self.limit)
        if self.eta_s is not None and self.rates is not None:
            parts.append(
                f"ETA {format_duration(self.eta_s)} on {self.endpoints} endpoint(s) "
                f"({self.rates.source}: prefill {rate(self.rates.prefill_tps)} tok/s, "
                f"decode {rate(self.rates.decode_tps)} tok/s)"
            )
        if self.cost is not None:
            parts.append(f"<= ${self.cost:,.2f}")
        line = ", ".join(parts)
        return f"{self.shard}; {line}" if self.shard else line

    def table(self) -> str:
        """Return the plan per length as plain text lines."""
        lines = [
            f"{'length':>8} {'requests':>9} {'skipped':>8} {'prompt tok':>14} {'output tok':>12}"
        ]
        for c in self.cells:
            lines.append(
                f"{c.length:>8} {c.requests:>9} {c.skipped:>8} {c.prompt_tokens:>14,} "
                f"{c.output_tokens:>12,}"
            )
        if self.tasks:
            width = max(8, *(len(t.task) for t in self.tasks))
            lines.append("")
            lines.append(
                f"{'task':<{width}} {'requests':>9} {'skipped':>8} {'prompt tok':>14} "
                f"{'output tok':>12}"
            )
            for t in self.tasks:
                if t.reason:
                    lines.append(f"{t.task:<{width}} skipped: {t.reason}")
                else:
                    lines.append(
                        f"{t.task:<{width}} {t.requests:>9} {t.skipped:>8} "
                        f"{t.prompt_tokens:>14,} {t.output_tokens:>12,}"
                    )
        lines.append(self.forecast())
        return "\n".join(lines + detectable_lines(self.power))

    def as_dict(self) -> dict[str, Any]:
        """Return the plan as JSON-ready data."""
        return {
            "run_id": self.run_id,
            "requests": self.requests,
            "skipped": self.skipped,
            "already_done": self.already_done,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens_max": self.output_tokens,
            "eta_s": self.eta_s,
            "cost": self.cost,
            "rates": None if self.rates is None else self.rates.__dict__,
            "by_length": [c.__dict__ for c in self.cells],
            "shard": self.shard or None,
            "by_task": [t.__dict__ for t in self.tasks],
            "limit": self.limit,
            "tokens_bounded": self.bounded,
            "detectable": [p.as_dict() for p in self.power],
        }


def eta_seconds(prompt_tokens: int, output_tokens: int, rates: Rates, endpoints: int = 1) -> float:
    """Return the seconds `prompt_tokens` and `output_tokens` take at `rates`, one request at a time
    on each of `endpoints` (no batching gains): the plan's ETA."""
    one = prompt_tokens / rates.prefill_tps + output_tokens / rates.decode_tps
    return one / max(1, endpoints)


def cost_of(
    prompt_tokens: int, output_tokens: int, price_in: float | None, price_out: float | None
) -> float:
    """Return the cost of tokens at prices per million input and output tokens."""
    return (prompt_tokens * (price_in or 0.0) + output_tokens * (price_out or 0.0)) / 1e6


def rate(tokens_per_s: float) -> str:
    """Return a rate as `1,234`, `12.5` or `0.004`: never a slow rate shown as 0."""
    if tokens_per_s >= 100:
        return f"{tokens_per_s:,.0f}"
    if tokens_per_s >= 1:
        return f"{tokens_per_s:.1f}"
    return f"{tokens_per_s:.2g}"


def format_duration(seconds: float) -> str:
    """Return `1h 02m`, `3m 05s` or `12s`."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def make_plan_of(
    prepared: PreparedRun,
    *,
    rates: Rates | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
) -> Plan:
    """Return the plan of `prepared`: its samples made one at a time and counted, none kept."""
    options = prepared.options
    done = _done_keys(options.output, prepared.run_id)
    tokenizer = prepared.source.ctx.tokenizer
    cells: dict[int, list[int]] = {}
    tasks: dict[str, list[int]] = {}
    already = 0
    sent: list[Sample] = []  # light copies (the context as its hash) for the power estimate
    for planned in prepared.cells:
        if planned.count and prepared.cell_done(planned, done):
            already += planned.count * options.repeats  # known done: not made at all
    for _, sample in prepared.samples(done):
        cell = cells.setdefault(sample.length, [0, 0, 0, 0])
        task = tasks.setdefault(sample.task, [0, 0, 0, 0])
        for repeat in range(options.repeats):
            if (sample.id, repeat) in done:
                already += 1
                continue
            if prepared.skip_reason(sample):
                cell[3] += 1
                task[3] += 1
                continue
            request = prepared.request(sample, repeat)
            if repeat == 0:
                sent.append(replace(sample, context=stable_hash(sample.context, 32)))
            prompt = request.prompt_tokens or len(tokenizer.encode(request.text))
            for counts in (cell, task):
                counts[0] += 1
                counts[1] += prompt
                counts[2] += request.config.output_ceiling()
    by_task = [PlanTask(name, *values) for name, values in tasks.items()]
    return _plan_of(
        prepared, cells, already, by_task, rates, price_in, price_out,
        power=tuple(detectable(sent, prepared.suite.cluster_key)),
    )  # fmt: skip


def outline_plan(
    prepared: PreparedRun,
    *,
    rates: Rates | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
) -> Plan:
    """Return the plan of `prepared` from its cells alone (nothing made): the forecast `run`
    prints before sending. Requests are exact; tokens are bounded by each cell's length."""
    options = prepared.options
    done = _done_keys(options.output, prepared.run_id)
    cells: dict[int, list[int]] = {}
    already = 0
    for planned in prepared.cells:
        cell = cells.setdefault(planned.cell.length, [0, 0, 0, 0])
        for index in range(planned.count):
            sample_id = prepared.source.sample_id(planned.cell, index)
            for repeat in range(options.repeats):
                if (sample_id, repeat) in done:
                    already += 1
                    continue
                cell[0] += 1
                cell[1] += planned.cell.length
    return _plan_of(prepared, cells, already, [], rates, price_in, price_out, bounded=True)


def _plan_of(
    prepared: PreparedRun,
    cells: dict[int, list[int]],
    already: int,
    tasks: list[PlanTask],
    rates: Rates | None,
    price_in: float | None,
    price_out: float | None,
    **fields: Any,
) -> Plan:
    """Return the Plan of counted cells and tasks; the tasks no sample is built for are added."""
    skipped = [PlanTask(t, 0, 0, 0, 0, r) for t, r in prepared.skipped_tasks().items()]
    return Plan(
        run_id=prepared.run_id,
        cells=tuple(PlanCell(length, *values) for length, values in sorted(cells.items())),
        already_done=already,
        endpoints=len(prepared.backend.endpoints) or 1,
        rates=rates,
        price_in=price_in,
        price_out=price_out,
        tasks=(*tasks, *skipped),
        limit=_limit_note(prepared),
        **fields,
    )


def _limit_note(prepared: PreparedRun) -> str:
    limit = prepared.options.limit
    if limit is None:
        return ""
    return f"--limit {limit}: " + ("per task x length" if prepared.limit_per_cell else "in all")


async def make_plan(
    suite: Suite,
    backend: Backend,
    options: RunOptions | None = None,
    *,
    rates: Rates | None = None,
    probe: bool = False,
    price_in: float | None = None,
    price_out: float | None = None,
    probe_tokens: int = PROBE_PROMPT_TOKENS,
) -> Plan:
    """Return the plan of `run(suite, backend, options)`; probe the endpoint when asked."""
    prepared = await PreparedRun.create(suite, backend, options or RunOptions())
    if rates is None and probe:
        rates = await probe_rates(backend, prepared.info, probe_tokens)
    return make_plan_of(prepared, rates=rates, price_in=price_in, price_out=price_out)


def _done_keys(output: Path | None, run_id: str) -> set[tuple[str, int]]:
    from longscope.run.store import STORE_NAME, RunStore

    if output is None or not (Path(output) / STORE_NAME).is_file():
        return set()
    with RunStore.open_readonly(output) as store:
        return store.done_keys(run_id)


async def probe_rates(backend: Backend, info: ModelInfo, prompt_tokens: int = 0) -> Rates:
    """Return prefill and decode rates measured with two short requests (a few seconds)."""
    tokenizer = backend.tokenizer()
    budget = prompt_tokens or PROBE_PROMPT_TOKENS
    if info.context_length:
        budget = min(budget, info.context_length // 2)
    # A fresh random text each time: a prefix cache must not make the prefill look free.
    rng = random.Random(time.time_ns())
    words = ["alpha", "river", "stone", "violet", "engine", "maple", "copper", "harbor"]
    text, count = "", 0
    while count < budget:
        text += " ".join(rng.choice(words) for _ in range(64)) + ". "
        count = len(tokenizer.encode(text))
    long_request = _probe_request(info, text + "\nAnswer: ", 1, count)
    started = time.perf_counter()
    first = await backend.generate(long_request)
    prefill_s = time.perf_counter() - started
    short_request = _probe_request(
        info, "Count from one to one hundred in words: one, two,", PROBE_OUTPUT_TOKENS, 16
    )
    started = time.perf_counter()
    second = await backend.generate(short_request)
    decode_s = time.perf_counter() - started
    for generation in (first, second):
        if generation.status not in ("ok", "length"):
            from longscope.models.base import UsageError

            raise UsageError(
                f"the probe request failed ({generation.status}: {generation.error[:120]}): "
                "state the rates with --prefill-rate and --decode-rate instead"
            )
    seen = first.prompt_tokens or count
    made = max(1, second.completion_tokens)
    return Rates(
        prefill_tps=seen / max(prefill_s, 1e-3),
        decode_tps=made / max(decode_s, 1e-3),
        source="probe",
    )


def _probe_request(info: ModelInfo, text: str, max_tokens: int, tokens: int) -> Request:
    from longscope.types import Message

    config = GenerationConfig(max_tokens=max_tokens, temperature=0.0)
    if info.prompt_mode == "completion":
        return Request("probe", 0, "completion", prompt=text, config=config, prompt_tokens=tokens)
    return Request(
        "probe", 0, "chat", messages=(Message("user", text),), config=config, prompt_tokens=0
    )


def actual_figures(
    run_dir: str | Path,
    run_id: str,
    wall_s: float,
    price_in: float | None = None,
    price_out: float | None = None,
    keys: Sequence[tuple[str, int]] | None = None,
    *,
    sent_now: int | None = None,
    stored_before: int = 0,
) -> str:
    """Return the one-line figures after a run, from the stored generations: `actual:` when this
    invocation sent them all; `nothing to send` (`sent_now` 0) or `stored:` (a resumed run,
    `stored_before` > 0) when the totals include what earlier invocations sent."""
    from longscope.run.store import RunStore

    with RunStore.open_readonly(run_dir) as store:
        rows = store.generations(run_id)
    wanted = set(keys) if keys is not None else None
    sent = [g for s, r, g in rows if g.status != "skipped" and (wanted is None or (s, r) in wanted)]
    prompt = sum(g.prompt_tokens for g in sent)
    output = sum(g.completion_tokens for g in sent)
    totals = f"{_count(len(sent), 'request')}, {prompt:,} prompt tokens, {output:,} output tokens"
    cost = ""
    if price_in is not None or price_out is not None:
        cost = f", ${cost_of(prompt, output, price_in, price_out):,.2f}"
    if sent_now == 0:
        return f"nothing to send: every request is stored already (stored: {totals}{cost})"
    if stored_before:
        now = f"{_count(sent_now, 'request')} sent now" if sent_now is not None else "resumed"
        return f"stored: {totals}{cost} ({now}, {format_duration(wall_s)})"
    return f"actual: {totals}, {format_duration(wall_s)}{cost}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
