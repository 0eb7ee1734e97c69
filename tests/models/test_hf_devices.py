"""`-M devices=`: one hf engine per device, on two CPU engines (real tiny models, real engines).

Faults are provoked inside the real model (a forward hook that raises what a failing GPU raises),
never by a stand-in engine.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from longscope.errors import UsageError
from longscope.models.hf.devices import device_labels, is_device_error, parse_devices
from longscope.types import GenerationConfig, Request

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
    ]:
        with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_devices(spec, count)


def test_device_errors_are_told_from_request_errors() -> None:
    assert is_device_error(RuntimeError("CUDA error: an illegal memory access was encountered"))
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


def _devices(tok, names: tuple[str, ...] = ("cpu", "cpu"), **kwargs):  # type: ignore[no-untyped-def]
    from longscope.models.hf.devices import DeviceSet

    backends = [_backend(tok, name) for name in names]
    return DeviceSet(backends, labels=device_labels(list(names)), **kwargs)


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


def _fail_after(backend, calls: int, exc: BaseException) -> Counter:  # type: ignore[no-untyped-def]
    """Make the device's model raise `exc` from its `calls`-th forward on (a failing device)."""
    seen: Counter = Counter()

    def hook(module, args, output):  # type: ignore[no-untyped-def]
        seen["calls"] += 1
        if seen["calls"] >= calls:
            seen["raised"] += 1
            raise exc
        return output

    backend._model.register_forward_hook(hook)
    return seen


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


def test_a_device_that_fails_hands_its_unfinished_documents_to_the_other(tok, reference) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok)
    asyncio.run(devices.info())
    # Device 1 fails a while into the run: what it finished stays, the rest moves to device 0.
    seen = _fail_after(
        devices.devices[1], 12, RuntimeError("CUDA error: an illegal memory access was encountered")
    )
    results = asyncio.run(_run(devices, _documents()))
    assert seen["raised"] >= 1
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
    import torch

    devices = _devices(tok)
    asyncio.run(devices.info())
    _fail_after(
        devices.devices[1], 1, torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")
    )
    results = asyncio.run(_run(devices, _documents()))
    assert _texts(results) == reference
    stats = {s["endpoint"]: s for s in devices.stats()}
    assert stats["cpu#1"]["down"]
    assert stats["cpu#1"]["last_error"] == "out of memory 2 times in a row"
    assert stats["cpu#0"]["ok_requests"] == 6


def test_a_document_that_fits_no_device_is_skipped_with_the_largest_devices_numbers(tok) -> None:  # type: ignore[no-untyped-def]
    from longscope.models.memory_plan import GIB

    devices = _devices(tok)
    for backend, spare in zip(devices.devices, (0.1, 0.2), strict=True):
        backend.engine.vram_gib = backend.engine.held_bytes() / GIB + spare
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
    assert [b.engine.max_batch for b in backend.devices] == [4, 4]
    assert [b.device_name for b in backend.devices] == ["cpu", "cpu"]
    with pytest.raises(UsageError, match="exclude each other"):
        create_backend("hf/some-folder", {"devices": "cpu,cpu", "device": "cpu"})


def test_when_every_device_is_out_what_is_left_is_an_error(tok) -> None:  # type: ignore[no-untyped-def]
    devices = _devices(tok)
    asyncio.run(devices.info())
    for backend in devices.devices:
        _fail_after(backend, 1, RuntimeError("CUDA error: unspecified launch failure"))
    results = asyncio.run(_run(devices, _documents(count=3)))
    for group in results:
        assert [g.status for g in group] == ["error", "error"]
        assert "every device is out" in group[0].error
        assert group[0].error.startswith("failed on device(s) cpu#")
    assert all(s["down"] for s in devices.stats())


def test_devices_through_the_cli(tok, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from longscope.run.merge import endpoint_history
    from longscope.run.store import RunStore
    from tests.cli_helper import longscope
    from tests.gpu.tiny import tiny_qwen2

    folder = tmp_path / "model"
    model = tiny_qwen2(vocab_size=len(tok), layers=1, hidden=32, heads=2, kv_heads=1)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    out = tmp_path / "run"
    done = longscope(
        "run", "longctx", "--model", f"hf/{folder}", "-M", "prompt_mode=completion",
        "-M", "devices=cpu,cpu", "-M", "max_batch=2", "-S", "lengths=1k",
        "-S", "depths=0.1,0.5,0.9", "-o", str(out), "-q", timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr[-2000:]
    printed = done.stdout + done.stderr
    assert "cpu#0: " in printed and "cpu#1: " in printed and "busy " in printed
    with RunStore.open_readonly(out) as store:
        run_id = store._db.execute("SELECT run_id FROM runs").fetchone()[0]
        stored = store._db.execute("SELECT status FROM generations").fetchall()
    assert len(stored) == 3 and {s for (s,) in stored} <= {"ok", "length"}
    figures = endpoint_history(out, run_id)[-1]
    assert [d["endpoint"] for d in figures] == ["cpu#0", "cpu#1"]
    assert sum(d["ok_requests"] for d in figures) == 3  # a group per document, each stored once
