"""What the library's commands return (`longscope.api`), each a small frozen dataclass.

`evaluate` returns `run.runner.RunResult`, `plan` a `run.plan.Plan`, `merge` a
`run.merge.MergeReport` and `score` a `run.scoring.ScoreResult`; the others are here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longscope.run.scoring import ScoreResult
from longscope.summary import Summary, incomplete_line


@dataclass(frozen=True)
class ReportedRun:
    """A stored run scored in memory (read-only), and where it is."""

    run_dir: Path
    scored: ScoreResult
    adaptive: dict[str, Any] | None = None
    """The run's adaptive record (`run.adaptive`), when an adaptive run made it and it is current."""
    adaptive_note: str = ""
    """Why the directory's adaptive record is not used (stale), or ""."""

    def adaptive_text(self) -> str:
        """Return the adaptive decision and its cost as lines (or the stale note), or ""."""
        if self.adaptive is not None:
            from longscope.run.adaptive import describe_record

            return describe_record(self.adaptive)
        return self.adaptive_note


@dataclass(frozen=True)
class Report:
    """`report`: stored runs scored in memory."""

    runs: tuple[ReportedRun, ...]

    def pairs(self) -> list[tuple[Path, ScoreResult]]:
        """Return (run directory, scores) pairs, as the HTML and Markdown renderers read them."""
        return [(run.run_dir, run.scored) for run in self.runs]

    def incomplete_lines(self) -> list[str]:
        """Return one line per run whose scores are provisional, naming the run."""
        lines = ((r.run_dir, incomplete_line(r.scored.summary.completeness)) for r in self.runs)
        return [f"{run_dir}: {line}" for run_dir, line in lines if line]

    def summaries(self) -> dict[str, Any] | list[dict[str, Any]]:
        """Return the summary dict of the run, or the list of them when there are several."""
        made = [
            {**run.scored.to_dict(), "adaptive": run.adaptive}
            if run.adaptive
            else run.scored.to_dict()
            for run in self.runs
        ]
        return made[0] if len(made) == 1 else made


@dataclass(frozen=True)
class Leaderboard:
    """`compare`: one row per run (and per published row), ranked; each row is the JSON object
    `compare --json` prints (`analysis.profile.leaderboard` says what it holds)."""

    rows: tuple[dict[str, Any], ...]

    @property
    def sources(self) -> list[str]:
        """Return where the published rows come from, each once, in order."""
        return list(dict.fromkeys(r["source"] for r in self.rows if r.get("source")))

    @property
    def provisional(self) -> int:
        """Return how many runs are incomplete (their scores provisional)."""
        return sum(r["state"] not in ("complete", "published") for r in self.rows)


@dataclass(frozen=True)
class Profile:
    """`profile`: a model's claimed and effective context, as the router reads it."""

    model: str
    claimed_context: Any
    effective_context: Any
    provisional: bool
    """Measured from an incomplete run."""
    data: dict[str, Any]
    """The profile file's content (PROFILE.json)."""
    written: Path | None = None

    @classmethod
    def of(cls, data: dict[str, Any], written: Path | None) -> Profile:
        """Return the result of the profile `data` (`analysis.profile.model_profile`)."""
        complete = all(m["complete"] for m in data["measured"])
        return cls(
            str(data["model"]),
            data["claimed_context"],
            data["effective_context"],
            not complete,
            data,
            written,
        )

    def describe(self) -> str:
        """Return one line: the model, its claimed and effective context, the file written."""
        where = f" -> {self.written}" if self.written is not None else ""
        # A model below every suite's shortest length has no effective context to rely on: its
        # label says how far below ("<1024"), never "None".
        effective = self.data.get("effective_label") or self.effective_context or "not measured"
        return f"{self.model}: claimed {self.claimed_context}, effective {effective}{where}"


