"""fill=ruler's tokenizing cost per task: the counting's shortcuts are a performance contract.

A full RULER grid once stalled before its first request because every search step and sample
re-tokenized its whole prompt. The counting now tokenizes each distinct piece once per process
(`_SHARED`'s piece counters, the word/number needle table, cwe's and QA's piece counts, fwe's
counts per word) and the whole prompt only where it checks the pieces: the cell's first two
counts (`Counter.checks = 2`) and its first sample (`ruler_cell`'s recount). These tests pin how
many `encode` calls, and how many characters handed to them, building three samples of each task
takes with the test fixtures, so that a shortcut switched off (more tokenizing), or a check
dropped (less), shows.

Where the numbers come from (they are the current code's, measured once and explained here, not
tuned): a cold build (a tokenizer no cell has used) pays, on top of a warm one, the separator's
probe (`PieceCounter._probe`: the joined probe once, then each unit alone or with the separator:
1 + 5 calls for `\\n`, 1 + 6 for a space, 1 + 3 for a blank line, and the other side's sum when the
first side does not add up) and the per-tokenizer tables (niah_multikey_2's word/number needle
table: one count per adjective, noun and digit string of RULER's word list, about 9,700 calls;
cwe's numbered words). A warm build pays, per count: the first piece with the text before the
context, the last with the text after, the pieces not yet seen (essay sentences, needles, numbered
words, documents) and nothing for pieces seen before; plus the whole prompt three times (two
`Counter` checks and `ruler_cell`'s first-sample recount). fwe has no piece table for its text
(each count is one word repeated), so its cold and warm builds differ by the probe only.
"""

from __future__ import annotations

import pytest

from longscope.suites.ruler import generate
from longscope.suites.ruler.tasks import TASKS
from tests.suites.ruler.helpers import fixture_env


class CountingTokenizer:
    """The real Qwen2.5 tokenizer, counting its `encode` calls and the characters they take."""

    name, exact = "qwen-counted", True

    def __init__(self, qwen) -> None:
        self._qwen = qwen
        self.calls = 0
        self.chars = 0

    def encode(self, text: str) -> list[int]:
        self.calls += 1
        self.chars += len(text)
        return self._qwen.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self._qwen.decode(ids)

    def take(self) -> tuple[int, int]:
        out = (self.calls, self.chars)
        self.calls = self.chars = 0
        return out


@pytest.fixture(scope="module")
def env() -> generate.Env:
    return fixture_env()


# task: {length: ((cold calls, cold characters), (warm calls, warm characters))}
COSTS = {
    "niah_single_1": {2048: ((51, 22852), (27, 21035)), 4096: ((54, 47288), (29, 45397))},
    "niah_single_2": {2048: ((105, 35062), (39, 31168)), 4096: ((112, 57197), (43, 53235))},
    "niah_single_3": {2048: ((99, 35602), (35, 31733)), 4096: ((111, 55347), (41, 51174))},
    "niah_multikey_1": {2048: ((160, 37984), (39, 30448)), 4096: ((154, 58901), (37, 52086))},
    "niah_multikey_2": {2048: ((9743, 93898), (63, 19935)), 4096: ((9758, 114688), (78, 40725))},
    "niah_multikey_3": {2048: ((59, 37926), (48, 36996)), 4096: ((69, 92960), (58, 92030))},
    "niah_multivalue": {2048: ((153, 36865), (37, 29904)), 4096: ((161, 57887), (39, 50560))},
    "niah_multiquery": {2048: ((147, 40209), (35, 33482)), 4096: ((167, 61819), (41, 54478))},
    "vt": {2048: ((142, 28855), (40, 25981)), 4096: ((149, 37091), (42, 34107))},
    "cwe": {2048: ((9434, 150170), (59, 84281)), 4096: ((17110, 357829), (59, 244849))},
    "fwe": {2048: ((568, 21039), (561, 20929)), 4096: ((703, 30319), (696, 30209))},
    "qa_1": {2048: ((164, 31203), (51, 29177)), 4096: ((269, 52329), (59, 48945))},
    "qa_2": {2048: ((189, 25536), (51, 23333)), 4096: ((314, 42459), (55, 38562))},
}


