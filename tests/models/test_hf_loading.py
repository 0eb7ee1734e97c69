"""`hf/loading.py` (issue 46): the staged move of a loaded model, on the CPU. Every parameter and
buffer arrives whole (tensors larger than a staging buffer, and tails shorter than one, included),
tied weights stay one tensor, the model computes what it computed before, and a copy that fails
leaves the model as it was."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longscope.models.hf import loading  # noqa: E402


def _tiny(tied: bool, dtype: Any = None) -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(3)
    config = Qwen2Config(
        vocab_size=97, hidden_size=40, intermediate_size=72, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=tied,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config).eval()
    return model.to(dtype) if dtype is not None else model


def _snapshot(model: Any) -> dict[str, tuple[int, Any]]:
    named = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    return {name: (t.data_ptr(), t.detach().clone()) for name, t in named.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("stage_bytes", [64, 1000, 1 << 20])
def test_every_tensor_arrives_whole_and_the_model_computes_the_same(
    dtype: Any, stage_bytes: int
) -> None:
    model = _tiny(tied=False, dtype=dtype)
    ids = torch.tensor([[5, 9, 11, 2, 40, 41]])
    with torch.inference_mode():
        before_logits = model(input_ids=ids).logits
    before = _snapshot(model)
    # The embedding (97 x 40 values) takes several 64- or 1,000-byte buffers and a shorter tail.
    largest = max(t.numel() * t.element_size() for _, t in before.values())
    if stage_bytes < largest:
        assert largest // stage_bytes >= 7 and largest % stage_bytes != 0
    loading.move_staged(torch, model, torch.device("cpu"), threads=3, stage_bytes=stage_bytes)
    after = _snapshot(model)
    assert after.keys() == before.keys()
    for name, (pointer, tensor) in after.items():
        assert pointer != before[name][0], f"{name} was not copied"
        assert tensor.dtype == before[name][1].dtype
        assert torch.equal(tensor, before[name][1]), name
    with torch.inference_mode():
        assert torch.equal(model(input_ids=ids).logits, before_logits)


def test_tied_weights_stay_one_tensor() -> None:
    model = _tiny(tied=True)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    loading.move_staged(torch, model, torch.device("cpu"), threads=2, stage_bytes=256)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def test_a_copy_that_fails_leaves_every_tensor_where_it_was(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    model = _tiny(tied=False)
    before = _snapshot(model)
    bytes_of = loading._bytes
    embedding = model.model.embed_tokens.weight.numel()

    def failing(torch: Any, tensor: Any) -> Any:
        if tensor.numel() == embedding and tensor.device.type == "cpu":
            raise RuntimeError("cudaHostAlloc failed: the memlock limit")
        return bytes_of(torch, tensor)

    monkeypatch.setattr(loading, "_bytes", failing)
    with pytest.raises(RuntimeError, match="memlock"):
        loading.move_staged(torch, model, torch.device("cpu"), threads=2, stage_bytes=512)
    after = _snapshot(model)
    assert {n: p for n, (p, _) in after.items()} == {n: p for n, (p, _) in before.items()}


def test_off_cuda_the_model_moves_with_module_to_and_says_so() -> None:
    model = _tiny(tied=False)
    pointer = model.lm_head.weight.data_ptr()
    assert loading.move_to_device(torch, model, torch.device("cpu")) == "to"
    assert model.lm_head.weight.data_ptr() == pointer  # already there: nothing copied


def test_a_tensor_the_staged_move_does_not_copy_is_named() -> None:
    model = _tiny(tied=False)
    assert loading._not_plain(torch, model) == ""
    model.model.register_buffer("on_meta", torch.empty(3, device="meta"))
    assert loading._not_plain(torch, model) == "a tensor on meta (torch.strided, torch.float32)"
