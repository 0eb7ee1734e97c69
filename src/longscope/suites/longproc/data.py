"""LongProc's data: the repository's `data/` folder at a pinned commit, read as the authors read it.

`-S data=PATH` is a folder laid out as the repository's `data/` (`html_to_tsv/html_to_tsv_2k.json`,
`html_to_tsv/webpage/...`, each task's `prompts.yaml`); `-S data=github` (and `longscope data
longproc`) downloads the pinned files into the suite's cache. Every file read is checked against
the commit: by its git blob id (what the commit pins), and by sha256 when downloaded. Data that is
not the pinned commit's is refused unless `-S allow_unpinned=true` (then recorded by digest).

Which rows: the authors' published runs (HELMET's LongProc add-on) take 100 rows per task and
level, `Dataset.shuffle(seed=42).select(range(100))` (`subset=helmet`, the default: numpy's
`default_rng(42).permutation(n)[:100]`, in that order); `subset=all` takes every row in file order.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from longscope.download import suite_cache
from longscope.errors import UsageError, describe_error
from longscope.sources import FileSource, Sources
from longscope.suites.longproc import countdown, travel

REPO = "princeton-pli/LongProc"
COMMIT = "78e873ae395e42625fba7942bbb92713de08b2a6"
"""The pinned commit (2025-04-04, the repository's main)."""
SEED, HELMET_ROWS = 42, 100
LEVELS = {"0.5k": 512, "2k": 2048, "8k": 8192}
"""Output levels as the files name them, and as token counts (k = 1024, as lengths are counted)."""
LABELS = {"0.5k": "0.5K", "2k": "2K", "8k": "8K"}
"""Levels as the authors' tables name them."""
BUDGETS = {"0.5k": 1024, "2k": 3072, "8k": 10240}
"""Output budget (max new tokens) per level, as the authors' HELMET configs set it for every task
(`longproc_addon/configs/*.yaml`, `generation_max_length: 1024,3072,10240`)."""


@dataclass(frozen=True)
class PinnedFile:
    path: str
    """Path under `data/`."""
    blob: str
    """The git blob id at COMMIT."""
    sha256: str | None
    size: int | None


@functools.cache
def pinned() -> dict[str, PinnedFile]:
    """Return the files of `data/` at COMMIT the suite may read, by path under `data/`."""
    text = (importlib.resources.files("longscope.suites.longproc") / "pinned.tsv").read_text(
        "utf-8"
    )
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    out = {}
    for line in lines[1:]:
        path, blob, sha, size = line.split("\t")
        out[path] = PinnedFile(
            path, blob, None if sha == "-" else sha, None if size == "-" else int(size)
        )
    return out


def blob_id(data: bytes) -> str:
    """Return git's id of a file holding `data` (sha1 of `blob <size>\\0` + data)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def cache_name(path: str) -> str:
    """Return a file's name in the flat download cache (`html_to_tsv--webpage--W1_2k_1.html`)."""
    return path.replace("/", "--")


def files_of(task: str, levels: Sequence[str] = ()) -> list[str]:
    """Return the paths under `data/` that `task` at `levels` reads (all levels when empty)."""
    wanted = []
    for path in pinned():
        head, _, name = path.partition("/")
        if head != task:
            continue
        shared = name == "prompts.yaml" or name.startswith("webpage/") or task == "travel_planning"
        if shared or any(name == f"{task}_{level}.json" for level in (levels or LEVELS)):
            wanted.append(path)
    return wanted


def sources(tasks: Sequence[str] = ()) -> Sources:
    """Return LongProc's downloads: the pinned commit's data files from GitHub."""
    base = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/data"
    paths = [p for task in (tasks or TASKS) for p in files_of(task)]
    return Sources(
        "longproc",
        tuple(
            FileSource(cache_name(p), f"{base}/{p}", pinned()[p].sha256, f"{REPO}'s data/{p}")
            for p in paths
        ),
    )


TASKS = (
    "html_to_tsv",
    "pseudo_to_code",
    "path_traversal",
    "tom_tracking",
    "countdown",
    "travel_planning",
)
"""The authors' six tasks."""
TASK_LEVELS = {
    "html_to_tsv": ("0.5k", "2k", "8k"),
    "pseudo_to_code": ("0.5k", "2k"),
    "path_traversal": ("0.5k", "2k", "8k"),
    "tom_tracking": ("0.5k", "2k", "8k"),
    "countdown": ("0.5k", "2k", "8k"),
    "travel_planning": ("2k", "8k"),
}
"""The levels each task has (the authors give no 8K pseudocode task and no 0.5K travel plans)."""


# --- rows, as the authors' loaders read them ----------------------------------------------------


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HtmlRow(_Row):
    task_id: str
    website_id: str
    html_path: str
    task_topic: str
    task_description: str
    gt: str
    tsv_header: str
    filtering_instruction: str


class CodeRow(_Row):
    problem_id: str
    pseudocode_lines: list[str]
    code_lines: list[str]
    testcases: list[tuple[list[str], list[str]]]


class PathRow(_Row):
    context_nl: str
    question_repr: tuple[str, str]
    answer_nl: str


class TomRow(_Row):
    story: str
    question: str
    solution: str


class CountdownRow(_Row):
    nums: list[int]
    target: int


class TravelRow(_Row):
    id: str = ""
    disambig_question_text: str
    ground_truth_plan: str
    ground_truth_cities: str
    ground_truth_durations: str
    num_cities: int
    total_days: int
    constraints: list[dict[str, Any]]
    connected_cities: list[tuple[str, str]]
    estimated_output_tokens: float = 0.0


ROW_TYPES: dict[str, type[_Row]] = {
    "travel_planning": TravelRow,
    "countdown": CountdownRow,
    "html_to_tsv": HtmlRow,
    "pseudo_to_code": CodeRow,
    "path_traversal": PathRow,
    "tom_tracking": TomRow,
}


@dataclass(frozen=True)
class Item:
    """One row ready to ask: the prompt's fields, the reference, what grading needs."""

    position: int
    """The row's index in its file."""
    fields: dict[str, Any]
    """What the prompt template is formatted with (the authors' purged row)."""
    reference: str
    testcases: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    name: str = ""
    """The row's own id (task_id, problem_id), when it has one."""


class Folder:
    """A folder laid out as the repository's `data/` (or the flat download cache), checked."""

    def __init__(self, root: Path, allow_unpinned: bool) -> None:
        self.root = root
        self.allow_unpinned = allow_unpinned
        self.unpinned: set[str] = set()
        self.digests: dict[str, str] = {}

    def read(self, path: str) -> bytes:
        """Return the bytes of `data/path`, checked against the pinned commit."""
        located = self.root / path
        if not located.is_file():
            located = self.root / cache_name(path)
        if not located.is_file():
            raise UsageError(
                f"LongProc data {self.root} has no {path}: give the repository's data/ folder "
                "(-S data=PATH) or download it (longscope data longproc, then -S data=github)"
            )
        data = located.read_bytes()
        digest = blob_id(data)
        self.digests[path] = digest
        known = pinned().get(path)
        if known is None or known.blob != digest:
            if not self.allow_unpinned:
                raise UsageError(
                    f"{located} is not {REPO}'s data/{path} at {COMMIT[:12]} (git blob "
                    f"{digest[:12]}): use the pinned data (longscope data longproc) or pass "
                    "-S allow_unpinned=true to score it anyway (recorded as unpinned)"
                )
            self.unpinned.add(path)
        return data

    def identity(self) -> str:
        """Return what was read: `princeton-pli/LongProc@COMMIT`, or a digest of the files."""
        if not self.unpinned:
            return f"{REPO}@{COMMIT}"
        joined = "".join(f"{p}:{d}" for p, d in sorted(self.digests.items()))
        return f"unpinned:{hashlib.sha256(joined.encode()).hexdigest()[:16]}"


def resolve(data: str) -> Path:
    """Return the folder `-S data=` names: a path, or `github` (the download cache)."""
    if data == "github":
        from longscope.download import fetch

        folder = suite_cache("longproc")
        fetch(sources(), folder)  # verifies what is cached, downloads what is not
        return folder
    root = Path(data)
    if not root.is_dir():
        raise UsageError(
            f"LongProc data {root} is not a folder: give the repository's data/ folder, or "
            "-S data=github"
        )
    return root


def prompt_template(folder: Folder, task: str) -> str:
    """Return the task's `USER_PROMPT` from its `prompts.yaml`."""
    text = folder.read(f"{task}/prompts.yaml")
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{task}/prompts.yaml is not YAML: {exc}") from exc
    if not isinstance(loaded, dict) or not isinstance(loaded.get("USER_PROMPT"), str):
        raise UsageError(f"{task}/prompts.yaml has no USER_PROMPT text")
    template: str = loaded["USER_PROMPT"]
    if task == "countdown":  # the worked examples first, as their loader fills it in two steps
        fields = {"demonstration": countdown.examples(), "nums": "{nums}", "target": "{target}"}
        template = render(template, fields)
    if task == "travel_planning":
        demos = _rows(folder, "travel_planning/travel_planning_icl_examples.json", TravelRow)
        try:
            shown = travel.examples([row.model_dump() for row in demos])
        except ValueError as exc:
            raise UsageError(f"travel_planning_icl_examples.json: {exc}") from exc
        template = render(template, {"demonstration": shown, "problem": "{problem}"})
    return template


def raw_rows(folder: Folder, task: str, level: str) -> list[_Row]:
    """Return the rows of `task_level.json` (travel planning: the rows of its one file whose
    estimated output tokens fall in the level's range, as the authors' loader), validated."""
    if task == "travel_planning":
        low, high = travel.LEVEL_TOKENS[level]
        rows = _rows(folder, "travel_planning/travel_planning_all.json", TravelRow)
        return [r for r in rows if low <= r.estimated_output_tokens < high]  # type: ignore[attr-defined]
    return _rows(folder, f"{task}/{task}_{level}.json", ROW_TYPES[task])


def _rows(folder: Folder, path: str, kind: type[_Row]) -> list[_Row]:
    data = folder.read(path)  # a missing or unpinned file says so itself
    try:
        loaded = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(loaded, list):
        raise UsageError(f"{path}: expected a list of rows")
    out = []
    for number, raw in enumerate(loaded):
        try:
            out.append(kind.model_validate(raw))
        except ValidationError as exc:
            raise UsageError(f"{path}: row {number}: {describe_error(exc)}") from exc
    return out


def selected(count: int, subset: str) -> list[int]:
    """Return the positions a run takes of `count` rows, in the order it takes them."""
    if subset == "all":
        return list(range(count))
    order = np.random.default_rng(SEED).permutation(count)
    return [int(i) for i in order[:HELMET_ROWS]]


def item_of(folder: Folder, task: str, position: int, row: _Row) -> Item:
    """Return one row as the authors' loader purges it."""
    if isinstance(row, HtmlRow):
        html = folder.read(f"{task}/{row.html_path}").decode("utf-8")
        fields = {
            "task_id": row.task_id,
            "website_id": row.website_id,
            "task_topic": row.task_topic,
            "task_description": row.task_description,
            "html_str": html,
            "reference_output": row.gt,
            "tsv_header": row.tsv_header,
            "filtering_instruction": row.filtering_instruction,
        }
        return Item(position, fields, row.gt, name=row.task_id)
    if isinstance(row, CodeRow):
        reference = "\n".join(row.code_lines)
        fields = {"pseudocode": "\n".join(row.pseudocode_lines), "reference_output": reference}
        cases = tuple((tuple(i), tuple(o)) for i, o in row.testcases)
        return Item(position, fields, reference, cases, name=row.problem_id)
    if isinstance(row, PathRow):
        fields = {
            "city_context": row.context_nl,
            "src_city": row.question_repr[0],
            "dst_city": row.question_repr[1],
            "reference_output": row.answer_nl,
        }
        return Item(position, fields, row.answer_nl)
    if isinstance(row, TravelRow):
        try:
            trace = travel.demonstration(row.model_dump())
        except ValueError as exc:
            raise UsageError(f"travel_planning row {row.id or position}: {exc}") from exc
        fields = {
            "id": row.id,
            "problem": row.disambig_question_text,
            "ground_truth_plan": row.ground_truth_plan,
            "ground_truth_cities": row.ground_truth_cities,
            "ground_truth_durations": row.ground_truth_durations,
            "reference_output": trace,
        }
        return Item(position, fields, trace, name=row.id)
    if isinstance(row, CountdownRow):
        steps, trace = countdown.demonstration(row.nums, row.target)
        fields = {
            "nums": row.nums,
            "target": row.target,
            "solution": steps,
            "reference_output": trace,
        }
        return Item(position, fields, trace)
    assert isinstance(row, TomRow)
    fields = {"story": row.story, "question": row.question, "reference_output": row.solution}
    return Item(position, fields, row.solution)


def render(template: str, fields: dict[str, Any]) -> str:
    """Return the prompt: the template formatted with the row's fields (`template.format(**d)`)."""
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"a LongProc prompt template does not fit its rows: {exc!r}") from exc


__all__ = [
    "BUDGETS",
    "COMMIT",
    "LABELS",
    "LEVELS",
    "REPO",
    "TASKS",
    "TASK_LEVELS",
    "Folder",
    "Item",
    "PinnedFile",
    "blob_id",
    "cache_name",
    "files_of",
    "item_of",
    "pinned",
    "prompt_template",
    "raw_rows",
    "render",
    "resolve",
    "selected",
    "sources",
]