@pytest.mark.parametrize("length", [2048, 4096])
@pytest.mark.parametrize("task", sorted(COSTS))
def test_tokenizing_per_task_is_the_counting_contract(env, qwen_tokenizer, task, length) -> None:
    tokenizer = CountingTokenizer(qwen_tokenizer)
    cold = list(generate.ruler_cell(TASKS[task], env, tokenizer, length, 3))
    cold_cost = tokenizer.take()
    # The same cell again with the same tokenizer: the shared piece counter's memo and tables
    # are reused, so only the prompts' new pieces and the whole-prompt checks are tokenized.
    warm = list(generate.ruler_cell(TASKS[task], env, tokenizer, length, 3))
    warm_cost = tokenizer.take()
    assert [w.meta["counted"] for w in cold] == ["pieces"] * 3
    assert [(w.input, w.length) for w in warm] == [(w.input, w.length) for w in cold]
    # Every sample's length is still its prompt's whole count (the shortcuts change no sample).
    ttg = TASKS[task].template.tokens_to_generate
    for w in cold:
        assert w.length == len(qwen_tokenizer.encode(w.input + w.answer_prefix)) + ttg <= length
    assert (cold_cost, warm_cost) == COSTS[task][length]


# Tokenizers whose pieces do not add up are counted whole: every count is one call on the whole
# prompt (RULER's own cost), and no piece table is built for them, since it would never be used.
# (task, tokenizer): ((cold calls, cold characters), (warm calls, warm characters)); a cold build
# adds the separators' probes (the joined probe and each unit, both sides: none adds up).
WHOLE_COSTS = {
    ("niah_single_1", "end"): ((24, 82674), (13, 81744)),
    ("niah_single_2", "end"): ((32, 159000), (19, 158835)),
    ("niah_single_3", "end"): ((30, 146742), (17, 146577)),
    ("niah_multikey_1", "end"): ((32, 154871), (19, 154706)),
    ("niah_multikey_2", "end"): ((23, 71265), (12, 70335)),
    ("niah_multikey_3", "end"): ((21, 29062), (10, 28132)),
    ("niah_multivalue", "end"): ((31, 148715), (18, 148550)),
    ("niah_multiquery", "end"): ((30, 145164), (17, 144999)),
    ("vt", "end"): ((31, 81307), (20, 80377)),
    ("cwe", "end"): ((28, 118901), (15, 118736)),
    ("fwe", "end"): ((35, 96766), (22, 96601)),
    ("qa_1", "end"): ((20, 99156), (13, 98901)),
    ("qa_2", "end"): ((20, 80995), (13, 80740)),
    # fwe's space-joined words merge in runs: its first check fails and the cell restarts whole.
    ("fwe", "merging"): ((48, 105676), (41, 105566)),
}


@pytest.mark.parametrize("task,tok", sorted(WHOLE_COSTS))
def test_tokenizing_when_counted_whole(env, qwen_tokenizer, task, tok) -> None:
    from tests.suites.ruler.helpers import RunMergingTokenizer
    from tests.suites.ruler.test_ruler_generate import EndMarked

    inner = {"end": EndMarked, "merging": RunMergingTokenizer}[tok](qwen_tokenizer)
    tokenizer = CountingTokenizer(inner)
    cold = list(generate.ruler_cell(TASKS[task], env, tokenizer, 2048, 3))
    cold_cost = tokenizer.take()
    list(generate.ruler_cell(TASKS[task], env, tokenizer, 2048, 3))
    warm_cost = tokenizer.take()
    assert [w.meta["counted"] for w in cold] == ["whole"] * 3
    assert (cold_cost, warm_cost) == WHOLE_COSTS[(task, tok)]


