"""fill=ruler at the boundary: RULER's samples for every way a tokenizer counts the pieces.

RULER counts every prompt whole (`len(tokenizer.text_to_tokens(text))`). longscope sums the
pieces' counts where they add up and recounts the whole prompt where they do not; either way the
samples must be the ones whole counting gives, and each sample's `length` must be its prompt's
real count. Three tokenizers cover the three counting modes per separator: Qwen2.5 (the
separator after a piece for `\\n` and `\\n\\n`, before it for a space), Qwen2.5 on the reversed text
(the other side each time) and one whose counts never add up (a repeated token merges).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from pathlib import Path

import pytest

from longscope.errors import UsageError
from longscope.suites.ruler import generate
from longscope.suites.ruler.data import load_squad
from longscope.suites.ruler.tasks import TASKS
from longscope.text.tokenizers import QwenTokenizer
from tests.suites.ruler.helpers import RunMergingTokenizer, fixture_env

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"


class ReversedQwen:
    """Qwen2.5's tokens of the text read backwards: pieces merge with the separator on the other
    side than in Qwen2.5 itself (`lead` where Qwen is `trail` and back)."""

    name, exact = "qwen-reversed", True

    def __init__(self, qwen: QwenTokenizer) -> None:
        self._qwen = qwen

    def encode(self, text: str) -> list[int]:
        return self._qwen.encode(text[::-1])

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode(ids)[::-1]


class EndMarked:
    """Qwen2.5's tokens and an end-of-text token, as tokenizers that append EOS count: no two
    pieces' counts ever add up to their join's, so every prompt is counted whole."""

    name, exact = "end-marked", True

    def __init__(self, qwen: QwenTokenizer) -> None:
        self._qwen = qwen

    def encode(self, text: str) -> list[int]:
        return [*self._qwen.encode(text), 151643]

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode([i for i in ids if i != 151643])


@pytest.fixture(scope="module")
def env() -> generate.Env:
    return fixture_env()


@pytest.fixture(scope="module")
def tokenizers(qwen_tokenizer) -> dict[str, object]:
    return {
        "qwen": qwen_tokenizer,
        "reversed": ReversedQwen(qwen_tokenizer),
        "merging": RunMergingTokenizer(qwen_tokenizer),
        "end": EndMarked(qwen_tokenizer),
    }


def _fields(w: generate.Written) -> tuple[object, ...]:
    return (w.input, w.answer_prefix, w.outputs, w.length)


def _whole(task: str, env: generate.Env, tokenizer, length: int, count: int) -> list[tuple]:
    """RULER's way: every prompt counted whole, through the same generator."""
    counter = generate.Counter(tokenizer, True)
    cell = generate.CELLS[TASKS[task].generator](TASKS[task], env, length, counter)
    out = []
    for prompt, total in cell.cells(count):
        text = prompt.text()
        assert total == len(tokenizer.encode(text)) + cell.ttg
        out.append((text, total, tuple(prompt.answers)))
    return out


# (task, length, tokenizer, counted): the counting mode each cell must end in.
CASES = [
    ("niah_single_1", 2048, "qwen", "pieces"),
    ("niah_single_1", 2048, "reversed", "pieces"),
    ("niah_single_1", 2048, "merging", "pieces"),
    ("niah_multikey_2", 2048, "qwen", "pieces"),
    ("niah_multikey_2", 2048, "reversed", "pieces"),
    ("niah_multikey_2", 2048, "merging", "pieces"),
    ("niah_multikey_3", 2048, "qwen", "pieces"),
    ("niah_multikey_3", 2048, "reversed", "pieces"),
    ("vt", 2048, "qwen", "pieces"),
    ("vt", 2048, "reversed", "pieces"),
    ("vt", 2048, "merging", "pieces"),
    ("cwe", 4096, "qwen", "pieces"),
    ("cwe", 4096, "reversed", "pieces"),
    ("cwe", 2048, "merging", "pieces"),
    ("fwe", 2048, "qwen", "pieces"),
    ("fwe", 2048, "reversed", "pieces"),
    ("fwe", 2048, "merging", "whole"),
    ("qa_1", 2048, "qwen", "pieces"),
    ("qa_1", 2048, "reversed", "pieces"),
    ("qa_1", 2048, "merging", "pieces"),
    ("qa_2", 2048, "qwen", "pieces"),
    ("qa_2", 2048, "reversed", "pieces"),
    ("niah_single_1", 2048, "end", "whole"),
    ("niah_multikey_2", 2048, "end", "whole"),
    ("niah_multikey_3", 2048, "end", "whole"),
    ("vt", 2048, "end", "whole"),
    ("cwe", 2048, "end", "whole"),
    ("fwe", 2048, "end", "whole"),
    ("qa_1", 2048, "end", "whole"),
]


