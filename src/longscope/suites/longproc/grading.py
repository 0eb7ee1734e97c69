"""LongProc's rule-based evaluators, re-implemented from the authors' code (princeton-pli/LongProc,
`longproc/*_evaluator.py` and `longproc_data.py` at the pinned commit), rule for rule.

Pure functions of (prediction, reference): no I/O. The C++ task's evaluator runs programs and lives
in `code.py`; only its answer extraction is here. Each grade carries the metric the authors' table
reports (`score`: row F1 for HTML to TSV, accuracy for the others) and the rest of their metrics.
Quirks of the originals are kept and named where they matter (tests/suites/longproc/).
"""

from __future__ import annotations

import csv
import re
import string
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Graded:
    """One answer's grade: the reported metric (0-1), the evaluator's other metrics, and why."""

    score: float
    metrics: dict[str, float] = field(default_factory=dict)
    parsed: str | None = None
    """What the evaluator read out of the answer (None: nothing could be read)."""
    error: Any = None
    """The evaluator's error report (first differing line, a message), JSON-able."""


def extract_with_tag(response: str, tag: str) -> str | None:
    """Return the text between the first `<tag>` and the first `</tag>`, stripped (the
    authors' `_extract_with_tag`: a closing tag before the opening one gives their slice)."""
    start = response.find(f"<{tag}>")
    end = response.find(f"</{tag}>")
    if start == -1 or end == -1:
        return None
    return response[start + len(tag) + 2 : end].strip()