@dataclass(frozen=True)
class Calibration:
    """`calibrate`: difficulty labels by sample id, and the whole calibration as written."""

    labels: dict[str, str]
    data: dict[str, Any]
    written: Path | None = None

    def describe(self) -> str:
        """Return one line: how many labels of each kind, and the file written."""
        counts = Counter(self.labels.values())
        kinds = ", ".join(f"{name} {counts[name]}" for name in sorted(counts))
        where = f" -> {self.written}" if self.written is not None else ""
        return f"{len(self.labels)} labels{where}: {kinds}"


@dataclass(frozen=True)
class Judged:
    """`judge`: the judge pass's counts and the run re-scored with its verdicts."""

    judged: int
    failed: int
    """Verdicts the judge could not give (recorded, not scored as 0)."""
    cached: int
    """Answers already judged by this judge (resumed)."""
    scored: ScoreResult

    def describe(self, judge_model: str) -> str:
        """Return one line of the judge pass's counts."""
        return (
            f"judge {judge_model}: {self.judged} judged, {self.failed} failed "
            f"(recorded, not scored as 0), {self.cached} already judged"
        )


@dataclass(frozen=True)
class LongScoreRun:
    """One run's summary and the base lengths and floor its LongScore table uses."""

    run_dir: Path
    summary: Summary
    base_lengths: tuple[int, ...]
    floor: float


@dataclass(frozen=True)
class LongScores:
    """`longscore`: the runs whose LongScore tables to print."""

    runs: tuple[LongScoreRun, ...]

    def rows(self) -> list[tuple[Path, Summary, tuple[int, ...], float]]:
        """Return (run directory, summary, base lengths, floor) per run, as the table reads them."""
        return [(r.run_dir, r.summary, r.base_lengths, r.floor) for r in self.runs]

    def incomplete_lines(self) -> list[str]:
        """Return one line per run whose scores are provisional, naming the run."""
        lines = ((r.run_dir, incomplete_line(r.summary.completeness)) for r in self.runs)
        return [f"{run_dir}: {line}" for run_dir, line in lines if line]


@dataclass(frozen=True)
class Downloaded:
    """`data`: one line per file fetched or found, then the files to fetch by hand."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Options:
    """One plug-in's options as `list NAME` shows them: a title line, the flag (`-S`, `-M`),
    (usage, default, help) per option, and what to say when it declares none."""

    title: str
    flag: str
    rows: tuple[tuple[str, str, str], ...]
    none: str


@dataclass(frozen=True)
class Catalogue:
    """`list`: the suites, named models and providers (name, description); or, for one name,
    the options of the provider and/or suite of that name."""

    suites: tuple[tuple[str, str], ...] = ()
    models: tuple[tuple[str, str], ...] = ()
    providers: tuple[tuple[str, str], ...] = ()
    options: tuple[Options, ...] = ()

    @classmethod
    def of(cls, name: str | None = None) -> Catalogue:
        """Return everything that plugs in (`name` None), or the options of `name`."""
        from longscope.catalogue import KNOWN_MODELS
        from longscope.errors import UsageError
        from longscope.models.registry import BACKENDS
        from longscope.params import describe
        from longscope.suites import REGISTRY as SUITES

        if name is None:
            return cls(
                tuple(SUITES.listed()),
                tuple(
                    (n, f"{m.description}; prompt mode {m.prompt_mode}")
                    for n, m in KNOWN_MODELS.items()
                ),
                tuple(BACKENDS.listed()),
            )
        if name not in BACKENDS and name not in SUITES:
            raise UsageError(
                f"unknown suite {name!r} (nor a provider): suites are "
                f"{', '.join(SUITES.names())}; providers are {', '.join(BACKENDS.names())}"
            )
        found = []
        if name in BACKENDS:
            found.append(Options(f"{name}/: {BACKENDS.description(name)}", "-M",
                                 tuple(describe(BACKENDS.options(name))),
                                 "no declared options: -M key=value reaches it as given"))  # fmt: skip
        if name in SUITES:
            found.append(Options(f"{name}: {SUITES.description(name)}", "-S",
                                 tuple(describe(SUITES.options(name))),
                                 "no declared parameters: -S key=value reaches it as text"))  # fmt: skip
        return cls(options=tuple(found))
