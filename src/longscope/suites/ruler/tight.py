"""The tight fill (`-S fill=exact`): every sample gets the largest haystack that fits, by counting.

RULER finds one haystack size per task and length by binary search over whole-prompt tokenizations,
then shrinks a sample that overflows. Here every sample gets the largest haystack whose prompt plus
output budget fits its length, from the pieces' token counts (see `counting`). What a sample is made
of follows RULER: the needle sentence, keys and values, depths, chains, word frequencies, documents.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import string
import uuid
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from longscope.suites.ruler.counting import PieceCounter
from longscope.suites.ruler.data import NEEDLE, NOISE, Essays, QASet, cwe_words, key_words
from longscope.suites.ruler.tasks import MODEL_TEMPLATES, SINGLE_ANSWER_WORDING, TEMPLATES, Task
from longscope.text.tokenizers import Tokenizer
from longscope.types import PromptMode

_MARK = "\x00context\x00"
_PREFIX = "\x00prefix\x00"  # where the answer prefix starts: no rewording reaches across it
# RULER's needle depths: 40 evenly spaced percentages, rounded to integers.
DEPTHS = [math.floor(100 * i / 39 + 0.5) for i in range(40)]
DOCUMENT = "Document {i}:\n{document}"


@dataclass
class Draft:
    """A sample before it becomes a `Sample`: the prompt's pieces and what it expects back."""

    head: str
    pieces: list[str]
    sep: str
    question: str
    """The task text after the context (the question), without the answer prefix."""
    answer_prefix: str
    answers: list[str]
    predicted: int
    """The prompt's tokens as counted from its pieces (chat overhead not included)."""
    removable: list[bool]
    """Which pieces are haystack (may be dropped to fit when counts are not additive)."""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def context(self) -> str:
        return self.sep.join(self.pieces)


@dataclass
class Env:
    """What the generators share for one build: tokenizer, prompt mode, counters, data."""

    tokenizer: Tokenizer
    mode: PromptMode
    seed: int
    model_template: str = "base"
    """RULER's model template wrapping the task in completion mode (chat models get the task)."""
    essays: Essays | None = None
    qa: dict[str, QASet] = field(default_factory=dict)
    extra_words: tuple[str, ...] = ()
    _counters: dict[str, PieceCounter] = field(default_factory=dict)
    _essay_cum: list[int] = field(default_factory=list)
    _icl: str | None = None

    def counter(self, sep: str) -> PieceCounter:
        """Return the counter for pieces joined by `sep` (probed on this tokenizer once)."""
        if sep not in self._counters:
            probes = {
                "\n": [NOISE, "VAR ABCDE = 12345", NOISE, "VAR FGHIJ = VAR ABCDE ", NOISE],
                " ": ["1. apple", "2. blue", "3. The sky is blue.", "4. xqzvbt", "...", "end."],
                "\n\n": [DOCUMENT.format(i=i, document=f"Title {i}\nText {i}.") for i in (1, 2, 3)],
            }
            self._counters[sep] = PieceCounter(self.tokenizer, sep, probes[sep])
        return self._counters[sep]

    @property
    def wrapper(self) -> tuple[str, str]:
        """Return the model template's text before and after the task (empty in chat mode)."""
        if self.mode == "chat":
            return "", ""
        before, after = MODEL_TEMPLATES[self.model_template].split("{task_template}")
        return before, after

    def wrap(self, task_text: str) -> str:
        """Return `task_text` wrapped in the model template (as RULER's few-shot examples are)."""
        before, after = self.wrapper
        return before + task_text + after

    def frame(
        self,
        template: str,
        prefix: str,
        reword: Sequence[tuple[str, str]] = (),
        **fields: Any,
    ) -> tuple[str, str, str, str]:
        """Return (head, question, answer prefix, tail as counted) of a task template.

        `reword`: replacements made, in order, on the model template, the task template and the
        answer prefix as one text before the fields are filled in (RULER's niah.py rewords the
        template it is handed, which already holds the model template).
        """
        before, after = self.wrapper
        whole = before + template + after + _PREFIX + prefix
        for old, new in reword:
            whole = whole.replace(old, new)
        wrapped, prefix = whole.split(_PREFIX)
        head, question = wrapped.format(context=_MARK, **fields).split(_MARK)
        prefix = prefix.format(**fields)
        return head, question, prefix, question + (prefix if self.mode == "completion" else "")