@pytest.mark.parametrize("task,length,tok,counted", CASES)
def test_samples_and_lengths_are_whole_countings(env, tokenizers, task, length, tok, counted):
    tokenizer = tokenizers[tok]
    written = list(generate.ruler_cell(TASKS[task], env, tokenizer, length, 2))
    ttg = TASKS[task].template.tokens_to_generate
    for w in written:
        # RULER's `length`: the prompt with its answer prefix, counted whole, plus the output.
        assert w.length == len(tokenizer.encode(w.input + w.answer_prefix)) + ttg <= length
        assert w.meta["counted"] == counted
        assert w.answer_prefix.startswith(TASKS[task].template.answer_prefix[:10])
    whole = _whole(task, env, tokenizer, length, 2)
    assert [(w.input + w.answer_prefix, w.length, w.outputs) for w in written] == whole


def _untemper(y: int) -> int:
    """The Mersenne Twister state word whose tempered output is `y`."""
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    x = y
    for _ in range(5):
        x = y ^ ((x << 7) & 0x9D2C5680)
    x &= 0xFFFFFFFF
    return x ^ (x >> 11) ^ (x >> 22)


def _drawing(*outputs: int) -> random.Random:
    """A `random.Random` whose next 32-bit outputs are `outputs` (then its seeded stream)."""
    rng = random.Random(0)
    version, state, gauss = rng.getstate()
    words = list(state[:624])
    for i, out in enumerate(outputs):
        words[i] = _untemper(out)
    rng.setstate((version, (*words, 0), gauss))
    return rng


def test_needle_numbers_are_rulers_seven_digits_at_both_ends() -> None:
    # RULER: random.randint(10**6, 10**7 - 1); 24 random bits, redrawn at or past 9,000,000.
    assert generate._random_number(_drawing(8_999_999 << 8)) == "9999999"
    assert generate._random_number(_drawing(9_000_000 << 8, 0)) == "1000000"
    assert generate._random_number(_drawing(9_000_001 << 8, 5 << 8)) == "1000005"
    assert generate._random("numbers", _drawing(0)) == "1000000"
    with pytest.raises(ValueError, match="unknown needle type 'letters'"):
        generate._random("letters", random.Random(0))


def test_zeta_without_scipy_is_scipys_value(monkeypatch) -> None:
    from scipy.special import zeta

    with_scipy = generate._zeta(2.0)
    assert with_scipy == float(zeta(2.0)) == 1.6449340668482264
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # `import` raises ImportError
    assert generate._zeta(2.0) == with_scipy  # fwe's alpha: scipy's float exactly
    for alpha in (1.5, 3.0, 4.5):
        assert generate._zeta(alpha) == pytest.approx(float(zeta(alpha)), rel=1e-8, abs=0)


# sha256 of [input, answer_prefix, outputs, length] of each sample RULER's own prepare.py wrote
# (NVIDIA/RULER@c3f5e3b, Qwen2.5's vocabulary through tiktoken, this folder's squad.json and
# hotpotqa.json as its json/ inputs), per model template / task / max_seq_length / random_seed:
# lengths below 4K (RULER's smaller increments and cwe's shorter lists), another seed, a chat
# template around QA and the aggregation tasks, 8K.
MORE = json.loads((FIXTURES / "prepare_digests_more.json").read_text())


def _digest(w: generate.Written) -> str:
    fields = [w.input, w.answer_prefix, list(w.outputs), w.length]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


