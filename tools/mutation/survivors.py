"""Write each module's surviving mutants, with `mutmut show`'s diff, one plain file a module.

Usage: python -m tools.mutation.survivors SNAPSHOT OUTDIR [--round 1|2] [MODULE ...]

SNAPSHOT is a mutmut run directory (its `mutants/` tree with the .meta files and the mutated
sources); OUTDIR gets `<module>.txt` per module of SCOPE (e.g. `run-store.txt`), listing every
mutant that survived or met no test, each with its diff: for the engineers who write the tests
that kill them. One process for all (a `mutmut show` each would start mutmut thousands of times).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from tools.mutation.run_mutation import NO_TESTS, ROUND_2, SCOPE, exit_codes, summarize


def file_name(module: str) -> str:
    """Return the output file's name of a SCOPE key: `run/store.py` -> `run-store.txt`."""
    stem = re.sub(r"\s*\(.*\)$", "", module).removesuffix(".py")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-") + ".txt"


def source_path(name: str) -> str:
    """Return the source file (under src/) of a mutant's name, as mutmut's meta files name it."""
    module = name.split(".x_")[0].split(".xǁ")[0]
    return "src/" + module.replace(".", "/") + ".py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--round", type=int, choices=(1, 2))
    parser.add_argument("modules", nargs="*", help="keys of SCOPE (default: all)")
    args = parser.parse_args(argv)
    rounds = {1: [m for m in SCOPE if m not in ROUND_2], 2: list(ROUND_2)}
    modules = args.modules or (rounds[args.round] if args.round else list(SCOPE))
    snapshot = args.snapshot.resolve()
    outdir = args.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    codes = exit_codes(snapshot / "mutants")
    results = summarize(codes, modules)
    # mutmut reads the mutated files relative to the run directory.
    os.chdir(snapshot)
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    for result in results:
        lines = [
            f"# {result.module}: {len(result.survivors)} mutants not killed "
            f"({result.survived} survived, {result.no_tests} met no test) of {result.checked} "
            f"checked; killed {100 * result.rate:.1f}%",
            "# Each: the mutant's name (`mutmut show NAME` in the run directory), then its diff.",
            "",
        ]
        for name in result.survivors:
            verdict = "no tests" if codes[name] in NO_TESTS else "survived"
            try:
                diff = get_diff_for_mutant(name, path=source_path(name))
            except Exception as error:  # one unreadable mutant must not lose the others
                diff = f"(diff unavailable: {type(error).__name__}: {error})"
            lines += [f"## {name}: {verdict}", diff, ""]
        (outdir / file_name(result.module)).write_text("\n".join(lines), encoding="utf-8")
        print(f"{file_name(result.module)}: {len(result.survivors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
