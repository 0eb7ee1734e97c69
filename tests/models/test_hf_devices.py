"""`-M devices=`: one hf engine per device, each in its worker process, on two CPU engines (real
tiny models, real engines, real processes).

Faults are provoked inside the real model in the worker (a forward hook that raises what a failing
GPU raises, or kills its process: `tests/gpu/tiny.py`'s `tiny_device`), never by a stand-in engine.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.models.hf.devices import device_labels, is_device_error, parse_devices
from longscope.models.hf.workers import DeviceFailure
from longscope.types import GenerationConfig, Request

ROOT = Path(__file__).parents[2]

WORDS = "The quick brown fox jumps over the lazy dog. The secret number is 4821. "
QUESTION = "Question: what is the secret number? Answer:"
TAILS = [" alpha", " beta gamma", " fox", " lazy dog", " 48", " quick brown"]


def test_devices_option_names_engines() -> None:
    assert parse_devices("all", 4) == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert parse_devices(" 2,0 ", 4) == ["cuda:2", "cuda:0"]
    assert parse_devices("cpu,cpu", 0) == ["cpu", "cpu"]
    assert device_labels(["cpu", "cpu", "cuda:1"]) == ["cpu#0", "cpu#1", "cuda:1"]
    for spec, count, words in [
        ("all", 0, "no CUDA device is visible"),
        ("0,2", 2, "no CUDA device 2 here (visible: 0-1)"),
        ("1,1", 2, "device 1 is given twice"),
        ("gpu0", 2, "bad -M devices='gpu0'"),
        # Digits str.isdigit() takes and int() refuses (a ValueError traceback before).
        ("\u00b2", 2, "bad -M devices='\u00b2'"),
        ("0,\u0663", 4, "bad -M devices='0,\u0663'"),
    ]:
        with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_devices(spec, count)


def test_device_errors_are_told_from_request_errors() -> None:
    assert is_device_error(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert is_device_error(DeviceFailure("cuda:1: its worker process ended (killed by SIGKILL)"))
    assert not is_device_error(ValueError("bad token id"))


# -- on two CPU engines ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tok():  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.gpu.tiny import tiny_tokenizer

    return tiny_tokenizer()


def _backend(tok, device: str = "cpu", **kwargs):  # type: ignore[no-untyped-def]
    from longscope.models.hf import HFBackend
    from tests.gpu.tiny import tiny_qwen2

    # The same seed on every engine: the same weights on every device, as from one folder.
    model = tiny_qwen2(vocab_size=len(tok), layers=1, hidden=32, heads=2, kv_heads=1, device=device)
    return HFBackend("tiny", model=model, tokenizer=tok, device=device, prefill_chunk=64, **kwargs)


def _devices(tok, names: tuple[str, ...] = ("cpu", "cpu"), faults=None, **kwargs):  # type: ignore[no-untyped-def]
    """Return a DeviceSet over one worker process per name; `faults[i]`: `tiny_device`'s fault
    options for device i."""
    from longscope.models.hf import HFTokenizerAdapter
    from longscope.models.hf.devices import DeviceSet
    from longscope.models.hf.workers import WorkerDevice
    from tests.gpu.tiny import tiny_device

    workers = [
        WorkerDevice(functools.partial(tiny_device, name, **(faults or {}).get(i, {})), label)
        for i, (name, label) in enumerate(zip(names, device_labels(list(names)), strict=True))
    ]
    return DeviceSet(workers, lambda: HFTokenizerAdapter(tok, "tiny"), **kwargs)


def _documents(count: int = 6, repeats: int = 2) -> list[list[Request]]:
    """Return one group per document (its repeats), documents of different lengths."""
    groups = []
    for d in range(count):
        context = f"Document {d}. " + WORDS * (2 + 3 * d)
        groups.append(
            [
                Request(
                    f"doc{d}",
                    r,
                    "completion",
                    prompt=context + QUESTION + TAILS[d % len(TAILS)],
                    config=GenerationConfig(max_tokens=6, temperature=0.0, seed=r),
                    prompt_tokens=len(context) // 4,
                )
                for r in range(repeats)
            ]
        )
    return groups


async def _run(backend, groups):  # type: ignore[no-untyped-def]
    try:
        return await asyncio.gather(*(backend.generate_group(g) for g in groups))
    finally:
        await backend.aclose()


def _texts(results) -> dict[tuple[str, int], str]:  # type: ignore[no-untyped-def]
    return {(f"doc{d}", r): g.text for d, group in enumerate(results) for r, g in enumerate(group)}


@pytest.fixture(scope="module")
def reference(tok):  # type: ignore[no-untyped-def]
    """The answers of one engine on one device: what several devices must give back."""
    results = asyncio.run(_run(_backend(tok), _documents()))
    assert all(g.status in ("ok", "length") for group in results for g in group)
    texts = _texts(results)
    assert len(set(texts.values())) >= 4, texts  # documents answer differently: no mix-up hides
    return texts


def _raised(mark: Path) -> int:
    """Return how many times a worker's fault fired (each is a line in `mark`)."""
    return len(mark.read_text().splitlines()) if mark.exists() else 0