def test_piece_counters_are_kept_per_tokenizer(env, qwen_tokenizer, monkeypatch) -> None:
    # A grid runs several tokenizers' cells in turn: each keeps its own counters (nine are held
    # before the cache is emptied), so going back to a tokenizer costs its warm build only.
    monkeypatch.setattr(generate, "_SHARED", {})
    task = TASKS["niah_single_1"]
    first, second = CountingTokenizer(qwen_tokenizer), CountingTokenizer(qwen_tokenizer)
    list(generate.ruler_cell(task, env, first, 2048, 3))
    list(generate.ruler_cell(task, env, second, 2048, 3))
    assert first.take() == COSTS["niah_single_1"][2048][0]
    list(generate.ruler_cell(task, env, first, 2048, 3))
    assert first.take() == COSTS["niah_single_1"][2048][1]
    # Nine counters (three tokenizers x three separators) are all kept; the tenth empties the cache.
    monkeypatch.setattr(generate, "_SHARED", {})
    list(generate.ruler_cell(task, env, first, 2048, 3))
    others = [CountingTokenizer(qwen_tokenizer) for _ in range(2)]
    for tok in [first, *others]:
        for sep in ("\n", " ", "\n\n"):
            generate.Counter(tok, False).piece_counter(sep)
    assert len(generate._SHARED) == 9
    first.take()
    list(generate.ruler_cell(task, env, first, 2048, 3))
    assert first.take() == COSTS["niah_single_1"][2048][1]
    generate.Counter(second, False).piece_counter(" ")
    assert len(generate._SHARED) == 1


# Where the counts above come from, checked where they can be derived without the numbers: counted
# whole, every prompt a generator builds is tokenized once (RULER's own cost) and the first
# sample once more (`ruler_cell`'s recount). vt also counts its one-shot example once; fwe builds
# its search's last text and discards it uncounted (`generate(-1)` returns only its word count).
BUILDERS = {"QA": "make_for", "FreqWords": "_text"}
EXTRA = {"vt": 1, "fwe": -1}


def _counting(build, built: list[int]):
    def counted(self, *args):
        built[0] += 1
        return build(self, *args)

    return counted


@pytest.mark.parametrize("task", sorted(COSTS))
def test_counted_whole_each_prompt_is_tokenized_once(env, qwen_tokenizer, task, monkeypatch):
    from tests.suites.ruler.test_ruler_generate import EndMarked

    tokenizer = CountingTokenizer(EndMarked(qwen_tokenizer))
    list(generate.ruler_cell(TASKS[task], env, tokenizer, 2048, 3))  # the probes, once
    tokenizer.take()
    built = [0]
    for cls in set(generate.CELLS.values()):
        name = BUILDERS.get(cls.__name__, "make")
        if name in vars(cls):
            monkeypatch.setattr(cls, name, _counting(vars(cls)[name], built))
    list(generate.ruler_cell(TASKS[task], env, tokenizer, 2048, 3))
    calls, _ = tokenizer.take()
    assert calls == built[0] + 1 + EXTRA.get(task, 0)
    assert calls == WHOLE_COSTS[(task, "end")][1][0]


def test_counted_from_pieces_the_noise_haystack_costs_two_calls_a_prompt(
    env, qwen_tokenizer, monkeypatch
) -> None:
    # niah_single_1 (noise haystack, `\n`-joined, one needle), its counts derived:
    # - warm: each prompt built costs its first piece with the text before the context and its
    #   last piece with the text after (2 calls); the noise sentence and the needles are in the
    #   memo (the cell's seed redraws the cold build's needles); plus 3 whole prompts (the two
    #   `Counter` checks and the first sample's recount);
    # - cold adds the `\n` probe (Qwen2.5 merges `\n` with the piece before it, so the joined
    #   probe, its 5 units the `lead` way, then the 5 the `trail` way: 11 calls), the noise
    #   sentence's count once and each prompt's needle once.
    built = [0]
    monkeypatch.setattr(generate.Niah, "make", _counting(generate.Niah.make, built))
    tokenizer = CountingTokenizer(qwen_tokenizer)
    task = TASKS["niah_single_1"]
    list(generate.ruler_cell(task, env, tokenizer, 2048, 3))
    cold, _ = tokenizer.take()
    cold_built, built[0] = built[0], 0
    list(generate.ruler_cell(task, env, tokenizer, 2048, 3))
    warm, _ = tokenizer.take()
    assert built[0] == cold_built
    assert warm == 2 * built[0] + 3
    assert cold == warm + 11 + 1 + built[0]
    assert (cold, warm) == (COSTS["niah_single_1"][2048][0][0], COSTS["niah_single_1"][2048][1][0])
