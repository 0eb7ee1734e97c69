"""Finished rows parked in the hf engine's running batch (`StaticDecoder.park`): the rows still
decoding answer as they would alone, a leave while nothing waits costs no cache rebuild (on CUDA
no new graph capture either), and a request arriving later joins with the parked rows dropped."""

from __future__ import annotations

import asyncio
import time
import weakref

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


def _backend(tiny: tuple, park_rows: str = "always"):  # type: ignore[no-untyped-def]
    from longscope.models.hf import HFBackend

    model, tok = tiny
    backend = HFBackend("tiny", model=model, tokenizer=tok, device="cpu", prefill_chunk=512)
    # On the CPU the step is the torch one, which parks only while a group waits ("auto"):
    # "always" runs the parking the Triton step does on CUDA.
    backend.engine.kernels.park_rows = park_rows
    return backend


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


_ANSWERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _alone(backend, group: list[Request]) -> list:  # type: ignore[no-untyped-def]
    """Return `group`'s answers run by itself, computed once per model (greedy: the same answers
    from every backend over one model; the tests compare against them again and again)."""
    known = _ANSWERS.setdefault(backend._model, {})
    key = tuple((r.prompt, r.config.max_tokens) for r in group)
    if key not in known:
        known[key] = asyncio.run(backend.generate_group(group))
    return known[key]


def _same(one, many) -> None:  # type: ignore[no-untyped-def]
    assert (many.text, many.completion_tokens, many.status) == (
        one.text,
        one.completion_tokens,
        one.status,
    )


def test_rows_leaving_while_nothing_waits_are_parked_not_rebuilt(tiny: tuple) -> None:
    backend = _backend(tiny)
    requests = [_request(n, m) for n, m in enumerate((3, 7, 14))]
    alone = [_alone(backend, [r])[0] for r in requests]
    assert [g.completion_tokens for g in alone] == [3, 7, 14]  # each runs to its budget
    together = asyncio.run(_together(backend, requests))
    for one, [many] in zip(alone, together, strict=True):
        _same(one, many)
    stats = backend.engine.last_decode
    # Two joins rebuild the cache; the two rows leaving before the last are parked (each was a
    # third rebuild, and on CUDA a graph capture, before the change).
    assert (stats["rebuilds"], stats["parks"]) == (2, 2), stats
    assert stats["steps"] == 13, stats  # one batch to the longest answer's last token


def test_the_torch_step_parks_no_row_while_nothing_waits(tiny: tuple) -> None:
    """`park_rows="auto"` with the torch step (it reads every row's whole cache, parked or not):
    rows leaving while nothing waits are dropped by a rebuild, as before parking."""
    backend = _backend(tiny, park_rows="auto")
    requests = [_request(n, m) for n, m in enumerate((3, 7, 14))]
    alone = [_alone(backend, [r])[0] for r in requests]
    together = asyncio.run(_together(backend, requests))
    for one, [many] in zip(alone, together, strict=True):
        _same(one, many)
    stats = backend.engine.last_decode
    assert (stats["kernels"], stats["rebuilds"], stats["parks"]) == ("torch", 4, 0), stats


def late_join(backend, late: list[Request]) -> tuple[list, list, dict]:  # type: ignore[no-untyped-def]
    """Run a 16-token and a 2-token request together and the group `late` sent from the engine
    thread when the second parks; return every answer alone (the late group's as a group), every
    answer so, and the batch's stats."""
    from longscope.models.hf import StaticDecoder

    backend.engine.kernels.park_rows = "always"  # what the Triton step does ("auto")
    first, second = _request(0, 16), _request(1, 2)
    alone = [_alone(backend, [r])[0] for r in (first, second)] + _alone(backend, late)
    park = StaticDecoder.park

    async def run() -> list:
        loop = asyncio.get_running_loop()
        arrived: list = []

        def parked(decoder, rows):  # type: ignore[no-untyped-def]
            park(decoder, rows)
            if not arrived:
                queued = len(backend.engine._jobs)  # only `submit` changes it while this runs
                arrived.append(asyncio.run_coroutine_threadsafe(backend.generate_group(late), loop))
                # Queued before the next step, however slow the loop thread is to hand it over
                # (a race: with the loop thread 0.1 s slower, the late job missed the batch).
                deadline = time.monotonic() + 30
                while len(backend.engine._jobs) == queued and time.monotonic() < deadline:
                    time.sleep(0.001)

        StaticDecoder.park = parked
        try:
            results = await _together(backend, [first, second])
            while not arrived:
                await asyncio.sleep(0.01)
            answers = [many for [many] in results] + await asyncio.wrap_future(arrived[0])
        finally:
            StaticDecoder.park = park
        return answers

    return alone, asyncio.run(run()), dict(backend.engine.last_decode)


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
    alone, together, stats = late_join(backend, [_request(2, late_budget)])
    for one, many in zip(alone, together, strict=True):
        _same(one, many)
    assert (stats["replaces"], stats["rebuilds"]) == (replaces, rebuilds), stats
    assert stats["largest_batch"] == 2, stats


def test_a_group_waiting_for_rows_leaves_the_parked_ones_in_place(tiny: tuple) -> None:
    """With `max_batch=2`, a group of two arriving after a park waits for rows, not memory:
    dropping the parked row would free none, so it stays parked (before, each such wait rebuilt
    the cache and, on CUDA, captured again); the group runs once the batch ends."""
    backend = _backend(tiny)
    backend.engine.max_batch = 2
    late = [_request(2, 4), Request(**{**_request(3, 3).__dict__, "sample_id": "s2", "repeat": 1})]
    before = dict(backend.engine.stats)
    alone, together, _ = late_join(backend, late)
    for one, many in zip(alone, together, strict=True):
        _same(one, many)
    stats = backend.engine.stats
    # The first batch: the second request's join (1 rebuild); the group's batch: none.
    assert stats["rebuilds"] - before["rebuilds"] == 1, stats
    assert stats["parks"] - before["parks"] == 1, stats  # the second request's row


def test_parked_rows_dropped_for_memory_leave_no_view_of_their_cache(tiny: tuple) -> None:
    """A group whose plan needs memory held by parked rows drops them with a copy: rows kept as a
    view of the old cache (a slice, what a leave at the batch's end did) would keep it held."""
    from longscope.models.hf import StaticDecoder

    backend = _backend(tiny)
    engine = backend.engine
    real_free, real_rebuild = type(engine).free_bytes, StaticDecoder.rebuild
    compactions: list[bool] = []

    def free(self) -> int:  # type: ignore[no-untyped-def]
        # The device is full while the batch holds a parked row: only dropping it lets a plan fit.
        return 0 if any(r.parked for r in self._rows) else real_free(self)

    def rebuild(self, keep, capacity, joining=None, copy=False):  # type: ignore[no-untyped-def]
        real_rebuild(self, keep, capacity, joining, copy)
        if joining is None:
            compactions.append(all(k._base is None for k in self.keys))

    type(engine).free_bytes, StaticDecoder.rebuild = free, rebuild
    try:
        alone, together, _ = late_join(backend, [_request(2, 30)])
    finally:
        type(engine).free_bytes, StaticDecoder.rebuild = real_free, real_rebuild
    for one, many in zip(alone, together, strict=True):
        _same(one, many)
    assert compactions == [True], compactions
