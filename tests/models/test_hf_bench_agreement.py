"""`bench_hf_agreement.py` (issue 46.3): how it decides that a reference's `generate` equals the
engine's answer, used for transformers' SDPA reference and for the `--baseline` one."""

from __future__ import annotations

from pathlib import Path

from tests.bench_helper import load_benchmark


def _bench():  # type: ignore[no-untyped-def]
    return load_benchmark("bench_hf_agreement")


def test_an_answer_cut_by_length_equals_the_references_prefix() -> None:
    bench = _bench()
    assert bench._compared([5, 6, 7], [5, 6, 7]) == (True, None, [5, 6, 7])
    # the reference generated further: only the engine's length is compared
    assert bench._compared([5, 6], [5, 6, 9]) == (True, None, [5, 6])


def test_the_first_difference_is_where_the_ids_part() -> None:
    bench = _bench()
    # call G6's shape: transformers' SDPA `generate` left the engine at the first token
    assert bench._compared([11497, 2351, 506], [496, 4709, 53817])[:2] == (False, 0)
    assert bench._compared([5, 6, 7], [5, 6, 8])[:2] == (False, 2)
    # a reference that stopped earlier differs where it ended
    assert bench._compared([5, 6, 7], [5, 6])[:2] == (False, 2)


def test_an_answer_ended_by_eos_needs_the_reference_to_end_there_too() -> None:
    bench = _bench()
    eos = {1, 106}
    assert bench._compared([5, 6], [5, 6, 106], eos) == (True, None, [5, 6, 106])
    assert bench._compared([5, 6], [5, 6, 1, 9], eos) == (True, None, [5, 6, 1])
    # the reference went on where the engine stopped (call R's fwe row: a newline, id 198)
    assert bench._compared([5, 6], [5, 6, 198], eos)[:2] == (False, 2)
    # ... or stopped where the engine did not
    assert bench._compared([5, 6, 7], [5, 6, 1], eos)[:2] == (False, 2)
    # ... or ran out of tokens where the engine stopped
    assert bench._compared([5, 6], [5, 6], eos)[:2] == (False, 2)


def test_a_prompt_is_sdpa_suspect_only_where_torchs_kernel_was_measured_wrong() -> None:
    suspect = _bench().sdpa_suspect
    # Gemma 3 270M on the H200: one KV head under 4 query heads, prompts of 32k+1 tokens
    assert [suspect("cuda", 1, 4, n) for n in (7488, 7489, 7490, 8065, 16257, 33)] == [
        False, True, False, True, True, True,
    ]  # fmt: skip
    assert not suspect("cpu", 1, 4, 7489)  # torch's CPU kernels are right there
    assert not suspect("cuda", 2, 4, 7489)  # `repeat_kv` copies several KV heads
    assert not suspect("cuda", 1, 1, 7489)  # nothing to broadcast


def test_the_teacher_forced_gaps_at_32k_plus_1_tokens_are_those_of_the_plain_forward() -> None:
    import torch

    from tests.gpu.tiny import tiny_qwen2

    bench = _bench()
    torch.manual_seed(0)
    model = tiny_qwen2(vocab_size=64, layers=2, hidden=64, heads=4, kv_heads=1).eval()
    compare = bench.Compare(Path("unused"), torch.float32)
    answer = [7, 3, 9, 1]
    for prompt_len in (30, 31):  # forced lengths 33 (one token added, then dropped) and 34
        prompt = [(5 * i) % 60 + 2 for i in range(prompt_len)]
        with torch.inference_mode():
            got = compare._gaps(model, prompt, answer)
            logits = model(input_ids=torch.tensor([prompt + answer[:-1]])).logits[0, -4:]
        best = logits.max(-1).values
        gaps = best - logits.gather(1, torch.tensor(answer)[:, None])[:, 0]
        assert got[0] == round(float(gaps.max()), 4) and got[0] > 0, (prompt_len, got)
