"""A rich progress bar with ETA, tokens/s, retries and skipped counts (`quiet` for CI)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from longscope.types import Generation


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
        self.statuses[generation.status] += 1
        self.tokens += generation.prompt_tokens + generation.completion_tokens
        if self._progress is None or self._task is None:
            return
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        self._progress.update(
            self._task,
            advance=1,
            rate=f"{self.tokens / elapsed:,.0f}",
            retries=self.retries(),
            skipped=self.statuses["skipped"],
            failed=sum(self.statuses[s] for s in ("error", "timeout", "context_overflow")),
        )

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, exc, tb)