def _number(rng: random.Random) -> str:
    return str(rng.randint(10**6, 10**7 - 1))


def _word(rng: random.Random) -> str:
    adjs, nouns = key_words()
    return f"{rng.choice(adjs)}-{rng.choice(nouns)}"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def random_value(kind: str, rng: random.Random) -> str:
    """Return a random key or value of RULER's kind: 7-digit number, adjective-noun or UUID4."""
    if kind == "numbers":
        return _number(rng)
    if kind == "words":
        return _word(rng)
    if kind == "uuids":
        return _uuid(rng)
    raise ValueError(f"unknown needle type {kind!r}")


def _fit_pieces(
    counter: PieceCounter,
    head: str,
    tail: str,
    pieces: list[str],
    removable: list[bool],
    mids_sum: int,
    budget: int,
) -> int:
    """Drop trailing haystack pieces until the counted prompt fits `budget`; return its tokens.

    `mids_sum` is the sum of every piece's `mid` count (see `PieceCounter.total`).
    """
    total = counter.total(head, pieces, mids_sum, tail)
    while total > budget:
        if not any(removable):
            raise ValueError(f"its fixed parts alone need {total} tokens, over the {budget} left")
        drop = max(i for i, r in enumerate(removable) if r)
        mids_sum -= counter.mid(pieces.pop(drop), False)
        removable.pop(drop)
        total = counter.total(head, pieces, mids_sum, tail)
    return total


