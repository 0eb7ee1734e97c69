"""Token F1 for extractive QA answers (SQuAD / LongBench normalisation). Pure functions."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_qa(text: str) -> str:
    """Lower-case, drop punctuation and English articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """Bag-of-tokens F1 between a prediction and one gold answer."""
    pred = normalize_qa(prediction).split()
    ref = normalize_qa(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_f1(prediction: str, golds: Sequence[str]) -> float:
    """Token F1 against the closest of several gold answers."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)
