"""The llama.cpp library is portable, and a library that would crash gives one line, not a signal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from longscope import cpu_check
from longscope.cpu_check import CpuVerdict, check_library, has_amx, library_files, probe
from longscope.errors import UsageError

SIGILL_SCRIPT = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
# Instructions that exist only in AMX kernels, and the AVX-512 register file.
AMX_MNEMONICS = ("ldtilecfg", "tilezero", "tileloadd", "tilestored", "tdpbssd", "tdpbf16ps")


def test_installed_library_has_no_amx_or_avx512_code() -> None:
    """What `make install` built runs on any x86-64-v3 CPU: no AMX kernels, no AVX-512."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    info = done.stdout
    assert "AVX2 = 1" in info, info
    assert not has_amx(info), info
    assert "AVX512 = 1" not in info, info
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed: system info checked only")
    cpu_libs = [p for p in library_files() if "ggml-cpu" in p.name and not p.is_symlink()]
    assert cpu_libs, library_files()
    for lib in cpu_libs:
        code = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", str(lib)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found = [m for m in AMX_MNEMONICS if f"\t{m}" in code or f" {m} " in code]
        assert not found, f"{lib.name} holds AMX instructions {found}"
        assert "%zmm" not in code, f"{lib.name} holds AVX-512 instructions"


def test_has_amx_reads_llama_cpp_system_info() -> None:
    native = "CPU : SSE3 = 1 | AVX512 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 |"
    portable = "CPU : SSE3 = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 |"
    assert has_amx(native)
    assert not has_amx(portable)
    assert not has_amx("CPU : AMX_INT8 = 0 |")


def test_probe_names_the_signal_that_killed_the_child() -> None:
    verdict = probe(None, script=SIGILL_SCRIPT)
    assert verdict == CpuVerdict(False, "SIGILL (Illegal instruction)", "")
    line = cpu_check.failure_message(verdict)
    assert "\n" not in line
    assert "dies with SIGILL (Illegal instruction)" in line
    assert "make install" in line and "-DGGML_NATIVE=OFF" in line and "--no-binary" in line


def test_probe_of_the_real_library_generates(tmp_path: Path) -> None:
    verdict = probe(cpu_check._embedded_model())
    assert verdict.ok, verdict
    assert "AVX2 = 1" in verdict.system_info


def test_verdict_is_cached_per_library_build(tmp_path: Path, monkeypatch) -> None:
    calls: list[Path | None] = []

    def counting_probe(model_path: Path | None, script: str | None = None) -> CpuVerdict:
        calls.append(model_path)
        return probe(None, script="print('SYSTEM_INFO CPU : AVX2 = 1 |')")

    monkeypatch.setattr(cpu_check, "probe", counting_probe)
    first = check_library(Path("model.gguf"), cache_dir=tmp_path)
    second = check_library(Path("model.gguf"), cache_dir=tmp_path)
    assert first == second == CpuVerdict(True, "", "CPU : AVX2 = 1 |")
    # The small embedded model is preferred over the user's (maybe 70B) model for the probe.
    assert calls == [cpu_check._embedded_model()]
    cached = list((tmp_path / "cpu-check").glob("*.json"))
    assert [p.stem for p in cached] == [cpu_check.fingerprint()]
    monkeypatch.setattr(cpu_check, "_embedded_model", lambda: None)
    check_library(Path("model.gguf"), cache_dir=tmp_path / "other")
    assert calls[-1] == Path("model.gguf")


def test_a_crashing_verdict_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(
        cpu_check, "probe", lambda model_path, script=None: probe(None, script=SIGILL_SCRIPT)
    )
    with pytest.raises(UsageError, match=r"SIGILL \(Illegal instruction\)"):
        check_library(None, cache_dir=tmp_path)