# --- HTML to TSV ---------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_cell(text: str) -> str:
    """Lower-case, drop punctuation and articles, then every space (`_normalize_answer`)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split()).replace(" ", "")


class _TableError(ValueError):
    """The TSV cannot be read as the evaluator reads it (its pandas path raised)."""


def read_tsv(lines: list[str]) -> tuple[int, list[tuple[str, ...]]]:
    """Return (column count, normalized rows) of TSV lines as `_string_to_pd` reads them.

    The first line is the header (its names must differ); a last row of another width is dropped (an end marker); any
    other row of another width becomes a row of `N/A`s. No header, or no row to drop the last of,
    raises `_TableError` (their function returned None and the metrics then failed).
    """
    try:
        data = list(csv.reader(lines, delimiter="\t"))
    except csv.Error as exc:  # a NUL byte, a field past csv's size limit: their except caught it
        raise _TableError(str(exc)) from exc
    if not data:
        raise _TableError("no header line")
    header, rows = data[0], data[1:]
    if len(set(header)) != len(header):
        # pandas then returns a table for a column name, and their per-cell normalization fails
        raise _TableError("duplicate column names in the header")
    if not rows:
        raise _TableError("no row after the header")
    if len(rows[-1]) != len(header):
        rows = rows[:-1]
    width = len(header)
    table = [tuple(row) if len(row) == width else ("N/A",) * width for row in rows]
    return width, [tuple(normalize_cell(c) for c in row) for row in table]


def table_scores(prediction: str, reference: str) -> tuple[float, float, float, str | None]:
    """Return (precision, recall, F1, error) of predicted rows against the reference's
    (`evaluate_html_to_csv_compute_metrics`): a row counts when it equals a row of the other
    table cell for cell, in column order; header names are not compared. Any failure of their
    pandas path (no rows, another number of columns) gives 0, 0, 0 and the error."""
    try:
        gold_width, gold = read_tsv(reference.strip().split("\n"))
        pred_width, pred = read_tsv(prediction.strip().split("\n"))
        if not pred:
            raise _TableError("division by zero (no predicted row)")
        if pred_width != gold_width:
            raise _TableError(
                f"Unable to coerce to Series, length must be {gold_width}: given {pred_width}"
            )
        if not gold:
            raise _TableError("division by zero (no reference row)")
        gold_rows, pred_rows = set(gold), set(pred)
        precision = sum(row in gold_rows for row in pred) / len(pred)
        recall = sum(row in pred_rows for row in gold) / len(gold)
    except _TableError as exc:
        return 0.0, 0.0, 0.0, str(exc)
    f1 = 0.0 if precision + recall == 0 else 2 * recall * precision / (recall + precision)
    return precision, recall, f1, None


_TSV_BLOCK = re.compile(r"```tsv([\s\S]*)```")


def grade_html_to_tsv(prediction: str, reference: str) -> Graded:
    """Grade an HTML-to-TSV answer (`eval_html_to_tsv`): row F1 of the ```tsv block."""
    found = _TSV_BLOCK.search(prediction)
    if found is not None:
        parsed = found.group(1).strip()
    else:
        parsed = prediction.split("```tsv")[1] if "```tsv" in prediction else prediction
        parsed = parsed.strip()
    precision, recall, f1, error = table_scores(parsed, reference)
    metrics = {
        "f1": f1,
        "precision": precision,
        "recall": recall,
        "extraction_rate": 1.0 if error is None else 0.0,
    }
    return Graded(f1, metrics, parsed, error)


# --- path traversal -------------------------------------------------------------------------------


def grade_path_traversal(prediction: str, reference: str) -> Graded:
    """Grade a route (`eval_path_traversal`): exact match of the <Route> block; partial credit
    counts lines up to the first wrong one, that line included (the authors' `i += 1`)."""
    parsed = extract_with_tag(prediction, "Route")
    if parsed is None:
        metrics = {"accuracy": 0.0, "partial_accuracy": 0.0, "extraction_rate": 0.0}
        return Graded(0.0, metrics, None, "Parsing error")
    gold = reference.strip()
    parsed = parsed.strip()
    if gold == parsed:
        metrics = {"accuracy": 1.0, "partial_accuracy": 1.0, "extraction_rate": 1.0}
        return Graded(1.0, metrics, parsed, None)
    gold_lines, pred_lines = gold.split("\n"), parsed.split("\n")
    error = None
    i = 0
    for i, (g, p) in enumerate(zip(gold_lines, pred_lines, strict=False)):
        if g != p:
            error = {"line": i, "gt": g, "pr": p}
            break
    i += 1
    metrics = {"accuracy": 0.0, "partial_accuracy": i / len(gold_lines), "extraction_rate": 1.0}
    return Graded(0.0, metrics, parsed, error)


# --- theory-of-mind tracking ------------------------------------------------------------------------

_TOM_WORDS = re.compile(
    r"\b(a|an|the|on|in|at|the|step|thinks|think|believes|believe|is|are|of|location|know|knows"
    r"|belief)\b"
)
_TOM_PUNCTUATION = frozenset(string.punctuation) | {"’"}


def normalize_belief(text: str) -> str:
    """Normalize one trace line as `_normalize_tom` does (punctuation, filler words, spaces)."""
    text = "".join(ch for ch in text.lower() if ch not in _TOM_PUNCTUATION)
    return " ".join(_TOM_WORDS.sub(" ", text).split())


def _beliefs(text: str) -> list[str]:
    out = []
    for line in text.strip().split("\n"):
        if line.startswith("-"):
            content = normalize_belief(line.split("-", 1)[1].strip())
            if content:
                out.append(content)
    return out


def grade_tom_tracking(prediction: str, reference: str) -> Graded:
    """Grade a belief trace (`eval_tom_tracking` + `evaluate_tom_trace`): the `-` lines,
    normalized, must all equal the reference's; partial credit is the share before the first
    difference (or the shorter length over the reference's when one is a prefix of the other).

    As theirs: lines are kept when they start with `-` after stripping, joined, and the whole
    stripped once; a line then counts only when it starts with `-` unstripped (an indented line
    counts only when it is the first)."""

    def dashes(text: str) -> str:
        return "\n".join(line for line in text.splitlines() if line.strip().startswith("-"))

    parsed = dashes(prediction)
    pred, gold = _beliefs(parsed), _beliefs(dashes(reference))
    error = None
    if len(pred) == len(gold) and all(a == b for a, b in zip(pred, gold, strict=True)):
        strict, partial = 1.0, 1.0
    else:
        strict = 0.0
        first = next((i for i, (a, b) in enumerate(zip(pred, gold, strict=False)) if a != b), None)
        if not gold:
            partial = 0.0  # their division by zero; no reference trace is empty
        elif first is not None:
            partial = first / len(gold)
            error = {"line": first, "pr": pred[first], "gt": gold[first]}
        else:
            partial = min(len(pred), len(gold)) / len(gold)
    metrics = {"accuracy": strict, "partial_accuracy": partial, "extraction_rate": 1.0}
    return Graded(strict, metrics, parsed, error)


# --- pseudocode to code: the answer's program -------------------------------------------------------

CPP_HEADER = """#include <cstdio>
#include <iostream>
#include <vector>
#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstring>
#include <set>
#include <map>
#include <queue>
#include <stack>
#include <list>
#include <fstream>
#include <climits>
#include <cassert>
#include <iomanip>
#include <sstream>
#include <bitset>
using namespace std;
"""
"""The authors' `_IMPORT_HEADER`, put before every answer's code."""

_CPP_BLOCK = re.compile(r"```cpp([\s\S]*)```")


def extract_cpp(prediction: str) -> str | None:
    """Return the code of the answer's ```cpp (or ```c++) block, up to the last ``` (greedy,
    unstripped, as `eval_pseudo_to_code`), or None when there is none."""
    found = _CPP_BLOCK.search(re.sub(r"```c\+\+", "```cpp", prediction))
    return None if found is None else found.group(1)


__all__ = [
    "CPP_HEADER",
    "Graded",
    "extract_cpp",
    "extract_with_tag",
    "grade_html_to_tsv",
    "grade_path_traversal",
    "grade_tom_tracking",
    "normalize_belief",
    "normalize_cell",
    "read_tsv",
    "table_scores",
]
