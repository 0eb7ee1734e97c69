"""The tight fill (`fill=exact`) at its boundary: every prompt is the largest that fits.

RULER grows each prompt to the largest haystack whose tokens plus the answer's fit the length
(NVIDIA/RULER scripts/data/synthetic/*.py: a search over the haystack size, then `while length +
tokens_to_generate > max_seq_length: shrink`). The tight fill does the same per sample from
counted pieces. These tests pin, with Qwen2.5's tokenizer: the prompt's real token count is the
count reported and fits the budget; at its own count the same prompt is built (it fits, inclusive);
and the next larger haystack costs more than the budget (one more unit would not fit).
"""

from __future__ import annotations

import math
import random
import re
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from longscope.suites.base import BuildContext
from longscope.suites.ruler import tight
from longscope.suites.ruler.data import NEEDLE, NOISE, QASet, Question, key_words
from longscope.suites.ruler.suite import RulerSuite
from longscope.suites.ruler.tasks import TASKS, TEMPLATES
from longscope.text.tokenizers import QwenTokenizer
from longscope.types import GenerationConfig

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def qwen() -> QwenTokenizer:
    return QwenTokenizer()


def _env(tokenizer, mode: str = "completion", template: str = "base", seed: int = 42) -> tight.Env:
    suite = RulerSuite(
        tasks=list(TASKS), lengths=[4096], seed=seed, fill="exact", model_template=template, **DATA
    )
    return suite.env(BuildContext(tokenizer, mode, GenerationConfig()))


def _draft(
    env: tight.Env, task: str, budget: int, length: int = 4096, key: str = "s"
) -> tight.Draft:
    rng = random.Random(f"{key}:{task}")
    return RulerSuite._draft(TASKS[task], rng, env, budget, length, 0)


def _prompt(env: tight.Env, d: tight.Draft, pieces: list[str] | None = None) -> str:
    context = d.sep.join(d.pieces if pieces is None else pieces)
    prefix = d.answer_prefix if env.mode == "completion" else ""
    return d.head + context + d.question + prefix


def _count(env: tight.Env, text: str) -> int:
    return len(env.tokenizer.encode(text))


def _next_size(env, task: str, budget: int, length: int, span: int = 600) -> int:
    """Return the smallest budget above `budget` whose fill differs from the fill at `budget`."""
    base = _draft(env, task, budget, length).predicted
    lo, hi = budget, budget + span
    assert _draft(env, task, hi, length).predicted != base, "no larger fill within the span"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _draft(env, task, mid, length).predicted == base:
            lo = mid
        else:
            hi = mid
    return hi


GROWN = [
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multivalue",
    "niah_multikey_2",
    "niah_multikey_3",
    "vt",
    "cwe",
    "fwe",
]


@pytest.mark.parametrize("mode", ["completion", "chat"])
@pytest.mark.parametrize("task", GROWN)
def test_the_prompt_is_the_largest_that_fits(qwen, task: str, mode: str) -> None:
    env = _env(qwen, mode)
    length = 2048 if task == "cwe" else 4096
    for budget in (1500, 1777):
        d = _draft(env, task, budget, length)
        # The count reported is the prompt's real count, and it fits.
        assert d.predicted == _count(env, _prompt(env, d)) <= budget, (task, budget)
        # At exactly its own size a prompt as large is built: the fit is inclusive.
        again = _draft(env, task, d.predicted, length)
        assert (len(again.pieces), again.predicted) == (len(d.pieces), d.predicted)
        # One token less and the haystack shrinks.
        assert _draft(env, task, d.predicted - 1, length).predicted < d.predicted
        # The next larger haystack fills its own budget exactly, which is above this one: one
        # more unit would not have fit.
        step = _next_size(env, task, budget, length)
        bigger = _draft(env, task, step, length)
        assert bigger.predicted == _count(env, _prompt(env, bigger)) == step > budget
        assert len(bigger.pieces) >= len(d.pieces)


class _CharTokenizer:
    """One token per character: every count adds up, so every counter leads with its separator."""

    name, exact = "chars", True

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


class _RunMergingTokenizer:
    """Qwen's tokens, except that a token repeated right after itself merges with it (as in
    test_ruler_fit): pieces' counts no longer add up to the whole prompt's."""

    name, exact = "run-merging", True

    def __init__(self) -> None:
        self._qwen = QwenTokenizer()

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for token in self._qwen.encode(text):
            if out and out[-1] == token:
                out[-1] = -token - 1
            else:
                out.append(token)
        return out

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode([i if i >= 0 else -i - 1 for i in ids])


# vt is left out: its one-shot example gets 500 tokens, too few characters for its noise.
@pytest.mark.parametrize("task", [t for t in GROWN if t != "vt"])
def test_with_counts_that_add_up_every_separator_leads(task: str) -> None:
    env = _env(_CharTokenizer())
    length = 2048 if task == "cwe" else 4096
    d = _draft(env, task, 1500, length)
    assert env.counter(d.sep).mode == "lead"
    assert d.predicted == len(_prompt(env, d)) <= 1500
    step = _next_size(env, task, 1500, length, span=300)
    assert _draft(env, task, step, length).predicted == step


def test_qwen_counters_lead_or_trail_by_separator(qwen) -> None:
    env = _env(qwen)
    assert [env.counter(sep).mode for sep in ("\n", " ", "\n\n")] == ["trail", "lead", "trail"]