def _run_with_crashing_probe(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter whose probe child dies by SIGILL (a simulated bad build)."""
    preamble = f"import longscope.cpu_check as c\nc.PROBE_SCRIPT = {SIGILL_SCRIPT!r}\n"
    env = {**os.environ, "LONGSCOPE_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-c", preamble + code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_install_smoke_check_stops_with_one_line(tmp_path: Path) -> None:
    done = _run_with_crashing_probe("c.main()", tmp_path)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("longscope: the installed llama-cpp-python dies with SIGILL")


def test_cli_run_exits_2_with_one_line_before_the_model_generates(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = (
        "import sys\n"
        "from longscope.cli import main\n"
        f"sys.argv = ['longscope', 'run', 'longctx', '--model', 'llamacpp/gemma3-270m', "
        f"'-S', 'tiers=1', '--output', {str(out)!r}]\n"
        "main()\n"
    )
    done = _run_with_crashing_probe(code, tmp_path)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(said) == 1, done.stderr
    assert "SIGILL (Illegal instruction)" in said[0] and "make install" in said[0]


# -- the threads llama.cpp gets: the CPUs this process may use, not the host's -----------------


def _cgroups(tmp_path: Path, membership: str, files: dict[str, str]) -> tuple[Path, Path]:
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(membership)
    root = tmp_path / "sys-fs-cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return proc, root


HOST_CPUS = 64
NEEDS_AFFINITY = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="pins a child to one CPU (Linux)"
)


@pytest.fixture
def many_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 64-CPU mask, so that a quota's cap shows (make test's workers are pinned to one CPU each).
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(HOST_CPUS)), raising=False)


@pytest.mark.parametrize(
    ("membership", "files", "quota_cpus"),
    [
        # cgroup v2 in a container (its own namespace): `docker run --cpus 1.5` writes this
        ("0::/\n", {"cpu.max": "150000 100000\n"}, 2),
        ("0::/\n", {"cpu.max": "400000 100000\n"}, 4),
        ("0::/\n", {"cpu.max": "50000 100000\n"}, 1),  # half a CPU: still one thread
        # v2 on a host: the process's own cgroup has none, its parent (a pod, a slice) has one
        ("0::/kubepods/pod1/ctr\n", {"kubepods/pod1/ctr/cpu.max": "max 100000\n",
                                     "kubepods/pod1/cpu.max": "300000 100000\n"}, 3),
        # v1 (a hybrid host: the v2 line finds no cpu.max), cpu mounted with cpuacct
        ("4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n",
         {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "200000\n",
          "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}, 2),
        # v1 in a container without its own namespace: the host's path is not under the mount,
        # whose root is the container's own cgroup
        ("3:cpu,cpuacct:/docker/abc\n",
         {"cpu/cpu.cfs_quota_us": "600000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 6),
    ],
)  # fmt: skip
def test_usable_cpus_is_capped_by_a_cgroup_quota(
    tmp_path, many_cpus, membership, files, quota_cpus
) -> None:  # type: ignore[no-untyped-def]
    proc, root = _cgroups(tmp_path, membership, files)
    assert cpu_check.usable_cpus(proc, root) == quota_cpus


@pytest.mark.parametrize(
    ("membership", "files"),
    [
        ("0::/\n", {"cpu.max": "max 100000\n"}),  # no quota
        ("0::/\n", {}),  # no cpu controller there
        ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}),
        ("garbage\n", {"cpu.max": "50 oops\n"}),
        ("0::/../outside\n", {"cpu.max": "max 100000\n"}),  # outside this namespace's root
    ],
)
def test_usable_cpus_without_a_quota_is_the_affinity_mask(
    tmp_path, many_cpus, membership, files
) -> None:  # type: ignore[no-untyped-def]
    proc, root = _cgroups(tmp_path, membership, files)
    assert cpu_check.usable_cpus(proc, root) == HOST_CPUS
    assert cpu_check.usable_cpus(tmp_path / "absent", root) == HOST_CPUS


def test_usable_cpus_reads_an_undecodable_cgroup_name_as_no_quota(tmp_path, many_cpus) -> None:  # type: ignore[no-untyped-def]
    proc = tmp_path / "proc-self-cgroup"
    proc.write_bytes(b"0::/\xff\xfe\n")  # cgroup names are bytes
    assert cpu_check.usable_cpus(proc, tmp_path) == HOST_CPUS


@NEEDS_AFFINITY
def test_usable_cpus_follows_the_affinity_mask_a_taskset_sets() -> None:
    # In a child, so the test process keeps its CPUs: pinned to one CPU, one thread.
    code = (
        "import os; from pathlib import Path; from longscope.cpu_check import usable_cpus; "
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "print(usable_cpus(Path('/absent'), Path('/absent')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


@NEEDS_AFFINITY
def test_the_embedded_backend_threads_default_to_the_usable_cpus(model_path: Path) -> None:
    # Pinned to one CPU in a child (as `taskset -c 0` would): one thread each, not the host's count.
    code = (
        "import os, sys; from pathlib import Path; "
        "from longscope.models.llamacpp import LlamaCppBackend; "
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "b = LlamaCppBackend(Path(sys.argv[1]), name='gemma3-270m', prompt_mode='completion'); "
        "print(b.engine_options['n_threads'], b.engine_options['n_threads_batch'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(model_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["1", "1"]
