"""A rich progress bar with ETA, tokens/s, retries and skipped counts (`quiet` for CI)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from longscope.types import Generation

# Redrawing per answer costs more than the answer itself at hundreds of answers per second; the
# bar refreshes at 10 Hz anyway, so its numbers are pushed at most this often (and at the end).
_UPDATE_EVERY_S = 0.1


def rate(tokens_per_s: float) -> str:
    """Return a rate as `1,234`, `12.5` or `0.004`: never a slow rate shown as 0."""
    if tokens_per_s >= 100:
        return f"{tokens_per_s:,.0f}"
    if tokens_per_s >= 1:
        return f"{tokens_per_s:.1f}"
    return f"{tokens_per_s:.2g}"


class RunProgress:
    """Counts finished generations by status and shows prompt+completion tokens per second."""

    def __init__(
        self, total: int, quiet: bool = False, retries: Callable[[], int] = lambda: 0
    ) -> None:
        self.total = total
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
                TimeRemainingColumn(),
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

    def advance(self, generation: Generation) -> None:
        """Count one finished generation; push the numbers to the bar at most 10 times a second."""
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
            rate=rate(self.tokens / elapsed),
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