def test_fit_pieces_drops_the_last_haystack_piece_until_the_prompt_fits(qwen) -> None:
    env = _env(qwen)
    counter = env.counter("\n")
    head, tail = "Read this.\n", "\nWhat is kept?"
    pieces = [NOISE, "KEEP one.", NOISE, NOISE, "KEEP two.", NOISE]
    removable = [p == NOISE for p in pieces]
    mids = sum(counter.mid(p) for p in pieces)

    def whole(kept: list[str]) -> int:
        return len(qwen.encode(head + "\n".join(kept) + tail))

    full = whole(pieces)
    got, flags = list(pieces), list(removable)
    assert tight._fit_pieces(counter, head, tail, got, flags, mids, full) == full
    assert got == pieces and flags == removable  # at exactly its count nothing is dropped
    got, flags = list(pieces), list(removable)
    # One token short: the last haystack piece goes, the fixed ones stay where they were.
    want = [NOISE, "KEEP one.", NOISE, NOISE, "KEEP two."]
    assert tight._fit_pieces(counter, head, tail, got, flags, mids, full - 1) == whole(want)
    assert (got, flags) == (want, [True, False, True, True, False])
    fixed = whole(["KEEP one.", "KEEP two."])
    got, flags = list(pieces), list(removable)
    assert tight._fit_pieces(counter, head, tail, got, flags, mids, fixed) == fixed
    assert (got, flags) == (["KEEP one.", "KEEP two."], [False, False])
    with pytest.raises(ValueError) as caught:
        tight._fit_pieces(counter, head, tail, list(pieces), list(removable), mids, fixed - 1)
    assert (
        str(caught.value) == f"its fixed parts alone need {fixed} tokens, over the {fixed - 1} left"
    )


def test_room_is_what_the_text_around_the_context_costs_beyond_the_pieces(qwen) -> None:
    counter = _env(qwen).counter("\n")
    head, tail, unit = "Head:\n", "\nTail", NOISE
    # A context of three units: head + u + u + u + tail = room + 3 mids.
    three = len(qwen.encode(head + "\n".join([unit] * 3) + tail))
    assert tight._room(counter, head, tail, unit) == three - 3 * counter.mid(unit)


def _is_pair(word: str, adjs, nouns) -> bool:
    """Whether `word` is `adjective-noun` (either may hold a hyphen itself)."""
    return any(word[:i] in adjs and word[i + 1 :] in nouns for i, c in enumerate(word) if c == "-")


def test_random_values_are_rulers_kinds() -> None:
    rng = random.Random(3)
    numbers = [tight.random_value("numbers", rng) for _ in range(300)]
    assert all(re.fullmatch(r"[1-9]\d{6}", n) for n in numbers)
    adjs, nouns = key_words()
    words = [tight.random_value("words", rng) for _ in range(50)]
    assert all(_is_pair(w, adjs, nouns) for w in words)
    ids = [tight.random_value("uuids", rng) for _ in range(50)]
    assert all(UUID4.fullmatch(i) and uuid.UUID(i).version == 4 for i in ids)
    assert len(set(ids)) == 50
    with pytest.raises(ValueError) as caught:
        tight.random_value("colours", rng)
    assert str(caught.value) == "unknown needle type 'colours'"
    # The same stream gives the same values (a sample is reproducible from its seed).
    again = random.Random(3)
    assert [tight.random_value("numbers", again) for _ in range(300)] == numbers


def test_bulk_uuids_are_the_generators_bytes_as_version_4() -> None:
    got = tight.bulk_uuids(np.random.default_rng(7), 40)
    raw = np.random.default_rng(7).integers(0, 256, (40, 16), dtype=np.uint8)
    assert got == [str(uuid.UUID(bytes=bytes(row.tolist()), version=4)) for row in raw]
    assert all(UUID4.fullmatch(u) for u in got) and len(set(got)) == 40


def test_bulk_values_by_kind() -> None:
    gen, rng = np.random.default_rng(5), random.Random(5)
    numbers = tight._bulk_values("numbers", rng, gen, 500)
    assert numbers == [str(v) for v in np.random.default_rng(5).integers(10**6, 10**7, 500)]
    assert all(re.fullmatch(r"[1-9]\d{6}", n) for n in numbers)
    ids = tight._bulk_values("uuids", rng, np.random.default_rng(6), 3)
    assert ids == tight.bulk_uuids(np.random.default_rng(6), 3)
    words = tight._bulk_values("words", random.Random(8), gen, 20)
    replay = random.Random(8)
    assert words == [tight.random_value("words", replay) for _ in range(20)]


def test_fixed_permutation_is_one_order_per_seed_and_size() -> None:
    assert tight.fixed_permutation(42, 30) == np.random.default_rng(42).permutation(30).tolist()
    assert tight.fixed_permutation(42, 30) != tight.fixed_permutation(43, 30)
    assert tight._numbered(["a", "b", "c"]) == "1. a 2. b 3. c"


def test_zeta_matches_known_values() -> None:
    assert tight.zeta(2.0) == math.pi**2 / 6
    known = {1.5: 2.612375348685488, 2.5: 1.341487257250917, 3.0: 1.2020569031595942}
    for alpha, value in known.items():
        assert tight.zeta(alpha) == pytest.approx(value, rel=1e-13, abs=0), alpha
