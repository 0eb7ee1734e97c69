"""Carry mutmut verdicts from one snapshot to another when the mutated source is the same.

Usage: python -m tools.mutation.carry_results OLD_SNAPSHOT NEW_SNAPSHOT MODULE.py ... > SURVIVORS

For each file (path under src/longscope/), copies the verdicts of OLD's full run into NEW's
results, after checking that mutmut's hash of every function is identical in both (the same
source, so the same mutants); prints the names of OLD's survivors and timeouts, to be re-run by
name in NEW (`mutmut run NAME ...`): a kill stays a kill when tests are only added, a survivor
keeps its verdict until re-run, and a timeout is not carried (a forked child can block on a
thread-pool lock until the wall limit: it proves nothing).
Exits 1 when a file's functions differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tools.mutation.run_mutation import KILLED, NO_TESTS, SURVIVED


def main(argv: list[str]) -> int:
    old, new, *files = argv
    for name in files:
        old_meta = json.loads((Path(old) / "mutants/src/longscope" / f"{name}.meta").read_text())
        path = Path(new) / "mutants/src/longscope" / f"{name}.meta"
        new_meta = json.loads(path.read_text())
        if old_meta["hash_by_function_name"] != new_meta["hash_by_function_name"]:
            print(f"{name}: the source differs; run the whole module", file=sys.stderr)
            return 1
        for key, code in old_meta["exit_code_by_key"].items():
            if code in KILLED or code in SURVIVED or code in NO_TESTS:
                new_meta["exit_code_by_key"][key] = code
            if code is not None and code not in KILLED:
                print(key)
        path.write_text(json.dumps(new_meta))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
