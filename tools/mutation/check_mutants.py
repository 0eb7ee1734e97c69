"""Check by hand whether given tests kill given mutmut mutants, without a mutmut run.

Each mutant's function (as mutmut wrote it under `<snapshot>/mutants/src/...`) replaces the
original function in a `git archive HEAD` copy of this tree, and the tests run there alone
(`PYTHONPATH=<copy>/src`). Prints one verdict a mutant; the copy is left with the original source.

    python -m tools.mutation.check_mutants --snapshot build/mutation-r2 \\
        --module src/longscope/run/merge.py --names survivors.txt tests/run/test_merge_stores.py

`survivors.txt`: one mutmut name a line (`longscope.run.merge.x_merge_runs__mutmut_12`), e.g.
from `mutmut results | grep -v killed`.

`--in-process` screens many mutants fast: one Python process imports the copy and runs the clean
tests once; per mutant, a fork of it swaps the mutant's code object into the original function (so
every caller, including modules that imported it by name, runs the mutant) and runs the tests with
`pytest.main`; nothing a mutant does outlives its fork. A test that starts a child process does
not see the mutant there (as under mutmut). A mutant it cannot swap (a different closure,
zero-argument `super()`) is reported `unsupported`: check those without `--in-process`.
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


class _Reach:
    """A pytest plugin: which tests call which function (by qualified name) of one file."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.current = ""
        self.tests: dict[str, set[str]] = {}

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == self.filename:
            self.tests.setdefault(frame.f_code.co_qualname, set()).add(self.current)

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        import threading

        self.current = item.nodeid
        sys.setprofile(self._profile)
        threading.setprofile(self._profile)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        import threading

        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def _worker(
    workdir: Path, module_path: str, mutated_path: Path, names: list[str], tests: list[str]
) -> None:
    """Run in a child process whose cwd is the copy: screen `names` from one warm process."""
    import importlib
    import signal

    import pytest

    sys.path.insert(0, str(workdir / "src"))
    module_name = module_path.removeprefix("src/").removesuffix(".py").replace("/", ".")
    module = importlib.import_module(module_name)
    mutated_module = mutated_path.read_text()
    tests_all = list(tests)
    args = ["-q", "-x", "-p", "no:cacheprovider", *tests]

    def quiet_pytest(tests: list[str] | None = None, plugins: list[Any] | None = None) -> int:
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        return int(pytest.main([*args[: -len(tests_all)], *(tests or tests_all)], plugins=plugins))

    def forked(swap: Any, limit: float, reaching: list[str]) -> int:
        """Run the tests in a fork (a mutant's state never outlives it); 124 past `limit`."""
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                swap()
                code = quiet_pytest(reaching)
            finally:
                os._exit(code)
        deadline = time.monotonic() + limit
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return 124
            time.sleep(0.02)

    start = time.monotonic()
    # The parent imports the tests once (a clean run, noting which tests call which function of
    # the module, as mutmut does); every fork starts from that warm process and runs only the
    # tests that reach the mutant's function.
    reach = _Reach(module.__file__ or "")
    saved_out, saved_err = os.dup(1), os.dup(2)
    clean = quiet_pytest(plugins=[reach])
    os.dup2(saved_out, 1)
    os.dup2(saved_err, 2)
    if clean != 0:
        raise SystemExit("the tests fail on the unmutated copy: fix them first")
    base = time.monotonic() - start
    limit = max(20.0, base * 5 + 5)
    print(f"baseline passes in {base:.1f}s; {limit:.0f}s a mutant at most", flush=True)
    killed = 0
    for name in names:
        cls, func, _ = _parse(name)
        original = _original_function(module, cls, func)
        try:
            mutant = _mutant_function(mutated_module, name, vars(module))
            if len(mutant.__code__.co_freevars) != len(original.__code__.co_freevars):
                raise ValueError("its closure differs from the original's")
        except (ValueError, TypeError, KeyError, SyntaxError) as exc:
            print(f"{name} unsupported ({exc.__class__.__name__}: {exc})", flush=True)
            continue

        def swap(original: Any = original, mutant: Any = mutant) -> None:
            original.__code__ = mutant.__code__
            original.__defaults__ = mutant.__defaults__
            original.__kwdefaults__ = mutant.__kwdefaults__

        reaching = sorted(reach.tests.get(f"{cls}.{func}" if cls else func, ()))
        if not reaching:
            print(f"{name} survived (no test reaches {func})", flush=True)
            continue
        start = time.monotonic()
        code = forked(swap, limit, reaching)
        killed += code != 0
        verdict = "survived" if code == 0 else ("timeout" if code == 124 else "killed")
        print(f"{name} {verdict} {time.monotonic() - start:.1f}s", flush=True)
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
    # A mutant's file writes land in the copy, never in the user's own ~/.cache. (Imported here:
    # the in-process worker runs as a script, where `tests` is not importable.)
    from tools.mutation.run_mutation import scratch_home

    env = {**os.environ, **scratch_home(args.workdir), "PYTHONPATH": str(args.workdir / "src")}
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
