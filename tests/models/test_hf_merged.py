"""The graph decode's merged projections (issue 46): one QKV and one gate/up matrix a layer, the
modules' own weights views into them (no memory added), the model's outputs unchanged (CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_merged_weights_are_shared_and_leave_the_model_unchanged() -> None:
    from longscope.models.hf.kernels import merged_weights
    from tests.gpu.tiny import tiny_qwen2

    model = tiny_qwen2(vocab_size=512)
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    before = model.generate(ids, max_new_tokens=8, do_sample=False)
    allocated = sum(p.numel() for p in model.parameters())
    with torch.inference_mode():  # as the engine thread makes them
        made = [merged_weights(torch, layer) for layer in model.model.layers]
    layer, merged = model.model.layers[0], made[0]
    attn, mlp = layer.self_attn, layer.mlp
    assert attn.q_proj.weight.data_ptr() == merged.qkv.data_ptr()
    assert attn.v_proj.weight.data_ptr() == merged.qkv[-attn.v_proj.weight.shape[0] :].data_ptr()
    assert (
        mlp.up_proj.weight.data_ptr() == merged.gate_up[mlp.gate_proj.weight.shape[0] :].data_ptr()
    )
    assert sum(p.numel() for p in model.parameters()) == allocated
    assert merged.gate_up_bias is None and merged.qkv_bias is not None  # Qwen2: biases on q/k/v
    x = torch.randn(3, model.config.hidden_size)
    split = torch.cat([attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)], dim=-1)
    assert torch.equal(torch.nn.functional.linear(x, merged.qkv, merged.qkv_bias), split)
    assert torch.equal(model.generate(ids, max_new_tokens=8, do_sample=False), before)
    with torch.inference_mode():
        assert merged_weights(torch, layer) is merged  # made once
