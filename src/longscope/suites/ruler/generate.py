"""RULER's samples as its own scripts write them (`scripts/data/synthetic/*.py` via `prepare.py`).

Every task x length cell replays RULER's generator: one `random.Random(seed)` (and for vt one numpy
`RandomState(seed)`) drawn in RULER's order, through its estimate, its binary search for the
haystack size (with its increments) and its per-sample retries with a smaller haystack. What
differs is only how a prompt is counted: where the tokenizer's counts add up across the pieces a
context is joined from (checked against the whole prompt on each cell's first search step and first
sample), a prompt's length is the sum of its pieces' counts, each piece counted once; otherwise the
whole prompt is tokenized, as RULER does. Same tokenizer and seed: the same bytes as `prepare.py`.

`iter_cell` yields one cell's samples lazily in index order (sample i depends on samples 0..i-1
through the shared random stream, so a cell is always replayed from its start).
"""

from __future__ import annotations

import functools
import random
import string
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from longscope.errors import UsageError
from longscope.suites.ruler.counting import PieceCounter, ruler_counting
from longscope.suites.ruler.data import (
    NEEDLE,
    NOISE,
    EssayHaystack,
    Essays,
    QASet,
    cwe_words,
    pair_words,
)
from longscope.suites.ruler.tasks import (
    MODEL_TEMPLATES,
    SINGLE_ANSWER_WORDING,
    TEMPLATES,
    Generator,
    Task,
)
from longscope.suites.ruler.tight import WordNumberNeedles
from longscope.text.tokenizers import Tokenizer
from longscope.types import Sample

if TYPE_CHECKING:
    from longscope.suites.base import BuildContext, Suite

T = TypeVar("T")
_MARK = "\x00context\x00"
# RULER: np.round(np.linspace(0, 100, num=40)).astype(int), kept as numpy integers as RULER does.
DEPTHS = list(np.round(np.linspace(0, 100, num=40, endpoint=True)).astype(int))
DOCUMENT = "Document {i}:\n{document}"


class _NotAdditive(Exception):
    """The pieces' counts did not add up to the whole prompt's: count this cell whole."""


@dataclass
class Prompt:
    """One `generate_input_output` result: the text around the context, its pieces, the answers."""

    head: str
    pieces: list[str]
    sep: str
    tail: str
    answers: list[str]
    mids: int | None = None
    """The pieces' summed `mid` counts when the generator knows them (else counted here)."""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def context(self) -> str:
        return self.sep.join(self.pieces)

    def text(self) -> str:
        return self.head + self.context + self.tail


_SHARED: dict[tuple[int, str], tuple[Tokenizer, PieceCounter]] = {}
"""Piece counters by (tokenizer, separator); the tokenizer is held so that its id stays its own."""


class Counter:
    """Counts prompts as RULER does (`len(tokenizer.text_to_tokens(text))`), from pieces if exact."""

    def __init__(self, tokenizer: Tokenizer, whole: bool, verify: bool = False) -> None:
        self.tokenizer = tokenizer
        self.whole = whole
        self.verify = verify
        self.checks = 0
        """Pieces-vs-whole checks still to make (the cell's first search step and first sample)."""

    def piece_counter(self, sep: str) -> PieceCounter:
        """Return the counter of pieces joined by `sep`, shared by every cell of this tokenizer
        (what it has counted, sentences, words, needle parts, is counted once per process)."""
        key = (id(self.tokenizer), sep)
        held = _SHARED.get(key)
        if held is None or held[0] is not self.tokenizer:
            probes = {
                "\n": [NOISE, "VAR ABCDE = 12345", NOISE, "VAR FGHIJ = VAR ABCDE ", NOISE],
                " ": ["1. apple", "2. blue", "3. The sky is blue.", "4. xqzvbt", "...", "end."],
                "\n\n": [DOCUMENT.format(i=i, document=f"Title {i}\nText {i}.") for i in (1, 2, 3)],
            }
            if len(_SHARED) > 8:
                _SHARED.clear()
            held = _SHARED[key] = (self.tokenizer, PieceCounter(self.tokenizer, sep, probes[sep]))
        return held[1]

    def text(self, text: str) -> int:
        """Return the tokens of `text` counted whole."""
        return len(self.tokenizer.encode(text))

    def __call__(self, prompt: Prompt, extra: str = "") -> int:
        """Return the tokens of `extra + prompt.text()` (`extra`: vt's one-shot example)."""
        counter = self.piece_counter(prompt.sep)
        if self.whole or counter.mode is None or len(prompt.pieces) < 2:
            return self.text(extra + prompt.text())
        mids = prompt.mids
        if mids is None:
            mids = sum(counter.mid(p) for p in prompt.pieces)
        counted = counter.total(extra + prompt.head, prompt.pieces, mids, prompt.tail)
        if self.checks > 0 or self.verify:
            self.checks -= 1
            if counted != self.text(extra + prompt.text()):
                raise _NotAdditive
        return counted


