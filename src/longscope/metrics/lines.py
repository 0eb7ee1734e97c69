"""LongBench Pro's line metrics: Accuracy, F1, SubEM, NDCG and Pairwise accuracy.

Pure functions of (prediction lines, gold items), following the official definitions to the letter,
quirks included (see docs/benchmarks/longbench-pro.md): the answer area is the text after the LAST
`[Answer]` (else the last `[答案]`), lines keep blanks and punctuation, a repeated prediction line
keeps its LAST position, and pairwise accuracy divides by the number of PREDICTED pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

ANSWER_MARKERS = ("[Answer]", "[答案]")


def answer_area(reply: str) -> str:
    """Return the text after the last `[Answer]`, else after the last `[答案]`, else all; stripped."""
    for marker in ANSWER_MARKERS:
        index = reply.rfind(marker)
        if index != -1:
            return reply[index + len(marker) :].strip()
    return reply.strip()


def _clean(item: str) -> str:
    # str.split() without an argument: exactly the whitespace the official scorer collapses.
    return " ".join(item.strip().split())


def prediction_lines(reply: str) -> list[str]:
    """Return the answer area lower-cased, split on newlines, each line stripped and collapsed."""
    return [_clean(line) for line in answer_area(reply).lower().split("\n")]


def gold_items(gold: Sequence[str]) -> list[str]:
    """Return gold items lower-cased, stripped and whitespace-collapsed."""
    return [_clean(item.lower()) for item in gold]


def accuracy(pred: Sequence[str], gold: Sequence[str]) -> float:
    """1.0 when the first prediction line equals the first gold item."""
    return 1.0 if pred and gold and pred[0] == gold[0] else 0.0


def f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    """Set F1 over lines."""
    common = len(set(pred) & set(gold))
    if not common:
        return 0.0
    precision = common / len(set(pred))
    recall = common / len(set(gold))
    return 2 * precision * recall / (precision + recall)


def sub_em(pred: Sequence[str], gold: Sequence[str]) -> float:
    """Fraction of gold items found among the prediction lines (recall; extra lines are free)."""
    if not gold:
        return 0.0
    lines = set(pred)
    return sum(1 for item in gold if item in lines) / len(gold)


def _last_positions(pred: Sequence[str]) -> dict[str, int]:
    return {line: index for index, line in enumerate(pred)}


def ndcg(pred: Sequence[str], gold: Sequence[str]) -> float:
    """trec_eval ndcg_cut.k with k = len(gold), graded relevance len(gold) - i, linear gain.

    Prediction line j has run score len(pred) - j, a repeated line keeping its last position; the
    ranking sorts by score (descending), ties by document id descending, as trec_eval does.
    """
    if not pred or not gold:
        return 0.0
    k = len(gold)
    # As a dict built in order: a repeated gold item keeps its last (lowest) relevance.
    relevance = {item: k - index for index, item in enumerate(gold)}
    scores = {line: len(pred) - index for line, index in _last_positions(pred).items()}
    ranking = sorted(scores, key=lambda doc: (scores[doc], doc), reverse=True)
    dcg = sum(relevance.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranking[:k]))
    ideal = sorted(relevance.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def pairwise_accuracy(pred: Sequence[str], gold: Sequence[str]) -> float:
    """Gold-ordered pairs kept in order by the prediction, over C(len(pred), 2)."""
    if len(gold) < 2 or len(pred) < 2:
        return 0.0
    position = _last_positions(pred)
    correct = 0
    for i in range(len(gold)):
        for j in range(i + 1, len(gold)):
            a, b = gold[i], gold[j]
            if a in position and b in position and position[a] < position[b]:
                correct += 1
    return correct / math.comb(len(pred), 2)


LineMetric = Callable[[Sequence[str], Sequence[str]], float]
LINE_METRICS: dict[str, LineMetric] = {
    "accuracy": accuracy,
    "f1": f1,
    "subem": sub_em,
    "ndcg": ndcg,
    "pairwise": pairwise_accuracy,
}
