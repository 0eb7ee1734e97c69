"""A rich progress bar with ETA, tokens/s, retries and skipped counts (`quiet` for CI).

The ETA is longscope's own (`TokenEta`), not rich's: rich estimates from the answers of the last
30 s, so a run whose answers come 40 s apart showed `-:--:--` throughout.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from longscope.types import Generation

# Redrawing per answer costs more than the answer itself at hundreds of answers per second; the
# bar refreshes at 10 Hz anyway, so its numbers are pushed at most this often (and at the end).
_UPDATE_EVERY_S = 0.1
SENT = frozenset({"ok", "length", "error", "timeout", "context_overflow"})
"""Statuses of a request that reached the model (a `skipped` one never left)."""
DECODE_PER_PREFILL = 20.0
"""Seconds per output token over seconds per prompt token, until the answers tell them apart: the
embedded models on 2 cores prefill about 20 times faster per token than they decode (BENCHMARKS)."""


class TokenEta:
    """Seconds left in a run, from the plan's prompt tokens and the rates measured on its answers.

    Each answer's latency is fitted as `a x prompt tokens + b x output tokens` (least squares: `a`
    and `b` are seconds per prefilled and per decoded token). The work left is `a x` the planned
    prompt tokens not yet answered `+ b x` the answers left times the mean output so far; the time
    left is the time spent sending so far, scaled by work left over work done, so concurrency and
    batching count as they did so far. Counted in tokens, not requests: a run that sends its
    longest prompts first would otherwise be forecast from its slowest answers.
    """

    def __init__(
        self,
        total: int,
        planned_tokens: int | None = None,
        decode_per_prefill: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.total = total
        self.planned_tokens = planned_tokens
        """Prompt tokens the plan counted (or bounded) for the requests to send; None: unknown,
        then each request left is taken as the mean of those answered."""
        self.ratio = decode_per_prefill or DECODE_PER_PREFILL
        self.clock = clock
        self.finished = 0
        self.planned_done = 0
        self.answered = 0
        """Answers that reached the model (their sums below: constant work per answer)."""
        self._sums = [0.0] * 7  # prompt, output, prompt², output², prompt·output, ·latency x2
        self.first_sent: float | None = None
        self._left: float | None = None
        self._at = 0.0

    def sending(self) -> None:
        """Note that a request left: time counts from the first one (not from building samples)."""
        if self.first_sent is None:
            self.first_sent = self.clock()

    def add(self, generation: Generation, planned: int = 0) -> None:
        """Count one finished request; `planned` is what the plan counted for its prompt."""
        self.finished += 1
        self.planned_done += planned
        if generation.status in SENT and generation.latency_s > 0:
            p, o, t = (
                generation.prompt_tokens or planned,
                generation.completion_tokens,
                generation.latency_s,
            )
            for i, value in enumerate((p, o, p * p, o * o, p * o, p * t, o * t)):
                self._sums[i] += value
            self.answered += 1
        now = self.clock()
        self._left, self._at = self._estimate(now), now

    def seconds_left(self) -> float | None:
        """Return the seconds left now (counting down between answers), None before any answer."""
        if self._left is None:
            return None
        return max(0.0, self._left - (self.clock() - self._at))

    def rates(self) -> tuple[float, float]:
        """Return (a, b): seconds per prompt token and per output token, fitted when the answers
        determine both, else `b = ratio x a` with `a` fitted alone (only their ratio matters)."""
        _, _, spp, scc, spc, spl, scl = self._sums
        det = spp * scc - spc * spc
        if self.answered >= 2 and det > 1e-9 * spp * scc:
            a, b = (scc * spl - spc * scl) / det, (spp * scl - spc * spl) / det
            if a > 0 and b > 0:
                return a, b
        return 1.0, self.ratio

    def _estimate(self, now: float) -> float | None:
        left = self.total - self.finished
        if left <= 0:
            return 0.0
        if not self.answered or self.first_sent is None:
            return None
        a, b = self.rates()
        prompts, outputs = self._sums[0], self._sums[1]
        done = a * prompts + b * outputs
        mean_prompt, mean_output = prompts / self.answered, outputs / self.answered
        if self.planned_tokens is None:
            prompt_left = left * mean_prompt
        else:
            prompt_left = max(0, self.planned_tokens - self.planned_done)
        work_left = a * prompt_left + b * left * mean_output
        return (now - self.first_sent) * work_left / max(done, 1e-12)


class _EtaColumn(ProgressColumn):
    """`ETA 3m 05s`, counting down between answers; `ETA -` until the first answer."""

    def __init__(self, eta: TokenEta) -> None:
        super().__init__()
        self.eta = eta

    def render(self, task: Task) -> Text:
        from longscope.run.plan import format_duration

        left = self.eta.seconds_left()
        return Text("ETA -" if left is None else f"ETA {format_duration(left)}", "cyan")


class RunProgress:
    """Counts finished generations by status and shows prompt+completion tokens per second."""

    def __init__(
        self,
        total: int,
        quiet: bool = False,
        retries: Callable[[], int] = lambda: 0,
        eta: TokenEta | None = None,
    ) -> None:
        self.total = total
        self.eta = eta or TokenEta(total)
        self.quiet = quiet
        self.retries = retries
        self.statuses: Counter[str] = Counter()
        self.tokens = 0
        self._started = time.perf_counter()
        self._progress: Progress | None = None
        self._task = None
        self._unshown = 0
        self._shown_at = 0.0

    def __enter__(self) -> RunProgress:
        if not self.quiet and self.total:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _EtaColumn(self.eta),
                TextColumn(
                    "{task.fields[rate]} tok/s  retries {task.fields[retries]}  "
                    "skipped {task.fields[skipped]}  failed {task.fields[failed]}"
                ),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(
                "generating", total=self.total, rate="-", retries=0, skipped=0, failed=0
            )
        return self

    def sending(self) -> None:
        """Note that a request left (the ETA's clock starts at the first)."""
        self.eta.sending()

    def advance(self, generation: Generation, planned: int = 0) -> None:
        """Count one finished generation (`planned`: the prompt tokens the plan counted for it);
        push the numbers to the bar at most 10 times a second."""
        self.eta.add(generation, planned)
        self.statuses[generation.status] += 1
        self.tokens += generation.prompt_tokens + generation.completion_tokens
        if self._progress is None:
            return
        self._unshown += 1
        now = time.perf_counter()
        if now - self._shown_at >= _UPDATE_EVERY_S:
            self._show(now)

    def _show(self, now: float) -> None:
        if self._progress is None or self._task is None:
            return
        elapsed = max(now - self._started, 1e-9)
        self._progress.update(
            self._task,
            advance=self._unshown,
            rate=_rate(self.tokens / elapsed),
            retries=self.retries(),
            skipped=self.statuses["skipped"],
            failed=sum(self.statuses[s] for s in ("error", "timeout", "context_overflow")),
        )
        self._unshown = 0
        self._shown_at = now

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._show(time.perf_counter())
            self._progress.__exit__(kind, exc, tb)


def _rate(tokens_per_s: float) -> str:
    from longscope.run.plan import rate  # as the ETA column: the plan is imported when shown

    return rate(tokens_per_s)
