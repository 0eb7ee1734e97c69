"""Pseudocode to C++: the authors' rule, and model-written programs that misbehave are stopped in
the sandbox and scored 0 with the reason (issue 44's done-when)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.suites.longproc import code
from longscope.suites.longproc.code import grade_pseudo_to_code

from .rows import ADD_CODE

pytestmark = pytest.mark.skipif(bool(code.unavailable()), reason=code.unavailable() or "-")
CASES = [(["2 3"], ["5"]), (["10 -4"], ["6"])]


def _answer(body: str) -> str:
    return f"Here is the code.\n```cpp\n{body}\n```\n"


@pytest.mark.slow
def test_a_right_program_passes_and_a_wrong_one_names_the_case() -> None:
    assert grade_pseudo_to_code(_answer("\n".join(ADD_CODE)), CASES).score == 1.0
    wrong = "\n".join(ADD_CODE).replace("a + b", "a - b")
    graded = grade_pseudo_to_code(_answer(wrong), CASES)
    assert graded.score == 0.0 and graded.error == {"reason": "inconsistent", "case": 0}


@pytest.mark.slow
def test_the_exit_status_is_not_checked_as_in_their_evaluator() -> None:
    body = "int main() { int a, b; cin >> a >> b; cout << a + b << endl; return 3; }"
    assert grade_pseudo_to_code(_answer(body), CASES).score == 1.0


@pytest.mark.slow
def test_a_compile_error_scores_zero_with_the_compilers_words() -> None:
    graded = grade_pseudo_to_code(_answer("int main() { return x; }"), CASES)
    assert graded.score == 0.0 and graded.error["reason"] == "compilation error"
    assert "'x' was not declared" in graded.error["compiler"]


def test_a_program_that_forks_is_stopped_and_scored_zero_with_the_reason() -> None:
    body = '#include <unistd.h>\nint main() { fork(); cout << 5 << "\\n"; }'
    graded = grade_pseudo_to_code(_answer(body), CASES)
    assert graded.score == 0.0 and graded.metrics["accuracy"] == 0.0
    assert graded.error["verdict"] == "forbidden" and "new process" in graded.error["reason"]


def test_a_program_that_writes_outside_its_directory_is_stopped_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    target = tmp_path / "escaped.txt"
    body = (
        f'int main() {{ FILE *f = fopen("{target}", "w"); if (f) {{ fputs("x", f); fclose(f); }}'
        ' int a, b; cin >> a >> b; cout << a + b << "\\n"; }'
    )
    graded = grade_pseudo_to_code(_answer(body), CASES)
    assert graded.score == 0.0 and graded.error["verdict"] == "forbidden"
    assert "writing" in graded.error["reason"] and not target.exists()


@pytest.mark.slow
def test_a_program_that_loops_forever_is_stopped_at_the_authors_3_seconds() -> None:
    endless = "int main() { volatile long x = 0; while (true) x++; }"
    graded = grade_pseudo_to_code(_answer(endless), CASES)
    assert graded.score == 0.0 and graded.error["verdict"] in ("cpu", "wall")
    assert "3 s" in graded.error["reason"]


def test_no_cpp_block_is_an_extraction_failure() -> None:
    graded = grade_pseudo_to_code("int main() {}", CASES)
    assert graded.score == 0.0 and graded.metrics["extraction_rate"] == 0.0


def test_a_missing_compiler_is_one_line_and_nothing_runs(monkeypatch) -> None:
    monkeypatch.setattr(code.shutil, "which", lambda _name: None)
    assert code.unavailable() == "no C++ compiler (g++ is not on PATH)"
    graded = grade_pseudo_to_code(_answer("int main() {}"), CASES)
    assert graded.score == 0.0 and graded.error["reason"].startswith("not run: no C++ compiler")