def niah(task: Task, rng: random.Random, env: Env, budget: int) -> Draft:
    """Return a needle-in-a-haystack sample as RULER's niah.py builds it."""
    a = task.args
    num_k = max(a["num_needle_k"], a["num_needle_q"])
    keys: list[str] = []
    values: list[list[str]] = []
    needles: list[str] = []
    type_v = a["type_needle_v"]
    for _ in range(num_k):
        keys.append(random_value(a["type_needle_k"], rng))
        value = []
        for _ in range(a["num_needle_v"]):
            value.append(random_value(type_v, rng))
            needles.append(NEEDLE.format(type_needle_v=type_v, key=keys[-1], value=value[-1]))
        values.append(value)
    random.Random(env.seed).shuffle(needles)  # RULER shuffles with a fresh Random(seed)
    template, prefix = TEMPLATES["niah"].template, TEMPLATES["niah"].answer_prefix
    reword: tuple[tuple[str, str], ...] = ()
    if a["num_needle_q"] * a["num_needle_v"] == 1:
        reword = SINGLE_ANSWER_WORDING  # the model template too, as RULER's niah.py
        type_v = type_v[:-1]
    haystack = a["type_haystack"]
    # The query is drawn after the context in RULER; its rng draws come after the haystack's here.
    sep = " " if haystack == "essay" else "\n"
    counter = env.counter(sep)
    probe_head, _, _, probe_tail = env.frame(
        template, prefix, reword, type_needle_v=type_v, query="x"
    )
    needle_mids = [counter.mid(n, False) for n in needles]
    if haystack == "noise":
        pieces, removable, filler = _noise(
            rng, counter, needles, needle_mids, budget, probe_head, probe_tail
        )
    elif haystack == "needle":
        pieces, removable, filler = _needle_haystack(
            rng, counter, a, needles, needle_mids, budget, probe_head, probe_tail
        )
    else:
        pieces, removable, filler = _essay(
            rng, env, counter, needles, needle_mids, budget, probe_head, probe_tail
        )
    indices = rng.sample(range(num_k), a["num_needle_q"])
    queries = [keys[i] for i in indices]
    answers = [v for i in indices for v in values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    head, question, answer_prefix, tail = env.frame(
        template, prefix, reword, type_needle_v=type_v, query=query
    )
    mids_sum = filler + sum(needle_mids)
    total = _fit_pieces(counter, head, tail, pieces, removable, mids_sum, budget)
    return Draft(
        head,
        pieces,
        sep,
        question,
        answer_prefix,
        answers,
        total,
        removable,
        {"keys": keys, "queries": queries, "haystack": haystack},
    )


def _room(counter: PieceCounter, head: str, tail: str, unit: str) -> int:
    """Tokens the text around the context costs beyond `mid` counts (boundary pieces as `unit`)."""
    return counter.first(head, unit) + counter.last(unit, tail) - 2 * counter.mid(unit)


def _noise(
    rng: random.Random,
    counter: PieceCounter,
    inserts: list[str],
    insert_mids: list[int],
    budget: int,
    head: str,
    tail: str,
) -> tuple[list[str], list[bool], int]:
    """Return RULER's noise haystack (pieces, which are haystack, haystack tokens) with inserts."""
    unit = counter.mid(NOISE)
    room = budget - _room(counter, head, tail, NOISE) - sum(insert_mids)
    n = max(room // unit, len(inserts))
    sentences = [NOISE] * n
    removable = [True] * n
    for index, element in zip(
        sorted(rng.sample(range(n), len(inserts)), reverse=True), inserts, strict=False
    ):
        sentences.insert(index, element)
        removable.insert(index, False)
    return sentences, removable, n * unit


class WordNumberNeedles:
    """Token counts of `words`/`numbers` needles from their parts, for drawing thousands at once.

    A needle's count is the sum of its parts' counts (fixed text, ` adjective`, `-noun`, and the
    number as ` ddd`, `ddd`, `d`), each part counted once per tokenizer. Used only where a probe
    of random needles shows the parts add up in this tokenizer; otherwise needles are counted.
    """

    def __init__(self, counter: PieceCounter, type_v: str) -> None:
        self.adjs, self.nouns = key_words()
        sep, lead = counter.sep, counter.mode == "lead"
        before, after = NEEDLE.split("{key}")
        self.before = before.format(type_needle_v=type_v)
        self.middle, self.end = after.split("{value}")
        count = counter.count
        self.fixed = (
            count((sep if lead else "") + self.before.rstrip(" "))
            + count(self.middle.rstrip(" "))
            + count(self.end + ("" if lead else sep))
        )
        self.adj = np.array([count(" " + a) for a in self.adjs])
        self.noun = np.array([count("-" + n) for n in self.nouns])
        self.head3 = np.array([count(f" {i}") if i >= 100 else 0 for i in range(1000)])
        self.mid3 = np.array([count(f"{i:03d}") for i in range(1000)])
        self.last1 = np.array([count(str(i)) for i in range(10)])
        probe = np.random.default_rng(0)
        a, n, v = self.draw(probe, 64)
        self.exact = all(
            int(c) == counter.mid(t, False)
            for c, t in zip(self.costs(a, n, v), self.texts(a, n, v), strict=True)
        )

    def draw(self, gen: np.random.Generator, size: int) -> tuple[np.ndarray, ...]:
        """Return `size` random (adjective, noun, 7-digit number) index triples."""
        return (
            gen.integers(0, len(self.adjs), size),
            gen.integers(0, len(self.nouns), size),
            gen.integers(10**6, 10**7, size),
        )

    def costs(self, a: np.ndarray, n: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Return each needle's `mid` count from its parts."""
        parts = self.head3[v // 10**4] + self.mid3[(v // 10) % 1000] + self.last1[v % 10]
        return self.fixed + self.adj[a] + self.noun[n] + parts

    def texts(self, a: np.ndarray, n: np.ndarray, v: np.ndarray) -> list[str]:
        """Return the needles' sentences."""
        adjs, nouns, before, middle, end = self.adjs, self.nouns, self.before, self.middle, self.end
        return [
            f"{before}{adjs[i]}-{nouns[j]}{middle}{k}{end}"
            for i, j, k in zip(a.tolist(), n.tolist(), v.tolist(), strict=True)
        ]


def _word_number_haystack(
    rng: random.Random, parts: WordNumberNeedles, room: int
) -> tuple[list[str], int]:
    """Return random word/number needles whose counts fill `room`, and their tokens."""
    gen = np.random.default_rng(rng.getrandbits(64))
    chosen: list[np.ndarray] = []
    used = 0
    while True:
        a, n, v = parts.draw(gen, 4096)
        cum = np.cumsum(parts.costs(a, n, v)) + used
        take = int(np.searchsorted(cum, room, side="right"))
        chosen.append(np.stack([a[:take], n[:take], v[:take]]))
        if take:
            used = int(cum[take - 1])
        if take < len(cum):
            break
    a, n, v = np.concatenate(chosen, axis=1)
    return parts.texts(a, n, v), used


def _needle_haystack(
    rng: random.Random,
    counter: PieceCounter,
    a: dict[str, Any],
    inserts: list[str],
    insert_mids: list[int],
    budget: int,
    head: str,
    tail: str,
) -> tuple[list[str], list[bool], int]:
    """Return a haystack of other needles (pieces, which are haystack, haystack tokens)."""
    room = budget - sum(insert_mids)
    if (a["type_needle_k"], a["type_needle_v"]) == ("words", "numbers"):
        key = ("word-number", a["type_needle_v"])
        if key not in counter.helpers:
            counter.helpers[key] = WordNumberNeedles(counter, a["type_needle_v"])
        parts = counter.helpers[key]
        if parts.exact:
            probe = parts.texts(*parts.draw(np.random.default_rng(1), 1))[0]
            sentences, used = _word_number_haystack(
                rng, parts, room - _room(counter, head, tail, probe)
            )
            return _insert(rng, sentences, inserts, used)
    sentences: list[str] = []
    used = 0
    batch = 256  # needles are counted a batch per tokenization, one by one only at the end
    gen = np.random.default_rng(rng.getrandbits(64))
    while True:
        keys = _bulk_values(a["type_needle_k"], rng, gen, batch)
        values = _bulk_values(a["type_needle_v"], rng, gen, batch)
        drawn = [
            NEEDLE.format(type_needle_v=a["type_needle_v"], key=k, value=v)
            for k, v in zip(keys, values, strict=True)
        ]
        if not sentences:
            room -= _room(counter, head, tail, drawn[0])
        cost = counter.mids_sum(drawn)
        if used + cost <= room:
            sentences += drawn
            used += cost
            continue
        for sentence in drawn:
            cost = counter.mid(sentence, False)
            if used + cost > room:
                break
            sentences.append(sentence)
            used += cost
        break
    return _insert(rng, sentences, inserts, used)


def bulk_uuids(gen: np.random.Generator, n: int) -> list[str]:
    """Return `n` random version-4 UUIDs (as `uuid.uuid4` formats them), drawn at once."""
    raw = gen.integers(0, 256, (n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.tobytes().hex()
    out = []
    for i in range(0, 32 * n, 32):
        h = text[i : i + 32]
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


def _bulk_values(kind: str, rng: random.Random, gen: np.random.Generator, n: int) -> list[str]:
    """Return `n` random keys or values of RULER's kind, drawn at once."""
    if kind == "uuids":
        return bulk_uuids(gen, n)
    if kind == "numbers":
        return [str(v) for v in gen.integers(10**6, 10**7, n).tolist()]
    return [random_value(kind, rng) for _ in range(n)]


def _insert(
    rng: random.Random, sentences: list[str], inserts: list[str], used: int
) -> tuple[list[str], list[bool], int]:
    """Return the haystack with `inserts` at random sentence positions, as RULER places them."""
    n = max(len(sentences), 1)
    removable = [True] * len(sentences)
    for index, element in zip(
        sorted(rng.sample(range(n), len(inserts)), reverse=True), inserts, strict=False
    ):
        sentences.insert(index, element)
        removable.insert(index, False)
    return sentences, removable, used


def _essay(
    rng: random.Random,
    env: Env,
    counter: PieceCounter,
    inserts: list[str],
    insert_mids: list[int],
    budget: int,
    head: str,
    tail: str,
) -> tuple[list[str], list[bool], int]:
    """Return the essay haystack cut at `depths` sentences (pieces, which are haystack, tokens)."""
    assert env.essays is not None
    sents = env.essays.sentences
    room = budget - _room(counter, head, tail, sents[0]) - sum(insert_mids)
    cum = env._essay_cum
    if not cum:
        cum.append(0)
    while cum[-1] < room or len(cum) < 2:  # the essay's sentences counted, cycled as RULER does
        cum.append(cum[-1] + counter.mid(sents[(len(cum) - 1) % len(sents)]))
    n = max(bisect_right(cum, room) - 1, 1)
    document = [sents[i % len(sents)] for i in range(n)]
    depths = sorted(int(n * (d / 100)) for d in rng.sample(DEPTHS, len(inserts)))
    cuts = [0, *depths, n]
    pieces: list[str] = []
    removable: list[bool] = []
    for i in range(1, len(cuts)):
        group = document[cuts[i - 1] : cuts[i]]
        # An empty group is an empty piece: RULER's join then leaves a double space.
        pieces.extend(group or [""])
        removable.extend([True] * len(group) or [False])
        if i - 1 < len(inserts):
            pieces.append(inserts[i - 1])
            removable.append(False)
    empties = sum(1 for p in pieces if not p)
    return pieces, removable, cum[n] + empties * counter.mid("")


def _chain(
    rng: random.Random, hops: int, letters: int, value: str | None
) -> tuple[list[str], list[str]]:
    names: list[str] = []
    while len(names) < hops + 1:  # RULER draws until the names are distinct
        name = "".join(rng.choices(string.ascii_uppercase, k=letters))
        if name not in names:
            names.append(name)
    first = value if value is not None else str(rng.randint(10000, 99998))
    chain = [f"VAR {names[0]} = {first}"]
    chain += [f"VAR {names[j + 1]} = VAR {names[j]} " for j in range(hops)]
    return names, chain


def _vt_icl(env: Env, hops: int) -> str:
    """RULER's one-shot example: a 3-letter chain with value 12345 in at most 500 tokens."""
    if env._icl is None:
        rng = random.Random(env.seed)
        names, chain = _chain(rng, min(10, hops), 3, "12345")
        spec = TEMPLATES["variable_tracking"]
        full = spec.template + spec.answer_prefix
        counter = env.counter("\n")
        head, tail = full.format(context=_MARK, query="12345", num_v=hops + 1).split(_MARK)
        pieces, _, filler = _noise(rng, counter, [], [], 500, head, tail)
        positions = sorted(rng.sample(range(len(pieces)), len(chain)))
        for j, (where, link) in enumerate(zip(positions, chain, strict=True)):
            pieces.insert(where + j, link)
        mids_sum = filler + sum(counter.mid(c) for c in chain)
        _fit_pieces(counter, head, tail, pieces, [p == NOISE for p in pieces], mids_sum, 500)
        env._icl = head + "\n".join(pieces) + tail + " " + " ".join(names) + "\n"
    return env._icl


def variable_tracking(task: Task, rng: random.Random, env: Env, budget: int) -> Draft:
    """Return a variable-tracking sample (one chain of 4 hops in noise, one-shot example first)."""
    hops = task.args["num_hops"]
    icl = _vt_icl(env, hops)
    # RULER re-draws the example's names and value for every sample.
    for name in icl.strip().split()[-hops - 1 :]:
        icl = icl.replace(name, "".join(rng.choices(string.ascii_uppercase, k=len(name))))
    icl = icl.replace("12345", str(rng.randint(10000, 99998)))
    names, chain = _chain(rng, hops, 5, None)
    value = chain[0].split("=")[-1].strip()
    spec = TEMPLATES["variable_tracking"]
    head, question, prefix, tail = env.frame(
        spec.template, spec.answer_prefix, query=value, num_v=hops + 1
    )
    # RULER puts the example after the model template's opening, before the task.
    opening = env.wrapper[0]
    head = opening + icl + "\n" + head[len(opening) :]
    counter = env.counter("\n")
    room_budget = budget - sum(counter.mid(c, False) for c in chain)
    pieces, removable, filler = _noise(rng, counter, [], [], room_budget, head, tail)
    if len(pieces) < len(chain):
        raise ValueError(
            f"the one-shot example and the chain leave room for {len(pieces)} noise blocks, "
            f"fewer than the chain's {len(chain)} links"
        )
    positions = sorted(rng.sample(range(len(pieces)), len(chain)))
    for j, (where, link) in enumerate(zip(positions, chain, strict=True)):
        pieces.insert(where + j, link)
        removable.insert(where + j, False)
    mids_sum = filler + sum(counter.mid(c, False) for c in chain)
    total = _fit_pieces(counter, head, tail, pieces, removable, mids_sum, budget)
    return Draft(head, pieces, "\n", question, prefix, names, total, removable, {"value": value})


def _numbered(words: list[str]) -> str:
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(words))


@functools.lru_cache(maxsize=64)
def fixed_permutation(seed: int, size: int) -> list[int]:
    """Return the one order `size` items get from `seed` (the same every call).

    RULER shuffles its word lists with a fresh `random.Random(seed)` each time, so one list
    length always gets one order; here that order comes from numpy, once per length.
    """
    return np.random.default_rng(seed).permutation(size).tolist()


def _cwe_list(env: Env, common: list[str], uncommon: list[str], cr: int, ur: int) -> list[str]:
    """Return the word list: common words x `cr`, others x `ur`, in RULER's fixed shuffle."""
    words = common * cr + uncommon * ur
    return [words[i] for i in fixed_permutation(env.seed, len(words))]


def _counted_words(counter: PieceCounter, words: tuple[str, ...]) -> np.ndarray:
    """Return each word's `mid` count, once per counter and word list."""
    key = ("cwe-words", str(hash(words)))
    if key not in counter.helpers:
        counter.helpers[key] = np.array([counter.mid(w, False) for w in words], dtype=np.int64)
    return counter.helpers[key]


def _numbers_cum(counter: PieceCounter, entries: int) -> list[int]:
    """Return cumulative counts of the list numbers `1.`, `2.`, ... up to at least `entries`."""
    cum = counter.helpers.setdefault(("cwe-numbers", ""), [0])
    while len(cum) <= entries:
        cum.append(cum[-1] + counter.mid(f"{len(cum)}."))
    return cum


def common_words(task: Task, rng: random.Random, env: Env, budget: int, length: int) -> Draft:
    """Return a common-words sample: 10 words x 30 among others x 3 (x6 / x1 under 4K), one-shot."""
    a = task.args
    cw = a["num_cw"]
    base = cwe_words()
    pool = [base[i] for i in fixed_permutation(env.seed, len(base))]
    if length < 4096:
        shot, (cr, ur) = (20, 3, 1), (6, 1)
    else:
        shot, (cr, ur) = (40, 10, 3), (a["freq_cw"], a["freq_ucw"])
    spec = TEMPLATES["common_words_extraction"]
    drawn = rng.sample(pool, shot[0])
    ex_words = _cwe_list(env, drawn[:cw], drawn[cw:], shot[1], shot[2])
    task_text = spec.template.format(context=_numbered(ex_words), query="")
    example = env.wrap(task_text) + spec.answer_prefix + " " + _numbered(drawn[:cw])
    head, question, prefix, tail = env.frame(spec.template, spec.answer_prefix, query="")
    head = example + "\n" + head
    counter = env.counter(" ")
    source = env.extra_words or base
    # A random order of the words: the first `num` of it are RULER's random.sample(words, num).
    order = np.random.default_rng(rng.getrandbits(64)).permutation(len(source))
    counts = _counted_words(counter, source)[order]
    common_sum = int(counts[:cw].sum())
    word_cum = np.concatenate([[0], np.cumsum(counts[cw:])])
    frame = counter.count(head) + counter.count(tail)

    def words_sum(num: int) -> int:
        entries = cw * cr + (num - cw) * ur
        return (
            _numbers_cum(counter, entries)[entries] + cr * common_sum + ur * int(word_cum[num - cw])
        )

    lo, hi = cw, len(source)
    if words_sum(lo) + frame > budget:
        hi = lo
    while lo < hi:  # largest word count whose counted prompt fits
        mid = (lo + hi + 1) // 2
        if words_sum(mid) + frame <= budget:
            lo = mid
        else:
            hi = mid - 1
    num = lo

    def listed(num: int) -> tuple[list[str], list[str]]:
        chosen = [source[i] for i in order[:num].tolist()]
        words = _cwe_list(env, chosen[:cw], chosen[cw:], cr, ur)
        return chosen, [f"{i + 1}. {w}" for i, w in enumerate(words)]

    # The search counts the text around the list apart from it; where the seams merge tokens,
    # the next word may still fit, which only the counted prompt shows.
    while (
        num < len(source)
        and counter.total(head, listed(num + 1)[1], words_sum(num + 1), tail) <= budget
    ):
        num += 1
    too_few = num == len(source) and words_sum(num) + frame < budget - 64
    chosen, pieces = listed(num)
    removable = [True] * len(pieces)
    total = _fit_pieces(counter, head, tail, pieces, removable, words_sum(num), budget)
    return Draft(
        head,
        pieces,
        " ",
        question,
        prefix,
        chosen[:cw],
        total,
        removable,
        {"distinct_words": num, "word_list_exhausted": too_few},
    )


def zeta(alpha: float) -> float:
    """Return the Riemann zeta function at `alpha` > 1 (Euler-Maclaurin; pi^2/6 at 2)."""
    if alpha == 2.0:
        return math.pi**2 / 6
    n = 1000
    head = sum(k**-alpha for k in range(1, n))
    return head + n ** (1 - alpha) / (alpha - 1) + 0.5 * n**-alpha + alpha * n ** (-alpha - 1) / 12


def freq_words(task: Task, rng: random.Random, env: Env, budget: int, length: int) -> Draft:
    """Return a frequent-words sample: coded words drawn by a zeta law, the top one is noise."""
    alpha = float(task.args["alpha"])
    size = (length - TEMPLATES["freq_words_extraction"].tokens_to_generate) // 50
    gen = np.random.default_rng(rng.getrandbits(64))
    found: dict[str, None] = {}
    while len(found) < size:  # the first `size` distinct random 6-letter words, as RULER draws
        letters = (gen.integers(0, 26, (size, 6), dtype=np.uint8) + 97).tobytes().decode()
        for i in range(0, len(letters), 6):
            found[letters[i : i + 6]] = None
            if len(found) == size:
                break
    vocab = sorted(found)
    vocab = [vocab[i] for i in fixed_permutation(env.seed, len(vocab))]
    vocab[0] = "..."  # RULER treats the top-ranked word as noise
    weights = [k**-alpha / zeta(alpha) for k in range(1, len(vocab) + 1)]
    spec = TEMPLATES["freq_words_extraction"]
    head, question, prefix, tail = env.frame(spec.template, spec.answer_prefix, query="")
    counter = env.counter(" ")
    frame = counter.count(head) + counter.count(tail)
    mids: list[int] = []

    def counts(num: int) -> list[int]:
        out = []
        for w in weights:
            c = int(num * w)
            if c == 0:
                break
            out.append(c)
        return out

    def cost(num: int) -> int:
        cs = counts(num)
        while len(mids) < len(cs):
            mids.append(counter.mid(vocab[len(mids)], False))
        return frame + sum(c * m for c, m in zip(cs, mids, strict=False))

    def coded(num: int) -> list[str]:
        listed = [w for w, c in zip(vocab, counts(num), strict=False) for _ in range(c)]
        return [listed[i] for i in fixed_permutation(env.seed, len(listed))]

    top = max(budget, 1)
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    # As in common_words: the counted prompt shows where the seams leave room for more words.
    while lo < top and counter.total(head, coded(lo + 1), cost(lo + 1) - frame, tail) <= budget:
        lo += 1
    words = coded(lo)
    removable = [True] * len(words)
    total = _fit_pieces(counter, head, tail, words, removable, cost(lo) - frame, budget)
    return Draft(
        head, words, " ", question, prefix, vocab[1:4], total, removable, {"num_words": lo}
    )


def qa(task: Task, rng: random.Random, env: Env, budget: int, index: int) -> Draft:
    """Return a QA sample: question `index`, its gold documents among distractors as RULER draws."""
    data = env.qa[task.args["dataset"]]
    q = data.questions[index % len(data.questions)]
    spec = TEMPLATES["qa"]
    head, question, prefix, tail = env.frame(spec.template, spec.answer_prefix, query=q.query)
    counter = env.counter("\n\n")
    trail = counter.mode == "trail"
    sep = counter.sep

    def doc_cost(i: int, doc: int) -> int:
        text = data.documents[doc]
        if trail:
            return counter.mid_text(f"Document {i}:\n") + counter.mid_text(text + sep)
        return counter.mid_text(sep + f"Document {i}:\n") + counter.mid_text(text)

    more = list(q.more_context)
    rng.shuffle(more)
    chosen = list(q.context)
    used = sum(doc_cost(i + 1, d) for i, d in enumerate(chosen))
    room = budget - counter.count(head) - counter.count(tail) - 8
    taken = set(chosen)
    candidates = iter(more)
    misses = 0
    while misses < 50 and len(taken) < len(data.documents):
        doc = next(candidates, None)
        if doc is None:
            doc = rng.randrange(len(data.documents))
            if doc in taken:
                continue
        c = doc_cost(len(chosen) + 1, doc)
        if used + c > room:
            misses += 1  # a shorter document may still fit; stop after 50 that do not
            continue
        chosen.append(doc)
        taken.add(doc)
        used += c
    if len(taken) == len(data.documents):
        # Every document is in: RULER then repeats the whole set until the length is reached.
        for doc in itertools.cycle(range(len(data.documents))):
            c = doc_cost(len(chosen) + 1, doc)
            if used + c > room:
                break
            chosen.append(doc)
            used += c
    random.Random(env.seed).shuffle(chosen)
    pieces = [DOCUMENT.format(i=i + 1, document=data.documents[d]) for i, d in enumerate(chosen)]
    mids = [doc_cost(i + 1, d) for i, d in enumerate(chosen)]
    removable = [True] * len(pieces)
    gold = set(q.context)
    for i, d in enumerate(chosen):
        removable[i] = d not in gold
    total = _fit_pieces(counter, head, tail, pieces, removable, sum(mids), budget)
    return Draft(
        head,
        pieces,
        "\n\n",
        question,
        prefix,
        list(q.outputs),
        total,
        removable,
        {"question_index": index % len(data.questions), "documents": len(pieces)},
    )
