"""Check by hand whether given tests kill given mutmut mutants, without a mutmut run.

Each mutant's function (as mutmut wrote it under `<snapshot>/mutants/src/...`) replaces the
original function in a `git archive HEAD` copy of this tree, and the tests run there alone
(`PYTHONPATH=<copy>/src`). Prints one verdict a mutant; the copy is left with the original source.

    python -m tests.mutation.check_mutants --snapshot build/mutation-r2 \\
        --module src/longscope/run/merge.py --names survivors.txt tests/run/test_merge_fast.py

`survivors.txt`: one mutmut name a line (`longscope.run.merge.x_merge_runs__mutmut_12`), e.g.
from `mutmut results | grep -v killed`.

`--in-process` screens many mutants fast: one Python process imports the copy once and, per
mutant, swaps the mutant's code object into the original function (so every caller, including
modules that imported it by name, runs the mutant), runs the tests with `pytest.main`, and swaps
the original back. The clean tests run first and again every 25 mutants (state one mutant left
behind would show there). A mutant it cannot swap (a different closure, zero-argument `super()`)
is reported `unsupported`: check those, and confirm the survivors, without `--in-process`.
"""

from __future__ import annotations
import __future__

import argparse
import ast
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
Node = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.Module) -> dict[tuple[str | None, str], Node]:
    out: dict[tuple[str | None, str], Node] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[(None, node.name)] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[(node.name, sub.name)] = sub
    return out


def _parse(name: str) -> tuple[str | None, str, str]:
    """Return (class or None, function, mutmut's function name) of a mutant's full name."""
    short = name.rsplit(".", 1)[-1]
    method = re.fullmatch(r"xǁ(\w+)ǁ(\w+)__mutmut_\d+", short)
    if method:
        return method.group(1), method.group(2), short
    function = re.fullmatch(r"x_(\w+?)__mutmut_\d+", short)
    if function is None:
        raise SystemExit(
            f"{name} is not a mutmut mutant name: expected ...x_<function>__mutmut_<n>"
        )
    return None, function.group(1), short


def mutated_source(original: str, mutated_module: str, name: str) -> str:
    """Return `original` with the function of mutant `name` as mutmut wrote it."""
    cls, func, short = _parse(name)
    mutant = _functions(ast.parse(mutated_module))[(cls, short)]
    body = "".join(mutated_module.splitlines(True)[mutant.lineno - 1 : mutant.end_lineno])
    body = textwrap.dedent(body).replace(f"def {short}(", f"def {func}(", 1)
    target = _functions(ast.parse(original))[(cls, func)]
    lines = original.splitlines(True)
    new = textwrap.indent(body, " " * target.col_offset)
    return "".join(lines[: target.lineno - 1]) + new + "".join(lines[target.end_lineno :])


def _mutant_function(mutated_module: str, name: str, namespace: dict[str, Any]) -> Any:
    """Return the function object of mutant `name`, compiled in the module's `namespace`."""
    cls, func, short = _parse(name)
    mutant = _functions(ast.parse(mutated_module))[(cls, short)]
    body = "".join(mutated_module.splitlines(True)[mutant.lineno - 1 : mutant.end_lineno])
    body = textwrap.dedent(body).replace(f"def {short}(", f"def {func}(", 1)
    flags = __future__.annotations.compiler_flag
    local: dict[str, Any] = {}
    exec(
        compile(body, f"<mutant {short}>", "exec", flags=flags, dont_inherit=True), namespace, local
    )
    return local[func]


def _original_function(module: Any, cls: str | None, func: str) -> Any:
    owner = vars(module) if cls is None else vars(getattr(module, cls))
    value = owner[func]
    if isinstance(value, staticmethod | classmethod):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    return value


