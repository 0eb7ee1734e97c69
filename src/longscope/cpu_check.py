"""Will the installed llama.cpp library run on this CPU? Asked once per library build, in a child.

A llama.cpp built with the build machine's native flags can die with "Illegal instruction" on
another CPU, and one built with AMX kernels dies on AMX Xeons themselves (Linux grants AMX tile
state per thread; llama.cpp asks for it on the main thread only, and the kernels run on OpenMP
workers). A signal kills the whole process, so no exception can be caught: the only safe question
is a short generation in a child process. Its verdict is cached per (library files, CPU flags), so
it costs about a second once and nothing after.

`python -m longscope.cpu_check` runs the check (the Makefile calls it right after install)
and exits 2 with one line when the library would crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from longscope.errors import UsageError
from longscope.files import default_cache_dir, write_json

# The rebuild a user runs when the check fails: the same portable flags as the Makefile.
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
)
PROBE_TIMEOUT_S = 120.0
# Enough prompt tokens that prefill takes the batched matrix kernels (where AMX lives), and at least
# two threads so OpenMP workers run them, as in a real generation.
PROBE_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog."] * 12) + " Then the fox"
PROBE_SCRIPT = """
import os, sys
import llama_cpp
print("SYSTEM_INFO " + llama_cpp.llama_print_system_info().decode(errors="replace"), flush=True)
if len(sys.argv) > 1:
    threads = max(2, os.cpu_count() or 1)
    llama = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=512, n_threads=threads,
                            n_threads_batch=threads, verbose=False)
    out = llama.create_completion(prompt=sys.argv[2], max_tokens=2, temperature=0.0)
    print("GENERATED", out["usage"]["completion_tokens"], flush=True)
"""


@dataclass(frozen=True)
class CpuVerdict:
    """What the child process found: whether the library runs here, and what it said."""

    ok: bool
    reason: str
    system_info: str


def library_files() -> list[Path]:
    """Return llama-cpp-python's shared libraries, found without importing (importing may crash)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            "the llama.cpp engine (llamacpp/ models, .gguf tokenizers) needs llama-cpp-python, "
            "which is not installed: pip install 'longscope[embedded]' (or `make install` in a "
            "checkout, which builds it with portable CPU flags)"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    return sorted(p for p in root.rglob("*") if p.suffix in (".so", ".dylib", ".dll"))


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return line
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def fingerprint() -> str:
    """Return a key for this library build on this CPU: the verdict holds while both stay."""
    digest = hashlib.sha256(_cpu_flags().encode())
    for path in library_files():
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def probe(model_path: Path | None, script: str | None = None) -> CpuVerdict:
    """Run one short generation in a child process and return how it ended."""
    args = [sys.executable, "-c", script or PROBE_SCRIPT]
    if model_path is not None:
        args += [str(model_path), PROBE_PROMPT]
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        # Slow is not broken: a loaded machine may take long; the real run has its own deadlines.
        return CpuVerdict(True, f"probe did not finish in {PROBE_TIMEOUT_S:.0f}s", "")
    info = next(
        (line[len("SYSTEM_INFO ") :] for line in done.stdout.splitlines() if "SYSTEM_INFO" in line),
        "",
    )
    if done.returncode < 0:
        number = -done.returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        meaning = {"SIGILL": " (Illegal instruction)", "SIGSEGV": " (Segmentation fault)"}
        return CpuVerdict(False, f"{name}{meaning.get(name, '')}", info)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return CpuVerdict(False, f"exit code {done.returncode}: {last[:200]}", info)
    return CpuVerdict(True, "", info)


def failure_message(verdict: CpuVerdict) -> str:
    """Return the one line a user sees when the library would crash, with the rebuild command."""
    amx = " (it has AMX kernels, which crash on many Xeons)" if has_amx(verdict.system_info) else ""
    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        version = "0.3.36"
    return (
        f"the installed llama-cpp-python dies with {verdict.reason} in a test generation on this "
        f"CPU: it was built with CPU-specific kernels this machine cannot run{amx}. Rebuild it "
        f"portably: `make install` in "
        f"a longscope checkout, or CMAKE_ARGS='{PORTABLE_CMAKE_ARGS}' pip install --force-reinstall "
        f"--no-cache-dir --no-deps --no-binary llama-cpp-python llama-cpp-python=={version}"
    )


