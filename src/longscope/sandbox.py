"""Run untrusted, model-written programs: compiled and run in a child process, fenced in.

What fences a run (each checked by tests/test_sandbox.py):
- a fresh scratch directory as the working directory (removed afterwards);
- rlimits: CPU seconds (RLIMIT_CPU), address space (RLIMIT_AS), bytes of any file it writes, its
  stdout and stderr included, which go to files in the scratch directory (RLIMIT_FSIZE), no new
  processes (RLIMIT_NPROC), no core file, few open files; plus a wall-clock limit;
- a seccomp filter installed just before the program starts (x86-64 Linux): a program that
  forks or starts a thread, opens a socket, opens, creates, renames, links or deletes any file
  for writing, signals or traces another process, or reaches for namespaces, mounts, bpf or
  io_uring is killed at that call (SIGSYS). It writes nothing but its stdout and stderr: stricter
  than "nothing outside its directory";
- no network: the socket calls are killed by the filter, and where user namespaces are allowed
  the program also runs in a new, empty network namespace;
- Landlock: it reads (and runs) only the system's programs and libraries (`READABLE`), nothing of
  the machine's home directories, projects or other files. The compiler is fenced the same way but
  for the filter (it starts processes) and writes only the scratch directory, so an `#include` or
  an assembler `.incbin` of another file fails rather than copy it into messages or the program.

The fence is set up by this file run as a script (`python -I -S sandbox.py CONFIG -- PROGRAM`)
in the child, which then execs the program: no Python `preexec_fn` runs in a threaded parent.
Where the filter or Landlock cannot be installed (not x86-64 Linux, seccomp refused, a kernel
without Landlock) nothing is run:
`unavailable()` says why in one line, and callers skip what needs it.

Only the standard library is imported at the top: the script runs without the package.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Verdict = Literal["ok", "exit", "signal", "cpu", "wall", "output", "forbidden", "sandbox"]
"""How a run ended: `ok` (exit 0), `exit` (non-zero status), `signal` (a crash), `cpu` / `wall`
(a time limit), `output` (the output limit), `forbidden` (a call the filter forbids), `sandbox`
(the fence could not be set up: the program never ran)."""

SANDBOX_EXIT = 125
"""The launcher's exit status when it could not fence the program (it never ran)."""

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one program run may use."""

    cpu_s: int = 3
    wall_s: float = 5.0
    memory_bytes: int = 1024 * MIB
    output_bytes: int = 4 * MIB
    """Bytes any one file may reach: stdout and stderr (files in the scratch directory) included."""
    open_files: int = 64
    readable: tuple[str, ...] = ()
    """Paths the program may read beyond `READABLE` (an interpreter's own library)."""


@dataclass(frozen=True)
class Outcome:
    """What one run did: its verdict, the reason in words, and what it printed."""

    verdict: Verdict
    reason: str
    returncode: int | None
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


# --- the launcher (runs in the child, stdlib only) -----------------------------------------------

_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_FORBIDDEN_X86_64 = {
    # processes and threads
    "fork": 57, "vfork": 58, "clone": 56, "clone3": 435,
    # network
    "socket": 41, "socketpair": 53,
    # files: create, rename, link, delete, change
    "creat": 85, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "unlink": 87, "unlinkat": 263,
    "rename": 82, "renameat": 264, "renameat2": 316, "link": 86, "linkat": 265, "symlink": 88,
    "symlinkat": 266, "truncate": 76, "chmod": 90, "fchmodat": 268, "chown": 92, "lchown": 94,
    "fchownat": 260, "mknod": 133, "mknodat": 259, "openat2": 437, "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    # other processes, namespaces, the kernel's side doors
    "ptrace": 101, "process_vm_writev": 311, "process_vm_readv": 310, "pidfd_send_signal": 424,
    "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "unshare": 272, "setns": 308,
    "mount": 165, "bpf": 321, "io_uring_setup": 425, "userfaultfd": 323, "kexec_load": 246,
}  # fmt: skip
_OPEN, _OPENAT = 2, 257
_SIGNALS = (62, 200, 234)  # kill, tkill, tgkill: allowed to the program itself only (abort())
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND

_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL = 0x7FFF0000, 0x80000000  # SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data


def _arg(index: int) -> int:
    return 16 + 8 * index  # the low 32 bits of args[index] (little-endian)


def _filter(pid: int) -> list[tuple[int, int, int, int]]:
    """Return the BPF program (code, jt, jf, k) of the filter for process `pid` (x86-64)."""
    prog: list[tuple[int, str | int, str | int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "kill", _X86_64),
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE, "kill", 0, _X32_BIT),
    ]
    prog += [(_JEQ, "kill", 0, nr) for nr in sorted(_FORBIDDEN_X86_64.values())]
    prog += [(_JEQ, "open", 0, _OPEN), (_JEQ, "openat", 0, _OPENAT)]
    prog += [(_JEQ, "signal", 0, nr) for nr in _SIGNALS]
    prog.append((_RET, 0, 0, _ALLOW))
    labels = {}
    for name, arg in (("open", 1), ("openat", 2)):
        labels[name] = len(prog)
        prog += [(_LD_W_ABS, 0, 0, _arg(arg)), (_JSET, "kill", "allow", _WRITE_FLAGS)]
    labels["signal"] = len(prog)
    prog += [(_LD_W_ABS, 0, 0, _arg(0)), (_JEQ, "allow", "kill", pid)]
    labels["allow"] = len(prog)
    prog.append((_RET, 0, 0, _ALLOW))
    labels["kill"] = len(prog)
    prog.append((_RET, 0, 0, _KILL))

    def jump(at: int, to: str | int) -> int:
        return to if isinstance(to, int) else labels[to] - at - 1

    return [(code, jump(i, jt), jump(i, jf), k) for i, (code, jt, jf, k) in enumerate(prog)]


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


