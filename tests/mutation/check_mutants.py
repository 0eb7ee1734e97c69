"""Check by hand whether given tests kill given mutmut mutants, without a mutmut run.

Each mutant's function (as mutmut wrote it under `<snapshot>/mutants/src/...`) replaces the
original function in a `git archive HEAD` copy of this tree, and the tests run there alone
(`PYTHONPATH=<copy>/src`). Prints one verdict a mutant; the copy is left with the original source.

    python -m tests.mutation.check_mutants --snapshot build/mutation-r2 \\
        --module src/longscope/run/merge.py --names survivors.txt tests/run/test_merge_fast.py

`survivors.txt`: one mutmut name a line (`longscope.run.merge.x_merge_runs__mutmut_12`), e.g.
from `mutmut results | grep -v killed`.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, required=True, help="mutmut's run directory")
    parser.add_argument("--module", required=True, help="e.g. src/longscope/run/merge.py")
    parser.add_argument("--names", type=Path, required=True, help="file of mutant names")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/check-mutants"))
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
    main()
