"""100-LongBench synthetic tasks: contexts built as the spec says, and the reference code's bugs absent."""

import random

import pytest

from longscope.analysis.longscore import longscore
from longscope.errors import UsageError
from longscope.suites import create_suite
from longscope.suites.base import BuildContext
from longscope.suites.hundred.pool import WRAP, CountedPool, load_pool
from longscope.suites.hundred.suite import fill, grade, star_options
from longscope.types import GenerationConfig

from ...cli_helper import longscope

CTX_ARGS = ("completion", GenerationConfig(max_tokens=64))


def _build(tokenizer, **params):
    return create_suite("hundred", params).build(BuildContext(tokenizer, *CTX_ARGS))


def _passages(context: str) -> list[str]:
    return [p for p in context.split("Passage ")[1:]]


def test_every_sample_depends_only_on_seed_task_length_row(qwen_tokenizer) -> None:
    one = {
        s.id: s for s in _build(qwen_tokenizer, tasks=["kv_retrieval"], lengths=[2048], samples=1)
    }
    three = {
        s.id: s
        for s in _build(
            qwen_tokenizer,
            tasks=["counting_stars", "kv_retrieval"],
            lengths=[4096, 2048],
            samples=3,
        )
    }
    assert one["kv_retrieval-2048-000"] == three["kv_retrieval-2048-000"]
    assert one["kv_retrieval-2048-000"].context == three["kv_retrieval-2048-000"].context


def test_length_counts_everything_sent_and_is_recorded(qwen_tokenizer) -> None:
    suite = create_suite("hundred", {"lengths": [2048, 8192], "samples": 2})
    for sample in suite.build(BuildContext(qwen_tokenizer, *CTX_ARGS)):
        prompt, _ = suite.template.render(sample, "completion")
        sent = len(qwen_tokenizer.encode(prompt)) + 1  # and BOS, as every suite counts it
        assert sample.meta["achieved_length"] == sent == sample.prompt_tokens
        assert sample.meta["target_length"] - 200 < sent <= sample.meta["target_length"]
        assert sample.length == sent + sample.max_tokens


