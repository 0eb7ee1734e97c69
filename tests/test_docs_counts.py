"""The test counts README.md, docs/development.md and BENCHMARKS.md state agree (issue 41): the
recorded count (BENCHMARKS.md, `pytest --collect-only -q`), rounded to 50, is what the other two
say, and all three give the same number of slow tests."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_readme_development_and_benchmarks_state_the_same_test_counts() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    development = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    recorded = re.search(
        r"\| ([\d,]+) in the default run \(`make test`\), ([\d,]+) marked slow", benchmarks
    )
    assert recorded, "BENCHMARKS.md records no test count"
    default, slow = _number(recorded[1]), _number(recorded[2])
    said = re.search(r"~([\d,]+) tests \(([\d,]+) more in make test-slow\)", readme)
    assert said, "README.md states no test count"
    stated = re.search(r"about ([\d,]+) tests; `make test-slow` runs ([\d,]+) more", development)
    assert stated, "docs/development.md states no test count"
    rounded = round(default / 50) * 50
    assert (_number(said[1]), _number(said[2])) == (rounded, slow)
    assert (_number(stated[1]), _number(stated[2])) == (rounded, slow)