def _install_filter(libc: ctypes.CDLL) -> None:
    program = _filter(os.getpid())
    array = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), array)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


_LANDLOCK_CREATE, _LANDLOCK_ADD, _LANDLOCK_RESTRICT = 444, 445, 446  # every architecture
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_ABI1 = (1 << 13) - 1  # execute .. make_sym: every file-system right of Landlock ABI 1
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
READABLE = ("/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
"""What any fenced program may read (and run): the system's programs and libraries, the loader's
cache. Nothing else of the machine: no home directory, no project, no other /etc file."""


def landlock_abi() -> int:
    """Return the kernel's Landlock ABI version (0: none), which fences the file system."""
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, int(version))


def _landlock(libc: ctypes.CDLL, read: list[str], write: list[str]) -> None:
    """Allow reading (and running) beneath `read` and everything beneath `write`, nothing else."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError(0, "Landlock is not available (kernel 5.13+ with the landlock LSM)")
    handled = _FS_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    ruleset = ctypes.c_uint64(handled)
    fd = libc.syscall(_LANDLOCK_CREATE, ctypes.byref(ruleset), ctypes.c_size_t(8), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    for paths, access in ((read, _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR), (write, handled)):
        for path in paths:
            try:
                parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not on this machine: nothing to allow
            allowed = access
            if not os.path.isdir(path):  # a file takes file rights only
                allowed &= _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE
            rule = PathBeneath(allowed, parent)
            if libc.syscall(_LANDLOCK_ADD, fd, 1, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path} failed")
            os.close(parent)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, which Landlock requires
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(_LANDLOCK_RESTRICT, fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    os.close(fd)


def _launch(config: dict[str, Any], argv: list[str]) -> None:
    """Fence this process (namespaces, rlimits, file system, filter) and exec `argv`; exit 125
    if it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # A new user namespace lets an unprivileged process own a new, empty network namespace.
        netns = libc.unshare(0x10000000 | 0x40000000) == 0  # CLONE_NEWUSER | CLONE_NEWNET
        if not netns and config.get("require_netns"):
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER|CLONE_NEWNET) failed")
        limits = (
            (resource.RLIMIT_CPU, config["cpu_s"], config["cpu_s"] + 1),
            (resource.RLIMIT_AS, config["memory_bytes"], config["memory_bytes"]),
            (resource.RLIMIT_FSIZE, config["output_bytes"], config["output_bytes"]),
            (resource.RLIMIT_NOFILE, config["open_files"], config["open_files"]),
            (resource.RLIMIT_CORE, 0, 0),
        )
        if config["filter"]:  # a compiler needs its own processes (cc1plus, as, ld)
            limits += ((resource.RLIMIT_NPROC, 1, 1),)
        for which, soft, hard in limits:
            resource.setrlimit(which, (soft, hard))
        # Python ignores SIGXFSZ and SIGPIPE, and an ignored signal stays ignored across exec:
        # the program must die at its output limit, not loop on EFBIG.
        for number in (signal.SIGXFSZ, signal.SIGPIPE):
            signal.signal(number, signal.SIG_DFL)
        _landlock(libc, config["read"], config["write"])
        if config["filter"]:
            _install_filter(libc)
    except (OSError, ValueError) as exc:
        os.write(2, f"sandbox: {exc}\n".encode())
        os._exit(SANDBOX_EXIT)
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        os.write(2, f"sandbox: cannot start {argv[0]}: {exc.strerror}\n".encode())
        os._exit(SANDBOX_EXIT)


