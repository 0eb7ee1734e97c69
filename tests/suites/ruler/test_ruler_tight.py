"""The tight fill (`fill=exact`) at its boundary: every prompt is the largest that fits.

RULER grows each prompt to the largest haystack whose tokens plus the answer's fit the length
(NVIDIA/RULER scripts/data/synthetic/*.py: a search over the haystack size, then `while length +
tokens_to_generate > max_seq_length: shrink`). The tight fill does the same per sample from
counted pieces. These tests pin, with Qwen2.5's tokenizer: the prompt's real token count is the
count reported and fits the budget; at its own count the same prompt is built (it fits, inclusive);
and the next larger haystack costs more than the budget (one more unit would not fit).
"""

from __future__ import annotations

import functools
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
from tests.suites.ruler.helpers import RunMergingTokenizer

from ...factories import make_suite

FIXTURES = Path(__file__).parent / "fixtures"
DATA = {
    "essays": str(FIXTURES / "essays.json"),
    "squad": str(FIXTURES / "squad.json"),
    "hotpotqa": str(FIXTURES / "hotpotqa.json"),
}
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@functools.cache
def _qwen() -> QwenTokenizer:
    return QwenTokenizer()


@pytest.fixture
def qwen() -> QwenTokenizer:
    return _qwen()  # loaded once per process (the mutation screen's forks share it)