class _PairTokenizer:
    """Two characters per token: counts of parts do not add up to the count of their join."""

    name, exact = "pairs", True

    def encode(self, text: str) -> list[int]:
        return list(range((len(text) + 1) // 2))


@pytest.mark.parametrize("tokenizer", ["qwen_tokenizer", "pairs"])
def test_length_is_exact_whether_or_not_the_pool_is_additive(tokenizer, request) -> None:
    tokenizer = _PairTokenizer() if tokenizer == "pairs" else request.getfixturevalue(tokenizer)
    documents, source = load_pool("pydoc")
    assert CountedPool(documents, source, tokenizer).additive is (tokenizer.name != "pairs")
    suite = create_suite("hundred", {"lengths": [3000, 6000], "samples": 3, "seed": 5})
    for sample in suite.build(BuildContext(tokenizer, "chat", GenerationConfig(max_tokens=64))):
        _, messages = suite.template.render(sample, "chat")
        assert sample.meta["achieved_length"] == len(tokenizer.encode(messages[0].content))


@pytest.mark.model
def test_length_is_exact_in_the_embedded_models_tokenizer(gemma_tokenizer) -> None:
    suite = create_suite("hundred", {"lengths": [2048, 4096], "samples": 2})
    for sample in suite.build(BuildContext(gemma_tokenizer, *CTX_ARGS)):
        prompt, _ = suite.template.render(sample, "completion")
        assert sample.meta["achieved_length"] == len(gemma_tokenizer.encode(prompt)) + 1  # BOS


def test_distractors_are_drawn_without_replacement(qwen_tokenizer) -> None:
    for sample in _build(
        qwen_tokenizer, tasks=["kv_retrieval", "counting_stars"], lengths=[16384], samples=3
    ):
        bodies = [p.split(":\n", 1)[1] for p in _passages(sample.context)]
        assert len(bodies) == len(set(bodies)), "a document appears twice"


def test_fill_never_repeats_and_stops_when_nothing_fits() -> None:
    counts = [50, 80, 120, 300, 20, 20]
    for seed in range(200):
        chosen = fill(random.Random(seed), counts, 400)
        assert len(chosen) == len(set(chosen))
        used = sum(counts[i] for i in chosen)
        assert used <= 400
        assert all(counts[i] > 400 - used for i in range(len(counts)) if i not in chosen)


def test_passage_count_answer_is_the_number_of_unique_documents(qwen_tokenizer) -> None:
    for sample in _build(qwen_tokenizer, tasks=["passage_count"], lengths=[4096], samples=3):
        bodies = [p.split(":\n", 1)[1] for p in _passages(sample.context)]
        assert sample.gold == (str(len(set(bodies))),)
        assert len(bodies) > len(set(bodies))  # some documents are repeated


def test_counting_stars_options_are_distinct() -> None:
    for seed in range(500):
        rng = random.Random(seed)
        counts = [rng.choice([5, 5, 7]) for _ in range(4)]  # many equal numbers: swaps collide
        options = star_options(rng, counts)
        assert len(options) == 5 and len(set(options)) == 5
        assert "unanswerable" in options and str(counts) in options


def test_kv_answer_is_k1_and_k1_is_itself_a_key(qwen_tokenizer) -> None:
    sample = _build(qwen_tokenizer, tasks=["kv_retrieval"], lengths=[2048], samples=1)[0]
    keys = sample.meta["keys"]
    assert sample.gold == (keys[1],)
    assert f"The value of {keys[0]} is {keys[1]}." in sample.context
    assert f"The value of {keys[1]} is {keys[2]}." in sample.context  # built-in distractor


@pytest.mark.parametrize(
    ("task", "answer", "gold", "value"),
    [
        (
            "kv_retrieval",
            "The value is 1b4e28ba-2fa1-11d2-883f-0016d3cca427.",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            1.0,
        ),
        (
            "kv_retrieval",
            "k0 is 0b4e28ba-2fa1-11d2-883f-0016d3cca427, no: 1B4E28BA-2FA1-11D2-883F-0016D3CCA427",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            1.0,
        ),
        (
            "kv_retrieval",
            "unsure\n1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
            0.0,
        ),
        ("counting_stars", "3", "3", 1.0),
        ("counting_stars", "Option 2. [5, 7]", "3", 0.0),
        ("passage_count", "There are 12 unique passages.", "12", 1.0),
    ],
)
def test_grading(task, answer, gold, value) -> None:
    assert grade(task, answer, gold).value == value


def test_passage_retrieval_says_what_is_missing() -> None:
    with pytest.raises(
        UsageError, match="needs a summary per document, which the default pydoc pool does not have"
    ):
        create_suite("hundred", {"tasks": ["passage_retrieval"]})


def test_small_default_pool_refuses_rather_than_repeating(qwen_tokenizer) -> None:
    with pytest.raises(UsageError, match="too few for 262144-token contexts"):
        _build(qwen_tokenizer, tasks=["kv_retrieval"], lengths=[262144], samples=1)


def test_document_counts_are_cached(qwen_tokenizer) -> None:
    documents, source = load_pool("pydoc")
    first = CountedPool(documents, source, qwen_tokenizer)
    calls = []
    original = qwen_tokenizer.encode

    class Counting:
        name, exact = qwen_tokenizer.name, False

        def encode(self, text):
            calls.append(text)
            return original(text)

    second = CountedPool(documents, source, Counting())
    assert second.counts == first.counts and len(calls) == 1  # only the fingerprint probe
    assert first.counts[0] == len(
        qwen_tokenizer.encode(WRAP.format(index=999, text=documents[0].text))
    )


def test_longscore_hand_computed_and_guarded() -> None:
    result = longscore({2048: 80, 4096: 70, 6144: 60, 8192: 56, 16384: 35})
    assert result.base == 70
    assert result.lc == {8192: -20.0, 16384: -50.0}
    assert result.average == -35.0 and result.raw_average == 45.5
    guarded = longscore({2048: 2, 4096: 0, 6144: 1, 8192: 0})
    assert guarded.average is None and "below the floor 5" in guarded.undefined


@pytest.mark.model
def test_sweep_on_the_embedded_model_and_longscore(tmp_path) -> None:
    # Two tasks (two requests a length) show longscore's rows per task as well as three did;
    # counting_stars is built and graded without a model above and in test_hundred_boundaries.py.
    # 512 and 1K tokens: half the prompt tokens of 1K and 2K, the same base-and-longer shape.
    run = longscope(
        "run", "hundred", "--model", "llamacpp/gemma3-270m",
        "-S", "tasks=kv_retrieval,passage_count", "--lengths", "512,1k",
        "-S", "samples=1", "--max-tokens", "16", "-o", str(tmp_path), "-q", timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    scored = longscope("longscore", str(tmp_path), "--base", "512")
    assert scored.returncode == 0, scored.stderr
    text = " ".join(scored.stdout.split())
    assert "Base" in text and "1K LC" in text and "LongScore" in text
    for task in ("kv_retrieval", "passage_count", "overall"):
        assert task in text
