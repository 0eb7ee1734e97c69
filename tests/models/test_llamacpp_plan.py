"""The llama.cpp backend's planning, without loading a model: `-M` options into the backend, the
host memory it plans against, the context it would load with (llama.cpp's own vocab-only probe of
the real SmolLM2 GGUF reads the metadata; no weights are loaded), and the completion arguments.

SmolLM2 135M: 98,362,432 bytes of weights, 8192 tokens trained, 30 layers x 3 KV heads x 64 x
(K + V) x 2 bytes = 23,040 KV bytes a token, 9 attention heads."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from llama_cpp import Llama

from longscope.catalogue import resolve_model_path
from longscope.errors import UsageError
from longscope.models.base import available_host_bytes
from longscope.models.llamacpp import LlamaCppBackend, completion_kwargs
from longscope.models.memory_plan import GIB
from longscope.types import GenerationConfig

SMOL = "smollm2-135m"
WEIGHTS = 98_362_432
# needed(n) = weights + n x (KV + scratch) + 256 MiB: exactly 256 tokens with flash attention's
# 1024 scratch bytes a token (a 512-token micro-batch's f16 mask); a multiple of 2^-24 GiB, so
# int(ram_gib x GiB) is exact
AT_256_TOKENS_GIB = (WEIGHTS + (256 << 20) + 256 * (23_040 + 1024)) / GIB


def _smol(**options: object) -> LlamaCppBackend:
    return LlamaCppBackend.from_options(SMOL, dict(options))


def test_the_context_is_the_one_asked_for_while_memory_holds_it() -> None:
    roomy = _smol(ram_gib=64)
    assert roomy.model_path.stat().st_size == WEIGHTS
    assert (roomy._planned_context(Llama), roomy.memory_limit) == (0, "")  # 0: the trained one
    asked = _smol(ram_gib=0.45, context_length=4096)
    assert (asked._planned_context(Llama), asked.memory_limit) == (4096, "")


def test_the_context_is_lowered_to_what_host_memory_holds() -> None:
    tight = _smol(ram_gib=0.45)
    assert tight._planned_context(Llama) == 4608
    assert tight.memory_limit == "host memory: needs 0.5 GiB for 8192 tokens, 0.4 GiB free"
    # without flash attention the micro-batch's scores count too: 512 x 9 heads x 4 bytes more
    scores = _smol(ram_gib=0.45, flash_attn=False)
    assert scores._planned_context(Llama) == 2560
    assert scores.memory_limit == "host memory: needs 0.7 GiB for 8192 tokens, 0.4 GiB free"
    # a smaller micro-batch: a smaller mask (128 x 2 bytes a token)
    assert _smol(ram_gib=0.45, n_ubatch=128)._planned_context(Llama) == 4864
    # a context asked for is the one lowered (and named in the reason)
    asked = _smol(ram_gib=AT_256_TOKENS_GIB, context_length=4096)
    assert asked._planned_context(Llama) == 256
    assert asked.memory_limit == "host memory: needs 0.4 GiB for 4096 tokens, 0.3 GiB free"


def test_not_even_256_tokens_is_refused_with_the_reason() -> None:
    # exactly 256 tokens fit: loaded with 256; one byte less: refused
    assert _smol(ram_gib=AT_256_TOKENS_GIB)._planned_context(Llama) == 256
    starved = _smol(ram_gib=AT_256_TOKENS_GIB - 1 / GIB)
    with pytest.raises(UsageError) as refused:
        starved._planned_context(Llama)
    assert str(refused.value) == (
        "llamacpp/smollm2-135m does not fit host memory (host memory: needs 0.5 GiB for 8192 "
        "tokens, 0.3 GiB free; not even 256 tokens of context do): free memory or use a smaller "
        "model"
    )
    assert starved.memory_limit == ""


def test_gpu_layers_or_an_unreadable_file_leave_the_context_as_asked(tmp_path: Path) -> None:
    # weights and cache on a GPU: host memory does not bound the context, however little
    on_gpu = _smol(ram_gib=0.0, n_gpu_layers=-1, context_length=1234)
    assert on_gpu._planned_context(Llama) == 1234 and on_gpu.memory_limit == ""
    assert _smol(ram_gib=0.0, n_gpu_layers=0, context_length=1234).memory_limit == ""
    with pytest.raises(UsageError, match="does not fit host memory"):
        _smol(ram_gib=0.0, n_gpu_layers=0)._planned_context(Llama)
    # a file llama.cpp cannot read: the real load names what is wrong, not the plan
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf")
    backend = LlamaCppBackend.from_options(str(broken), {"ram_gib": 0.0, "context_length": 77})
    assert backend._planned_context(Llama) == 77 and backend.memory_limit == ""


def test_free_bytes_is_ram_gib_when_stated_else_measured() -> None:
    assert _smol(ram_gib=1.5).free_bytes() == 3 * GIB // 2
    assert _smol(ram_gib=0.0).free_bytes() == 0
    measured = _smol().free_bytes()
    assert abs(measured - available_host_bytes()) < 256 << 20 and measured > 0


def test_options_become_the_backend(tmp_path: Path) -> None:
    named = _smol()
    assert named.model_path == resolve_model_path(SMOL) and named.name == "llamacpp/smollm2-135m"
    assert (named.prompt_mode, named.requested_n_ctx, named.chat_format) == ("chat", 0, None)
    assert (named.chat_template, named.ram_gib, named.thinking.name) == (None, None, "think")
    assert named.engine_options["flash_attn"] is True
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }} é", encoding="utf-8")
    given = _smol(
        prompt_mode="completion",
        context_length=2048,
        n_ctx=999,
        chat_format="chatml",
        chat_template=str(template),
        thinking_format="qwen3",
        ram_gib=2.5,
        n_threads=3,
        n_threads_batch=4,
        n_batch=64,
        n_ubatch=32,
        n_gpu_layers=0,
        flash_attn=False,
        seed=7,
    )
    assert (given.prompt_mode, given.requested_n_ctx, given.chat_format) == (
        "completion",
        2048,
        "chatml",
    )
    assert given.chat_template == "{{ messages }} é" and given.ram_gib == 2.5
    assert given.thinking.name == "qwen3"
    assert given.engine_options == {
        "flash_attn": False,
        "n_threads": 3,
        "n_threads_batch": 4,
        "n_batch": 64,
        "n_ubatch": 32,
        "n_gpu_layers": 0,
        "seed": 7,
    }
    assert _smol(n_ctx=999).requested_n_ctx == 999
    # a .gguf path: chat unless told
    path = tmp_path / "m.gguf"
    path.write_bytes(b"")
    local = LlamaCppBackend.from_options(str(path), {})
    assert (local.model_path, local.prompt_mode, local.name) == (path, "chat", f"llamacpp/{path}")


def test_bad_model_names_and_templates_are_refused_with_one_line(tmp_path: Path) -> None:
    not_gguf = tmp_path / "m.bin"
    not_gguf.write_bytes(b"")
    for name in (str(not_gguf), str(tmp_path / "missing.gguf")):
        with pytest.raises(UsageError) as refused:
            LlamaCppBackend.from_options(name, {})
        assert str(refused.value) == (
            f"unknown local model {name!r}: give a named model (gemma3-270m, smollm2-135m) or "
            "the path of an existing .gguf file"
        )
    latin = tmp_path / "latin1.jinja"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    for template, error in (
        (latin, "UnicodeDecodeError"),
        (tmp_path / "none", "FileNotFoundError"),
    ):
        with pytest.raises(UsageError) as refused:
            _smol(chat_template=str(template))
        assert str(refused.value) == (
            f"-M chat_template={template}: cannot read it as a UTF-8 Jinja template ({error}); "
            "give the path of a template file"
        )


def test_completion_kwargs_carry_the_config_and_extras() -> None:
    config = GenerationConfig(max_tokens=12, temperature=0.5, top_p=0.9, seed=3, stop=("x",))
    assert completion_kwargs([1, 2], config, stop=["x"], logprobs=None) == {
        "prompt": [1, 2],
        "max_tokens": 12,
        "temperature": 0.5,
        "top_p": 0.9,
        "seed": 3,
        "stop": ["x"],
        "logprobs": None,
    }
    assert completion_kwargs("p", GenerationConfig()) == {
        "prompt": "p",
        "max_tokens": 200,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
    }


# GGUF files holding SmolLM2's metadata only (no tensors), some with a field left out: the plan
# reads metadata through llama.cpp's vocab-only probe, which loads these; a full load does not.
_FIXED_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_value(data: bytes, at: int, kind: int) -> int:
    """Return the offset past one GGUF value of type `kind` at `at`."""
    if kind in _FIXED_SIZE:
        return at + _FIXED_SIZE[kind]
    if kind == 8:  # string: u64 length, bytes
        return at + 8 + struct.unpack_from("<Q", data, at)[0]
    assert kind == 9, kind  # array: u32 item type, u64 count, items
    inner, count = struct.unpack_from("<IQ", data, at)
    at += 12
    if inner in _FIXED_SIZE:
        return at + count * _FIXED_SIZE[inner]
    for _ in range(count):
        at = _skip_value(data, at, inner)
    return at


def _metadata_only(path: Path, *, drop: str = "", zero: str = "") -> Path:
    """Write SmolLM2's GGUF metadata to `path` without tensors, `drop` left out and the u32
    field `zero` set to 0."""
    source = resolve_model_path(SMOL)
    with source.open("rb") as f:
        data = f.read(4 << 20)  # the metadata (vocabulary and merges included) is ~1.8 MB
    magic, version, _tensors, count = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF"
    records, at = [], 24
    for _ in range(count):
        start = at
        size = struct.unpack_from("<Q", data, at)[0]
        key = data[at + 8 : at + 8 + size].decode()
        kind = struct.unpack_from("<I", data, at + 8 + size)[0]
        at = _skip_value(data, at + 12 + size, kind)
        if key == zero:
            assert kind == 4  # u32
            records.append(data[start : at - 4] + struct.pack("<I", 0))
        elif key != drop:
            records.append(data[start:at])
    assert len(records) == count - bool(drop)
    body = struct.pack("<4sIQQ", b"GGUF", version, 0, len(records)) + b"".join(records)
    path.write_bytes(body + b"\0" * (-len(body) % 32))
    return path


def _plan(path: Path, **options: object) -> tuple[int, str]:
    backend = LlamaCppBackend.from_options(str(path), dict(options))
    return backend._planned_context(Llama), backend.memory_limit


def test_the_plan_reads_the_metadata_only(tmp_path: Path) -> None:
    # SmolLM2's metadata without its weights is planned as SmolLM2 (the probe loads no tensor)
    gguf = _metadata_only(tmp_path / "meta.gguf")
    size = gguf.stat().st_size
    with pytest.raises(ValueError, match="Failed to load model"):
        Llama(model_path=str(gguf), verbose=False)  # a full load needs the tensors
    assert _plan(gguf, ram_gib=64) == (0, "")
    # exactly 256 tokens with flash attention (23,040 KV + 1,024 mask bytes a token)
    at_256 = (size + (256 << 20) + 256 * (23_040 + 1024)) / GIB
    assert _plan(gguf, ram_gib=at_256) == (
        256,
        "host memory: needs 0.4 GiB for 8192 tokens, 0.3 GiB free",
    )
    with pytest.raises(UsageError) as refused:
        _plan(gguf, ram_gib=at_256 - 1 / GIB)
    assert str(refused.value) == (
        f"llamacpp/{gguf} does not fit host memory (host memory: needs 0.4 GiB for 8192 tokens, "
        "0.3 GiB free; not even 256 tokens of context do): free memory or use a smaller model"
    )


def test_metadata_that_does_not_say_leaves_the_context_as_asked(tmp_path: Path) -> None:
    # no trained context length (absent or 0), or no head count (so no KV size): nothing to plan
    # with, so not even no memory at all lowers or refuses the context; llama.cpp's load decides
    files = {
        "no-context": _metadata_only(tmp_path / "a.gguf", drop="llama.context_length"),
        "zero-context": _metadata_only(tmp_path / "b.gguf", zero="llama.context_length"),
        "no-heads": _metadata_only(tmp_path / "c.gguf", drop="llama.attention.head_count"),
    }
    for name, gguf in files.items():
        assert _plan(gguf, ram_gib=0.0) == (0, ""), name
    assert _plan(files["no-heads"], ram_gib=0.0, context_length=300) == (300, "")
    # a context asked for is planned without the trained one: 300 tokens do not fit in nothing
    for name in ("no-context", "zero-context"):
        with pytest.raises(UsageError) as refused:
            _plan(files[name], ram_gib=0.0, context_length=300)
        assert "does not fit host memory (host memory: needs 0.3 GiB for 300 tokens" in str(
            refused.value
        )
