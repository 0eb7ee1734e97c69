import pytest

from longscope.text.haystack import FillerPool, Insert, build_haystack


@pytest.fixture(params=["qwen", "gemma"])
def tokenizer(request, qwen_tokenizer, gemma_tokenizer):
    return qwen_tokenizer if request.param == "qwen" else gemma_tokenizer


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("target", [1000, 8192])
def test_haystack_length_is_exact_and_within_one_sentence(tokenizer, language, target, tmp_path):
    pool = FillerPool(tokenizer, language, seed=0, cache_dir=tmp_path)
    needle = "The Helios-7 satellite completes one full orbit in 94 minutes."
    hay = build_haystack(pool, target, [Insert(needle, 0.5)])
    true_tokens = len(tokenizer.encode(hay.text))
    assert hay.tokens == true_tokens
    assert target - 60 <= true_tokens <= target
    assert hay.text.count(needle) == 1


def test_inserts_sit_at_sentence_boundaries_at_their_depth(qwen_tokenizer, tmp_path):
    pool = FillerPool(qwen_tokenizer, "en", seed=0, cache_dir=tmp_path)
    inserts = [
        Insert(f"Fact number {i} is {i * 7}.", d) for i, d in enumerate((0.9, 0.1, 0.5, 0.95))
    ]
    hay = build_haystack(pool, 16384, inserts)
    assert [p.depth for p in hay.inserts] == [0.1, 0.5, 0.9, 0.95]
    for placed in hay.inserts:
        assert abs(placed.actual_depth - placed.depth) < 0.01
        # the token offset is the true token count of the text before the insert
        before = hay.text[: hay.text.index(placed.text)]
        assert abs(len(qwen_tokenizer.encode(before)) - placed.token_offset) <= 1
        assert before == "" or before.endswith(". ")


def test_depth_zero_and_one_are_the_edges(qwen_tokenizer, tmp_path):
    pool = FillerPool(qwen_tokenizer, "en", seed=0, cache_dir=tmp_path)
    hay = build_haystack(pool, 2000, [Insert("First.", 0.0), Insert("Last.", 1.0)])
    assert hay.text.strip().startswith("First.")
    assert hay.text.strip().endswith("Last.")


def test_token_counts_are_cached_on_disk(qwen_tokenizer, tmp_path):
    first = FillerPool(qwen_tokenizer, "en", seed=3, cache_dir=tmp_path)
    first.ensure(5000)
    second = FillerPool(qwen_tokenizer, "en", seed=3, cache_dir=tmp_path)
    calls = []
    original = second.count_sentence
    second.count_sentence = lambda s: calls.append(s) or original(s)
    second.ensure(5000)
    assert calls == []
    assert second.cumulative == first.cumulative[: len(second.cumulative)]


def test_inserts_larger_than_target_are_refused(qwen_tokenizer, tmp_path):
    pool = FillerPool(qwen_tokenizer, "en", seed=0, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="inserts alone need"):
        build_haystack(pool, 3, [Insert("A sentence that is longer than three tokens.", 0.5)])
