"""What every export carries: the run's identity, its completeness and a determinism record.

Runs are read through the store's read-only API (`read_run`, `RunStore.open_readonly`): exporting
never writes to a run directory. Every format builds on `ExportRun` and `metric_points`, so the
four formats agree on the numbers they carry.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longscope.errors import UsageError
from longscope.run.scoring import ScoreResult, read_run
from longscope.run.store import RunStore
from longscope.summary import Summary, View, incomplete_line

NOT_RECORDED = "not recorded"
"""Stands where the run header lacks a fact (runs stored before longscope recorded it)."""


class MissingDependency(UsageError):
    """An export format's library is not installed: one line with the install command (exit 2)."""


def require(module: str, extra: str, package: str) -> Any:
    """Import `module` (a format's own library) or raise one line naming the install command."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"--format {extra} needs {package}, which is not installed: "
            f"pip install 'longscope[{extra}]'"
        ) from None


@dataclass(frozen=True)
class ExportRun:
    """One stored run as the exporters read it: scores in memory, nothing written back."""

    run_dir: Path
    scores: ScoreResult
    created: float
    """When the run was first stored (Unix time)."""
    context_hashes: dict[str, str]
    """Each sample's context hash (the store keeps the text once; exports name it by hash)."""
    finished: float | None = None
    """When the run's last stored answer arrived (Unix time); None when it has none."""
    runs_in_folder: int = 1
    """How many runs the run directory holds (one of them is exported: `--run-id` chooses)."""
    stated_id: str | None = None
    """The model's id as the user gave it to `export --model-id` (wins over the run's)."""

    @property
    def run_id(self) -> str:
        return self.scores.run_id

    @property
    def header(self) -> dict[str, Any]:
        return self.scores.header

    @property
    def summary(self) -> Summary:
        return self.scores.summary

    @property
    def suite(self) -> str:
        return self.scores.suite

    @property
    def model(self) -> str:
        """The model as the run names it (`llamacpp/gemma3-270m`, `openai/NAME`); a model file
        given by its path is named by its file name (`llamacpp/<local>/model.gguf`)."""
        named = str(self.header.get("model") or self.summary.model or "unknown")
        provider, slash, name = named.partition("/")
        return provider + slash + without_local_paths(name) if slash else named

    @property
    def state(self) -> str:
        """`complete`, `provisional` (failed, unanswered or a shard) or `none` (nothing scored)."""
        return self.summary.state

    @property
    def final(self) -> bool:
        """Whether the numbers are final: every request scored or deliberately skipped."""
        return self.state == "complete"

    @property
    def created_iso(self) -> str:
        return _iso(self.created)

    @property
    def finished_iso(self) -> str | None:
        """When the last answer arrived (ISO 8601), or None when the run stored none."""
        return None if self.finished is None else _iso(max(self.finished, self.created))

    @property
    def served_id(self) -> str:
        """The served model's own name, as model hubs spell it (`Qwen/Qwen2.5-7B-Instruct`).

        In order: `export --model-id`; the run's `-M model_id=`; a named model's Hub repository;
        the name the server lists in `/v1/models` (`--model openai/NAME`); the Hub repository of
        a named model given as `-M tokenizer=`; else the model's name without its provider.
        """
        info = self.header.get("model_info") or {}
        details = info.get("details") or {}
        provider, _, name = self.model.partition("/")
        name = name or provider
        if name.startswith("<local>/"):  # a model file: its name without the suffix
            name = Path(name).stem
        stated = self.stated_id or details.get("model_id")
        if stated:
            return str(stated)
        named = _hub_repo(name)
        if named:
            return named
        if "/" in name:  # a server's name in Hub form, or a transformers repository
            return name
        return _hub_repo(str(info.get("tokenizer") or "")) or name

    @property
    def developer(self) -> str | None:
        """Who made the model: the served id's organisation (`Qwen`), None for a flat name."""
        owner, slash, _ = self.served_id.partition("/")
        return owner if slash else None

    def engine(self) -> tuple[str | None, str | None]:
        """Return (engine name, version): `("llama-cpp-python", "0.3.36")`, `("vllm", None)`."""
        details = (self.header.get("model_info") or {}).get("details") or {}
        stated = str(details.get("engine_version") or "").strip()
        if stated:
            found = re.fullmatch(r"(.+?)\s+v?(\d[\w.+-]*)", stated)
            return (found.group(1), found.group(2)) if found else (stated, None)
        owner = details.get("owned_by")
        # llama-cpp-python's server says `me`, OpenAI says `openai`/`system`: no engine named.
        if isinstance(owner, str) and owner.lower() in _ENGINES_BY_OWNER:
            return _ENGINES_BY_OWNER[owner.lower()], None
        return None, None

    def completeness(self) -> dict[str, Any]:
        """Return the counts (requested, scored, skipped, failed, missing), state and why."""
        record = dict(self.summary.completeness or {})
        return {
            "state": self.state,
            **{
                k: record.get(k, 0) for k in ("requested", "scored", "skipped", "failed", "missing")
            },
            "reasons": dict(record.get("reasons") or {}),
            "incomplete": incomplete_line(record),
        }

    def identity(self) -> dict[str, Any]:
        """Return what names this run: run id, suite and version, parameters, model, when."""
        info = self.header.get("model_info") or {}
        return {
            "run_id": self.run_id,
            "suite": self.suite,
            "suite_title": self.summary.title,
            "suite_version": self.header.get("suite_version", NOT_RECORDED),
            "params": without_local_paths(self.header.get("params") or {}),
            "model": self.model,
            "model_id": info.get("model_id", NOT_RECORDED),
            "served_id": self.served_id,
            "created": self.created_iso,
            "finished": self.finished_iso or NOT_RECORDED,
            # The folder's name only: where it lies on this machine is nobody's business.
            "run_dir": Path(self.run_dir).resolve().name,
        }

    def determinism(self) -> dict[str, Any]:
        """Return what decides whether the same run gives the same answers again.

        Engine and version, build flags, engine options, batching and prefix caching come from the
        backend (the header's `model_info.details`); requests in flight from the runner; seeds and
        sampling settings from the generation config. Facts the run did not record say so.
        """
        info = self.header.get("model_info") or {}
        details = info.get("details") or {}
        config = self.header.get("config") or {}
        scheduling = self.header.get("scheduling") or {}
        engine = details.get("engine_version")
        if engine is None and details.get("owned_by"):
            engine = f"OpenAI-compatible server (owned_by: {details['owned_by']})"
        return {
            "backend": self.model,
            "model_id": info.get("model_id", NOT_RECORDED),
            "engine": engine or NOT_RECORDED,
            "build": details.get("build", NOT_RECORDED),
            "engine_options": without_local_paths(details.get("engine") or {}),
            "requests_in_flight": scheduling.get("requests_in_flight", NOT_RECORDED),
            "grouped_by_prefix": scheduling.get("grouped_by_prefix", NOT_RECORDED),
            "batching": details.get("batching", NOT_RECORDED),
            "prefix_cache": details.get("prefix_cache", NOT_RECORDED),
            "seed": config.get("seed", NOT_RECORDED),
            "suite_seed": (self.header.get("params") or {}).get("seed", NOT_RECORDED),
            "temperature": config.get("temperature", NOT_RECORDED),
            "top_p": config.get("top_p", NOT_RECORDED),
            "max_tokens": config.get("max_tokens", NOT_RECORDED),
            "stop": list(config.get("stop") or []),
            "prompt_mode": info.get("prompt_mode", NOT_RECORDED),
            "tokenizer": without_local_paths(info.get("tokenizer", NOT_RECORDED)),
            "longscope": self.header.get("longscope", NOT_RECORDED),
            "git": self.header.get("git", NOT_RECORDED),
            "python": self.header.get("python", NOT_RECORDED),
            "platform": self.header.get("platform", NOT_RECORDED),
        }

    def describe(self) -> str:
        """Return a one-line note for a format's free-text field: run, state, counts, engine."""
        counts = self.completeness()
        state = "final" if self.final else f"PROVISIONAL, not final ({counts['incomplete']})"
        rules = self.determinism()
        return (
            f"longscope run {self.run_id} ({state}): {counts['scored']} of "
            f"{counts['requested']} requests scored, {counts['skipped']} skipped, "
            f"{counts['failed']} failed, {counts['missing']} not run; {rules['engine']}; "
            f"temperature {rules['temperature']}, seed {rules['seed']}; requests in flight "
            f"{rules['requests_in_flight']}"
        )