def _env(tokenizer, mode: str = "completion", template: str = "base", seed: int = 42) -> tight.Env:
    suite = make_suite(
        RulerSuite,
        tasks=list(TASKS),
        lengths=[4096],
        random_seed=seed,
        fill="exact",
        model_template=template,
        **DATA,
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


def _next_size(env, task: str, budget: int, length: int, span: int = 160) -> int:
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


def _whole_list_size(d: tight.Draft) -> int:
    """Entries of the whole word list the draft's meta names (cwe: 10 x 6 + others x 1 under 4K
    at 2048; fwe: the zeta law's counts)."""
    if "distinct_words" in d.meta:
        return 10 * 6 + (d.meta["distinct_words"] - 10) * 1
    law = [int(d.meta["num_words"] * k**-2.0 / (math.pi**2 / 6)) for k in range(1, 1000)]
    return sum(law[: law.index(0)])


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
    for budget in [1500 if mode == "completion" else 1777]:
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
        if task in ("cwe", "fwe"):
            # Word lists grow a word at a time, whole: the next two sizes fill exactly too, and
            # no list had entries cut off its end.
            step2 = _next_size(env, task, step, length)
            assert _draft(env, task, step2, length).predicted == step2
            for draft in (d, bigger):
                assert len(draft.pieces) == _whole_list_size(draft)


class _CharTokenizer:
    """One token per character: every count adds up, so every counter leads with its separator."""

    name, exact = "chars", True

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


@pytest.mark.parametrize("task", [t for t in GROWN if t != "vt"])
def test_with_counts_that_add_up_every_separator_leads(task: str) -> None:
    env = _env(_CharTokenizer())
    length = 2048 if task == "cwe" else 4096
    d = _draft(env, task, 1500, length)
    assert env.counter(d.sep).mode == "lead"
    assert d.predicted == len(_prompt(env, d)) <= 1500
    step = _next_size(env, task, 1500, length)
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


def _needles(d: tight.Draft) -> list[str]:
    return [p for p in d.pieces if p.startswith("One of the special magic")]


def test_a_single_needle_is_asked_for_in_the_singular(qwen) -> None:
    env = _env(qwen)
    d = _draft(env, "niah_single_1", 1200)
    key = d.meta["keys"][0]
    assert d.meta == {"keys": [key], "queries": [key], "haystack": "noise"}
    assert d.head == (
        "A special magic number is hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the number afterwards.\n"
    )
    assert d.question == (
        f"\nWhat is the special magic number for {key} mentioned in the provided text?"
    )
    assert (
        d.answer_prefix == f" The special magic number for {key} mentioned in the provided text is"
    )
    (needle,) = _needles(d)
    assert needle == f"One of the special magic numbers for {key} is: {d.answers[0]}."
    assert re.fullmatch(r"[1-9]\d{6}", d.answers[0]) and d.sep == "\n"
    assert set(d.pieces) == {NOISE, needle}
    assert d.removable == [p == NOISE for p in d.pieces]


def test_several_queries_are_listed_with_and(qwen) -> None:
    env = _env(qwen)
    d = _draft(env, "niah_multiquery", 1500)
    keys, queries = d.meta["keys"], d.meta["queries"]
    assert len(keys) == len(set(queries)) == 4 and set(queries) == set(keys)
    query = f"{queries[0]}, {queries[1]}, {queries[2]}, and {queries[3]}"
    assert d.head.startswith("Some special magic numbers are hidden within the following text.")
    assert d.question == (
        f"\nWhat are all the special magic numbers for {query} mentioned in the provided text?"
    )
    assert d.answer_prefix == (
        f" The special magic numbers for {query} mentioned in the provided text are"
    )
    needles = _needles(d)
    assert len(needles) == 4 and d.sep == " " and d.meta["haystack"] == "essay"
    # Each query's value is the one its needle holds, in the order of the queries.
    value = {n.split(" for ")[1].split(" is: ")[0]: n.split(" is: ")[1][:-1] for n in needles}
    assert d.answers == [value[q] for q in queries]
    assert [not r for r in d.removable].count(True) >= 4


def test_several_values_of_one_key_are_shuffled_by_the_seed(qwen) -> None:
    for seed in (42, 7):
        env = _env(qwen, seed=seed)
        d = _draft(env, "niah_multivalue", 1500)
        (key,) = d.meta["keys"]
        drawn = [f"One of the special magic numbers for {key} is: {v}." for v in d.answers]
        random.Random(seed).shuffle(drawn)  # RULER: random.Random(seed).shuffle(needles)
        assert _needles(d) == drawn, seed


def test_a_sample_is_the_same_every_time_it_is_built(qwen) -> None:
    for task in ["niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "vt", "cwe", "fwe"]:
        length = 2048 if task == "cwe" else 4096
        first = _draft(_env(qwen), task, 1300, length)
        again = _draft(_env(qwen), task, 1300, length)
        assert (first.head, first.pieces, first.answers) == (
            again.head,
            again.pieces,
            again.answers,
        )
    one, two = (_draft(_env(qwen), "qa_2", 1300) for _ in range(2))
    assert one.pieces == two.pieces


def test_a_needle_haystack_is_made_of_other_needles(qwen) -> None:
    env = _env(qwen)
    d = _draft(env, "niah_multikey_2", 1200)
    (key,) = d.meta["keys"]
    counter = env.counter("\n")
    parts = counter.helpers[("word-number", "numbers")]
    assert parts.exact  # Qwen's needle counts add up from their parts: the fast path is taken
    adjs, nouns = key_words()
    pattern = re.compile(r"One of the special magic numbers for (.+) is: ([1-9]\d{6})\.")
    matches = [pattern.fullmatch(p) for p in d.pieces]
    assert all(matches) and len(d.pieces) > 30
    assert all(_is_pair(m.group(1), adjs, nouns) for m in matches)
    assert [m.group(1) == key for m in matches].count(True) >= 1
    assert d.removable.count(False) == 1
    ids = _draft(env, "niah_multikey_3", 1200)
    pattern = re.compile(
        rf"One of the special magic uuids for ({UUID4.pattern}) is: ({UUID4.pattern})\."
    )
    assert all(pattern.fullmatch(p) for p in ids.pieces) and len(ids.pieces) > 8


def test_word_number_needles_cost_what_they_count(qwen) -> None:
    counter = _env(qwen).counter("\n")
    parts = tight.WordNumberNeedles(counter, "numbers")
    a, n, v = parts.draw(np.random.default_rng(3), 300)
    assert a.min() >= 0 and n.min() >= 0 and v.min() >= 10**6 and v.max() < 10**7
    assert a.max() >= len(parts.adjs) - 30 and n.max() >= len(parts.nouns) - 30
    texts = parts.texts(a, n, v)
    assert texts[0] == NEEDLE.format(
        type_needle_v="numbers", key=f"{parts.adjs[a[0]]}-{parts.nouns[n[0]]}", value=v[0]
    )
    assert parts.costs(a, n, v).tolist() == [counter.mid(t) for t in texts]
    assert parts.exact


def test_noise_puts_inserts_where_rulers_insertion_does(qwen) -> None:
    counter = _env(qwen).counter("\n")
    inserts = ["A first.", "B second.", "C third.", "D fourth."]
    mids = [counter.mid(i) for i in inserts]
    pieces, removable, filler = tight._noise(
        random.Random(9), counter, inserts, mids, 800, "H\n", "\nT"
    )
    n = len(pieces) - 4
    want = [NOISE] * n
    for index, element in zip(
        sorted(random.Random(9).sample(range(n), 4), reverse=True), inserts, strict=True
    ):
        want.insert(index, element)
    assert pieces == want and removable == [p == NOISE for p in want]
    assert filler == n * counter.mid(NOISE)
    # The noise alone fills the budget: it fits as counted, one more block would not.
    total = counter.total("H\n", pieces, filler + sum(mids), "\nT")
    assert total == len(qwen.encode("H\n" + "\n".join(pieces) + "\nT")) <= 800
    assert total + counter.mid(NOISE) > 800
    got, flags, used = tight._insert(random.Random(9), [f"S{i}." for i in range(n)], inserts, 77)
    want = [f"S{i}." for i in range(n)]
    for index, element in zip(
        sorted(random.Random(9).sample(range(n), 4), reverse=True), inserts, strict=True
    ):
        want.insert(index, element)
    assert (got, flags, used) == (want, [p not in inserts for p in want], 77)
    # An empty haystack still takes its one insert.
    assert tight._insert(random.Random(1), [], ["X."], 0) == (["X."], [False], 0)


def test_variable_tracking_hides_one_chain_after_a_one_shot_example(qwen) -> None:
    env = _env(qwen, template="meta-chat")
    d = _draft(env, "vt", 1500)
    value = d.meta["value"]
    names = d.answers
    assert re.fullmatch(r"\d{5}", value) and 10000 <= int(value) <= 99998
    assert len(names) == len(set(names)) == 5
    assert all(re.fullmatch(r"[A-Z]{5}", n) for n in names)
    chain = [f"VAR {names[0]} = {value}"]
    chain += [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(4)]
    assert [p for p in d.pieces if p != NOISE] == chain  # the links in order, among noise
    assert d.removable == [p == NOISE for p in d.pieces]
    assert d.question == (
        f"\nQuestion: Find all variables that are assigned the value {value} in the text above."
        " [/INST]"
    )
    assert d.answer_prefix == (
        " Answer: According to the chain(s) of variable assignment in the text above, 5 variables"
        f" are assigned the value {value}, they are: "
    )
    # The example comes right after the model template's opening, then the task's own text.
    task_head = (
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
    )
    assert d.head.startswith("[INST] " + task_head) and d.head.endswith("\n" + task_head)
    example = d.head[len("[INST] ") : -len(task_head) - 1]
    assert example.endswith("\n") and not example.startswith("[INST]")
    links = re.findall(r"^VAR ([A-Z]{3}) = (VAR [A-Z]{3} |\d{5})$", example, re.M)
    ex_names = [n for n, _ in links]
    ex_value = links[0][1]
    assert len(links) == 5 and len(set(ex_names)) == 5 and re.fullmatch(r"\d{5}", ex_value)
    assert [v for _, v in links[1:]] == [f"VAR {n} " for n in ex_names[:-1]]
    assert example.endswith(
        f"Question: Find all variables that are assigned the value {ex_value} in the text above."
        " Answer: According to the chain(s) of variable assignment in the text above, 5 variables"
        f" are assigned the value {ex_value}, they are:  {' '.join(ex_names)}\n"
    )
    assert "12345" not in example and not set(ex_names) & set(names)
    # The example's prompt fills its 500 tokens: one more noise block would not fit.
    body = example[: example.index("Question:")] + "Question:"
    shot = len(qwen.encode(body))
    assert 500 - env.counter("\n").mid(NOISE) < shot + 40 <= 500 + 40


def test_variable_tracking_names_a_budget_too_small_for_its_chain(qwen) -> None:
    env = _env(qwen)
    fits = [b for b in range(700, 900) if _fits(env, "vt", b)]
    smallest = fits[0]
    assert all(_fits(env, "vt", b) for b in range(smallest, smallest + 40))
    with pytest.raises(ValueError) as caught:
        _draft(env, "vt", smallest - 1)
    assert str(caught.value) == (
        "the one-shot example and the chain leave room for 4 noise blocks, "
        "fewer than the chain's 5 links"
    )
    assert _draft(env, "vt", smallest).pieces.count(NOISE) == 5


def _fits(env, task: str, budget: int) -> bool:
    try:
        _draft(env, task, budget)
    except ValueError:
        return False
    return True


def _listed(pieces: list[str]) -> list[str]:
    """The words of a numbered list `1. w`, `2. w`, ..., checking the numbers run from 1."""
    numbers, words = zip(*(p.split(". ", 1) for p in pieces), strict=True)
    assert list(numbers) == [str(i + 1) for i in range(len(pieces))]
    return list(words)


@pytest.mark.parametrize(
    ("length", "example", "repeats"), [(4095, (20, 3, 1), (6, 1)), (4096, (40, 10, 3), (30, 3))]
)
def test_common_words_repeat_ten_words_more_than_the_others(qwen, length, example, repeats) -> None:
    env = _env(qwen, seed=11)
    d = _draft(env, "cwe", 2600 if length < 4096 else 3600, length)
    spec = TEMPLATES["common_words_extraction"]
    words = _listed(d.pieces)
    counts = Counter(words)
    common = d.answers
    assert len(common) == 10 and all(counts[w] == repeats[0] for w in common)
    assert {counts[w] for w in counts if w not in common} == {repeats[1]}
    assert len(counts) == d.meta["distinct_words"] > 10
    assert d.meta["word_list_exhausted"] is False
    # RULER's fixed shuffle: entry i is entry perm[i] of common x 6 (or 30) + others.
    perm = np.random.default_rng(11).permutation(len(words)).tolist()
    assert all(words[i] == common[j % 10] for i, j in enumerate(perm) if j < 10 * repeats[0])
    # The one-shot example before the task: its own list, answer and the task text again.
    task = spec.template.split("{context}")[0]
    assert d.head.startswith(task) and d.head.endswith("\n" + task)
    shot = d.head[len(task) : -len(task) - 1]
    after = spec.template.split("{context}")[1].format(query="")
    shot_list, answer = shot.split(after + spec.answer_prefix)
    shot_words = _listed(re.findall(r"\d+\. \S+", shot_list))
    shot_common = _listed(re.findall(r"\d+\. \S+", answer))
    assert answer.startswith(" 1. ")
    shot_counts = Counter(shot_words)
    assert len(shot_counts) == example[0] and len(shot_common) == 10
    assert all(shot_counts[w] == example[1] for w in shot_common)
    assert {shot_counts[w] for w in shot_counts if w not in shot_common} == {example[2]}
    assert d.question == after
    assert d.answer_prefix == spec.answer_prefix


def test_common_words_say_when_the_word_list_runs_out(qwen) -> None:
    env = _env(qwen)
    source = tuple(f"w{i}" for i in range(40))
    env.extra_words = source
    d = _draft(env, "cwe", 1000, 2048)
    assert d.meta["distinct_words"] == 40  # every word, and room to spare
    counter = env.counter(" ")
    # What the search counts: the text around the list apart, each entry's number and word.
    around = counter.count(d.head) + counter.count(d.question + d.answer_prefix)
    listed = sum(counter.mid(f"{i + 1}.") + counter.mid(w) for i, w in enumerate(_listed(d.pieces)))
    for budget, exhausted in ((around + listed + 64, False), (around + listed + 65, True)):
        got = _draft(env, "cwe", budget, 2048)
        assert (got.meta["distinct_words"], got.meta["word_list_exhausted"]) == (40, exhausted)


def test_common_words_under_their_minimum_keep_a_prefix_of_the_list(qwen) -> None:
    env = _env(qwen)
    full = _draft(env, "cwe", 10**5, 4096)
    assert full.meta["distinct_words"] > 100
    d = _draft(env, "cwe", 3000, 4096)  # less than ten words x 30 need
    assert d.meta["distinct_words"] == 10
    assert d.predicted == _count(env, _prompt(env, d)) <= 3000
    assert len(_listed(d.pieces)) < 300 and d.removable == [True] * len(d.pieces)
    assert _count(env, _prompt(env, d, [*d.pieces, "999. x"])) > 3000


def test_frequent_words_follow_the_zeta_law(qwen) -> None:
    env = _env(qwen, seed=5)
    d = _draft(env, "fwe", 2500, 4096)
    num = d.meta["num_words"]
    assert isinstance(num, int)
    counts = Counter(d.pieces)
    ranked = [w for w, _ in counts.most_common()]
    assert ranked[0] == "..." and d.answers == ranked[1:4]
    assert all(re.fullmatch(r"[a-z]{6}", w) for w in ranked[1:])
    assert {c for w in ranked[1:] for c in w} == set("abcdefghijklmnopqrstuvwxyz")
    law = [int(num * k**-2.0 / (math.pi**2 / 6)) for k in range(1, 1000)]
    law = law[: law.index(0)]
    assert sorted(counts.values(), reverse=True) == law
    assert [counts[w] for w in ["...", *d.answers]] == law[:4]
    # RULER's fixed order: the ranked list (rank 1 first, each word its count times) shuffled.
    perm = np.random.default_rng(5).permutation(len(d.pieces)).tolist()
    listed = [""] * len(d.pieces)
    for i, j in enumerate(perm):
        listed[j] = d.pieces[i]
    runs = [len(list(group)) for _, group in __import__("itertools").groupby(listed)]
    assert runs == law and listed[0] == "..." and listed[law[0]] == d.answers[0]
    assert d.question.startswith("\nQuestion: Do not provide any explanation.")
    assert d.head.endswith("Find the three most frequently appeared coded words. ")


def test_frequent_words_draw_from_length_over_50_words(qwen) -> None:
    env = _env(qwen)
    for length in (600, 649):
        d = RulerSuite._draft(TASKS["fwe"], random.Random(1), env, 3000, length, 0)
        assert len(set(d.pieces)) == (length - 50) // 50 == 11
        assert all(re.fullmatch(r"[a-z]{6}", w) for w in set(d.pieces) - {"..."})


def _documents(d: tight.Draft) -> list[str]:
    """The documents of a QA context in order, checking they are numbered from 1."""
    out = []
    for i, piece in enumerate(d.pieces):
        label, text = piece.split("\n", 1)
        assert label == f"Document {i + 1}:"
        out.append(text)
    return out


def _doc_cost(counter, i: int, text: str) -> int:
    """A document's tokens with its label, as the counter of blank-line pieces counts it."""
    return counter.count(f"Document {i}:\n") + counter.count(text + "\n\n")


def test_qa_fills_with_documents_until_the_next_would_not_fit(qwen) -> None:
    env = _env(qwen)
    data = env.qa["squad"]
    for budget in (700, 1300):
        d = _draft(env, "qa_1", budget)
        question = data.questions[0]
        assert d.meta == {"question_index": 0, "documents": len(d.pieces)}
        assert d.answers == list(question.outputs)
        assert d.question.endswith(f"Question: {question.query}") and d.answer_prefix == " Answer:"
        docs = _documents(d)
        gold = data.documents[question.context[0]]
        assert d.removable == [t != gold for t in docs] and gold in docs
        # All five documents are in, then RULER's cycle through them in their order: the next
        # document of the cycle, with its label, would overrun the budget less 8 tokens.
        assert set(docs) == set(data.documents)
        cycled = len(docs) - len(data.documents)
        following = data.documents[cycled % len(data.documents)]
        counter = env.counter("\n\n")
        around = counter.count(d.head) + counter.count(d.question + d.answer_prefix)

        used = sum(_doc_cost(counter, i + 1, t) for i, t in enumerate(docs))
        following_cost = _doc_cost(counter, len(docs) + 1, following)
        assert around + used + 8 <= budget < around + used + following_cost + 8
        assert d.predicted == _count(env, _prompt(env, d)) <= budget
        # With exactly the next document's tokens more, it is taken.
        exact = around + used + following_cost + 8
        assert len(_documents(_draft(env, "qa_1", exact))) == len(docs) + 1


def test_qa_documents_are_shuffled_by_the_seed(qwen) -> None:
    orders = {seed: _documents(_draft(_env(qwen, seed=seed), "qa_2", 900)) for seed in (1, 2)}
    assert orders[1] != orders[2] and Counter(orders[1]) == Counter(orders[2])


def _qa_env(qwen, sizes: list[int], more: tuple[int, ...]) -> tight.Env:
    env = _env(qwen)
    documents = tuple(f"D{i} " + "word " * n for i, n in enumerate(sizes))
    question = Question("Which?", ("gold",), (0,), more)
    env.qa["squad"] = QASet((question,), documents, "synthetic")
    return env


def test_qa_gives_up_after_fifty_documents_that_do_not_fit(qwen) -> None:
    # 51 distractors of the same article, drawn first in a shuffled order: all too long but one
    # short. It is taken after 49 misses, not after 50.
    order = list(range(1, 52))
    random.Random("s:qa_1").shuffle(order)  # the sample's first draw
    for misses, short_in in ((50, False), (49, True)):
        sizes = [5] + [900] * 51
        sizes[order[misses]] = 3
        env = _qa_env(qwen, sizes, tuple(range(1, 52)))
        d = _draft(env, "qa_1", 900)
        docs = _documents(d)
        assert docs[0] == "D0 " + "word " * 5 or "D0 " + "word " * 5 in docs
        assert (f"D{order[misses]} " + "word " * 3 in docs) == short_in, misses
        assert len(docs) == 1 + short_in
        assert d.removable == [not t.startswith("D0 ") for t in docs]


def test_qa_draws_random_documents_once_the_articles_run_out(qwen) -> None:
    sizes = [5] + [20] * 30
    env = _qa_env(qwen, sizes, (1, 2))
    d = _draft(env, "qa_1", 400)
    docs = _documents(d)
    assert len(docs) == len(set(docs)) > 3  # others drawn at random, none twice
    assert {"D1 " + "word " * 20, "D2 " + "word " * 20} <= set(docs)
    counter = env.counter("\n\n")
    around = counter.count(d.head) + counter.count(d.question + d.answer_prefix)
    used = sum(
        counter.count(f"Document {i + 1}:\n") + counter.count(t + "\n\n")
        for i, t in enumerate(docs)
    )
    smallest = counter.count(f"Document {len(docs) + 1}:\n") + counter.count(docs[1] + "\n\n")
    assert around + used + 8 <= 400 < around + used + smallest + 8


def test_word_number_needles_span_every_part(qwen) -> None:
    counter = _env(qwen).counter("\n")
    parts = tight.WordNumberNeedles(counter, "numbers")
    a, n, v = parts.draw(np.random.default_rng(4), 20000)
    assert (a.min(), a.max()) == (0, len(parts.adjs) - 1)
    assert (n.min(), n.max()) == (0, len(parts.nouns) - 1)
    assert 10**6 <= v.min() < 10**6 + 5000 and 10**7 - 5000 < v.max() < 10**7
    # Numbers at the edges of each part: 1000000, 1009999, 9999999, and digits in the middle.
    edge = np.array([1000000, 1009999, 1000900, 1000009, 9999999, 5050505, 1234567])
    zeros = np.zeros(len(edge), dtype=np.int64)
    texts = parts.texts(zeros, zeros, edge)
    assert parts.costs(zeros, zeros, edge).tolist() == [counter.mid(t) for t in texts]


def test_an_essay_needle_sits_at_rulers_depth(qwen) -> None:
    env = _env(qwen)
    for budget in (900, 1500, 2100):
        d = _draft(env, "niah_single_2", budget, key=f"depth{budget}")
        replay = random.Random(f"depth{budget}:niah_single_2")
        tight.random_value("words", replay)
        tight.random_value("numbers", replay)
        (depth,) = replay.sample(tight.DEPTHS, 1)  # the draw after the key and the value
        (needle,) = _needles(d)
        sentences = [p for p in d.pieces if p != needle]
        assert d.pieces.index(needle) == int(len(sentences) * depth / 100)
        assert d.removable == [p != needle for p in d.pieces]


def test_the_one_shot_example_fills_its_500_tokens(qwen) -> None:
    env = _env(qwen)
    first = _draft(env, "vt", 1500)
    names = env._icl.split()[-5:]
    # The example as drawn (before each sample renames it): its prompt is at most 500 tokens
    # and one more noise block would pass them.
    prompt = env._icl[: -len(" " + " ".join(names) + "\n")]
    assert prompt.endswith("they are: ") and "12345" in prompt
    assert len(qwen.encode(prompt)) <= 500
    longer = prompt.replace("\nQuestion:", "\n" + NOISE + "\nQuestion:", 1)
    assert len(qwen.encode(longer)) > 500
    # Every sample renames all five variables and the value of its copy.
    other = _draft(env, "vt", 1500, key="other")
    ex_names = [re.findall(r"^VAR ([A-Z]{3}) = ", d.head, re.M) for d in (first, other)]
    assert all(len(set(e)) == 5 for e in ex_names) and not set(ex_names[0]) & set(ex_names[1])
    assert not set(names) & set(ex_names[0])


def test_word_lists_follow_the_suites_seed(qwen) -> None:
    cwe = [_draft(_env(qwen, seed=s), "cwe", 2600, 2048) for s in (1, 2)]
    # The one-shot example's words are drawn from the word pool in the seeded order.
    assert set(re.findall(r"\d+\. (\S+)", cwe[0].head)) != set(
        re.findall(r"\d+\. (\S+)", cwe[1].head)
    )
    fwe = [_draft(_env(qwen, seed=s), "fwe", 1500) for s in (1, 2)]
    assert fwe[0].answers != fwe[1].answers


def test_qa_question_index_wraps_around_the_questions(qwen) -> None:
    env = _env(qwen)
    questions = env.qa["squad"].questions
    d = RulerSuite._draft(TASKS["qa_1"], random.Random(1), env, 900, 4096, len(questions) + 2)
    assert d.meta["question_index"] == 2
    assert d.question.endswith(f"Question: {questions[2].query}")


def test_qa_with_counts_that_add_up(qwen) -> None:
    env = _env(_CharTokenizer())
    counter = env.counter("\n\n")
    assert counter.mode == "lead"
    d = _draft(env, "qa_2", 3000)
    docs = _documents(d)
    cycled = len(docs) - len(env.qa["hotpotqa"].documents)
    following = env.qa["hotpotqa"].documents[cycled % len(env.qa["hotpotqa"].documents)]
    around = len(d.head) + len(d.question + d.answer_prefix)
    used = sum(_doc_cost(counter, i + 1, t) for i, t in enumerate(docs))
    assert (
        around + used + 8 <= 3000 < around + used + _doc_cost(counter, len(docs) + 1, following) + 8
    )
    assert d.predicted == len(_prompt(env, d)) == around + used - 2


def test_word_number_needles_with_counts_that_add_up() -> None:
    counter = _env(_CharTokenizer()).counter("\n")
    parts = tight.WordNumberNeedles(counter, "numbers")
    a, n, v = parts.draw(np.random.default_rng(2), 50)
    assert parts.exact
    assert parts.costs(a, n, v).tolist() == [len("\n" + t) for t in parts.texts(a, n, v)]


@pytest.mark.parametrize(
    ("task", "budget"), [("niah_multikey_2", 9000), ("niah_multikey_3", 20500)]
)
def test_a_long_needle_haystack_is_drawn_in_batches_and_fits(qwen, task: str, budget: int) -> None:
    env = _env(qwen)
    d = _draft(env, task, budget)
    assert len(d.pieces) > 257  # past one batch of 256 drawn needles
    assert d.predicted == _count(env, _prompt(env, d)) <= budget
    assert len(set(d.pieces)) == len(d.pieces) and d.removable.count(False) == 1
    # The haystack as drawn already fits: nothing had to be cut after it was placed.
    counter = env.counter("\n")
    args = TASKS[task].args
    needle = d.pieces[d.removable.index(False)]
    head, _, _, tail = env.frame(
        TEMPLATES["niah"].template,
        TEMPLATES["niah"].answer_prefix,
        type_needle_v=args["type_needle_v"][:-1],
        query="x",
    )
    pieces, removable, used = tight._needle_haystack(
        random.Random(5), counter, args, [needle], [counter.mid(needle)], budget, head, tail
    )
    assert removable == [p != needle for p in pieces]
    whole = counter.total(head, pieces, used + counter.mid(needle), tail)
    assert whole == len(qwen.encode(head + "\n".join(pieces) + tail)) <= budget
    assert whole > budget - 2 * max(counter.mid(p) for p in pieces)


def test_word_number_needles_past_one_draw_fill_their_room() -> None:
    parts = tight.WordNumberNeedles(_env(_CharTokenizer()).counter("\n"), "numbers")
    texts, used = tight._word_number_haystack(random.Random(3), parts, 300_000)
    assert len(texts) > 4096  # past one draw of 4096 needles
    assert used == sum(len("\n" + t) for t in texts) <= 300_000
    assert used > 300_000 - max(len("\n" + t) for t in texts)
    # At exactly their own size the same needles are drawn (the fill is inclusive).
    assert tight._word_number_haystack(random.Random(3), parts, used) == (texts, used)


def test_a_needle_haystack_of_several_batches_fits_as_drawn() -> None:
    env = _env(_CharTokenizer())
    d = _draft(env, "niah_multikey_3", 80_000)
    assert len(d.pieces) > 2 * 256 + 1  # three batches of 256 drawn needles
    assert d.predicted == len(_prompt(env, d)) <= 80_000
    assert len(set(d.pieces)) == len(d.pieces)
    counter = env.counter("\n")
    needle = d.pieces[d.removable.index(False)]
    args = TASKS["niah_multikey_3"].args
    spec = TEMPLATES["niah"]
    head, _, _, tail = env.frame(spec.template, spec.answer_prefix, type_needle_v="uuid", query="x")
    for budget in (80_000, 80_001):
        pieces, _, used = tight._needle_haystack(
            random.Random(5), counter, args, [needle], [counter.mid(needle)], budget, head, tail
        )
        whole = len(head + "\n".join(pieces) + tail)
        assert whole == counter.total(head, pieces, used + counter.mid(needle), tail) <= budget
        assert whole > budget - max(counter.mid(p) for p in pieces)


def test_word_number_needles_are_counted_one_by_one_where_their_parts_do_not_add_up() -> None:
    env = _env(RunMergingTokenizer())
    d = _draft(env, "niah_multikey_2", 900)
    assert not env.counter("\n").helpers[("word-number", "numbers")].exact
    adjs, nouns = key_words()
    pattern = re.compile(r"One of the special magic numbers for (.+) is: ([1-9]\d{6})\.")
    matches = [pattern.fullmatch(p) for p in d.pieces]
    assert all(matches) and len(d.pieces) > 20
    assert all(_is_pair(m.group(1), adjs, nouns) for m in matches)
    assert d.predicted <= 900


def test_a_needle_haystack_at_exactly_its_own_size_keeps_its_last_needle() -> None:
    # The fill is inclusive: a needle that lands exactly on the room is taken (as in
    # `test_word_number_needles_past_one_draw_fill_their_room`), whether the last needle falls
    # one by one after whole batches.
    env = _env(_CharTokenizer())
    counter = env.counter("\n")
    args = TASKS["niah_multikey_3"].args
    spec = TEMPLATES["niah"]
    head, _, _, tail = env.frame(spec.template, spec.answer_prefix, type_needle_v="uuid", query="x")
    needle = "One of the special magic uuids for a is: b."
    insert = [counter.mid(needle)]
    pieces, removable, used = tight._needle_haystack(
        random.Random(5), counter, args, [needle], insert, 30_000, head, tail
    )
    first = pieces[removable.index(True)]
    exact = used + insert[0] + tight._room(counter, head, tail, first)
    assert exact < 30_000 and len(pieces) > 256 + 2  # past a whole batch, one by one after it
    again = tight._needle_haystack(
        random.Random(5), counter, args, [needle], insert, exact, head, tail
    )
    assert again == (pieces, removable, used)
    fewer, _, less = tight._needle_haystack(
        random.Random(5), counter, args, [needle], insert, exact - 1, head, tail
    )
    assert len(fewer) == len(pieces) - 1 and less < used  # one token short: one needle fewer
