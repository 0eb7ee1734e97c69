"""`make mutation`'s hand-made mutants stay applicable: each one's source text occurs exactly once
in its file and the tests that must catch it exist. Sources move on (five of these had drifted
unnoticed, and `make mutation` stopped at its first step); this fails at the edit instead."""

from pathlib import Path

import pytest
from tools.mutation.named_mutants import MUTANTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_each_named_mutant_applies_once_and_names_existing_tests(mutant) -> None:
    source = (ROOT / mutant.path).read_text()
    assert source.count(mutant.old) == 1, f"{mutant.name}: {mutant.old!r} in {mutant.path}"
    assert mutant.new != mutant.old
    for test in mutant.tests:
        path, _, name = test.partition("::")
        assert (ROOT / path).exists(), test  # a file or a folder of tests
        if name:
            assert f"def {name.split('[')[0]}(" in (ROOT / path).read_text(), test


def test_the_sixteen_mutants_of_issue_17_and_the_issue_30_ones_are_all_listed() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) == 34