def load_runs(
    run_dirs: list[Path], run_id: str | None = None, model_id: str | None = None
) -> list[ExportRun]:
    """Return each run directory's run `run_id` (a prefix; default: the latest), read-only.

    StoreError (one line, exit 2) when a directory holds no run or none with that id.
    """
    runs = []
    for run_dir in run_dirs:
        with RunStore.open_readonly(run_dir) as store:
            stored = store.run(run_id)
            held = len(store.runs())
            hashes = store.context_hashes(stored["run_id"])
            answered = store.answered_between(stored["run_id"])
        result = read_run(run_dir, stored["run_id"])
        runs.append(
            ExportRun(
                Path(run_dir),
                result,
                float(stored["created"]),
                hashes,
                finished=answered[1] if answered else None,
                runs_in_folder=held,
                stated_id=model_id,
            )
        )
    return runs


_ENGINES_BY_OWNER = {"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp"}
"""What OpenAI-compatible servers put in `owned_by` that names their engine."""


def without_local_paths(value: Any) -> Any:
    """Return `value` with every absolute local path cut to its last part (`<local>/NAME`).

    Exports are shared: a data file or a model given by path (`-S data=/home/me/x.jsonl`) is named
    by its file name, never by where it lies on the machine that ran it.
    """
    if isinstance(value, dict):
        return {k: without_local_paths(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_local_paths(v) for v in value]
    if isinstance(value, str) and _is_local_path(value):
        name = re.split(r"[\\/]", value.rstrip("/\\"))[-1].lstrip("~")
        return f"<local>/{name}" if name else "<local>"
    return value


def _is_local_path(text: str) -> bool:
    if "\n" in text or len(text) < 2:
        return False
    if text.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", text) or text.startswith("file:"):
        return True
    return text.startswith("/")


def _hub_repo(name: str) -> str | None:
    """Return the Hub repository of a model longscope names (`gemma3-270m`), else None."""
    from longscope.catalogue import KNOWN_MODELS

    known = KNOWN_MODELS.get(name)
    return getattr(known, "repo", None) if known is not None else None


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Point:
    """One number of a run's summary as exports list it: the overall score, a length, a group."""

    view: str
    """The summary view it belongs to ("" for a suite's only view)."""
    kind: str
    """`overall`, `length` or a breakdown's key (`task`, `depth`, `language`...)."""
    key: str
    """The length in tokens, the group's name, or `overall`."""
    value: float
    n: int | None = None
    se: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def name(self) -> str:
        """A stable dotted name: `overall`, `length.4096`, `task.needle`, `chat.length.4096`."""
        base = "overall" if self.kind == "overall" else f"{self.kind}.{self.key}"
        return f"{self.view}.{base}" if self.view else base

    @property
    def label(self) -> str:
        """How a reader names it: `overall`, `4096 tokens`, `task needle`."""
        text = {"overall": "overall", "length": f"{self.key} tokens"}.get(
            self.kind, f"{self.kind} {self.key}"
        )
        return f"{self.view}: {text}" if self.view else text


def metric_points(summary: Summary, *, breakdowns: bool = True) -> list[Point]:
    """Return the overall score, the score per length and (optionally) every breakdown cell."""
    points: list[Point] = []
    for view in summary.views:
        points.extend(_view_points(view, breakdowns))
    return points


def _view_points(view: View, breakdowns: bool) -> list[Point]:
    out: list[Point] = []
    if _finite(view.overall):
        error = view.overall_error
        out.append(
            Point(
                view.name,
                "overall",
                "overall",
                float(view.overall),  # type: ignore[arg-type]
                error.n if error else None,
                error.se if error else None,
                error.low if error else None,
                error.high if error else None,
            )
        )
    for length, value in sorted(view.by_length.items()):
        if not _finite(value):
            continue
        error = view.length_errors.get(length)
        out.append(
            Point(
                view.name,
                "length",
                str(length),
                float(value),
                error.n if error else None,
                error.se if error else None,
                error.low if error else None,
                error.high if error else None,
            )
        )
    if breakdowns:
        for breakdown in view.breakdowns:
            if breakdown.key == "length":
                continue  # the curve above
            for key, cell in breakdown.cells.items():
                if _finite(cell.score):
                    point = Point(view.name, breakdown.key, key, float(cell.score), cell.n, cell.se)  # type: ignore[arg-type]
                    out.append(point)
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def flat_strings(value: Any, prefix: str = "") -> dict[str, str]:
    """Return nested dicts as `{"a.b": "text"}`: the string maps EEE and MLflow params take."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(flat_strings(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, str):
        return {prefix: value}
    return {prefix: json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)}