def _random_number(rng: random.Random) -> str:
    return str(rng.randint(10**6, 10**7 - 1))


def _random_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _random(kind: str, rng: random.Random) -> str:
    if kind == "numbers":
        return _random_number(rng)
    if kind == "words":
        return rng.choice(pair_words())
    if kind == "uuids":
        return _random_uuid(rng)
    raise ValueError(f"unknown needle type {kind!r}")


@functools.lru_cache(maxsize=64)
def _order(seed: int, size: int) -> tuple[int, ...]:
    order = list(range(size))
    random.Random(seed).shuffle(order)
    return tuple(order)


def shuffled(items: Sequence[T], seed: int) -> list[T]:
    """Return `items` as `random.Random(seed).shuffle` orders them: RULER shuffles with a fresh
    generator each time, so one length always gets one order (computed once here)."""
    return [items[i] for i in _order(seed, len(items))]


def _split(text: str) -> tuple[str, str]:
    head, tail = text.split(_MARK)
    return head, tail


class Cell:
    """One task's generator as RULER's script runs it, for one length (`max_seq_length`)."""

    generator: Generator
    incremental: int = 10

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        self.task = task
        self.env = env
        self.length = length
        self.count = counter
        self.rng = random.Random(env.seed)
        spec = TEMPLATES[task.generator]
        self.ttg = spec.tokens_to_generate
        # prepare.py: the model template around the task, then the answer prefix.
        self.template = (
            MODEL_TEMPLATES[env.model_template].format(task_template=spec.template)
            + spec.answer_prefix
        )
        self.prefix10 = spec.answer_prefix[:10]
        self.frame = env.frame

    def make(self, n: int) -> Prompt:
        """RULER's `generate_input_output` for a haystack of `n`."""
        raise NotImplementedError

    def tokens(self, prompt: Prompt) -> int:
        # RULER counts the model template around the task; a chat model's template is applied
        # by the backend, so its tokens are added here (`Env.frame`).
        return self.count(prompt) + self.frame

    def estimate_upper(self) -> tuple[int, int]:
        """RULER's estimate: (lower, upper) bounds of the binary search."""
        inc = self.incremental
        tokens_per = self.tokens(self.make(inc)) / inc
        estimated = int((self.length / tokens_per) * 3)
        return inc, max(estimated, inc * 2)

    def fits(self, prompt: Prompt) -> int:
        return self.tokens(prompt) + self.ttg

    def search(self) -> int:
        """RULER's binary search for the largest haystack whose prompt fits."""
        lower, upper = self.estimate_upper()
        best = None
        while lower <= upper:
            mid = (lower + upper) // 2
            if self.fits(self.make(mid)) <= self.length:
                best, lower = mid, mid + 1
            else:
                upper = mid - 1
        return best if best is not None else self.incremental

    def sample(self, size: int) -> tuple[Prompt, int]:
        """RULER's per-sample loop: the search's size, shrunk by the increment until it fits."""
        used = size
        while True:
            try:
                prompt = self.make(used)
                total = self.fits(prompt)
            except ValueError:  # RULER's bare `except` retries what raised as well
                total = None
            if total is not None and total <= self.length:
                return prompt, total
            if used <= self.incremental:
                raise UsageError(
                    f"ruler task {self.task.name} does not fit in {self.length} tokens even with "
                    f"RULER's smallest haystack ({used}): use longer lengths (RULER's shortest is 4k)"
                )
            used -= self.incremental

    def finish(self, prompt: Prompt, index: int) -> Prompt:
        """The sample as written: RULER splits its answer prefix off at its first 10 characters."""
        return prompt

    def cells(self, count: int) -> Iterator[tuple[Prompt, int]]:
        size = self.search()
        for index in range(count):
            prompt, total = self.sample(size)
            yield self.finish(prompt, index), total


