"""Token lengths as options take: up to the longest context (16M), with k and M suffixes."""

from __future__ import annotations

import pytest

from longscope.errors import UsageError
from longscope.models.registry import parse_model_options, typed_options
from longscope.suites.params import MAX_COUNT, MAX_LENGTH_TOKENS, Param, parse_lengths

MIB = 1024 * 1024


def test_lengths_take_m_suffixes_and_a_million_tokens() -> None:
    assert parse_lengths("1M,1m,1048576") == (MIB, MIB, MIB)
    assert parse_lengths("0.5M,128k,16M") == (MIB // 2, 128 * 1024, 16 * MIB)
    with pytest.raises(UsageError, match=r"bad length '17M' in --lengths: .*at most 16M"):
        parse_lengths("17M")
    with pytest.raises(UsageError, match=r"bad length '1\.5' in --lengths"):
        parse_lengths("1.5")


@pytest.mark.parametrize(
    ("provider", "key"),
    [
        ("openai", "context_length"),
        ("llamacpp", "context_length"),
        ("llamacpp", "n_ctx"),
        ("llamacpp", "n_batch"),
        ("hf", "context_length"),
        ("hf", "prefill_chunk"),
        ("scripted", "context_length"),
    ],
)
def test_model_token_lengths_are_not_capped_by_the_count_ceiling(provider: str, key: str) -> None:
    # 131072 (a 128K model) and 1M were refused as "a whole number of at most 100,000".
    for given, tokens in (("131072", 131072), ("1M", MIB), ("128k", 131072), ("16M", 16 * MIB)):
        assert tokens > MAX_COUNT or given != "131072"
        typed = typed_options(provider, parse_model_options([f"{key}={given}"]))
        assert typed == {key: tokens}
    with pytest.raises(UsageError, match=rf"bad -M {key}={MAX_LENGTH_TOKENS + 1}: .* to 16M$"):
        typed_options(provider, {key: MAX_LENGTH_TOKENS + 1})
    with pytest.raises(UsageError, match=rf"bad -M {key}=0: expected a token length"):
        typed_options(provider, parse_model_options([f"{key}=0"]))


def test_a_token_parameter_keeps_its_low_bound_and_its_flag() -> None:
    param = Param("window", "tokens", None, "tokens", low=256)
    assert param.parse("256") == 256
    assert param.parse(MIB) == MIB
    with pytest.raises(UsageError, match=r"bad -S window=255: .* from 256 to 16M"):
        param.parse("255")
    with pytest.raises(UsageError, match=r"-S window"):
        param.parse(True)
    assert param.usage() == "window=N|4k|1M"
