"""fill=ruler on the edges RULER's loops and branches turn on, built to sit exactly there.

The digests of RULER's own samples never land on these edges (a prompt exactly at its length, a
document count exactly at a branch's limit): each case here is built on the edge, and what RULER's
code does there is computed in the test from RULER's own rule (`qa.py`'s `generate_input_output`,
`variable_tracking.py`'s per-sample loop, `freq_words_extraction.py`'s two loops).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from longscope.suites.ruler import generate
from longscope.suites.ruler.data import NOISE, QASet, load_squad
from longscope.suites.ruler.tasks import TASKS

FIXTURES = Path(__file__).parent / "fixtures"
# fwe at 2048 (seed 42), its budget set to this: a count of the search lands exactly on it
# (Qwen2.5's vocabulary; the test checks that it still does).
EXACT_FWE_BUDGET = 1075


@pytest.fixture(scope="module")
def articles() -> QASet:
    # 42 paragraphs: questions 0 and 1 in an article of 2 paragraphs, the others in one of 40.
    return load_squad(FIXTURES / "squad_articles.json")


def rulers_documents(data: QASet, index: int, n: int, rng: random.Random, seed: int) -> list[str]:
    """RULER's qa.py `generate_input_output(index, n)`: the documents, in its order."""
    q = data.questions[index]
    docs, more = list(q.context), list(q.more_context)
    if n < len(data.documents):
        if (n - len(docs)) > len(more):
            addition = [i for i, _ in enumerate(data.documents) if i not in docs + more]
            chosen = docs + more + rng.sample(addition, max(0, n - len(docs) - len(more)))
        else:
            chosen = docs + rng.sample(more, n - len(docs))
        texts = [data.documents[i] for i in chosen]
    else:
        repeats = (n + len(data.documents) - 1) // len(data.documents)
        texts = list(data.documents * repeats)[:n]
    random.Random(seed).shuffle(texts)
    return texts


@pytest.mark.parametrize(
    "index,n",
    [
        (0, 1),  # one document: the question's own (n + its count would pass the other branch)
        (0, 2),  # exactly the article's other paragraph too: drawn, not taken as it is
        (2, 40),  # exactly its 39 other paragraphs: drawn in RULER's random order
        (2, 41),  # one more: all of the article, then one drawn from the rest
        (2, 42),  # exactly every document: taken in order, no draw
        (2, 43),  # past them: repeated
    ],
)
def test_qa_documents_at_rulers_branch_edges(qwen_tokenizer, articles, index, n) -> None:
    env = generate.Env(42, qa={"squad": articles})
    cell = generate.QA(TASKS["qa_1"], env, 4096, generate.Counter(qwen_tokenizer, True))
    rng = random.Random()
    rng.setstate(cell.rng.getstate())
    prompt = cell.make_for(index, n)
    expected = rulers_documents(articles, index, n, rng, 42)
    assert prompt.pieces == [f"Document {i + 1}:\n{d}" for i, d in enumerate(expected)]
    assert cell.rng.getstate() == rng.getstate()  # the same draws: the next sample is RULER's too


def _vt_cell(tokenizer, length: int, size: int) -> generate.VariableTracking:
    """vt at `length` whose haystack search is held at `size` (the per-sample loop on its own)."""
    cell = generate.VariableTracking(
        TASKS["vt"], generate.Env(42), length, generate.Counter(tokenizer, True)
    )
    cell.search = lambda: size  # type: ignore[method-assign]
    return cell


def test_vt_sample_exactly_at_its_length_is_kept_and_one_token_over_shrinks(qwen_tokenizer):
    size = 150
    (first, total), *_ = list(_vt_cell(qwen_tokenizer, 8192, size).cells(1))
    assert first.pieces.count(NOISE) == size and total < 8192
    # RULER keeps a prompt whose length is exactly max_seq_length (`assert length <= max`).
    (same, at_edge), *_ = list(_vt_cell(qwen_tokenizer, total, size).cells(1))
    assert (same.text(), at_edge) == (first.text(), total)
    # One token less: RULER's bare `except` takes one increment (10 at 4K and more) off and draws
    # that sample again.
    (shrunk, fits), *_ = list(_vt_cell(qwen_tokenizer, total - 1, size).cells(1))
    assert shrunk.pieces.count(NOISE) == size - 10 and fits <= total - 1
    assert shrunk.answers != first.answers  # drawn again: new names


def _fwe_cell(tokenizer, max_len: int) -> generate.FreqWords:
    cell = generate.FreqWords(
        TASKS["fwe"], generate.Env(42), 2048, generate.Counter(tokenizer, True)
    )
    cell.max_len = max_len
    return cell


def test_fwe_prompt_exactly_at_its_budget_keeps_its_word_count(qwen_tokenizer) -> None:
    # freq_words_extraction.py: `while tokens > max_len: num -= step` keeps a prompt of exactly
    # max_len tokens.
    cell = _fwe_cell(qwen_tokenizer, 10**6)
    state = cell.rng.getstate()
    prompt, num = cell.generate(300)
    exact = cell.tokens(prompt)
    assert num == 300  # fits at once under a budget this large
    cell = _fwe_cell(qwen_tokenizer, exact)
    cell.rng.setstate(state)
    again, kept = cell.generate(300)
    assert (kept, again.text()) == (300, prompt.text())
    cell = _fwe_cell(qwen_tokenizer, exact - 1)
    cell.rng.setstate(state)
    assert cell.generate(300)[1] == 300 - cell.step


def test_fwe_search_stops_at_a_count_exactly_at_its_budget(qwen_tokenizer) -> None:
    # freq_words_extraction.py's search: `num = max_len // 6`, `while tokens < max_len: num +=
    # step`, then one step back. At this budget a count's prompt is exactly max_len tokens.
    max_len = EXACT_FWE_BUDGET
    cell = _fwe_cell(qwen_tokenizer, max_len)
    state = cell.rng.getstate()
    vocab = _vocab(cell)
    num, counts = max_len // 6, []
    while (counts or [0])[-1] < max_len:
        counts.append(cell.tokens(cell._text(vocab, num + len(counts) * cell.step)))
    assert counts[-1] == max_len  # the edge this case is built on
    cell.rng.setstate(state)
    prompt, found = cell.generate(-1)
    assert found == num + (len(counts) - 2) * cell.step
    assert cell.tokens(prompt) == counts[-2] < max_len


def _vocab(cell: generate.FreqWords) -> list[str]:
    """The vocabulary `generate` draws first (RULER's order), from the cell's current state."""
    import string

    rng = cell.rng
    vocab = ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(cell.vocab_size)]
    while len(set(vocab)) < cell.vocab_size:
        vocab.append("".join(rng.choices(string.ascii_lowercase, k=6)))
    vocab = generate.shuffled(sorted(set(vocab)), cell.env.seed)
    vocab[0] = "..."
    return vocab