class Niah(Cell):
    generator = "niah"

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        super().__init__(task, env, length, counter)
        a = task.args
        self.haystack = a["type_haystack"]
        self.incremental = 500 if self.haystack == "essay" else 25
        if self.haystack != "essay" and length < 4096:
            self.incremental = 5
        self.num_k = max(a["num_needle_k"], a["num_needle_q"])
        self.type_v = a["type_needle_v"]
        template, type_v = self.template, self.type_v
        if a["num_needle_q"] * a["num_needle_v"] == 1:
            # RULER rewords the whole template (its model template too) for a single answer.
            for old, new in SINGLE_ANSWER_WORDING:
                template = template.replace(old, new)
            type_v = type_v[:-1]
        self.wording = template, type_v
        self.parts: WordNumberNeedles | None = None
        if self.haystack == "needle" and (a["type_needle_k"], self.type_v) == ("words", "numbers"):
            counter = self.count.piece_counter("\n")
            if not self.count.whole and counter.mode is not None:
                key = ("word-number", self.type_v)
                if key not in counter.helpers:
                    counter.helpers[key] = WordNumberNeedles(counter, self.type_v)
                parts = counter.helpers[key]
                if parts.exact:
                    self.parts = parts
                    self.adj_index = {adj: i for i, adj in enumerate(parts.adjs)}
        if self.haystack == "essay":
            if env.essays is None:
                raise UsageError(f"ruler task {task.name} needs the essays: pass essays=FILE")
            self.essay: EssayHaystack = env.essays.haystack  # nltk loads here, on first use

    def make(self, n: int) -> Prompt:
        a, rng = self.task.args, self.rng
        keys: list[str] = []
        values: list[list[str]] = []
        needles: list[str] = []
        for _ in range(self.num_k):
            keys.append(_random(a["type_needle_k"], rng))
            value = []
            for _ in range(a["num_needle_v"]):
                value.append(_random(self.type_v, rng))
                needles.append(
                    NEEDLE.format(type_needle_v=self.type_v, key=keys[-1], value=value[-1])
                )
            values.append(value)
        random.Random(self.env.seed).shuffle(needles)
        mids = None
        if self.haystack == "essay":
            sents = self.essay.sentences(n)
            cuts = [
                0,
                *sorted(int(len(sents) * (d / 100)) for d in rng.sample(DEPTHS, len(needles))),
            ]
            cuts.append(len(sents))
            pieces: list[str] = []
            for i in range(1, len(cuts)):
                # An empty stretch is an empty piece: RULER's join then leaves a double space.
                pieces.extend(sents[cuts[i - 1] : cuts[i]] or [""])
                if i - 1 < len(needles):
                    pieces.append(needles[i - 1])
            sep = " "
        else:
            if self.haystack == "noise":
                pieces = [NOISE] * n
            elif self.parts is not None:
                pieces, mids = self._word_number_needles(n, needles)
            else:
                pieces = [
                    NEEDLE.format(
                        type_needle_v=self.type_v,
                        key=_random(a["type_needle_k"], rng),
                        value=_random(self.type_v, rng),
                    )
                    for _ in range(n)
                ]
            for index, element in zip(
                sorted(rng.sample(range(n), len(needles)), reverse=True), needles, strict=False
            ):
                pieces.insert(index, element)
            sep = "\n"
            if self.haystack == "needle" and mids is None and not self.count.whole:
                counter = self.count.piece_counter(sep)
                if counter.mode is not None:
                    mids = counter.mids_sum(pieces)
        indices = rng.sample(range(self.num_k), a["num_needle_q"])
        queries = [keys[i] for i in indices]
        answers = [v for i in indices for v in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
        template, type_v = self.wording
        head, tail = _split(template.format(type_needle_v=type_v, context=_MARK, query=query))
        return Prompt(head, pieces, sep, tail, answers, mids, {"keys": keys, "queries": queries})

    def _word_number_needles(self, n: int, needles: list[str]) -> tuple[list[str], int]:
        """RULER's haystack of `n` word/number needles, drawn as RULER draws them, and the
        needles' summed counts from their parts (adjective, noun, digits; each counted once)."""
        assert self.parts is not None
        rng, words = self.rng, pair_words()
        size = range(len(words))
        adjs, nouns, values = [], [], []
        for _ in range(n):
            adj, noun = words.parts(rng.choice(size))  # RULER: random.choice(words)
            adjs.append(self.adj_index[adj])
            nouns.append(words.noun_index[noun])
            values.append(rng.randint(10**6, 10**7 - 1))
        a, o, v = np.array(adjs, dtype=np.int64), np.array(nouns, dtype=np.int64), np.array(values)
        mids = int(self.parts.costs(a, o, v).sum()) if n else 0
        counter = self.count.piece_counter("\n")
        mids += sum(counter.mid(needle, False) for needle in needles)
        return self.parts.texts(a, o, v), mids


class VariableTracking(Cell):
    generator = "variable_tracking"

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        super().__init__(task, env, length, counter)
        self.np = np.random.RandomState(env.seed)
        self.hops = int(task.args["num_hops"])
        self.chains = int(task.args["num_chains"])
        if task.args["type_haystack"] != "noise":
            raise UsageError("ruler vt: only RULER's noise haystack is supported")
        self.icl = False
        self.example = ""
        self.example_tokens = 0

    def _chains(self) -> tuple[list[list[str]], list[list[str]]]:
        rng = self.rng
        k = 3 if self.icl else 5
        hops = min(10, self.hops) if self.icl else self.hops
        names = [
            "".join(rng.choices(string.ascii_uppercase, k=k))
            for _ in range((hops + 1) * self.chains)
        ]
        while len(set(names)) < self.chains * (hops + 1):
            names.append("".join(rng.choices(string.ascii_uppercase, k=k)))
        out_vars, out_chains = [], []
        for i in range(0, len(names), hops + 1):
            these = names[i : i + hops + 1]
            out_vars.append(these)
            first = "12345" if self.icl else str(self.np.randint(10000, 99999))
            chain = [f"VAR {these[0]} = {first}"]
            chain += [f"VAR {these[j + 1]} = VAR {these[j]} " for j in range(hops)]
            out_chains.append(chain)
        return out_vars, out_chains

    def make(self, n: int) -> Prompt:
        names, chains = self._chains()
        value = chains[0][0].split("=")[-1].strip()
        pieces = [NOISE] * n
        for chain in chains:
            positions = sorted(self.rng.sample(range(len(pieces)), len(chain)))
            for where, j in zip(positions, range(len(chain)), strict=False):
                pieces.insert(where + j, chain[j])
        spec = TEMPLATES["variable_tracking"]
        template = self.template
        if self.icl and template != spec.template + spec.answer_prefix:
            template = spec.template + spec.answer_prefix  # the example drops the model template
        hops = min(10, self.hops) if self.icl else self.hops
        head, tail = _split(template.format(context=_MARK, query=value, num_v=hops + 1))
        # RULER then replaces ". \n" by ".\n" in the context: no piece here ends in ". ".
        return Prompt(head, pieces, "\n", tail, names[0], None, {"value": value})

    def fits(self, prompt: Prompt) -> int:
        ttg = 0 if self.icl else self.ttg
        return self.tokens(prompt) + self.example_tokens + ttg

    def _randomized_example(self) -> str:
        example = self.example
        for item in example.strip().split()[-self.hops - 1 :]:
            new = "".join(self.rng.choices(string.ascii_uppercase, k=len(item)))
            example = example.replace(item, new)
        return example.replace("12345", str(self.np.randint(10000, 99999)))

    def sample(self, size: int) -> tuple[Prompt, int]:
        if self.icl:
            return super().sample(size)
        used = size
        while True:
            prompt = self.make(used)
            spec = TEMPLATES["variable_tracking"]
            cut = prompt.head.index(spec.template[:20])
            example = self._randomized_example()
            prompt.head = prompt.head[:cut] + example + "\n" + prompt.head[cut:]
            total = self.tokens(prompt) + self.ttg
            if total <= self.length:
                return prompt, total
            if used <= self.incremental:
                raise UsageError(
                    f"ruler task {self.task.name} does not fit in {self.length} tokens: use "
                    "longer lengths (RULER's shortest is 4k)"
                )
            used -= self.incremental

    def cells(self, count: int) -> Iterator[tuple[Prompt, int]]:
        # RULER first writes a one-shot example: the same generator at 500 tokens, 3-letter names.
        self.icl, self.incremental, length = True, 5, self.length
        self.length, frame, self.frame = 500, self.frame, 0  # the example has no model template
        size = self.search()
        example, _ = self.sample(size)
        self.icl, self.length, self.frame = False, length, frame
        self.example = example.text() + " " + " ".join(example.answers) + "\n"
        self.example_tokens = self.count.text(self.example)
        self.incremental = 5 if length < 4096 else 10
        yield from super().cells(count)


class CommonWords(Cell):
    generator = "common_words_extraction"

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        super().__init__(task, env, length, counter)
        words = list(cwe_words())
        random.Random(env.seed).shuffle(words)
        self.words = words
        self.extra = list(env.extra_words)
        self.num_cw = int(task.args["num_cw"])
        if length < 4096:
            self.shot, self.main = (20, 3, 1), (6, 1)
        else:
            self.shot = (40, 10, 3)
            self.main = (int(task.args["freq_cw"]), int(task.args["freq_ucw"]))

    def _shuffled(self, items: list[str]) -> list[str]:
        return shuffled(items, self.env.seed)

    def _example(self, num: int, cr: int, ur: int) -> tuple[list[str], list[str]]:
        if num <= len(self.words):
            full = self.rng.sample(self.words, num)
        else:
            if not self.extra:
                raise UsageError(
                    f"ruler task {self.task.name} at {self.length} needs more words than "
                    "wonderwords has: pass words=FILE (RULER's english_words.json)"
                )
            full = self.rng.sample(self.extra, num)
        common, uncommon = full[: self.num_cw], full[self.num_cw :]
        return self._shuffled(common * cr + uncommon * ur), common

    @staticmethod
    def _numbered(words: Sequence[str]) -> list[str]:
        return [f"{i + 1}. {w}" for i, w in enumerate(words)]

    def make(self, n: int) -> Prompt:
        ex_words, ex_answer = self._example(*self.shot)
        words, answer = self._example(n, *self.main)
        shot = self.template.format(
            num_cw=self.num_cw, context=" ".join(self._numbered(ex_words)), query=""
        )
        shot += " " + " ".join(self._numbered(ex_answer))
        head, tail = _split(self.template.format(num_cw=self.num_cw, context=_MARK, query=""))
        return Prompt(
            shot + "\n" + head, self._numbered(words), " ", tail, answer, self._mids(words)
        )

    def _mids(self, words: list[str]) -> int | None:
        """The entries' counts as ` {i}.` plus ` {word}`, each counted once (checked per cell)."""
        counter = self.count.piece_counter(" ")
        if self.count.whole or counter.mode != "lead":
            return None
        numbers = counter.helpers.setdefault(("cwe-numbers", ""), [0])
        while len(numbers) <= len(words):
            numbers.append(numbers[-1] + counter.mid_text(f" {len(numbers)}."))
        return numbers[len(words)] + sum(counter.mid_text(" " + w) for w in words)

    def estimate_upper(self) -> tuple[int, int]:
        inc = self.incremental
        tokens_per = self.tokens(self.make(4096)) / 4096
        estimated = int(self.length // tokens_per) * 2
        return inc, max(estimated, inc * 2)


class FreqWords(Cell):
    generator = "freq_words_extraction"

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        super().__init__(task, env, length, counter)
        self.alpha = float(task.args["alpha"])
        self.max_len = length - self.ttg
        self.vocab_size = self.max_len // 50
        self.step = self.max_len // 32
        self.zeta = _zeta(self.alpha)

    def _text(self, vocab: list[str], num: int) -> Prompt:
        k = np.arange(1, len(vocab) + 1)
        counts = (num * (k**-self.alpha) / self.zeta).astype(int)
        listed = [w for w, c in zip(vocab, counts.tolist(), strict=True) for _ in range(c)]
        listed = shuffled(listed, self.env.seed)
        head, tail = _split(self.template.format(context=_MARK, query=""))
        mids = None
        counter = self.count.piece_counter(" ")
        if not self.count.whole and counter.mode is not None:
            mids = sum(
                c * counter.mid(w, False) for w, c in zip(vocab, counts.tolist(), strict=True) if c
            )
        return Prompt(head, listed, " ", tail, vocab[1:4], mids)

    def generate(self, num: int) -> tuple[Prompt, int]:
        """RULER's `generate_input_output(max_len, num_words)` (num -1: its search)."""
        rng = self.rng
        letters = string.ascii_lowercase
        vocab = ["".join(rng.choices(letters, k=6)) for _ in range(self.vocab_size)]
        while len(set(vocab)) < self.vocab_size:
            vocab.append("".join(rng.choices(letters, k=6)))
        vocab = sorted(set(vocab))
        vocab = shuffled(vocab, self.env.seed)
        vocab[0] = "..."  # RULER treats the top-ranked word as noise
        if num > 0:
            prompt = self._text(vocab, num)
            while self.tokens(prompt) > self.max_len:
                num -= self.step
                prompt = self._text(vocab, num)
        else:
            num = self.max_len // 6
            prompt = self._text(vocab, num)
            while self.tokens(prompt) < self.max_len:
                num += self.step
                prompt = self._text(vocab, num)
            num -= self.step
        return self._text(vocab, num), num

    def cells(self, count: int) -> Iterator[tuple[Prompt, int]]:
        _, num = self.generate(-1)
        for _ in range(count):
            prompt, _ = self.generate(num)
            yield prompt, self.tokens(prompt) + self.ttg


def _zeta(alpha: float) -> float:
    """Return the Riemann zeta function at `alpha` (scipy's `zeta`, which RULER calls)."""
    try:
        from scipy.special import zeta  # type: ignore[import-untyped]

        return float(zeta(alpha))
    except ImportError:
        if alpha == 2.0:
            return 1.6449340668482264  # pi**2 / 6, as scipy returns it
        n = 100000
        return float(sum(k**-alpha for k in range(1, n)) + n ** (1 - alpha) / (alpha - 1))


class QA(Cell):
    generator = "qa"

    def __init__(self, task: Task, env: Env, length: int, counter: Counter) -> None:
        super().__init__(task, env, length, counter)
        data = env.qa.get(task.args["dataset"])
        if data is None:
            raise UsageError(
                f"ruler task {task.name} needs its QA file: pass {task.args['dataset']}=FILE"
            )
        self.data: QASet = data

    def make_for(self, index: int, n: int) -> Prompt:
        data, rng = self.data, self.rng
        q = data.questions[index % len(data.questions)]
        docs, more = list(q.context), list(q.more_context)
        if n < len(data.documents):
            if n - len(docs) > len(more):
                taken = set(docs + more)
                addition = [i for i in range(len(data.documents)) if i not in taken]
                chosen = docs + more + rng.sample(addition, max(0, n - len(docs) - len(more)))
            else:
                chosen = docs + rng.sample(more, n - len(docs))
            texts = [data.documents[i] for i in chosen]
        else:
            repeats = (n + len(data.documents) - 1) // len(data.documents)
            texts = list(data.documents * repeats)[:n]
        texts = shuffled(texts, self.env.seed)
        pieces = [DOCUMENT.format(i=i + 1, document=d) for i, d in enumerate(texts)]
        head, tail = _split(self.template.format(context=_MARK, query=q.query))
        return Prompt(
            head,
            pieces,
            "\n\n",
            tail,
            list(q.outputs),
            self._mids(texts),
            {"question_index": index % len(data.questions)},
        )

    def _mids(self, texts: list[str]) -> int | None:
        """The documents' counts as `Document i:` + the document, each counted once: the
        numbers change with every shuffle, the documents do not. A document that does not start
        with a letter or digit is counted with its number (the two may merge)."""
        counter = self.count.piece_counter("\n\n")
        if self.count.whole or counter.mode is None:
            return None
        sep, trail, total = counter.sep, counter.mode == "trail", 0
        for i, doc in enumerate(texts):
            label = f"Document {i + 1}:\n"
            if not doc[:1].isalnum():
                total += counter.mid(label + doc)
            elif trail:
                total += counter.mid_text(label) + counter.mid_text(doc + sep)
            else:
                total += counter.mid_text(sep + label) + counter.mid_text(doc)
        return total

    def make(self, n: int) -> Prompt:
        return self.make_for(self._index, n)

    _index = 0

    def cells(self, count: int) -> Iterator[tuple[Prompt, int]]:
        self._index = 0
        size = self.search()
        for index in range(count):
            self._index = index
            prompt, total = self.sample(size)
            yield prompt, total


CELLS: dict[Generator, type[Cell]] = {
    "niah": Niah,
    "variable_tracking": VariableTracking,
    "common_words_extraction": CommonWords,
    "freq_words_extraction": FreqWords,
    "qa": QA,
}


@dataclass
class Env:
    """What RULER's generators read besides the tokenizer: seed, model template, data."""

    seed: int
    model_template: str = "base"
    essays: Essays | None = None
    qa: dict[str, QASet] = field(default_factory=dict)
    extra_words: tuple[str, ...] = ()
    frame: int = 0
    """Tokens a chat model's template adds around the text (chat mode): counted in every prompt's
    length as RULER counts its model template's, so that prompt + output fit `max_seq_length`."""


@dataclass(frozen=True)
class Written:
    """One sample as `prepare.py` writes it: `input`, `outputs`, `length`, `answer_prefix`."""

    head: str
    context: str
    question: str
    answer_prefix: str
    outputs: tuple[str, ...]
    length: int
    """RULER's `length`: the prompt's tokens (answer prefix and `Env.frame` included) + tokens to
    generate."""
    meta: dict[str, Any]

    @property
    def input(self) -> str:
        return self.head + self.context + self.question


def ruler_cell(
    task: Task, env: Env, tokenizer: Tokenizer, length: int, count: int, verify: bool = False
) -> Iterator[Written]:
    """Yield `count` samples of `task` at `length` as RULER's `prepare.py` writes them."""
    tokenizer = ruler_counting(tokenizer, env.model_template)
    whole = False
    while True:
        counter = Counter(tokenizer, whole, verify)
        counter.checks = 2
        cell = CELLS[task.generator](task, env, length, counter)
        stream = cell.cells(count)
        try:
            first = next(stream, None)
            # The first sample is counted whole too: its pieces' sum must be RULER's count.
            if first is not None and not whole:
                prompt, total = first
                if counter.text(prompt.text()) + cell.frame + cell.ttg != total:
                    raise _NotAdditive
        except _NotAdditive:
            if whole:
                raise
            whole = True
            continue
        break
    if first is None:
        return
    yield _written(cell, *first)
    for prompt, total in stream:
        yield _written(cell, prompt, total)


def _written(cell: Cell, prompt: Prompt, total: int) -> Written:
    cut = prompt.tail.rfind(cell.prefix10)
    question, prefix = (prompt.tail[:cut], prompt.tail[cut:]) if cut >= 0 else (prompt.tail, "")
    meta = dict(prompt.meta)
    # A separator whose pieces never add up (no counting mode) is counted whole from the start.
    whole = cell.count.whole or cell.count.piece_counter(prompt.sep).mode is None
    meta["counted"] = "whole" if whole else "pieces"
    return Written(
        prompt.head, prompt.context, question, prefix, tuple(prompt.answers), total, meta
    )


def iter_cell(
    suite: Suite,
    ctx: BuildContext,
    task: str,
    length: int,
    count: int | None = None,
) -> Iterator[Sample]:
    """Yield the samples of one task x length cell of `suite`, lazily, in index order."""
    return suite.iter_cell(ctx, task, length, count)
