"""The pseudocode-to-C++ evaluator (the authors' `evaluate_spoc_code`), run in the sandbox.

Their rule: the answer's ```cpp block after their header, compiled with `g++ -std=c++11 -O`, must
print exactly each test case's output (lines joined by newlines, one trailing newline) for its
input, for the first 10 test cases, each within 3 seconds; the exit status is not checked.

Ours differs only where the program is fenced (`longscope.sandbox`): it runs in a scratch
directory with CPU, memory and output limits and no network, and a program that forks, opens a
socket, writes a file or signals another process is killed there. A program stopped by the fence
or a limit scores 0 with the reason, whatever it printed before.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from longscope import sandbox
from longscope.suites.longproc.grading import CPP_HEADER, Graded, extract_cpp

MAX_CASES = 10
"""Test cases run per answer (`max_check=10`)."""
LIMITS = sandbox.Limits(cpu_s=3, wall_s=3.0)
"""Per test case: the authors' 3-second timeout (`communicate(timeout=3)`), as CPU and wall time."""
COMPILER = "g++"
FLAGS = ("-std=c++11", "-O")
STOPPED = ("cpu", "wall", "output", "forbidden", "sandbox")
"""Verdicts of a program the fence or a limit stopped: 0, whatever it printed."""


def unavailable() -> str:
    """Return why C++ answers cannot be run here (one line), or "" when they can."""
    if shutil.which(COMPILER) is None:
        return f"no C++ compiler ({COMPILER} is not on PATH)"
    return sandbox.unavailable()


def _fail(code: str, reason: str, **extra: object) -> Graded:
    metrics = {"accuracy": 0.0, "partial_accuracy": 0.0, "extraction_rate": 1.0}
    return Graded(0.0, metrics, code, {"reason": reason, **extra})


def grade_pseudo_to_code(
    prediction: str, testcases: Sequence[tuple[Sequence[str], Sequence[str]]]
) -> Graded:
    """Grade a C++ answer: compiled and run on the first 10 test cases, each in the sandbox."""
    code = extract_cpp(prediction)
    if code is None:
        metrics = {"accuracy": 0.0, "partial_accuracy": 0.0, "extraction_rate": 0.0}
        return Graded(0.0, metrics, None, {"reason": "no ```cpp block"})
    why = unavailable()
    if why:
        return _fail(code, f"not run: {why}")
    with sandbox.Scratch() as scratch:
        compiled = sandbox.compile_cpp(CPP_HEADER + code, scratch, compiler=COMPILER, flags=FLAGS)
        if compiled.path is None:
            return _fail(code, compiled.error, compiler=compiled.output[-1000:])
        for number, (inputs, outputs) in enumerate(testcases[:MAX_CASES]):
            stdin = ("\n".join(inputs) + "\n").encode("utf-8")
            ran = sandbox.run([str(compiled.path)], stdin, scratch, LIMITS)
            if ran.verdict in STOPPED:
                return _fail(code, ran.reason, case=number, verdict=ran.verdict)
            try:
                printed = ran.stdout.decode("utf-8")
            except UnicodeDecodeError:
                return _fail(code, "decode error", case=number)
            if printed != "\n".join(outputs) + "\n":
                extra = {} if ran.verdict == "ok" else {"verdict": ran.verdict, "why": ran.reason}
                return _fail(code, "inconsistent", case=number, **extra)
    metrics = {"accuracy": 1.0, "partial_accuracy": 1.0, "extraction_rate": 1.0}
    return Graded(1.0, metrics, code, None)


__all__ = ["COMPILER", "FLAGS", "LIMITS", "MAX_CASES", "grade_pseudo_to_code", "unavailable"]