def has_amx(system_info: str) -> bool:
    """Return True when llama.cpp's system info says it was built with AMX kernels."""
    return any(
        part.strip().startswith("AMX") and part.strip().endswith("= 1")
        for part in system_info.split("|")
    )


def check_library(model_path: Path | None = None, *, cache_dir: Path | None = None) -> CpuVerdict:
    """Return the cached verdict for this library on this CPU, probing in a child the first time.

    The probe generates with the embedded model when it is installed, else with `model_path`;
    with neither it can only import the library (which catches fewer bad builds).

    Raises UsageError with the one-line explanation and the rebuild command when it would crash.
    """
    cache = (cache_dir or default_cache_dir()) / "cpu-check" / f"{fingerprint()}.json"
    verdict = None
    try:
        verdict = CpuVerdict(**json.loads(cache.read_text()))
    except (OSError, ValueError, TypeError):
        # The small embedded model loads in about a second; the user's own model is the fallback.
        verdict = probe(_embedded_model() or model_path)
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_json(cache, verdict.__dict__)
    if not verdict.ok:
        raise UsageError(failure_message(verdict))
    return verdict


def _embedded_model() -> Path | None:
    """Return the embedded Gemma file when it is installed: small, so the probe loads it in ~1 s."""
    from longscope.catalogue import resolve_model_path

    try:
        return resolve_model_path("gemma3-270m")
    except UsageError:
        return None


@contextlib.contextmanager
def engine_log() -> Iterator[IO[str]]:
    """Send what llama.cpp prints to stderr meanwhile into a temporary file (read on failure).

    Some of its load-time notices bypass llama-cpp-python's `verbose=False`: a vocabulary-only
    load (a GGUF tokenizer) prints `n_ctx_seq (512) > n_ctx_train (0)` on every run.
    """
    with tempfile.TemporaryFile("w+") as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield log
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)


def usable_cpus(
    proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
) -> int:
    """Return how many CPUs this process may keep busy: its affinity mask (a `taskset` or a
    container's cpuset), capped by a CPU quota of its cgroup or an ancestor's (a container's
    `--cpus`, a pod's limit), rounded up. `os.cpu_count()` counts the host's CPUs: llama.cpp given
    that many threads under a 2-CPU quota spins them against each other."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count() or 1
    try:
        quota = _cgroup_quota(proc_cgroup, root)
    except (OSError, ValueError):  # an unreadable or undecodable cgroup file: no quota known
        quota = None
    if quota is not None:
        count = min(count, -(-quota[0] // quota[1]))  # ceil: 1.5 CPUs keep 2 threads busy
    return max(1, count)


def _cgroup_quota(proc_cgroup: Path, root: Path) -> tuple[int, int] | None:
    """Return the smallest (quota, period) of the process's cgroup and its ancestors, cgroup v2's
    `cpu.max` or v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us`; None where none is set. Raises
    OSError or ValueError where `/proc/self/cgroup` cannot be read or decoded."""
    lines = proc_cgroup.read_text().splitlines()
    found: list[tuple[int, int]] = []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        names = controllers.split(",")
        if controllers == "":  # v2: one hierarchy
            base, files = root, ("cpu.max",)
        elif "cpu" in names:  # v1: the cpu controller's own mount (cpu or cpu,cpuacct)
            base = next((root / n for n in (controllers, "cpu") if (root / n).is_dir()), None)
            if base is None:
                continue
            files = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        parts = [part for part in path.split("/") if part]
        if ".." in parts:  # a cgroup outside this namespace's root: not under the mount
            continue
        for depth in range(len(parts), -1, -1):  # the cgroup itself, then each ancestor
            folder = base.joinpath(*parts[:depth])
            try:
                text = " ".join((folder / name).read_text() for name in files).split()
                quota, period = int(text[0]), int(text[1])
            except (OSError, ValueError, IndexError):  # "max" (no quota), or not there
                continue
            if quota > 0 and period > 0:
                found.append((quota, period))
    return min(found, key=lambda qp: qp[0] / qp[1]) if found else None


def main() -> None:
    """Check the library now (no cache) and exit 2 with one line if it would crash."""
    verdict = probe(_embedded_model())
    if not verdict.ok:
        print(f"longscope: {failure_message(verdict)}", file=sys.stderr)
        raise SystemExit(2)
    amx = "yes" if has_amx(verdict.system_info) else "no"
    print(
        f"llama.cpp runs on this CPU (one short generation in a child process; AMX kernels: {amx})"
    )


if __name__ == "__main__":
    main()
