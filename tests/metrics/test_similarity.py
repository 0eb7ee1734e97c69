"""Cosine similarity's normalisation: unit rows, and a zero vector left at zero (never NaN)."""

import numpy as np

from longscope.metrics.similarity import _normalise


def test_rows_become_unit_vectors_and_a_zero_row_stays_zero() -> None:
    # 3-4-5: 0.6 and 0.8 in float32, the precision of the official model's vectors
    out = _normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [[float(np.float32(0.6)), float(np.float32(0.8))], [0.0, 0.0]]
