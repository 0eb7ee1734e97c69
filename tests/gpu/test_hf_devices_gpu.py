"""`-M devices=` on two CUDA devices: the answers of one device, and a device that fails.

The CPU path of the same checks is tests/models/test_hf_devices.py; here the engines decode with
the CUDA-graph step in each device's worker process, and one failure is a real device-side assert
(it poisons that device's CUDA context, which only its worker holds).
"""

from __future__ import annotations

import asyncio
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
    from tests.models.test_hf_devices import _backend, _devices, _documents, _run, _texts

    reference = _texts(asyncio.run(_run(_backend(tok, "cuda:0"), _documents())))
    assert len(set(reference.values())) >= 4
    both = _devices(tok, ("cuda:0", "cuda:1"))
    assert asyncio.run(both.info()).details["devices"] == ["cuda:0", "cuda:1"]
    assert _texts(asyncio.run(_run(both, _documents()))) == reference
    assert {s["endpoint"] for s in both.stats() if s["requests"]} == {"cuda:0", "cuda:1"}
    assert {b.last_decode.get("path") for b in both.devices} == {"graph"}

    failing = _devices(tok, ("cuda:0", "cuda:1"), faults={1: {"fault": "cuda"}})
    asyncio.run(failing.info())
    assert _texts(asyncio.run(_run(failing, _documents()))) == reference
    stats = {s["endpoint"]: s for s in failing.stats()}
    assert stats["cuda:1"]["down"] and stats["cuda:0"]["ok_requests"] == 6


def test_a_real_device_side_assert_takes_that_device_out(tok) -> None:  # type: ignore[no-untyped-def]
    # The assert poisons cuda:1's CUDA context, which only its own worker process holds.
    from tests.models.test_hf_devices import _backend, _devices, _documents, _run, _texts

    reference = _texts(asyncio.run(_run(_backend(tok, "cuda:0"), _documents())))
    devices = _devices(tok, ("cuda:0", "cuda:1"), faults={1: {"fault": "assert"}})
    asyncio.run(devices.info())
    assert _texts(asyncio.run(_run(devices, _documents()))) == reference
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert stats["cuda:1"]["down"] and not stats["cuda:0"]["down"], stats
    assert stats["cuda:0"]["ok_requests"] >= 1