def test_documents_spread_over_devices_with_their_repeats_together(tok, reference) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok)
    info = asyncio.run(devices.info())
    assert info.details["devices"] == ["cpu#0", "cpu#1"]
    results = asyncio.run(_run(devices, _documents()))
    assert _texts(results) == reference
    # Every request ran once, and a document's repeats on the device that took the document.
    assert all(len(where) == 1 for where in devices.served.values())
    homes = {sample: where[0] for (sample, _), where in devices.served.items()}
    for (sample, _), where in devices.served.items():
        assert where == [homes[sample]]
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert set(homes.values()) == {"cpu#0", "cpu#1"}, homes
    assert sum(s["requests"] for s in stats.values()) == 6  # one per document
    assert sum(s["prompt_tokens"] for s in stats.values()) == sum(
        g.prompt_tokens for group in results for g in group
    )
    for s in stats.values():
        assert 0 < s["busy_share"] <= 1 and not s["down"]


def test_a_device_that_fails_hands_its_unfinished_documents_to_the_other(
    tok, reference, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    # Device 1 fails a while into the run: what it finished stays, the rest moves to device 0.
    mark = tmp_path / "raised"
    devices = _devices(tok, faults={1: {"fault": "cuda", "fail_after": 12, "mark": str(mark)}})
    asyncio.run(devices.info())
    results = asyncio.run(_run(devices, _documents()))
    assert _raised(mark) >= 1
    assert _texts(results) == reference  # nothing lost, every answer as one device gives it
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert stats["cpu#1"]["down"] and "CUDA error" in stats["cpu#1"]["last_error"]
    moved = [key for key, where in devices.served.items() if len(where) > 1]
    assert moved and all(devices.served[key] == ["cpu#1", "cpu#0"] for key in moved)
    assert devices.retries_done >= 1
    # Nothing ran twice: a request that finished on the failed device did not run again.
    finished_there = [k for k, where in devices.served.items() if where == ["cpu#1"]]
    assert len(finished_there) + len(moved) + sum(
        where == ["cpu#0"] for where in devices.served.values()
    ) == len(reference)


def test_a_device_out_of_memory_again_and_again_is_taken_out(tok, reference) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok, faults={1: {"fault": "oom"}})
    asyncio.run(devices.info())
    results = asyncio.run(_run(devices, _documents()))
    assert _texts(results) == reference
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert stats["cpu#1"]["down"]
    assert stats["cpu#1"]["last_error"] == "out of memory 2 times in a row"
    assert stats["cpu#0"]["ok_requests"] == 6


def test_a_document_that_fits_no_device_is_skipped_with_the_largest_devices_numbers(tok) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok, faults={0: {"spare_gib": 0.1}, 1: {"spare_gib": 0.2}})
    asyncio.run(devices.info())
    assert asyncio.run(devices.info()).details["device_free_gib"] == [0.1, 0.2]
    results = asyncio.run(_run(devices, _documents(count=2)))
    for group in results:
        for generation in group:
            assert generation.status == "skipped"
            assert generation.error.startswith("insufficient_vram: needs")
            assert generation.error.endswith(", 0.2 GiB free"), generation.error
    # A document skipped by the smaller device was tried once more on the larger one, not again.
    assert all(where[-1] == "cpu#1" and len(where) <= 2 for where in devices.served.values()), (
        devices.served
    )


def test_devices_through_the_options(tok) -> None:  # type: ignore[no-untyped-def]
    from longscope.models.hf.devices import DeviceSet
    from longscope.models.registry import create_backend

    backend = create_backend("hf/some-folder", {"devices": "cpu,cpu", "max_batch": 4})
    assert isinstance(backend, DeviceSet)
    assert backend.labels == ["cpu#0", "cpu#1"]
    # What each worker process builds: the same options, its own device.
    assert [b.build.args[1]["max_batch"] for b in backend.devices] == [4, 4]
    assert [b.build.args[1]["device"] for b in backend.devices] == ["cpu", "cpu"]
    assert all(b.pid is None for b in backend.devices)  # nothing started before it is asked
    with pytest.raises(UsageError, match="exclude each other"):
        create_backend("hf/some-folder", {"devices": "cpu,cpu", "device": "cpu"})