@pytest.mark.parametrize("key", sorted(MORE))
def test_samples_equal_what_rulers_prepare_wrote(qwen_tokenizer, env, key) -> None:
    template, task, length, seed = key.split("/")
    expected = MORE[key]
    cell_env = generate.Env(int(seed), model_template=template, essays=env.essays, qa=env.qa)
    written = generate.ruler_cell(TASKS[task], cell_env, qwen_tokenizer, int(length), len(expected))
    assert [_digest(w) for w in written] == expected


def test_iter_cell_yields_the_suites_cell(qwen_tokenizer) -> None:
    from longscope.suites.base import BuildContext
    from longscope.suites.ruler.suite import RulerSuite
    from longscope.types import GenerationConfig

    suite = make_suite(RulerSuite, tasks=["vt"], lengths=[2048], samples=3, random_seed=5)
    ctx = BuildContext(qwen_tokenizer, "completion", GenerationConfig())
    two = list(generate.iter_cell(suite, ctx, "vt", 2048, 2))
    assert [s.id for s in two] == ["vt-2048-000", "vt-2048-001"]
    assert [s.context for s in two] == [s.context for s in suite.iter_cell(ctx, "vt", 2048)][:2]
    assert [s.id for s in generate.iter_cell(suite, ctx, "vt", 2048)][-1] == "vt-2048-002"


# The essay tasks the same way, RULER's prepare.py with this folder's essays.json as its
# PaulGrahamEssays.json and its `sent_tokenize` replaced by longscope's regular-expression cut
# (what longscope uses without nltk): the needles' depths, the keys, values and queries drawn, the
# reworded single-answer template and RULER's joins of multi-query questions.
ESSAY = json.loads((FIXTURES / "prepare_digests_regex.json").read_text())


@pytest.mark.parametrize("key", sorted(ESSAY))
def test_essay_samples_equal_rulers_with_the_same_sentence_cut(qwen_tokenizer, env, key) -> None:
    from types import SimpleNamespace

    from longscope.suites.ruler.data import EssayHaystack, _regex_spans

    template, task, length, seed = key.split("/")
    text = json.loads((FIXTURES / "essays.json").read_text())["text"]
    words = re.sub(r"\s+", " ", text).split(" ")
    essays = SimpleNamespace(haystack=EssayHaystack(words, "regex", splitter=_regex_spans))
    cell_env = generate.Env(int(seed), model_template=template, essays=essays, qa=env.qa)  # type: ignore[arg-type]
    expected = ESSAY[key]
    written = generate.ruler_cell(TASKS[task], cell_env, qwen_tokenizer, int(length), len(expected))
    assert [_digest(w) for w in written] == expected


def test_cwe_past_wonderwords_draws_from_rulers_english_words(qwen_tokenizer) -> None:
    from longscope.suites.ruler.data import cwe_words

    many = len(cwe_words()) + 1  # RULER: `num_words <= len(words)` uses wonderwords' list
    counter = generate.Counter(qwen_tokenizer, False)
    bare = generate.CommonWords(TASKS["cwe"], generate.Env(42), 65536, counter)
    with pytest.raises(UsageError) as caught:
        bare._example(many, 30, 3)
    assert str(caught.value) == (
        "ruler task cwe at 65536 needs more words than wonderwords has: pass words=FILE "
        "(RULER's english_words.json)"
    )
    extra = tuple(f"w{i}" for i in range(many + 5))
    cell = generate.CommonWords(TASKS["cwe"], generate.Env(42, extra_words=extra), 65536, counter)
    listed, common = cell._example(many, 30, 3)
    # RULER: random.sample(randle_words, num); the first 10 x 30, the rest x 3, shuffled.
    drawn = random.Random(42).sample(list(extra), many)
    assert common == drawn[:10]
    assert sorted(listed) == sorted(drawn[:10] * 30 + drawn[10:] * 3)
    assert listed == generate.shuffled(drawn[:10] * 30 + drawn[10:] * 3, 42)
    # Exactly wonderwords' size still comes from wonderwords.
    fits, _ = cell._example(many - 1, 1, 1)
    assert set(fits) <= set(cwe_words())


