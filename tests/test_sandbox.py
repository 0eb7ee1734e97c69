"""The sandbox for model-written programs: each fence holds, and a stopped program says why.

Programs here are small shell and Python scripts (no compile: fast); the C++ answers of a code task
are tested where that task is (tests/suites/longproc/test_code.py).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from longscope import sandbox
from longscope.sandbox import Limits, Scratch, compile_cpp, run

pytestmark = pytest.mark.skipif(
    bool(sandbox.unavailable()), reason=f"no sandbox here: {sandbox.unavailable()}"
)
SH = shutil.which("sh") or "/bin/sh"
PY = (sys.base_prefix, sys.prefix)
"""The test programs' interpreter: readable to them (a C++ program needs only the system's)."""
FAST = Limits(cpu_s=1, wall_s=3.0, readable=PY)


def _py(code: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", code]


def test_a_program_reads_stdin_and_its_stdout_comes_back() -> None:
    with Scratch() as scratch:
        done = run(_py("import sys; print(int(sys.stdin.read()) * 2)"), b"21\n", scratch, FAST)
    assert done.verdict == "ok" and done.stdout == b"42\n" and done.returncode == 0


def test_the_scratch_directory_is_the_working_directory_and_is_removed() -> None:
    with Scratch() as scratch:
        done = run(_py("import os; print(os.getcwd())"), b"", scratch, FAST)
        assert done.stdout.decode().strip() == str(scratch)
    assert not scratch.exists()


def test_an_endless_loop_is_stopped_at_the_cpu_limit() -> None:
    with Scratch() as scratch:
        # A long wall limit: on a busy machine 1 s of CPU can take several seconds.
        done = run([SH, "-c", "while :; do :; done"], b"", scratch, Limits(cpu_s=1, wall_s=30))
    assert done.verdict == "cpu" and "CPU limit of 1 s" in done.reason


def test_a_sleeping_program_is_stopped_at_the_wall_clock_limit() -> None:
    with Scratch() as scratch:
        done = run(
            _py("import time; time.sleep(30)"), b"", scratch, Limits(wall_s=1.0, readable=PY)
        )
    assert done.verdict == "wall" and done.returncode is None and done.seconds < 5


def test_a_fork_is_killed_at_the_call() -> None:
    with Scratch() as scratch:
        done = run(_py("import os; os.fork(); print('forked')"), b"", scratch, FAST)
    assert done.verdict == "forbidden" and done.stdout == b""
    assert "new process" in done.reason


def test_a_shell_command_is_killed_when_it_starts_a_process() -> None:
    with Scratch() as scratch:
        done = run([SH, "-c", "ls /; echo ran"], b"", scratch, FAST)
    assert done.verdict == "forbidden" and b"ran" not in done.stdout


def test_writing_outside_the_scratch_directory_is_killed_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    target = tmp_path / "escaped.txt"
    with Scratch() as scratch:
        done = run(_py(f"open({str(target)!r}, 'w').write('x')"), b"", scratch, FAST)
    assert done.verdict == "forbidden" and not target.exists()


def test_deleting_a_file_is_killed(tmp_path: Path) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("keep")
    with Scratch() as scratch:
        done = run(_py(f"import os; os.unlink({str(victim)!r})"), b"", scratch, FAST)
    assert done.verdict == "forbidden" and victim.read_text() == "keep"


def test_reading_a_file_outside_the_system_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    with Scratch() as scratch:
        done = run(_py(f"print(open({str(secret)!r}).read())"), b"", scratch, FAST)
    assert done.verdict == "exit" and b"PermissionError" in done.stderr
    assert b"hunter2" not in done.stdout + done.stderr


def test_a_compiler_cannot_copy_another_file_into_its_messages_or_the_program(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "secret.h"
    secret.write_text("hunter2 is the password\n")
    for source in (
        f'#include "{secret}"\nint main() {{}}\n',
        f'__asm__(".incbin \\"{secret}\\"");\nint main() {{}}\n',
    ):
        with Scratch() as scratch:
            compiled = compile_cpp(source, scratch)
        # Unfenced, the first prints the file's line in its error, the second compiles it in.
        assert compiled.path is None and compiled.error == "compilation error"
        assert "hunter2" not in compiled.output and str(secret) in compiled.output


def test_a_plain_program_compiles_and_runs_fenced() -> None:
    with Scratch() as scratch:
        compiled = compile_cpp("#include <iostream>\nint main() { std::cout << 7; }\n", scratch)
        assert compiled.path is not None, compiled.output
        done = run([str(compiled.path)], b"", scratch, Limits())
    assert done.verdict == "ok" and done.stdout == b"7"


def test_a_socket_is_killed_at_the_call() -> None:
    with Scratch() as scratch:
        done = run(_py("import socket; socket.socket(); print('net')"), b"", scratch, FAST)
    assert done.verdict == "forbidden" and b"net" not in done.stdout


def test_signalling_another_process_is_killed() -> None:
    with Scratch() as scratch:
        done = run(_py(f"import os; os.kill({os.getpid()}, 0)"), b"", scratch, FAST)
    assert done.verdict == "forbidden"


@pytest.mark.parametrize(
    "argv",
    [
        [SH, "-c", "while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done"],
        # Python ignores SIGXFSZ: it fails on EFBIG instead of dying, and is still stopped.
        _py("import sys\nwhile True: sys.stdout.write('a' * 4096)"),
    ],
    ids=["killed", "ignores-SIGXFSZ"],
)
def test_output_past_the_limit_stops_the_program(argv: list[str]) -> None:
    limits = Limits(cpu_s=5, wall_s=20.0, output_bytes=64 * 1024, readable=PY)
    with Scratch() as scratch:
        done = run(argv, b"", scratch, limits)
    assert done.verdict == "output" and f"limit of {64 * 1024} bytes" in done.reason
    assert len(done.stdout) == 64 * 1024


def test_memory_past_the_limit_cannot_be_had() -> None:
    limits = Limits(cpu_s=2, wall_s=5.0, memory_bytes=256 * sandbox.MIB, readable=PY)
    with Scratch() as scratch:
        done = run(_py("x = bytearray(512 * 1024 * 1024); print('got it')"), b"", scratch, limits)
    assert done.verdict == "exit" and b"MemoryError" in done.stderr and b"got it" not in done.stdout


def test_the_program_sees_no_network_interface_but_loopback() -> None:
    code = (
        "print(sorted(l.split(':')[0].strip() for l in open('/proc/self/net/dev').readlines()[2:]))"
    )
    with Scratch() as scratch:
        done = run(_py(code), b"", scratch, Limits(cpu_s=1, wall_s=3.0, readable=(*PY, "/proc")))
    assert done.verdict == "ok" and done.stdout.decode().strip() == "['lo']", done.stdout


def test_without_the_filter_nothing_runs_and_the_reason_is_one_line(monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "_PROBED", [])
    monkeypatch.setattr(sandbox.platform, "machine", lambda: "riscv64")
    why = sandbox.unavailable()
    assert why.startswith("the sandbox's seccomp filter is written for x86-64 Linux")
    assert "\n" not in why
    with Scratch() as scratch:
        done = run([SH, "-c", "echo ran"], b"", scratch, FAST)
    assert done.verdict == "sandbox" and done.reason == why and done.stdout == b""