def test_when_every_device_is_out_what_is_left_is_an_error(tok) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok, faults={0: {"fault": "cuda"}, 1: {"fault": "cuda"}})
    asyncio.run(devices.info())
    results = asyncio.run(_run(devices, _documents(count=3)))
    for group in results:
        assert [g.status for g in group] == ["error", "error"]
        assert "every device is out" in group[0].error
        assert group[0].error.startswith("failed on device(s) cpu#")
    assert all(s["down"] for s in devices.stats())


def test_a_worker_process_killed_mid_run_hands_its_documents_to_the_other(tok, reference) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok, faults={1: {"fault": "kill", "fail_after": 6}})
    asyncio.run(devices.info())
    pid = devices.devices[1].pid
    results = asyncio.run(_run(devices, _documents()))
    assert _texts(results) == reference  # nothing lost
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert stats["cpu#1"]["down"] and not stats["cpu#0"]["down"]
    assert "worker process ended (killed by SIGKILL)" in stats["cpu#1"]["last_error"]
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    moved = [key for key, where in devices.served.items() if len(where) > 1]
    assert moved and all(devices.served[key] == ["cpu#1", "cpu#0"] for key in moved)


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def _tagged(tag: str) -> list[int]:
    """Return the live processes whose environment holds `tag` (a run's workers inherit it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag.encode() in (entry / "environ").read_bytes() and not _zombie(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours
    return found


def _gone_within(tag: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


KILLED_PARENT = """
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
from tests.gpu.tiny import tiny_tokenizer
from tests.models.test_hf_devices import _devices

devices = _devices(tiny_tokenizer())
asyncio.run(devices.info())
print(json.dumps([w.pid for w in devices.devices]), flush=True)
time.sleep(600)
"""


def test_workers_end_when_their_parent_is_killed(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    tag = f"LONGSCOPE_TEST_TAG=killed-{os.getpid()}-{time.time_ns()}"
    # A killed parent cannot remove its fork server's socket folder: it goes to a scratch of
    # this test's (short: a socket's path holds at most 107 bytes), not the user's temp dir.
    scratch = tempfile.mkdtemp(prefix="ls-")
    env = {**os.environ, tag.split("=")[0]: tag.split("=")[1], "TMPDIR": scratch}
    parent = subprocess.Popen(
        [sys.executable, "-c", KILLED_PARENT, str(ROOT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        line = parent.stdout.readline()  # type: ignore[union-attr]
        assert line, parent.stderr.read()[-3000:]  # type: ignore[union-attr]
        pids = json.loads(line)
        assert len(pids) == 2 and all(Path(f"/proc/{p}").exists() for p in pids)
        parent.send_signal(signal.SIGKILL)  # no cleanup of its own runs
        parent.wait(timeout=30)
        assert _gone_within(tag, 15) == []
    finally:
        if parent.poll() is None:
            parent.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def test_devices_through_the_cli(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`longscope run longctx -M devices=cpu,cpu -M max_batch=2` in a child process, as
    benchmarks/bench_devices.py's smoke runs it (a saved tiny model, three 1K documents): the run
    here is that smoke, which tests/test_benchmarks.py leaves to this test (SMOKED_ELSEWHERE)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from longscope.run.merge import endpoint_history
    from longscope.run.store import RunStore

    tag = f"cli-{os.getpid()}-{time.time_ns()}"
    monkeypatch.setenv("LONGSCOPE_TEST_TAG", tag)  # the CLI child and its workers inherit it
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_devices.py"), "--smoke",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    # The script exits non-zero when the CLI's exit code is neither 0 nor 3 (its stderr included).
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = [json.loads(line) for line in done.stdout.splitlines() if '"kind": "run"' in line]
    assert (row["suite"], row["devices"]) == ("longctx", 2)
    printed = "\n".join(row["printed"])  # the CLI's per-device lines
    assert "cpu#0: " in printed and "cpu#1: " in printed and "busy " in printed
    out = tmp_path / "longctx-2dev"
    with RunStore.open_readonly(out) as store:
        run_id = store._db.execute("SELECT run_id FROM runs").fetchone()[0]
        stored = store._db.execute("SELECT status FROM generations").fetchall()
    assert len(stored) == 3 and {s for (s,) in stored} <= {"ok", "length"}
    figures = endpoint_history(out, run_id)[-1]
    assert [d["endpoint"] for d in figures] == ["cpu#0", "cpu#1"]
    assert sum(d["ok_requests"] for d in figures) == 3  # a group per document, each stored once
    assert _gone_within(f"LONGSCOPE_TEST_TAG={tag}", 10) == []  # no worker outlives the run
