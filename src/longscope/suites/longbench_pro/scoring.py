"""Scoring one LongBench Pro prediction against one sample, as the official scorer defines it."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from longscope.metrics.lines import LINE_METRICS, gold_items, prediction_lines
from longscope.metrics.rouge import rouge_l
from longscope.metrics.similarity import Embedder, load_embedder, max_cosine
from longscope.types import Score

SUMMARY_PASS = 0.65
"""A summary counts as solved (pass@i, difficulty calibration) above this score."""
_SPACES = re.compile(r"\s+")


@functools.cache
def _jieba():  # type: ignore[no-untyped-def]
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


def _segment(text: str) -> str:
    return " ".join(_jieba().cut(text))


def summary_score(
    reply: str,
    references: Sequence[str],
    language: str,
    embedder: Embedder,
    *,
    rouge_parity: bool = False,
) -> Score:
    """0.5 x best cosine + 0.5 x best ROUGE-L F over the references (whole reply, no [Answer] cut)."""
    prediction = _SPACES.sub(" ", reply.lower()).strip()
    refs = [_SPACES.sub(" ", ref.lower()).strip() for ref in references]
    if not prediction:
        return Score(0.0, 1.0, {"metric": "summary", "failed": "empty prediction"})
    cosine = max_cosine(embedder, prediction, refs)
    if language == "Chinese":
        rouge_pred, rouge_refs = _segment(prediction), [_segment(ref) for ref in refs]
    else:
        rouge_pred, rouge_refs = prediction, refs
    results = [rouge_l(rouge_pred, ref) for ref in rouge_refs]
    official_fails = any(r.official_fails for r in results)
    # The official scorer scores 0 when any reference's recursion fails (one try around all three).
    best_rouge = 0.0 if rouge_parity and official_fails else max(r.f for r in results)
    value = 0.5 * max(cosine, 0.0) + 0.5 * best_rouge
    return Score(
        min(1.0, value),
        1.0,
        {
            "metric": "summary",
            "cosine": round(cosine, 4),
            "rouge_l": round(best_rouge, 4),
            "rouge_l_true": round(max(r.f for r in results), 4),
            "official_rouge_fails": official_fails,
            "embedder": embedder.name,
        },
    )


def score_prediction(
    reply: str,
    sample: dict[str, Any],
    *,
    embedder: Embedder | None = None,
    rouge_parity: bool = False,
) -> Score:
    """Score one reply against one stored sample (`Sample.public()` or a dataset row as dict)."""
    metric = sample["meta"]["metric"] if "meta" in sample else sample["metric"]
    gold = list(sample.get("gold") or sample.get("answer") or [])
    language = sample["language"]
    if metric == "summary":
        return summary_score(
            reply, gold, language, embedder or load_embedder(), rouge_parity=rouge_parity
        )
    pred = prediction_lines(reply)
    items = gold_items(gold)
    value = LINE_METRICS[metric](pred, items)
    evidence: dict[str, Any] = {"metric": metric, "prediction_lines": pred[:20], "gold": items[:20]}
    if not any(pred):
        evidence["failed"] = "empty prediction"
    return Score(value, 1.0, evidence)


def solved(score: float, metric: str) -> bool:
    """Whether a score counts as solving the sample (pass@i and difficulty calibration)."""
    return score > SUMMARY_PASS if metric == "summary" else score >= 1.0