def _worker(
    workdir: Path, module_path: str, mutated_path: Path, names: list[str], tests: list[str]
) -> None:
    """Run in a child process whose cwd is the copy: screen `names` in one process."""
    import importlib
    import signal

    import pytest

    sys.path.insert(0, str(workdir / "src"))
    module_name = module_path.removeprefix("src/").removesuffix(".py").replace("/", ".")
    module = importlib.import_module(module_name)
    mutated_module = mutated_path.read_text()
    args = [
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "--no-header",
        "-o",
        "console_output_style=classic",
        *tests,
    ]

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError("mutant ran past its time")

    signal.signal(signal.SIGALRM, on_alarm)

    def run(limit: int) -> int:
        with open(os.devnull, "w") as sink:
            saved = os.dup(1), os.dup(2)
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            signal.alarm(limit)
            try:
                return int(pytest.main(args))
            except TimeoutError:
                return 124
            finally:
                signal.alarm(0)
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])

    start = time.monotonic()
    if run(600) != 0:
        raise SystemExit("the tests fail on the unmutated copy: fix them first")
    base = time.monotonic() - start
    limit = max(10, int(base * 5) + 5)
    print(f"baseline passes in {base:.1f}s; {limit}s a mutant at most", flush=True)
    killed = 0
    for index, name in enumerate(names):
        cls, func, _ = _parse(name)
        original = _original_function(module, cls, func)
        saved = original.__code__, original.__defaults__, original.__kwdefaults__
        try:
            mutant = _mutant_function(mutated_module, name, vars(module))
            original.__code__ = mutant.__code__
            original.__defaults__ = mutant.__defaults__
            original.__kwdefaults__ = mutant.__kwdefaults__
        except (ValueError, TypeError, KeyError, SyntaxError) as exc:
            original.__code__, original.__defaults__, original.__kwdefaults__ = saved
            print(f"{name} unsupported ({exc.__class__.__name__}: {exc})", flush=True)
            continue
        start = time.monotonic()
        try:
            code = run(limit)
        finally:
            original.__code__, original.__defaults__, original.__kwdefaults__ = saved
        killed += code != 0
        verdict = "survived" if code == 0 else ("timeout" if code == 124 else "killed")
        print(f"{name} {verdict} {time.monotonic() - start:.1f}s", flush=True)
        if (index + 1) % 25 == 0 and run(600) != 0:
            raise SystemExit(f"the clean tests fail after {name}: a mutant left state behind")
    if run(600) != 0:
        raise SystemExit("the clean tests fail after the last mutant: a mutant left state behind")
    print(f"{killed} of {len(names)} killed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, required=True, help="mutmut's run directory")
    parser.add_argument("--module", required=True, help="e.g. src/longscope/run/merge.py")
    parser.add_argument("--names", type=Path, required=True, help="file of mutant names")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/check-mutants"))
    parser.add_argument("--in-process", action="store_true", help="screen fast (see above)")
    parser.add_argument("tests", nargs="+")
    args = parser.parse_args()
    names = [n.split(":")[0].strip() for n in args.names.read_text().splitlines() if n.strip()]
    mutated_module = (args.snapshot / "mutants" / args.module).read_text()
    args.workdir.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(args.workdir)], input=archive.stdout, check=True)
    target = args.workdir / args.module
    original = target.read_text()
    env = {**os.environ, "PYTHONPATH": str(args.workdir / "src")}
    if args.in_process:
        names_file = args.workdir / ".mutant-names"
        names_file.write_text("\n".join(names))
        worker = [
            sys.executable,
            __file__,
            "--worker",
            str(args.workdir),
            args.module,
            str(args.snapshot.resolve() / "mutants" / args.module),
            str(names_file),
            *args.tests,
        ]
        raise SystemExit(subprocess.run(worker, cwd=args.workdir, env=env).returncode)
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args.tests]

    def run() -> int:
        return subprocess.run(command, cwd=args.workdir, env=env, capture_output=True).returncode

    if run() != 0:
        raise SystemExit("the tests fail on the unmutated copy: fix them first")
    killed = 0
    try:
        for name in names:
            target.write_text(mutated_source(original, mutated_module, name))
            start = time.monotonic()
            code = run()
            killed += code != 0
            verdict = "survived" if code == 0 else "killed"
            print(f"{name} {verdict} {time.monotonic() - start:.1f}s", flush=True)
    finally:
        target.write_text(original)
    print(f"{killed} of {len(names)} killed")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        workdir, module_path, mutated, names_path, *tests = sys.argv[2:]
        _worker(
            Path(workdir), module_path, Path(mutated), Path(names_path).read_text().split(), tests
        )
    else:
        main()