# --- the parent's side ---------------------------------------------------------------------------


def unavailable() -> str:
    """Return why programs cannot be fenced on this machine (one line), or "" when they can."""
    return _probe()


_PROBED: list[str] = []


def _probe() -> str:
    if _PROBED:
        return _PROBED[0]
    reason = ""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        reason = (
            f"the sandbox's seccomp filter is written for x86-64 Linux (this is {sys.platform} "
            f"{platform.machine()})"
        )
    else:
        true = shutil.which("true") or "/bin/true"
        with tempfile.TemporaryDirectory(prefix="longscope-probe-") as scratch:
            outcome = run([true], b"", Path(scratch), Limits(), _probing=True)
        if not outcome.ok:
            reason = f"the sandbox cannot start a program here: {outcome.reason}"
    _PROBED.append(reason)
    return reason


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _verdict(
    code: int, stderr: bytes, limits: Limits, timed_out: bool, filled: bool
) -> tuple[Verdict, str]:
    if timed_out:
        return "wall", f"wall-clock limit of {limits.wall_s:g} s reached: stopped"
    if filled and code != 0:
        # Killed by SIGXFSZ, or (a program ignoring it, as Python does) failed on EFBIG.
        return "output", f"output limit of {limits.output_bytes} bytes reached: stopped"
    if code == 0:
        return "ok", ""
    if code == SANDBOX_EXIT and stderr.startswith(b"sandbox: "):
        return "sandbox", stderr.decode("utf-8", "replace").strip()
    if code > 0:
        return "exit", f"exited with status {code}"
    number = -code
    if number == signal.SIGSYS:
        return "forbidden", (
            "killed at a forbidden system call (a new process or thread, a socket, writing or "
            "deleting a file, signalling another process)"
        )
    if number in (signal.SIGXCPU, signal.SIGKILL):
        return "cpu", f"CPU limit of {limits.cpu_s} s reached: stopped"
    if number == signal.SIGXFSZ:
        return "output", f"output limit of {limits.output_bytes} bytes reached: stopped"
    if b"bad_alloc" in stderr:
        return "signal", f"out of memory (limit {limits.memory_bytes // MIB} MiB): stopped"
    return "signal", f"crashed ({_signal_name(number)})"


def run(
    argv: list[str],
    stdin: bytes,
    scratch: Path,
    limits: Limits,
    *,
    _probing: bool = False,
) -> Outcome:
    """Run `argv` fenced (module docstring) in `scratch`, with `stdin`; return what it did.

    Refuses (verdict `sandbox`, nothing run) where `unavailable()` says the fence cannot be set up.
    """
    if not _probing and (why := unavailable()):
        return Outcome("sandbox", why, None, b"", b"", 0.0)
    config = {
        "cpu_s": limits.cpu_s,
        "memory_bytes": limits.memory_bytes,
        "output_bytes": limits.output_bytes,
        "open_files": limits.open_files,
        "filter": True,
        "read": [*READABLE, *limits.readable, str(argv[0])],
        "write": [],
    }
    return _spawn(argv, stdin, scratch, limits, config)