def test_a_cell_of_no_samples_is_empty(qwen_tokenizer, env) -> None:
    for task in ("niah_single_1", "vt"):
        assert list(generate.ruler_cell(TASKS[task], env, qwen_tokenizer, 2048, 0)) == []


@pytest.mark.parametrize("task,smallest", [("niah_single_1", 5), ("qa_1", 10), ("cwe", 10)])
def test_too_short_a_length_names_rulers_smallest_haystack(qwen_tokenizer, env, task, smallest):
    # RULER retries forever here (its per-sample loop never goes below one increment).
    with pytest.raises(UsageError) as caught:
        list(generate.ruler_cell(TASKS[task], env, qwen_tokenizer, 256, 1))
    assert str(caught.value) == (
        f"ruler task {task} does not fit in 256 tokens even with RULER's smallest haystack "
        f"({smallest}): use longer lengths (RULER's shortest is 4k)"
    )


def test_too_short_a_length_for_vt_is_one_line(qwen_tokenizer, env) -> None:
    with pytest.raises(UsageError) as caught:
        list(generate.ruler_cell(TASKS["vt"], env, qwen_tokenizer, 300, 1))
    assert str(caught.value) == (
        "ruler task vt does not fit in 300 tokens: use longer lengths (RULER's shortest is 4k)"
    )


def test_qa_samples_record_their_question_and_essay_tasks_need_the_essays(qwen_tokenizer, env):
    written = list(generate.ruler_cell(TASKS["qa_2"], env, qwen_tokenizer, 2048, 3))
    questions = env.qa["hotpotqa"].questions
    assert len(questions) == 2  # sample i asks question i; past the last, longscope starts over
    assert [w.meta["question_index"] for w in written] == [0, 1, 0]
    assert [w.outputs for w in written] == [questions[i].outputs for i in (0, 1, 0)]
    for w, i in zip(written, (0, 1, 0), strict=True):
        assert w.question.endswith(f"Question: {questions[i].query}")
    with pytest.raises(UsageError) as caught:
        list(generate.ruler_cell(TASKS["niah_single_2"], generate.Env(42), qwen_tokenizer, 4096, 1))
    assert str(caught.value) == "ruler task niah_single_2 needs the essays: pass essays=FILE"


# qa_1 on SQuAD-shaped articles of many paragraphs (squad_articles.json: the Python license's
# text cut into 42 paragraphs: 2 in one article, 40 in another), where RULER fills the context
# with the question's own article first (then other articles), as on SQuAD; digests of RULER's
# prepare.py on this file.
ARTICLES = json.loads((FIXTURES / "prepare_digests_articles.json").read_text())


@pytest.mark.parametrize("key", sorted(ARTICLES))
def test_qa_on_long_articles_equals_rulers_prepare(qwen_tokenizer, key) -> None:
    template, task, length, seed = key.split("/")
    squad = load_squad(FIXTURES / "squad_articles.json")
    cell_env = generate.Env(int(seed), model_template=template, qa={"squad": squad})
    expected = ARTICLES[key]
    written = generate.ruler_cell(TASKS[task], cell_env, qwen_tokenizer, int(length), len(expected))
    assert [_digest(w) for w in written] == expected


def test_missing_inputs_and_unsupported_haystacks_are_one_line(qwen_tokenizer) -> None:
    import dataclasses

    bare = generate.Env(42)
    with pytest.raises(UsageError) as caught:
        list(generate.ruler_cell(TASKS["qa_2"], bare, qwen_tokenizer, 4096, 1))
    assert str(caught.value) == "ruler task qa_2 needs its QA file: pass hotpotqa=FILE"
    vt = TASKS["vt"]
    essay_vt = dataclasses.replace(vt, args={**vt.args, "type_haystack": "essay"})
    with pytest.raises(UsageError) as caught:
        list(generate.ruler_cell(essay_vt, bare, qwen_tokenizer, 4096, 1))
    assert str(caught.value) == "ruler vt: only RULER's noise haystack is supported"
