"""RULER's suite at the boundary: the score a stored row gets, the tight fill's whole recount."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscope.suites.base import BuildContext
from longscope.suites.ruler import tight
from longscope.suites.ruler.suite import RulerSuite, _fit_whole
from longscope.suites.ruler.tasks import TASKS
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import Generation, GenerationConfig

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"


class RunSplitting:
    """Qwen2.5's tokens, except that a token right after the same token costs two: where the
    harness joins pieces (`...` runs of fwe), the whole prompt holds more tokens than its pieces'
    counts add up to, so the prompt must be cut down after a whole recount."""

    name, exact = "run-splitting", True

    def __init__(self, qwen: QwenTokenizer) -> None:
        self._qwen = qwen

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for token in self._qwen.encode(text):
            if out and abs(out[-1]) == token:
                out.append(-token)
            out.append(token)
        return out

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode([i for i in ids if i >= 0])


def _row(sample) -> dict:
    return sample.public()


@pytest.mark.parametrize(
    "metric,text,value",
    [
        ("string_match_all", "alpha and gamma", 2 / 3),
        ("string_match_part", "alpha and gamma", 1.0),
        (None, "ALPHA only", 1 / 3),  # a row without a metric: RULER's default, match_all
    ],
)
def test_score_of_a_stored_row_and_its_evidence(metric, text, value) -> None:
    suite = make_suite(RulerSuite, tasks=["niah_single_1"], lengths=[4096], samples=1)
    refs = [f"ref{i}" for i in range(8)] + ["alpha", "beta", "gamma", "delta"]
    meta = {} if metric is None else {"metric": metric}
    row = {"id": "x", "gold": ["alpha", "beta", "gamma"], "meta": meta}
    score = suite.score(row, Generation(f"  {text}\x07 ", "ok"))
    assert score.value == pytest.approx(value) == score.fraction  # out of 1
    assert score.max == 1.0
    assert score.evidence == {
        "metric": metric or "string_match_all",
        "references": ["alpha", "beta", "gamma"],
        "null": False,
    }
    # Twelve references: the evidence keeps the first ten; an empty answer is a null.
    many = suite.score({"gold": refs, "meta": meta}, Generation(" \n\t ", "ok"))
    assert many.value == 0.0
    assert many.evidence["references"] == refs[:10]
    assert many.evidence["null"] is True


def test_build_cell_is_the_tight_fills_cell(qwen_tokenizer) -> None:
    suite = make_suite(
        RulerSuite,
        tasks=["niah_single_1", "vt"],
        lengths=[2048],
        samples=2,
        fill="exact",
        random_seed=3,
    )
    ctx = BuildContext(qwen_tokenizer, "completion", GenerationConfig())
    built = suite.build_cell(suite.env(ctx), ctx, TASKS["vt"], 2048)
    lazily = list(suite.iter_cell(ctx, "vt", 2048))
    assert [s.id for s in built] == ["vt-2048-000", "vt-2048-001"]
    assert [(s.context, s.question, s.gold, s.prompt_tokens) for s in built] == [
        (s.context, s.question, s.gold, s.prompt_tokens) for s in lazily
    ]
    assert {s.meta["fill"] for s in built} == {"exact"}


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_tight_fill_recounts_whole_and_cuts_where_joins_add_tokens(qwen_tokenizer, mode) -> None:
    tokenizer = RunSplitting(qwen_tokenizer)
    suite = make_suite(
        RulerSuite, tasks=["fwe"], lengths=[2048], samples=2, fill="exact", random_seed=42
    )
    ctx = BuildContext(tokenizer, mode, GenerationConfig(), chat_overhead=9)
    budget = 2048 - TASKS["fwe"].template.tokens_to_generate
    for sample in suite.iter_cell(ctx, "fwe", 2048):
        prompt, messages = suite.template.render(sample, mode)
        text = len(tokenizer.encode(prompt or messages[0].content))
        overhead = 1 if mode == "completion" else 9
        assert sample.meta["counted"] == "whole"
        assert sample.prompt_tokens == sample.meta["achieved_length"] == text + overhead
        assert sample.meta["ruler_length"] == text + TASKS["fwe"].template.tokens_to_generate
        # Over the budget after the whole recount, words are dropped from the end until it fits
        # (the pieces' counts miss the joins' extra tokens, so it lands below, not far).
        assert budget - 200 <= text + overhead <= budget, (sample.id, text)


def _draft(pieces: list[str], removable: list[bool]) -> tight.Draft:
    return tight.Draft("Words:\n", pieces, " ", "\nWhich?", " Answer:", ["a"], 0, removable)


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_fit_whole_at_the_budget_keeps_every_piece_and_one_over_drops_one(qwen_tokenizer, mode):
    env = tight.Env(qwen_tokenizer, mode, 42)
    pieces = ["alpha", "beta", "gamma", "delta", "x"]  # " x": one token
    whole = len(qwen_tokenizer.encode(RulerSuite._prompt_text(_draft(pieces, [True] * 5), mode)))
    kept = _fit_whole(env, _draft(pieces, [False, True, True, True, True]), whole, mode)
    assert (kept.pieces, kept.predicted) == (pieces, whole)
    # One token over: the last haystack piece goes (one token), nothing more.
    cut = _fit_whole(env, _draft(pieces, [False, True, True, True, True]), whole - 1, mode)
    assert cut.pieces == pieces[:-1] and cut.removable == [False, True, True, True]
    assert cut.predicted == len(qwen_tokenizer.encode(RulerSuite._prompt_text(cut, mode)))
    assert cut.predicted <= whole - 1
    # Pieces that are not haystack (needles, the answer's words) are never dropped.
    fixed = _fit_whole(env, _draft(pieces, [True, True, False, False, False]), whole - 4, mode)
    assert fixed.pieces == ["gamma", "delta", "x"] and fixed.removable == [False] * 3
