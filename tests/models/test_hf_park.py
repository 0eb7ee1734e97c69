"""Finished rows parked in the hf engine's running batch (`StaticDecoder.park`): the rows still
decoding answer as they would alone, a leave while nothing waits costs no cache rebuild (on CUDA
no new graph capture either), and a request arriving later joins with the parked rows dropped."""

from __future__ import annotations

import asyncio

import pytest

from longscope.types import GenerationConfig, Request

CONTEXT = "The quick brown fox jumps over the lazy dog. The secret number is 4821. " * 6


@pytest.fixture(scope="module")
def tiny() -> tuple:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.gpu.tiny import tiny_qwen2, tiny_tokenizer

    tok = tiny_tokenizer()
    return tiny_qwen2(vocab_size=len(tok), layers=1, hidden=32, heads=2, kv_heads=1), tok


def _backend(tiny: tuple):  # type: ignore[no-untyped-def]
    from longscope.models.hf import HFBackend

    model, tok = tiny
    return HFBackend("tiny", model=model, tokenizer=tok, device="cpu", prefill_chunk=512)


def _request(number: int, max_tokens: int) -> Request:
    config = GenerationConfig(max_tokens=max_tokens, temperature=0.0)
    prompt = f"Document {number}. " + CONTEXT + f"Question {number}: what is the number?"
    return Request(f"s{number}", 0, "completion", prompt=prompt, config=config)


async def _together(backend, requests: list[Request]):  # type: ignore[no-untyped-def]
    """Hand single requests over at once, queued before the engine admits any."""
    tasks = []
    with backend.engine._wake:
        for request in requests:
            tasks.append(asyncio.create_task(backend.generate_group([request])))
            while len(backend.engine._jobs) < len(tasks):
                await asyncio.sleep(0.005)
    return await asyncio.gather(*tasks)


def _same(one, many) -> None:  # type: ignore[no-untyped-def]
    assert (many.text, many.completion_tokens, many.status) == (
        one.text,
        one.completion_tokens,
        one.status,
    )


def test_rows_leaving_while_nothing_waits_are_parked_not_rebuilt(tiny: tuple) -> None:
    backend = _backend(tiny)
    requests = [_request(n, m) for n, m in enumerate((3, 7, 14))]
    alone = [asyncio.run(backend.generate(r)) for r in requests]
    assert [g.completion_tokens for g in alone] == [3, 7, 14]  # each runs to its budget
    together = asyncio.run(_together(backend, requests))
    for one, [many] in zip(alone, together, strict=True):
        _same(one, many)
    stats = backend.engine.last_decode
    # Two joins rebuild the cache; the two rows leaving before the last are parked (each was a
    # third rebuild, and on CUDA a graph capture, before the change).
    assert (stats["rebuilds"], stats["parks"]) == (2, 2), stats
    assert stats["steps"] == 13, stats  # one batch to the longest answer's last token


def late_join(backend, late_budget: int) -> tuple[list, list, dict]:  # type: ignore[no-untyped-def]
    """Run a 16-token and a 2-token request together and a third request (`late_budget` tokens)
    sent from the engine thread when the second parks; return the three answers alone, the
    three answers so, and the batch's stats."""
    from longscope.models.hf import StaticDecoder

    first, second, late = _request(0, 16), _request(1, 2), _request(2, late_budget)
    alone = [asyncio.run(backend.generate(r)) for r in (first, second, late)]
    park = StaticDecoder.park

    async def run() -> list:
        loop = asyncio.get_running_loop()
        arrived: list = []

        def parked(decoder, rows):  # type: ignore[no-untyped-def]
            park(decoder, rows)
            if not arrived:  # queued before the next step
                arrived.append(
                    asyncio.run_coroutine_threadsafe(backend.generate_group([late]), loop)
                )

        StaticDecoder.park = parked
        try:
            results = await _together(backend, [first, second])
            while not arrived:
                await asyncio.sleep(0.01)
            results.append(await asyncio.wrap_future(arrived[0]))
        finally:
            StaticDecoder.park = park
        return results

    return alone, [many for [many] in asyncio.run(run())], dict(backend.engine.last_decode)


@pytest.mark.parametrize(
    ("late_budget", "replaces", "rebuilds"),
    # 5 tokens fit the batch's capacity: the late row takes the parked one's place (the join
    # of `second` is the one rebuild); 30 do not (the first's prompt + 16): a rebuild drops the
    # parked row.
    [(5, 1, 1), (30, 0, 2)],
    ids=["into-the-parked-place", "rebuilt-without-it"],
)
def test_a_request_arriving_after_a_park_joins_the_running_batch(
    tiny: tuple, late_budget: int, replaces: int, rebuilds: int
) -> None:
    backend = _backend(tiny)
    alone, together, stats = late_join(backend, late_budget)
    for one, many in zip(alone, together, strict=True):
        _same(one, many)
    assert (stats["replaces"], stats["rebuilds"]) == (replaces, rebuilds), stats
    assert stats["largest_batch"] == 2, stats