def _spawn(
    argv: list[str], stdin: bytes, scratch: Path, limits: Limits, config: dict[str, Any]
) -> Outcome:
    launcher = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), json.dumps(config)]
    (scratch / "stdin").write_bytes(stdin)
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    started = time.monotonic()
    timed_out = False
    with (
        open(scratch / "stdin", "rb") as fin,
        open(out_path, "wb") as fout,
        open(err_path, "wb") as ferr,
    ):
        proc = subprocess.Popen(
            [*launcher, "--", *argv],
            stdin=fin,
            stdout=fout,
            stderr=ferr,
            cwd=scratch,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "TMPDIR": str(scratch)},
            start_new_session=True,
            close_fds=True,
        )
        try:
            code = proc.wait(timeout=limits.wall_s + 0.5)  # + the launcher's own start
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
    seconds = time.monotonic() - started
    stdout = _head(out_path, limits.output_bytes)
    stderr = _head(err_path, 64 * 1024)
    filled = max(out_path.stat().st_size, err_path.stat().st_size) >= limits.output_bytes
    verdict, reason = _verdict(code, stderr, limits, timed_out, filled)
    return Outcome(verdict, reason, None if timed_out else code, stdout, stderr, seconds)


def _head(path: Path, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


@dataclass(frozen=True)
class Compiled:
    """A compiled program (`path`), or why it did not compile (`error`, compiler output kept)."""

    path: Path | None
    error: str
    output: str = ""


def compile_cpp(
    source: str,
    scratch: Path,
    *,
    compiler: str = "g++",
    flags: tuple[str, ...] = ("-std=c++11", "-O"),
    timeout_s: float = 60.0,
    memory_bytes: int = 2048 * MIB,
) -> Compiled:
    """Compile C++ `source` into `scratch`, fenced as a program is but for the filter (a compiler
    starts processes): time, memory and output limits, no network, and it reads only the system's
    files (`READABLE`) and writes only `scratch`, so an `#include` or `.incbin` of another file
    fails instead of copying it into the compiler's messages or the program."""
    path = shutil.which(compiler)
    if path is None:
        return Compiled(None, f"no C++ compiler: {compiler} is not on PATH")
    if why := unavailable():
        return Compiled(None, why)
    (scratch / "main.cpp").write_text(source, encoding="utf-8")
    limits = Limits(
        cpu_s=int(timeout_s), wall_s=timeout_s, memory_bytes=memory_bytes, output_bytes=256 * MIB
    )
    config = {
        "cpu_s": limits.cpu_s,
        "memory_bytes": memory_bytes,
        "output_bytes": limits.output_bytes,
        "open_files": 256,
        "filter": False,
        "read": list(READABLE),
        "write": [str(scratch), "/dev/null"],
    }
    done = _spawn([path, *flags, "-o", "main.bin", "main.cpp"], b"", scratch, limits, config)
    output = (done.stdout + done.stderr).decode("utf-8", "replace")[-4000:]
    if done.verdict in ("cpu", "wall"):
        return Compiled(None, f"compilation took over {timeout_s:g} s: stopped", output)
    if done.verdict == "sandbox":
        return Compiled(None, done.reason, output)
    if not done.ok:
        return Compiled(None, "compilation error", output)
    return Compiled(scratch / "main.bin", "", output)


class Scratch:
    """A fresh temporary directory for one untrusted program, removed on exit."""

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(prefix="longscope-sandbox-"))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


if __name__ == "__main__":  # the launcher: python -I -S sandbox.py CONFIG -- PROGRAM ARGS
    _split = sys.argv.index("--")
    _launch(json.loads(sys.argv[1]), sys.argv[_split + 1 :])


__all__ = [
    "SANDBOX_EXIT",
    "Compiled",
    "Limits",
    "Outcome",
    "Scratch",
    "Verdict",
    "compile_cpp",
    "run",
    "unavailable",
]
