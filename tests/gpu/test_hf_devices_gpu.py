"""`-M devices=` on two CUDA devices: the answers of one device, and a device that fails.

The CPU path of the same checks is tests/models/test_hf_devices.py; here the engines decode with
the CUDA-graph step, and one failure is a real device-side assert (in a child process: it poisons
that device for the rest of the process).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def tok():  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices (the CPU engines' tests: tests/models)")
    from tests.gpu.tiny import tiny_tokenizer

    return tiny_tokenizer()


def test_two_gpus_answer_as_one_and_outlive_a_failing_device(tok) -> None:  # type: ignore[no-untyped-def]
    from tests.models.test_hf_devices import (
        _backend,
        _devices,
        _documents,
        _fail_after,
        _run,
        _texts,
    )

    reference = _texts(asyncio.run(_run(_backend(tok, "cuda:0"), _documents())))
    assert len(set(reference.values())) >= 4
    both = _devices(tok, ("cuda:0", "cuda:1"))
    assert asyncio.run(both.info()).details["devices"] == ["cuda:0", "cuda:1"]
    assert _texts(asyncio.run(_run(both, _documents()))) == reference
    assert {s["endpoint"] for s in both.stats() if s["requests"]} == {"cuda:0", "cuda:1"}
    assert {b.engine.last_decode.get("path") for b in both.devices} == {"graph"}

    failing = _devices(tok, ("cuda:0", "cuda:1"))
    asyncio.run(failing.info())
    _fail_after(failing.devices[1], 1, RuntimeError("CUDA error: an illegal memory access"))
    assert _texts(asyncio.run(_run(failing, _documents()))) == reference
    stats = {s["endpoint"]: s for s in failing.stats()}
    assert stats["cuda:1"]["down"] and stats["cuda:0"]["ok_requests"] == 6


ASSERTING = """
import asyncio, json, torch
from tests.gpu.tiny import tiny_tokenizer
from tests.models.test_hf_devices import _devices, _documents, _run, _texts

tok = tiny_tokenizer()
devices = _devices(tok, ("cuda:0", "cuda:1"))
asyncio.run(devices.info())
seen = []

def hook(module, args, output):
    if not seen:
        seen.append(1)
        index = torch.tensor([1 << 20], device="cuda:1")
        torch.zeros(4, device="cuda:1")[index].sum().item()  # a real device-side assert
    return output

devices.devices[1]._model.register_forward_hook(hook)
texts = _texts(asyncio.run(_run(devices, _documents())))
print(json.dumps({"texts": sorted(texts.items()), "stats": devices.stats()}))
"""


@pytest.mark.xfail(
    strict=False,
    reason="on 2 x H200 (2026-11-27, before graphs were captured thread-local) the surviving "
    "device's second rows came back empty after cuda:1's assert: not re-run since",
)
def test_a_real_device_side_assert_takes_that_device_out(tok) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.models.test_hf_devices import _backend, _documents, _run, _texts

    reference = _texts(asyncio.run(_run(_backend(tok, "cuda:0"), _documents())))
    done = subprocess.run(
        [sys.executable, "-c", ASSERTING], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert dict((tuple(k), v) for k, v in out["texts"]) == reference
    stats = {s["endpoint"]: s for s in out["stats"]}
    assert stats["cuda:1"]["down"] and not stats["cuda:0"]["down"], stats
